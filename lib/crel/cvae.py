"""A conditional VAE as CReL's latent generative model (LGM), spec 02 §2.1 step 2 and §3.2.

Encoder E(y, x) -> (mu, log sigma^2) in R^r, decoder Dec(z; x) -> y. The loss is MSE + kl_mult * KL
(mqr `CVAE/models.py`: kl_mult = 0.01, LeakyReLU). CReL's latent code of an output is the encoder
*mean* mu(y, x): it is a deterministic function of (x, y), so exchangeable pairs give exchangeable codes
(spec §3.2, [derivation]). Inputs and outputs are standardised inside the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from lib.nn import mlp, shuffled_batches

SMALL_X_HIDDEN = (32, 64, 128, 256, 128, 64, 32)  # mqr's layers for x_dim <= 5 (spec §3.2)


@dataclass(frozen=True)
class CVAESettings:
    hidden: tuple[int, ...] = SMALL_X_HIDDEN
    epochs: int = 100
    batch_size: int = 256
    lr: float = 1e-3
    kl_mult: float = 0.01


class CVAE(nn.Module):
    """Encoder MLP on [y, x] with mu and log-variance heads; decoder MLP on [Linear(z), x]."""

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

    def loss(self, y: torch.Tensor, x: torch.Tensor, kl_mult: float) -> torch.Tensor:
        mu, logvar = self.encode(y, x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        recon = ((self.decode(z, x) - y) / self.y_std).pow(2).sum(1).mean()
        kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean()
        return recon + kl_mult * kl


def train_cvae(x: np.ndarray, y: np.ndarray, *, latent_dim: int, settings: CVAESettings, seed: int,
               device: torch.device | str = "cpu") -> CVAE:
    """Fit a CVAE on (x: (n, p), y: (n, d)) float arrays with Adam; returns the model in eval mode on CPU."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    xt = torch.as_tensor(np.asarray(x, np.float32).reshape(len(x), -1))
    yt = torch.as_tensor(np.asarray(y, np.float32).reshape(len(y), -1))
    model = CVAE(yt.shape[1], xt.shape[1], latent_dim, settings.hidden)
    model.set_scaling(xt, yt)
    model.to(device)
    xt, yt = xt.to(device), yt.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    model.train()
    for _ in range(settings.epochs):
        for idx in shuffled_batches(len(xt), settings.batch_size, gen, device):
            opt.zero_grad()
            model.loss(yt[idx], xt[idx], settings.kl_mult).backward()
            opt.step()
    return model.cpu().eval()


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
