"""The DDPM of Morales, Jurie & Fadili (2025), trained as a batched ensemble (notebook 01).

Spec 01 §2.2-2.3. One *member* is the paper's `DenoisingNet(h=2, d=128, complexity=C, emb_dim=16)`:

    e   = SiLU(W2 SiLU(W1 t + b1) + b2)          time embedding of the raw step index t (0..99, a float)
    x   = W_in x + b_in                           2 -> 128
    x   = x + W_o SiLU(W_x x + b_x + W_e e + b_e)  C residual blocks, 128 -> 256 -> 128
    eps = W_out x + b_out                         128 -> 2

An *ensemble* of M members is stored as stacked weights (leading axis M) and run with batched matrix
products, so one optimiser step trains every member. All randomness of member i (its initial weights,
its data order, its time steps and noise, its sampling noise) comes from generators seeded with its own
seed, so member i trained inside a batch equals member i trained alone (tests/test_ddpm.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from lib.cache import DamagedCacheEntry, atomic_torch_save, discard_damaged, load_torch
from lib.seeds import derive_seed

HIDDEN, BLOCK_HIDDEN, EMB_DIM, DATA_DIM = 128, 256, 16, 2
SAMPLING_STREAM = 1  # derive_seed(member_seed, SAMPLING_STREAM) seeds a member's sampling noise


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

    params: stacked (M, ...) float32; x: (M, B, 2) float32; t: (M,) float32 raw step indices.
    Returns (M, B, 2) float32.
    """
    e = nn.functional.silu(_linear(t.view(-1, 1, 1), params, "emb1"))
    e = nn.functional.silu(_linear(e, params, "emb2"))  # (M, 1, 16), broadcast over the batch
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
# Training (spec §2.3)
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainSettings:
    """The authors' optimisation settings (spec §2.3)."""

    batch_size: int = 500
    lr: float = 2e-3
    clip_norm: float = 1.0
    t_low: int = 1  # one t per minibatch, uniform on {t_low, ..., t_high}
    t_high: int = 98


class _MemberStream:
    """One member's training randomness: epoch-wise shuffles, then per step one t and the noise."""

    def __init__(self, num_data: int, settings: TrainSettings, generator: torch.Generator):
        self.num_data, self.settings, self.gen = num_data, settings, generator
        self.perm, self.pos = torch.empty(0, dtype=torch.long), num_data

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(indices (B,), t (1,), eps (B, 2)); the last partial batch of an epoch is kept."""
        if self.pos >= self.num_data:
            self.perm, self.pos = torch.randperm(self.num_data, generator=self.gen), 0
        idx = self.perm[self.pos : self.pos + self.settings.batch_size]
        self.pos += len(idx)
        t = torch.randint(self.settings.t_low, self.settings.t_high + 1, (1,), generator=self.gen)
        return idx, t, torch.randn(len(idx), DATA_DIM, generator=self.gen)

    def state(self) -> dict:
        return {"gen": self.gen.get_state(), "perm": self.perm, "pos": self.pos}

    def load_state(self, state: dict) -> None:
        self.gen.set_state(state["gen"])
        self.perm, self.pos = state["perm"], state["pos"]


def _clip_per_member(params: dict[str, torch.Tensor], max_norm: float) -> None:
    """torch.nn.utils.clip_grad_norm_ applied to each member's own gradient (norm over its parameters)."""
    grads = [p.grad for p in params.values()]
    sq = sum(g.pow(2).flatten(1).sum(1) for g in grads)  # (M,)
    coef = (max_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))


def _training_step(params, optimiser, data, streams, alpha_bars, settings) -> torch.Tensor:
    """One Adam step of every member; returns the (M,) per-member losses."""
    batches = [s.next_batch() for s in streams]
    idx = torch.stack([b[0] for b in batches]).to(data.device)
    t = torch.cat([b[1] for b in batches]).to(data.device)
    eps = torch.stack([b[2] for b in batches]).to(data.device)
    ab = alpha_bars[t].view(-1, 1, 1)
    x_t = ab.sqrt() * data[idx] + (1 - ab).sqrt() * eps
    losses = (eps - denoise(params, x_t, t.float())).pow(2).mean(dim=(1, 2))
    optimiser.zero_grad(set_to_none=False)
    losses.sum().backward()  # members share no parameter, so each gets its own loss's gradient
    _clip_per_member(params, settings.clip_norm)
    optimiser.step()
    return losses.detach()


def train_ensemble(
    data: np.ndarray,
    *,
    complexity: int,
    seeds: Sequence[int],
    num_steps: int,
    settings: TrainSettings = TrainSettings(),
    device: torch.device | str = "cpu",
    checkpoint: Path | None = None,
    checkpoint_every: int = 1000,
    progress: bool = True,
) -> dict:
    """Train len(seeds) members of complexity C on `data` ((n, 2) float) for `num_steps` Adam steps.

    Member i uses `seeds[i]` for its initial weights and its training stream. With `checkpoint`, the
    full state is written there (atomically) every `checkpoint_every` steps and training resumes from
    it; the result is the same as an uninterrupted run (a member's stream does not depend on num_steps,
    so the checkpoint of a shorter run also extends it). Returns {"params": stacked CPU tensors,
    "losses": (num_steps, M) float32 array of per-step training losses}.
    """
    device = torch.device(device)
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    params = stack_members([init_member(complexity, g) for g in gens])
    params = {k: v.to(device).requires_grad_() for k, v in params.items()}
    optimiser = torch.optim.Adam(params.values(), lr=settings.lr)
    streams = [_MemberStream(len(data), settings, g) for g in gens]
    losses = torch.zeros(num_steps, len(seeds), device=device)  # kept on the device: no sync per step
    start = _resume(checkpoint, params, optimiser, streams, losses) if checkpoint else 0
    data_t = torch.as_tensor(np.asarray(data, dtype=np.float32), device=device)
    alpha_bars = cosine_schedule().alpha_bars.to(device)
    bar = tqdm(range(start, num_steps), initial=start, total=num_steps, disable=not progress,
               desc=f"train C={complexity}, M={len(seeds)}", mininterval=2)
    for step in bar:
        losses[step] = _training_step(params, optimiser, data_t, streams, alpha_bars, settings)
        if checkpoint and (step + 1) % checkpoint_every == 0 and step + 1 < num_steps:
            _save_checkpoint(checkpoint, step + 1, params, optimiser, streams, losses)
    return {"params": {k: v.detach().cpu() for k, v in params.items()}, "losses": losses.cpu().numpy()}


def _save_checkpoint(path, step, params, optimiser, streams, losses) -> None:
    state = {"step": step, "params": {k: v.detach().cpu() for k, v in params.items()},
             "optimiser": optimiser.state_dict(), "streams": [s.state() for s in streams],
             "losses": losses[:step].cpu()}
    atomic_torch_save(state, path)


def _resume(path: Path, params, optimiser, streams, losses) -> int:
    """Load a checkpoint written by `_save_checkpoint` if there is one; return the step to start from.

    A damaged checkpoint (checksum mismatch, truncated, unreadable) is logged and deleted, and training
    starts from step 0."""
    if not Path(path).exists():
        return 0
    try:
        state = load_torch(path)
    except DamagedCacheEntry as err:
        discard_damaged(err)
        return 0
    with torch.no_grad():
        for k, v in params.items():
            v.copy_(state["params"][k])
    optimiser.load_state_dict(state["optimiser"])
    for stream, s in zip(streams, state["streams"]):
        stream.load_state(s)
    step = int(state["step"])
    if step > len(losses):
        raise ValueError(f"checkpoint {path} is at step {step}, beyond num_steps={len(losses)}; delete it to retrain.")
    losses[:step] = state["losses"].to(losses.device)
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
    for t in tqdm(range(sched.num_steps - 1, -1, -1), disable=not progress, desc="sample", mininterval=2):
        beta, alpha, ab = (float(v[t]) for v in (sched.betas, sched.alphas, sched.alpha_bars))
        eps_hat = denoise(params, x, torch.full((len(seeds),), float(t), device=device))
        x = (x - beta / math.sqrt(1 - ab) * eps_hat) / math.sqrt(alpha) + math.sqrt(beta) * noise()
    return x.cpu().numpy()
