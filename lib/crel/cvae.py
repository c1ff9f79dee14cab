"""A conditional VAE as CReL's latent generative model (LGM), spec 02 §2.1 step 2 and §3.2.

Encoder E(y, x) -> (mu, log sigma^2) in R^r, decoder Dec(z; x) -> y. The loss is MSE + kl_mult * KL
(mqr `CVAE/models.py`: kl_mult = 0.01, LeakyReLU). CReL's latent code of an output is the encoder
*mean* mu(y, x): it is a deterministic function of (x, y), so exchangeable pairs give exchangeable codes
(spec §3.2, [derivation]). Inputs and outputs are standardised inside the model.

Posterior collapse: at kl_mult = 0.01 one of the two latent dimensions of the banana CVAE can
die (KL 0.001 nats, the decoder ignores it), so the decoded set is a curve and CReL's Coverage-Y is 0.
Two remedies are settings here: a linear KL warm-up over `kl_warmup_epochs` and "free bits" (Kingma et
al. 2016): each dimension's batch-mean KL below `free_bits` nats costs nothing, so the KL term never pushes
a dimension below that floor. `latent_kl` measures the per-dimension KL and `check_collapse` reports a
dimension below a threshold (a `CollapseWarning`, or an error) naming the seed and the dimension.

KL alone misses two cases measured on the `cpu` preset (seeds 1 and 3 at kl_mult 1e-3 with warm-up): a
dimension with 0.18 or 0.07 nats, above a 0.05 floor, that the decoder nonetheless ignores, and any dimension
held at the free-bits floor (free_bits 0.5 or 2.0 kept seed 1's dimension at 0.49 / 1.93 nats with the
decoder still ignoring it; Coverage-Y 0.09 / 0.13). The guard therefore also measures the decoder: a
dimension whose `decoder_sensitivity` is below `sensitivity_threshold` times the largest dimension's is
reported dead (healthy seeds: ratios 0.57-0.89; collapsed: 0.008-0.03).

Whether a training collapses depends on its initialisation more than on the data: over 5 seeds x 3
initialisations of the `cpu` preset, 3 of 15 trainings collapsed. `lib.crel.experiment.healthy_lgm` therefore
trains a collapsed CVAE again from another initialisation (`dead_dimensions` is the guard without the warning).
Measured alternatives that did not do better: a smaller learning rate or batch (seed 3 still
collapses), batch-normalised posterior means (no collapse, but a 2-8x larger round-trip error), and the full
ELBO with a learned decoder variance (every seed collapses).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from lib.nn import mlp
from lib.train import Epochs, float_rows, make_optimiser, seeded, train_epochs

SMALL_X_HIDDEN = (32, 64, 128, 256, 128, 64, 32)  # mqr's layers for x_dim <= 5 (spec §3.2)


@dataclass(frozen=True)
class CVAESettings:
    hidden: tuple[int, ...] = SMALL_X_HIDDEN
    epochs: int = 100
    batch_size: int = 256
    lr: float = 1e-3
    kl_mult: float = 0.01
    kl_warmup_epochs: int = 0  # the KL weight grows linearly from 0 to kl_mult over these epochs
    free_bits: float = 0.0  # nats per latent dimension that the KL term does not penalise


class CollapseWarning(UserWarning):
    """A latent dimension of a CVAE carries (almost) no information: its mean KL is below the threshold."""


class CVAE(nn.Module):
    """Encoder MLP on [y, x] with mu and log-variance heads; decoder MLP on [Linear(z), x]."""

    bijective = False

    def __init__(self, y_dim: int, x_dim: int, latent_dim: int, hidden: tuple[int, ...]):
        super().__init__()
        h = list(hidden)
        self.latent_dim = latent_dim
        self.encoder = mlp([y_dim + x_dim, *h], nn.LeakyReLU, negative_slope=0.2)
        self.act = nn.LeakyReLU(0.2)
        self.mu = nn.Linear(h[-1], latent_dim)
        self.logvar = nn.Linear(h[-1], latent_dim)
        self.z_in = nn.Linear(latent_dim, h[0])
        self.decoder = mlp([h[0] + x_dim, *h, y_dim], nn.LeakyReLU, negative_slope=0.2)
        for name in ("x_mean", "x_std", "y_mean", "y_std"):
            self.register_buffer(name, torch.zeros(1))

    def set_scaling(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x_mean, self.x_std = x.mean(0), x.std(0).clamp_min(1e-8)
        self.y_mean, self.y_std = y.mean(0), y.std(0).clamp_min(1e-8)

    def encode(self, y: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mu, logvar), each (n, r), of outputs y: (n, d) given conditions x: (n, p)."""
        xs, ys = (x - self.x_mean) / self.x_std, (y - self.y_mean) / self.y_std
        h = self.act(self.encoder(torch.cat([ys, xs], 1)))
        return self.mu(h), self.logvar(h)

    def decode(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Dec(z; x): (n, d) in the original output units, from z: (n, r) and x: (n, p)."""
        xs = (x - self.x_mean) / self.x_std
        ys = self.decoder(torch.cat([self.z_in(z), xs], 1))
        return ys * self.y_std + self.y_mean

    def loss(self, y: torch.Tensor, x: torch.Tensor, kl_mult: float, free_bits: float = 0.0) -> torch.Tensor:
        mu, logvar = self.encode(y, x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        recon = ((self.decode(z, x) - y) / self.y_std).pow(2).sum(1).mean()
        kl_dim = _kl_per_dimension(mu, logvar)
        kl = kl_dim.clamp_min(free_bits).sum() if free_bits > 0 else kl_dim.sum()
        return recon + kl_mult * kl


# The classes a stored CVAE is made of: what loading its cache entry may build (lib.cache.load_torch's `allow`)
CACHE_CLASSES = (CVAE, nn.Sequential, nn.Linear, nn.LeakyReLU)


def train_cvae(x: np.ndarray, y: np.ndarray, *, latent_dim: int, settings: CVAESettings, seed: int,
               device: torch.device | str = "cpu") -> CVAE:
    """Fit a CVAE on (x: (n, p), y: (n, d)) float arrays with Adam; returns the model in eval mode on CPU."""
    gen = seeded(seed)
    xt, yt = float_rows(x, y)
    model = CVAE(yt.shape[1], xt.shape[1], latent_dim, settings.hidden)
    model.set_scaling(xt, yt)
    model.to(device)
    xt, yt = xt.to(device), yt.to(device)

    def batch_loss(idx: torch.Tensor, epoch: int) -> torch.Tensor:
        warm = min(1.0, (epoch + 1) / settings.kl_warmup_epochs) if settings.kl_warmup_epochs > 0 else 1.0
        return model.loss(yt[idx], xt[idx], settings.kl_mult * warm, settings.free_bits)

    train_epochs(model, batch_loss, make_optimiser(model, lr=settings.lr), num_items=len(xt),
                 plan=Epochs(settings.epochs, settings.batch_size), generator=gen, index_device=device)
    return model.cpu()


@torch.no_grad()
def latent_kl(model: CVAE, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(r,) mean KL(q(z | y, x) || N(0, I)) of each latent dimension over the pairs (y: (n, d), x: (n, p))."""
    yt = torch.as_tensor(np.asarray(y, np.float32).reshape(len(y), -1))
    xt = torch.as_tensor(np.asarray(x, np.float32).reshape(len(y), -1))
    return _kl_per_dimension(*model.encode(yt, xt)).double().numpy()


def _kl_per_dimension(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """(r,) KL(N(mu, exp(logvar)) || N(0, 1)) of each latent dimension, averaged over the rows of mu, logvar: (n, r)."""
    return (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp())).mean(0)


@torch.no_grad()
def decoder_sensitivity(model: CVAE, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(r,) how much the decoder uses each latent dimension: the median over the pairs of
    ||Dec(mu + e_j; x) - Dec(mu - e_j; x)|| / 2, mu the encoder mean and e_j one prior standard deviation along
    dimension j (output units)."""
    yt = torch.as_tensor(np.asarray(y, np.float32).reshape(len(y), -1))
    xt = torch.as_tensor(np.asarray(x, np.float32).reshape(len(y), -1))
    mu = model.encode(yt, xt)[0]
    out = []
    for j in range(mu.shape[1]):
        e = torch.zeros_like(mu)
        e[:, j] = 1.0
        out.append(float(torch.linalg.vector_norm(model.decode(mu + e, xt) - model.decode(mu - e, xt), dim=1)
                         .median()) / 2)
    return np.array(out)


def dead_dimensions(model: nn.Module, y: np.ndarray, x: np.ndarray, *, threshold: float = 0.05,
                    sensitivity_threshold: float = 0.1) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(dead dimensions, per-dimension KL, relative decoder sensitivity) on (y, x), silently: a dimension is dead
    when its mean KL is below `threshold` nats or its decoder sensitivity is below `sensitivity_threshold` times
    the largest dimension's. Bijective LGMs (the flow) cannot collapse: ([], empty, empty)."""
    if getattr(model, "bijective", False):
        return [], np.zeros(0), np.zeros(0)
    kl = latent_kl(model, y, x)
    sens = decoder_sensitivity(model, y, x)
    rel = sens / max(float(sens.max()), 1e-12)
    return [int(j) for j in np.nonzero((kl < threshold) | (rel < sensitivity_threshold))[0]], kl, rel


def check_collapse(model: nn.Module, y: np.ndarray, x: np.ndarray, *, seed: int | str, threshold: float = 0.05,
                   sensitivity_threshold: float = 0.1, error: bool = False, trainings: int = 1) -> list[int]:
    """The collapse guard: `dead_dimensions`, reported as a `CollapseWarning` (or a ValueError with
    `error=True`) naming the seed, the dimension, its KL and its relative sensitivity. `trainings`: how many
    trainings with other initialisations collapsed as well (said in the message). Returns the dead dimensions."""
    dead, kl, rel = dead_dimensions(model, y, x, threshold=threshold, sensitivity_threshold=sensitivity_threshold)
    if dead:
        tried = f"; all {trainings} trainings with different initialisations collapsed" if trainings > 1 else ""
        msg = (f"CVAE posterior collapse (seed {seed}): latent dimension(s) {dead} have mean KL "
               f"{', '.join(f'{kl[j]:.2g}' for j in dead)} nats (floor {threshold}) and decoder sensitivity "
               f"{', '.join(f'{rel[j]:.2g}' for j in dead)} of the largest (floor {sensitivity_threshold}){tried}; "
               "the decoder ignores them, so the decoded set is degenerate. Try more cvae_restarts, a smaller "
               "kl_mult with kl_warmup_epochs, another seed, or LGM='flow'.")
        if error:
            raise ValueError(msg)
        warnings.warn(msg, CollapseWarning, stacklevel=2)
    return dead


@torch.no_grad()
def encode_mean(model: CVAE, y: np.ndarray, x: np.ndarray, batch: int = 65_536) -> np.ndarray:
    """Latent codes Z = mu(y, x): (n, r) float64 (the deterministic code CReL calibrates, §3.2)."""
    out = []
    for s in range(0, len(y), batch):
        yt = torch.as_tensor(np.asarray(y[s:s + batch], np.float32).reshape(-1, model.y_mean.numel()))
        xt = torch.as_tensor(np.asarray(x[s:s + batch], np.float32).reshape(len(yt), -1))
        out.append(model.encode(yt, xt)[0].double().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.latent_dim))


@torch.no_grad()
def decode(model: CVAE, z: np.ndarray, x: np.ndarray, batch: int = 65_536) -> np.ndarray:
    """Dec(z; x): (n, d) float64 for z: (n, r), x: (n, p)."""
    out = []
    for s in range(0, len(z), batch):
        zt = torch.as_tensor(np.asarray(z[s:s + batch], np.float32))
        xt = torch.as_tensor(np.asarray(x[s:s + batch], np.float32).reshape(len(zt), -1))
        out.append(model.decode(zt, xt).double().numpy())
    return np.concatenate(out)
