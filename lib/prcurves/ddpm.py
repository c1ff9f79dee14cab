"""The DDPM of Morales, Jurie & Fadili (2025), trained as a batched ensemble (notebook 01).

Spec 01 §2.2-2.3. One *member* is the paper's `DenoisingNet(h=2, d=128, complexity=C, emb_dim=16)`:

    e   = SiLU(W2 SiLU(W1 t + b1) + b2)          time embedding of the raw step index t (0..99, a float)
    x   = W_in x + b_in                           2 -> 128
    x   = x + W_o SiLU(W_x x + b_x + W_e e + b_e)  C residual blocks, 128 -> 256 -> 128
    eps = W_out x + b_out                         128 -> 2

An *ensemble* of M members is stored as stacked weights (leading axis M) and run with batched matrix
products, so one optimiser step trains every member. All randomness of member i (its initial weights,
its data order, its time steps and noise, its sampling noise) comes from generators seeded with its own
seed, so member i trained inside a batch equals member i trained alone (tests/test_prcurves_ddpm.py). The
training randomness is drawn on the device in blocks of many steps (`BlockStreams`), so a step costs no
host-side draws or copies.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from lib.cache import atomic_torch_save
from lib.params import check_choice, check_int, check_real
from lib.progress import progress as progress_bar
from lib.seeds import derive_seed
from lib.train import ema_update, load_checkpoint

HIDDEN, BLOCK_HIDDEN, EMB_DIM, DATA_DIM = 128, 256, 16, 2
SAMPLING_STREAM = 1  # derive_seed(member_seed, SAMPLING_STREAM) seeds a member's sampling noise


def member_seeds(base_seed: int, complexity: int, num_members: int) -> list[int]:
    """The seed of member i of an ensemble of complexity C: base_seed + 1000 C + i (spec A4)."""
    return [base_seed + 1000 * complexity + i for i in range(num_members)]


# ----------------------------------------------------------------------------------------------------
# Noise schedule (spec §2.2)
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Schedule:
    """betas, alphas, alpha_bars: (T,) float32 tensors on the CPU."""

    betas: torch.Tensor
    alphas: torch.Tensor
    alpha_bars: torch.Tensor

    @property
    def num_steps(self) -> int:
        return len(self.betas)


def cosine_schedule(num_steps: int = 100, s: float = 0.008) -> Schedule:
    """Nichol & Dhariwal's cosine schedule, computed in float64 and stored as float32 (spec §2.2).

    f(x) = cos^2(((x/T) + s)/(1 + s) * pi/2); beta_t = clip(1 - f(t+1)/f(t), 0, 0.999).
    """
    x = np.arange(num_steps + 1, dtype=np.float64)
    f = np.cos(((x / num_steps) + s) / (1 + s) * math.pi / 2) ** 2
    betas = np.clip(1 - f[1:] / f[:-1], 0.0, 0.999)
    alphas = 1 - betas
    alpha_bars = np.cumprod(alphas)
    as32 = lambda a: torch.from_numpy(a.astype(np.float32))  # noqa: E731
    return Schedule(betas=as32(betas), alphas=as32(alphas), alpha_bars=as32(alpha_bars))


# ----------------------------------------------------------------------------------------------------
# Parameters: one member, then stacked
# ----------------------------------------------------------------------------------------------------
def _layer_shapes(complexity: int) -> list[tuple[str, int, int]]:
    """(name, fan_in, fan_out) of every Linear layer, in the order their weights are drawn."""
    layers = [("emb1", 1, EMB_DIM), ("emb2", EMB_DIM, EMB_DIM), ("inp", DATA_DIM, HIDDEN)]
    for i in range(complexity):
        layers += [(f"block{i}.x", HIDDEN, BLOCK_HIDDEN), (f"block{i}.e", EMB_DIM, BLOCK_HIDDEN)]
        layers += [(f"block{i}.o", BLOCK_HIDDEN, HIDDEN)]
    return layers + [("out", HIDDEN, DATA_DIM)]


def num_parameters(complexity: int) -> int:
    """Parameters of one member: 946 + 70,272 C (spec §2.2)."""
    return sum(fan_in * fan_out + fan_out for _, fan_in, fan_out in _layer_shapes(complexity))


def init_member(complexity: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """PyTorch's default Linear init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.

    Returns {"<layer>.w": (fan_in, fan_out), "<layer>.b": (1, fan_out)} float32 (weights stored
    transposed, ready for `x @ w`).
    """
    params = {}
    for name, fan_in, fan_out in _layer_shapes(complexity):
        bound = 1.0 / math.sqrt(fan_in)
        params[f"{name}.w"] = (torch.rand(fan_in, fan_out, generator=generator) * 2 - 1) * bound
        params[f"{name}.b"] = (torch.rand(1, fan_out, generator=generator) * 2 - 1) * bound
    return params


def stack_members(members: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Stack M single-member parameter dicts into one dict of (M, ...) tensors."""
    return {key: torch.stack([m[key] for m in members]) for key in members[0]}


def complexity_of(params: dict[str, torch.Tensor]) -> int:
    """Number of residual blocks C of a (stacked or single) parameter dict."""
    return sum(1 for key in params if key.endswith(".x.w"))


# ----------------------------------------------------------------------------------------------------
# Forward pass
# ----------------------------------------------------------------------------------------------------
def _linear(x: torch.Tensor, params: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    return torch.baddbmm(params[f"{name}.b"], x, params[f"{name}.w"])


def denoise(params: dict[str, torch.Tensor], x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Predicted noise eps_hat(x_t, t) of every member.

    params: stacked (M, ...) float32; x: (M, B, 2) float32; t: float32 raw step indices, (M,) (one per
    member, broadcast over its batch) or (M, B) (one per point). Returns (M, B, 2) float32.
    """
    e = nn.functional.silu(_linear(t.view(t.shape[0], -1, 1), params, "emb1"))
    e = nn.functional.silu(_linear(e, params, "emb2"))  # (M, 1, 16) broadcast over the batch, or (M, B, 16)
    h = _linear(x, params, "inp")
    for i in range(complexity_of(params)):
        u = _linear(h, params, f"block{i}.x") + _linear(e, params, f"block{i}.e")
        h = h + _linear(nn.functional.silu(u), params, f"block{i}.o")
    return _linear(h, params, "out")


class DenoisingNet(nn.Module):
    """The paper's network for one member, written with nn.Linear for readers (spec §2.2).

    `load_member(params, i)` copies member i of a stacked ensemble into it; tests check that it
    computes exactly what `denoise` computes for that member.
    """

    def __init__(self, complexity: int):
        super().__init__()
        self.emb = nn.Sequential(nn.Linear(1, EMB_DIM), nn.SiLU(), nn.Linear(EMB_DIM, EMB_DIM), nn.SiLU())
        self.inp = nn.Linear(DATA_DIM, HIDDEN)
        self.blocks_x = nn.ModuleList(nn.Linear(HIDDEN, BLOCK_HIDDEN) for _ in range(complexity))
        self.blocks_e = nn.ModuleList(nn.Linear(EMB_DIM, BLOCK_HIDDEN) for _ in range(complexity))
        self.blocks_o = nn.ModuleList(nn.Linear(BLOCK_HIDDEN, HIDDEN) for _ in range(complexity))
        self.out = nn.Linear(HIDDEN, DATA_DIM)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """x: (B, 2) float32; t: (B, 1) float32 raw step indices. Returns (B, 2)."""
        e, h = self.emb(t), self.inp(x)
        for lin_x, lin_e, lin_o in zip(self.blocks_x, self.blocks_e, self.blocks_o):
            h = h + lin_o(nn.functional.silu(lin_x(h) + lin_e(e)))
        return self.out(h)

    @torch.no_grad()
    def load_member(self, params: dict[str, torch.Tensor], i: int) -> DenoisingNet:
        layers = {"emb1": self.emb[0], "emb2": self.emb[2], "inp": self.inp, "out": self.out}
        for b in range(len(self.blocks_x)):
            layers |= {f"block{b}.{part}": blocks[b]
                       for part, blocks in (("x", self.blocks_x), ("e", self.blocks_e), ("o", self.blocks_o))}
        for name, layer in layers.items():
            layer.weight.copy_(params[f"{name}.w"][i].T)
            layer.bias.copy_(params[f"{name}.b"][i, 0])
        return self


# ----------------------------------------------------------------------------------------------------
# Training (spec §2.3, plus the convergence options of the diffusion literature, off in the paper's)
# ----------------------------------------------------------------------------------------------------
T_SAMPLING = ("per_batch", "per_sample", "stratified")
LR_SCHEDULES = ("constant", "cosine", "linear")
TRAIN_STREAM = 2  # derive_seed(member_seed, TRAIN_STREAM, block) seeds block `block` of a member's stream
BLOCK_STEPS = 200  # a block holds whole epochs, at least this many steps (fixed: it defines the stream)


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation settings. The defaults are the authors' (spec §2.3); the last four default to "off".

    t_sampling: "per_batch" (the authors': one t per minibatch, uniform on {t_low, ..., t_high}),
        "per_sample" (each point its own uniform t, as in Ho et al. 2020), "stratified" (each point its
        own t, spread evenly over {t_low, ..., t_high} across the minibatch with one random offset: a
        low-discrepancy draw; the points are in random order, so which point gets which t is random).
    lr_schedule: "constant" (the authors'), or linear warm-up over `warmup_steps` then "cosine" or
        "linear" decay to 0 at the last step.
    ema_decay: 0 (the authors': sample with the trained weights) or the decay d of an exponential moving
        average of the weights used for sampling, with the usual warm-up min(d, (1 + s) / (10 + s)).
    """

    batch_size: int = 500
    lr: float = 2e-3
    clip_norm: float = 1.0
    t_low: int = 1
    t_high: int = 98
    t_sampling: str = "per_batch"
    lr_schedule: str = "constant"
    warmup_steps: int = 0
    ema_decay: float = 0.0

    def check(self, name: str = "train") -> None:
        """Raise ValueError naming the field (as `name.field`) for any bad value."""
        check_int(f"{name}.batch_size", self.batch_size, minimum=1)
        check_real(f"{name}.lr", self.lr, low=0.0, open_low=True)
        check_real(f"{name}.clip_norm", self.clip_norm, low=0.0, open_low=True)
        check_int(f"{name}.t_low", self.t_low, minimum=0, maximum=99)
        check_int(f"{name}.t_high", self.t_high, minimum=self.t_low, maximum=99)
        check_choice(f"{name}.t_sampling", self.t_sampling, T_SAMPLING)
        check_choice(f"{name}.lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_int(f"{name}.warmup_steps", self.warmup_steps, minimum=0)
        check_real(f"{name}.ema_decay", self.ema_decay, low=0.0, high=1.0, open_high=True)


def learning_rate(settings: TrainSettings, step: int, num_steps: int) -> float:
    """The learning rate of Adam step `step` (0-based) of `num_steps`."""
    scale = 1.0
    if settings.warmup_steps and step < settings.warmup_steps:
        scale = (step + 1) / settings.warmup_steps
    elif settings.lr_schedule != "constant":
        progress = (step - settings.warmup_steps) / max(1, num_steps - settings.warmup_steps)
        scale = 0.5 * (1 + math.cos(math.pi * progress)) if settings.lr_schedule == "cosine" else 1 - progress
    return settings.lr * scale


class BlockStreams:
    """The training randomness of M members, drawn on the device a block of whole epochs at a time.

    Block b of member i comes from one generator seeded derive_seed(seed_i, TRAIN_STREAM, b): first one
    permutation of the data per epoch, then the time steps (per_batch: one per step; per_sample: one
    per point; stratified: one offset per step), then the noise of every point. A member's stream
    depends only on its seed, n and the settings (not on M, num_steps or the device's other members),
    and a step's batch is a slice of the block: no per-step draws, no host-to-device copies.
    Minibatches are consecutive slices of each epoch's permutation; the last partial one is kept.
    """

    def __init__(self, seeds: Sequence[int], num_data: int, settings: TrainSettings, device: torch.device):
        self.seeds, self.n, self.settings, self.device = [int(s) for s in seeds], num_data, settings, device
        batch = settings.batch_size
        self.steps_per_epoch = math.ceil(num_data / batch)
        self.epochs_per_block = max(1, math.ceil(BLOCK_STEPS / self.steps_per_epoch))
        self.steps_per_block = self.epochs_per_block * self.steps_per_epoch
        starts = [e * num_data + b * batch for e in range(self.epochs_per_block) for b in range(self.steps_per_epoch)]
        self.bounds = [(s, min(s + batch, (s // num_data + 1) * num_data)) for s in starts]
        if settings.t_sampling == "stratified":  # position of every point in its minibatch, and that batch's size
            pos = torch.cat([torch.arange(e - s, dtype=torch.float64) for s, e in self.bounds])
            size = torch.cat([torch.full((e - s,), float(e - s), dtype=torch.float64) for s, e in self.bounds])
            step = torch.cat([torch.full((e - s,), j) for j, (s, e) in enumerate(self.bounds)])
            self._strata = (pos.to(device), size.to(device), step.to(device))
        self.block_no, self._block = -1, None

    def _draw_block(self, block_no: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        s, dev, points = self.settings, self.device, self.epochs_per_block * self.n
        idx, ts, eps = [], [], []
        for seed in self.seeds:
            gen = torch.Generator(device=dev).manual_seed(derive_seed(seed, TRAIN_STREAM, block_no))
            idx.append(torch.cat([torch.randperm(self.n, generator=gen, device=dev)
                                  for _ in range(self.epochs_per_block)]))
            if s.t_sampling == "per_batch":
                ts.append(torch.randint(s.t_low, s.t_high + 1, (self.steps_per_block,), generator=gen, device=dev))
            elif s.t_sampling == "per_sample":
                ts.append(torch.randint(s.t_low, s.t_high + 1, (points,), generator=gen, device=dev))
            else:
                u = torch.rand(self.steps_per_block, generator=gen, device=dev, dtype=torch.float64)
                pos, size, step = self._strata
                num_t = s.t_high - s.t_low + 1
                ts.append(s.t_low + ((pos + u[step]) / size * num_t).floor().long().clamp(max=num_t - 1))
            eps.append(torch.randn(points, DATA_DIM, generator=gen, device=dev))
        return torch.stack(idx), torch.stack(ts), torch.stack(eps)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(indices (M, b), t (M,) for per_batch else (M, b), eps (M, b, 2)) of Adam step `step` (0-based)."""
        block_no, j = divmod(step, self.steps_per_block)
        if block_no != self.block_no:
            self._block, self.block_no = self._draw_block(block_no), block_no
        idx, ts, eps = self._block
        lo, hi = self.bounds[j]
        t = ts[:, j] if self.settings.t_sampling == "per_batch" else ts[:, lo:hi]
        return idx[:, lo:hi], t, eps[:, lo:hi]


def _clip_per_member(grads: Sequence[torch.Tensor], max_norm: float) -> None:
    """torch.nn.utils.clip_grad_norm_ applied to each member's own gradient (norm over all its parameters).

    grads: tensors with the member on the leading axis (the per-layer gradients, or one flat (M, P) one).
    """
    sq = sum(g.pow(2).flatten(1).sum(1) for g in grads)  # (M,)
    coef = (max_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))


class FlatParams:
    """Every layer of a stacked ensemble in one (M, P) tensor, its gradient in another.

    `layers` are leaf tensors that are views of `flat` (their `.grad` views of `grad`), so the forward pass
    uses them as before while zeroing, clipping, Adam and the EMA each touch one tensor: a handful of
    operations per step instead of a dozen per layer. Adam is elementwise, so this changes no result.
    """

    def __init__(self, params: dict[str, torch.Tensor], device: torch.device):
        self.shapes = {k: v.shape for k, v in params.items()}
        num = next(iter(params.values())).shape[0]
        self.flat = torch.cat([v.reshape(num, -1) for v in params.values()], dim=1).to(device).requires_grad_()
        self.flat.grad = torch.zeros_like(self.flat)
        self.layers = self.unflatten(self.flat.detach())
        for layer, grad in zip(self.layers.values(), self.unflatten(self.flat.grad).values()):
            layer.requires_grad_()
            layer.grad = grad

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-layer views of an (M, P) tensor laid out like `flat`."""
        out, offset = {}, 0
        for name, shape in self.shapes.items():
            size = math.prod(shape[1:])
            out[name] = flat[:, offset : offset + size].view(shape)
            offset += size
        return out

    def cpu_copy(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().clone() for k, v in self.unflatten(flat).items()}


def _training_step(weights: FlatParams, optimiser, data, batch, alpha_bars, settings) -> torch.Tensor:
    """One Adam step of every member on `batch` = (idx, t, eps) from `BlockStreams`; returns (M,) losses."""
    idx, t, eps = batch
    ab = alpha_bars[t].view(t.shape[0], -1, 1)  # (M, 1, 1) or (M, b, 1)
    x_t = ab.sqrt() * data[idx] + (1 - ab).sqrt() * eps
    losses = (eps - denoise(weights.layers, x_t, t.float())).pow(2).mean(dim=(1, 2))
    weights.flat.grad.zero_()
    with warnings.catch_warnings():  # the layers' grads are strided views of one buffer, on purpose
        warnings.filterwarnings("ignore", message="grad and param do not obey the gradient layout contract")
        losses.sum().backward()  # members share no parameter, so each gets its own loss's gradient
    _clip_per_member([weights.flat.grad], settings.clip_norm)
    optimiser.step()
    return losses.detach()


def train_ensemble(data: np.ndarray, *, complexity: int, seeds: Sequence[int], num_steps: int,
                   settings: TrainSettings = TrainSettings(), device: torch.device | str = "cpu",
                   checkpoint: Path | None = None, checkpoint_every: int = 1000, snapshots: Sequence[int] = (),
                   progress: bool = True) -> dict:
    """Train len(seeds) members of complexity C on `data` ((n, 2) float) for `num_steps` Adam steps.

    Member i uses `seeds[i]` for its initial weights and its `BlockStreams` stream. With `checkpoint`,
    the full state is written there (atomically) every `checkpoint_every` steps and training resumes
    from it; the result is the same as an uninterrupted run. Returns {"params": stacked CPU tensors,
    "ema": their moving average (only when settings.ema_decay > 0), "losses": (num_steps, M) float32
    per-step training losses, "snapshots": {step: {"params", "ema"?}} after each step in `snapshots`}.
    Use `sampling_params(result)` for the weights to sample with.
    """
    settings.check("settings")
    device = torch.device(device)
    weights, ema, optimiser = _initial_members(complexity, seeds, settings, device)
    losses = torch.zeros(num_steps, len(seeds), device=device)  # kept on the device: no sync per step
    saved = {}
    start = _resume(checkpoint, weights, ema, optimiser, losses, saved) if checkpoint else 0
    data_t = torch.as_tensor(np.asarray(data, dtype=np.float32), device=device)
    streams = BlockStreams(seeds, len(data_t), settings, device)
    alpha_bars = cosine_schedule().alpha_bars.to(device)
    keep = {int(s) for s in snapshots}
    bar = progress_bar(range(start, num_steps), initial=start, total=num_steps, enabled=progress,
                       desc=f"train C={complexity}, M={len(seeds)}")
    for step in bar:
        if settings.lr_schedule != "constant" or settings.warmup_steps:
            for group in optimiser.param_groups:
                group["lr"] = learning_rate(settings, step, num_steps)
        losses[step] = _training_step(weights, optimiser, data_t, streams.batch(step), alpha_bars, settings)
        if ema is not None:
            ema_update(ema, weights.flat.detach(), settings.ema_decay, step)
        if step + 1 in keep:
            saved[step + 1] = _result_state(weights, ema)
        if checkpoint and (step + 1) % checkpoint_every == 0 and step + 1 < num_steps:
            _save_checkpoint(checkpoint, step + 1, weights, ema, optimiser, losses, saved)
    return {**_result_state(weights, ema), "losses": losses.cpu().numpy(), "snapshots": saved}


def _initial_members(complexity: int, seeds: Sequence[int], settings: TrainSettings,
                     device: torch.device) -> tuple[FlatParams, torch.Tensor | None, torch.optim.Adam]:
    """The members' initial weights (member i's drawn from seeds[i]) as one `FlatParams` on `device`, their moving
    average (None when settings.ema_decay is 0) and the Adam optimiser of them all."""
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    weights = FlatParams(stack_members([init_member(complexity, g) for g in gens]), device)
    ema = weights.flat.detach().clone() if settings.ema_decay > 0 else None
    return weights, ema, torch.optim.Adam([weights.flat], lr=settings.lr)


def sampling_params(result: dict) -> dict[str, torch.Tensor]:
    """The weights to sample with: the moving average when training kept one, else the trained weights."""
    return result.get("ema") or result["params"]


def _result_state(weights: FlatParams, ema: torch.Tensor | None) -> dict:
    state = {"params": weights.cpu_copy(weights.flat)}
    if ema is not None:
        state["ema"] = weights.cpu_copy(ema)
    return state


def _save_checkpoint(path, step, weights, ema, optimiser, losses, snapshots) -> None:
    state = {"step": step, "flat": weights.flat.detach().cpu(), "ema": None if ema is None else ema.cpu(),
             "optimiser": optimiser.state_dict(), "losses": losses[:step].cpu(), "snapshots": snapshots}
    atomic_torch_save(state, path)


def _resume(path: Path, weights: FlatParams, ema, optimiser, losses, snapshots: dict) -> int:
    """Load a checkpoint written by `_save_checkpoint` if there is one; return the step to start from.
    The snapshots it holds (the states after the steps asked for, up to the checkpoint) go into `snapshots`.

    A damaged checkpoint (no checksum header, checksum mismatch, truncated, unreadable, more than data: see
    `lib.cache.load_torch`) is logged and deleted, and training starts from step 0."""
    state = load_checkpoint(path)
    if state is None:
        return 0
    step = int(state["step"])
    if step > len(losses):
        raise ValueError(f"checkpoint {path} is at step {step}, beyond num_steps={len(losses)}; delete it to retrain.")
    if (ema is None) != (state["ema"] is None) or state["flat"].shape != weights.flat.shape:
        raise ValueError(f"checkpoint {path} was written with other settings; delete it to retrain.")
    with torch.no_grad():
        weights.flat.copy_(state["flat"])
        if ema is not None:
            ema.copy_(state["ema"])
    optimiser.load_state_dict(state["optimiser"])
    losses[:step] = state["losses"].to(losses.device)
    snapshots.update(state.get("snapshots", {}))
    return step


# ----------------------------------------------------------------------------------------------------
# Ancestral sampling (spec §2.3)
# ----------------------------------------------------------------------------------------------------
@torch.no_grad()
def sample_ensemble(
    params: dict[str, torch.Tensor],
    *,
    num_samples: int,
    seeds: Sequence[int],
    device: torch.device | str = "cpu",
    progress: bool = True,
) -> np.ndarray:
    """Ancestral DDPM sampling from every member, noise added at every step including t = 0.

    x <- (x - beta_t / sqrt(1 - alpha_bar_t) eps_hat(x, t)) / sqrt(alpha_t) + sqrt(beta_t) z.
    Member i's noise comes from `derive_seed(seeds[i], SAMPLING_STREAM)`. Returns (M, num_samples, 2)
    float32; non-finite rows are left in place for the caller to drop (spec §2.3 step 4).
    """
    device = torch.device(device)
    params = {k: v.to(device) for k, v in params.items()}
    gens = [torch.Generator().manual_seed(derive_seed(int(s), SAMPLING_STREAM)) for s in seeds]
    noise = lambda: torch.stack([torch.randn(num_samples, DATA_DIM, generator=g) for g in gens]).to(device)  # noqa: E731
    sched = cosine_schedule()
    x = noise()
    for t in progress_bar(range(sched.num_steps - 1, -1, -1), enabled=progress, desc="sample"):
        beta, alpha, ab = (float(v[t]) for v in (sched.betas, sched.alphas, sched.alpha_bars))
        eps_hat = denoise(params, x, torch.full((len(seeds),), float(t), device=device))
        x = (x - beta / math.sqrt(1 - ab) * eps_hat) / math.sqrt(alpha) + math.sqrt(beta) * noise()
    return x.cpu().numpy()
