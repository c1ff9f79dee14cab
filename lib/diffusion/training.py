"""Training and sampling of the image-diffusion family: a recipe, an EMA of the weights, checkpointed training
through `lib.train.train_epochs`, and seeded sampling in batches.

A run is resumable at any epoch: the checkpoint holds the network, its EMA, the optimiser and both random
generators, so an interrupted run resumed equals an uninterrupted one. Snapshots at a fraction of the budget
(25 / 50 / 100 %, say) come from calling `train_denoiser` again with more epochs on the same checkpoint: the
schedule (a linear warm-up, then constant) depends on the step alone, so the staged run is the single run. A
checkpoint only goes forward: one past the epochs asked, or one of another run (the checkpoint records the recipe,
seed, condition and data), is refused, naming the file (`lib.train`); `lib.diffusion.family.trained_weights` trains
a snapshot asked after its run's checkpoint passed it as a run of its own.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from lib.cache import load_torch
from lib.diffusion.edm import Denoiser, edm_loss, guided, heun_sample, to_model_space, to_uint8
from lib.diffusion.unet import UNet
from lib.params import check_finite, check_int, check_real, check_seed
from lib.progress import progress as progress_bar
from lib.train import Epochs, ema_update, make_optimiser, seeded, train_epochs


@dataclass(frozen=True)
class Recipe:
    """The network and its training. EDM's CIFAR-10 recipe trains a 56M-parameter net on 200M images with batch
    512; this one is sized for a laptop CPU (1.6M parameters at channels 32, 16 x 16 images)."""

    channels: int = 32
    channel_mult: tuple[int, ...] = (1, 2, 2)
    blocks: int = 2
    attention_res: tuple[int, ...] = (4,)
    dropout: float = 0.0
    batch_size: int = 128
    lr: float = 1e-3  # Adam
    warmup_steps: int = 200  # linear warm-up of the learning rate, then constant
    ema_decay: float = 0.999  # lib.train.ema_update, with its warm-up
    label_dropout: float = 0.0  # probability of the empty condition in training (classifier-free guidance)
    xflip: bool = True  # random horizontal flips, as EDM's CIFAR-10 runs
    p_mean: float = -1.2
    p_std: float = 1.2
    sigma_data: float = 0.5

    def key(self) -> dict:
        return {**asdict(self), "version": 1}


def validate_recipe(recipe: Recipe) -> None:
    check_int("channels", recipe.channels, minimum=8)
    check_int("batch_size", recipe.batch_size, minimum=1)
    check_real("lr", recipe.lr, low=0.0, open_low=True)
    check_real("ema_decay", recipe.ema_decay, low=0.0, high=1.0)
    check_real("label_dropout", recipe.label_dropout, low=0.0, high=1.0, open_high=True)


def build_denoiser(recipe: Recipe, *, resolution: int, condition: str = "none", cond_dim: int = 0) -> Denoiser:
    """A freshly initialised `Denoiser` around a `UNet` of the recipe's shape (torch's global generator
    initialises it: seed it first)."""
    net = UNet(resolution=resolution, channels=recipe.channels, channel_mult=recipe.channel_mult,
               blocks=recipe.blocks, attention_res=recipe.attention_res, condition=condition, cond_dim=cond_dim,
               dropout=recipe.dropout)
    return Denoiser(net, sigma_data=recipe.sigma_data)


class WithEMA(nn.Module):
    """The trained denoiser and its exponential moving average (frozen, so the optimiser leaves it alone and the
    checkpoint carries it)."""

    def __init__(self, model: Denoiser):
        super().__init__()
        self.model, self.ema = model, copy.deepcopy(model).requires_grad_(False)

    def update(self, decay: float, step: int) -> None:
        with torch.no_grad():
            for average, current in zip(self.ema.parameters(), self.model.parameters()):
                ema_update(average, current, decay, step)


def one_hot(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """(n,) int -> (n, num_classes) float32 rows of a one-hot class condition."""
    return np.eye(num_classes, dtype=np.float32)[np.asarray(labels, dtype=np.int64)]


def _batch_loss(trainer: WithEMA, data: torch.Tensor, conds: torch.Tensor | None, recipe: Recipe,
                generator: torch.Generator):
    """The EDM loss of a batch: flips, label dropout, noise levels and noise all drawn from `generator`."""
    device = data.device

    def loss(idx: torch.Tensor, epoch: int) -> torch.Tensor:
        x = data[idx]
        if recipe.xflip:
            flip = (torch.rand(len(idx), generator=generator) < 0.5).to(device)
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
        c = None if conds is None else conds[idx]
        if c is not None and recipe.label_dropout > 0:
            keep = (torch.rand(len(idx), generator=generator) >= recipe.label_dropout).to(device)
            c = c * keep[:, None]
        return edm_loss(trainer.model, x, c, generator=generator, p_mean=recipe.p_mean, p_std=recipe.p_std)

    return loss


def _checked_images(images: np.ndarray) -> np.ndarray:
    """The training images, (n, H, W, 3) uint8 with H = W; any other dtype is refused (float images in [0, 1]
    would be read as near-black pixels)."""
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(f"images of dtype {images.dtype}: train_denoiser takes uint8 pixels in [0, 255]; convert "
                         "float images in [0, 1] with (x * 255).round().astype(np.uint8).")
    if images.ndim != 4 or images.shape[3] != 3 or images.shape[1] != images.shape[2] or not len(images):
        raise ValueError(f"images of shape {images.shape}: expected (n, H, W, 3) with n >= 1 and H = W.")
    return images


def _checked_conds(name: str, conds: np.ndarray | None, condition: str, n: int, dim: int | None = None):
    """conds as (n, D) float32 (D = `dim` when given), finite, or None for condition "none"; else a ValueError
    naming `name` (a NaN condition trains NaN weights and samples blank images)."""
    if condition == "none":
        if conds is not None:
            raise ValueError(f"condition='none' takes no {name}, got one of shape {np.shape(conds)}.")
        return None
    shape = None if conds is None else np.shape(conds)
    if shape is None or len(shape) != 2 or shape[0] != n or (dim is not None and shape[1] != dim):
        raise ValueError(f"condition={condition!r} needs {name} of shape ({n}, {'D' if dim is None else dim}), "
                         f"got {shape}.")
    return check_finite(name, np.asarray(conds, np.float32))


def run_config(images: np.ndarray, conds: np.ndarray | None, recipe: Recipe, *, condition: str, seed: int) -> dict:
    """What a training run depends on besides its length, as its checkpoint records it (`lib.train.train_epochs`):
    the recipe, the seed, the condition, and the images and conditions by SHA-256 and shape."""
    return {"recipe": recipe.key(), "seed": seed, "condition": condition, "images": images, "conds": conds}


def train_denoiser(images: np.ndarray, conds: np.ndarray | None, recipe: Recipe, *, condition: str, epochs: int,
                   seed: int, checkpoint: Path | None = None, device: torch.device | str = "cpu",
                   progress: bool = False, max_steps: int | None = None) -> dict:
    """Train on images (n, H, W, 3) uint8 with conds (n, D) float32, finite (None for condition="none") for
    `epochs` epochs of the recipe's batches, resuming from `checkpoint` where it holds an earlier state of this run
    (`run_config` is recorded there: a checkpoint of another run, or past `epochs`, is refused, naming the file).

    Returns {"ema": the EMA denoiser's state_dict (float32, CPU), "history": mean loss per epoch,
    "epoch_seconds", "steps", "images_seen" (the images of every batch trained on), "parameters"}."""
    validate_recipe(recipe)
    check_int("epochs", epochs, minimum=1)
    seed = check_seed("seed", seed)
    images = _checked_images(images)
    conds = _checked_conds("conds", conds, condition, len(images))
    generator = seeded(seed)
    model = build_denoiser(recipe, resolution=images.shape[1], condition=condition,
                           cond_dim=0 if conds is None else conds.shape[1])
    trainer = WithEMA(model).to(device)
    data = to_model_space(images).to(device)
    cond_t = None if conds is None else torch.as_tensor(conds).to(device)
    optimiser = make_optimiser(trainer.model, "adam", lr=recipe.lr)
    plan = Epochs(epochs=epochs, batch_size=recipe.batch_size, drop_last=True, max_steps=max_steps,
                  schedule=lambda step, total: min(1.0, (step + 1) / max(recipe.warmup_steps, 1)))
    out = train_epochs(trainer, _batch_loss(trainer, data, cond_t, recipe, generator), optimiser,
                       num_items=len(images), plan=plan, generator=generator, index_device=device,
                       checkpoint=checkpoint, progress=progress, desc=f"diffusion ({condition})",
                       after_step=lambda step: trainer.update(recipe.ema_decay, step),
                       config=run_config(images, conds, recipe, condition=condition, seed=seed))
    images_seen = out.pop("items_seen")
    return {"ema": {k: v.detach().cpu() for k, v in trainer.ema.state_dict().items()}, **out,
            "images_seen": images_seen, "parameters": sum(p.numel() for p in model.parameters())}


def _weights_of(path: Path) -> dict:
    """The denoiser weights in a file: a `trained_weights` entry ({"ema": state, ...}) or a bare state_dict."""
    saved = load_torch(path)
    state = saved.get("ema", saved) if isinstance(saved, dict) else None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        keys = sorted(saved)[:5] if isinstance(saved, dict) else type(saved).__name__
        raise ValueError(f"{path}: no denoiser weights (it holds {keys}; expected the \"ema\" state of "
                         "lib.diffusion.family.trained_weights, or a state_dict).")
    return state


def load_denoiser(state: dict | Path, recipe: Recipe, *, resolution: int, condition: str, cond_dim: int,
                  device: torch.device | str = "cpu") -> Denoiser:
    """A `Denoiser` with the weights `state` (`train_denoiser`'s "ema", or a file holding them), in eval mode on
    `device`; weights of another shape are refused, naming the file."""
    source = "the weights given"
    if isinstance(state, (str, Path)):
        source, state = str(state), _weights_of(Path(state))
    model = build_denoiser(recipe, resolution=resolution, condition=condition, cond_dim=cond_dim)
    try:
        model.load_state_dict({k: v.float() for k, v in state.items()})
    except RuntimeError as err:
        cause = " ".join(str(err).split())[:300]
        raise ValueError(f"{source} do not fit a {condition!r} denoiser of channels {recipe.channels} at "
                         f"{resolution} x {resolution} with cond_dim {cond_dim} ({cause}).") from None
    return model.to(device).eval()


def sample(denoiser: Denoiser, n: int, *, cond: np.ndarray | None = None, guidance: float = 1.0, steps: int = 18,
           seed: int, batch_size: int = 500, progress: bool = False) -> np.ndarray:
    """n images (n, H, W, 3) uint8 from EDM's Heun sampler; cond (n, D) float32, finite, for a conditioned net (a
    zero row samples the empty condition). The starting noise is drawn at once on the CPU from `seed`, so the
    samples do not depend on batch_size or, up to float rounding, on the device."""
    check_int("n", n, minimum=1)
    check_real("guidance", guidance, low=0.0)
    check_int("steps", steps, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    seed = check_seed("seed", seed)
    net = denoiser.net
    cond = _checked_conds("cond", cond, net.condition, n, net.cond_dim)
    device = next(denoiser.parameters()).device
    noise = torch.randn((n, 3, net.resolution, net.resolution), generator=torch.Generator().manual_seed(seed))
    out = []
    for start in progress_bar(range(0, n, batch_size), desc="sampling", enabled=progress):
        stop = min(n, start + batch_size)
        c = None if cond is None else torch.as_tensor(cond[start:stop]).to(device)
        x = heun_sample(guided(denoiser, c, guidance), noise[start:stop].to(device), steps=steps)
        out.append(to_uint8(x))
    return np.concatenate(out)
