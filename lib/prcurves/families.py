"""Other model families on the same ring: ensembles of a small VAE and a small normalising flow (beyond the paper).

The paper's Discussion names its own limitation: only DDPMs were trained, and for "GAN, VAE, Flow-based" models
"the nature and magnitude of evaluation uncertainty might differ significantly". This module trains M members of
each family on notebook 01's ring with the DDPM's budget (the same Adam steps, batch size and cosine learning-rate
decay; spec 01 §8), draws `num_generated` samples per member and evaluates them with the same kNN PR curves
(`lib.prcurves.experiment.run_family`, the stage), so that their bands and AUCs stand beside the DDPM's.

- `vae`: a Gaussian VAE, encoder and decoder MLPs 2 -> h -> h -> (2 latent means and log-variances) and
  latent -> h -> h -> 2, a learned output scale per coordinate; loss the negative ELBO (one reparametrised draw);
  a sample is decoder(z) + sigma * eps with z, eps ~ N(0, I).
- `flow`: zuko's neural spline flow (`zuko.flows.NSF`, rational-quadratic coupling transforms, hidden layers h, h);
  loss the negative log-likelihood; a sample is the inverse flow of N(0, I).

Both see the standardised ring (its training mean and sd) and give samples in the ring's units. Member i of a
family starts from `derive_seed(base_seed, FAMILY_STREAM[family], i)` (weights, data order, its own noise) and
samples from `derive_seed(that, SAMPLES_STREAM)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import zuko
from torch import nn

from lib.nn import mlp
from lib.params import check_choice, check_int, check_real
from lib.seeds import derive_seed
from lib.train import Epochs, float_rows, make_optimiser, seeded, train_epochs

FAMILIES = ("vae", "flow")
NAMES = {"vae": "VAE", "flow": "flow (NSF)"}  # as the tables name them
FAMILY_STREAM = {"vae": 7001, "flow": 7002}  # the families' member seeds: derive_seed(base_seed, stream, i)
SAMPLES_STREAM = 1  # a member's sampling noise: derive_seed(member seed, SAMPLES_STREAM)
# key policy (lib.store): bump a family's version with a one-line "vN: what changed" when its values change
VERSION = {"vae": 2, "flow": 2}  # v2: a member records its output scale sigma (the VAE's; NaN for a flow)


@dataclass(frozen=True)
class FamilySettings:
    """The two families' architecture and optimiser; the budget (steps, batch) is the DDPM's."""

    hidden: int = 128  # width of every hidden layer
    latent_dim: int = 2  # the VAE's latent dimension
    transforms: int = 4  # the flow's coupling transforms
    bins: int = 8  # the flow's spline bins
    lr: float = 1e-3  # Adam's learning rate, decayed by a cosine over the steps

    def check(self, name: str = "families") -> None:
        check_int(f"{name}.hidden", self.hidden, minimum=1)
        check_int(f"{name}.latent_dim", self.latent_dim, minimum=1)
        check_int(f"{name}.transforms", self.transforms, minimum=1)
        check_int(f"{name}.bins", self.bins, minimum=2)
        check_real(f"{name}.lr", self.lr, low=0, open_low=True)


class RingVAE(nn.Module):
    """A Gaussian VAE of standardised 2-D points (module docstring)."""

    def __init__(self, settings: FamilySettings):
        super().__init__()
        h, r = settings.hidden, settings.latent_dim
        self.latent_dim = r
        self.encoder = mlp([2, h, h, 2 * r], nn.SiLU)
        self.decoder = mlp([r, h, h, 2], nn.SiLU)
        self.log_sigma = nn.Parameter(torch.full((2,), math.log(0.1)))

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        """The negative ELBO per point (nats, the constant included), one reparametrised draw."""
        mean, log_var = self.encoder(x).chunk(2, dim=1)
        z = mean + torch.randn_like(mean) * (0.5 * log_var).exp()
        recon = self.decoder(z)
        nll = (0.5 * ((x - recon) / self.log_sigma.exp()) ** 2 + self.log_sigma + 0.5 * math.log(2 * math.pi)).sum(1)
        kl = 0.5 * (mean**2 + log_var.exp() - 1 - log_var).sum(1)
        return (nll + kl).mean()

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        z = torch.randn(n, self.latent_dim, generator=generator)
        return self.decoder(z) + self.log_sigma.exp() * torch.randn(n, 2, generator=generator)


class RingFlow(nn.Module):
    """A neural spline flow of standardised 2-D points (module docstring)."""

    def __init__(self, settings: FamilySettings):
        super().__init__()
        self.flow = zuko.flows.NSF(features=2, context=0, transforms=settings.transforms, bins=settings.bins,
                                   hidden_features=(settings.hidden, settings.hidden))

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        """The negative log-likelihood per point (nats)."""
        return -self.flow().log_prob(x).mean()

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        z = torch.randn(n, 2, generator=generator)
        return self.flow().transform.inv(z)


MODELS = {"vae": RingVAE, "flow": RingFlow}


def num_parameters(family: str, settings: FamilySettings) -> int:
    check_choice("family", family, FAMILIES)
    return sum(p.numel() for p in MODELS[family](settings).parameters())


def member_seed(base_seed: int, family: str, member: int) -> int:
    return derive_seed(base_seed, FAMILY_STREAM[family], member)


def train_member(family: str, points: np.ndarray, *, seed: int, num_steps: int, batch_size: int,
                 settings: FamilySettings, progress: bool = False) -> tuple[nn.Module, np.ndarray]:
    """One member trained on `points` (n, 2) for `num_steps` Adam steps of `batch_size` (the last epoch cut short
    at num_steps), learning rate settings.lr decayed by a cosine over the steps. Returns (the model, in eval mode,
    its scaling in `model.shift`/`model.scale`; the mean loss of every epoch)."""
    check_choice("family", family, FAMILIES)
    generator = seeded(seed)
    model = MODELS[family](settings)
    (x,) = float_rows(points)
    shift, scale = x.mean(0), x.std(0)
    x = (x - shift) / scale
    plan = Epochs(epochs=math.ceil(num_steps / math.ceil(len(x) / batch_size)), batch_size=batch_size,
                  schedule=lambda step, total: 0.5 * (1 + math.cos(math.pi * step / num_steps)), max_steps=num_steps)
    history = train_epochs(model, lambda idx, epoch: model.loss(x[idx]), make_optimiser(model, "adam", settings.lr),
                           num_items=len(x), plan=plan, generator=generator, progress=progress,
                           desc=f"{family} member")["history"]
    model.register_buffer("shift", shift)
    model.register_buffer("scale", scale)
    return model, np.asarray(history, np.float32)


def output_scale(model: nn.Module) -> np.ndarray:
    """(2,) the VAE's learned output noise sigma per coordinate, in the ring's units (NaN for a flow, which has
    none): what a VAE adds to every decoded point."""
    if not isinstance(model, RingVAE):
        return np.full(2, np.nan, np.float32)
    return (model.log_sigma.detach().exp() * model.scale).numpy().astype(np.float32)


def sample_member(model: nn.Module, num_samples: int, seed: int) -> np.ndarray:
    """(num_samples, 2) float32 samples of a trained member, in the ring's units, from `seed`."""
    generator = torch.Generator().manual_seed(derive_seed(seed, SAMPLES_STREAM))
    return (model.sample(num_samples, generator) * model.scale + model.shift).numpy().astype(np.float32)
