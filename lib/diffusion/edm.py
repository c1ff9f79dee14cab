"""EDM's denoiser, loss and deterministic Heun sampler (Karras, Aittala, Aila & Laine 2022, "Elucidating the
Design Space of Diffusion-Based Generative Models"; equation and table numbers are that paper's).

- `Denoiser`: D(x; sigma, c) = c_skip x + c_out F(c_in x; c_noise, c), with c_skip = s^2 / (sigma^2 + s^2),
  c_out = sigma s / sqrt(sigma^2 + s^2), c_in = 1 / sqrt(sigma^2 + s^2), c_noise = ln(sigma) / 4 and s the
  data's standard deviation sigma_data (Table 1, "EDM" column).
- `edm_loss`: E ||D(y + n; sigma) - y||^2 lambda(sigma), ln sigma ~ N(P_mean, P_std^2), lambda = (sigma^2 + s^2)
  / (sigma s)^2 (eq. 8, Table 1).
- `heun_sample`: Algorithm 1 (deterministic, S_churn = 0): the noise levels t_i = (sigma_max^(1/rho) + i / (N - 1)
  (sigma_min^(1/rho) - sigma_max^(1/rho)))^rho, t_N = 0 (eq. 5), Heun's second-order step except at the last;
  2N - 1 evaluations of D for N steps.
- `guided`: classifier-free guidance, D_w = D(x; sigma, empty) + w (D(x; sigma, c) - D(x; sigma, empty)), the
  empty condition being the zero vector that label dropout trains (Ho & Salimans 2022). w = 1 is the plain
  conditional model.

Images live in [-1, 1] (uint8 / 127.5 - 1), so sigma_data = 0.5 as in EDM.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

# D(x (n, 3, H, W), sigma (n,)) -> the denoised x
DenoiseFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Denoiser(nn.Module):
    """EDM's preconditioning around a raw network `net(x, noise_labels, cond)` (a `lib.diffusion.unet.UNet`)."""

    def __init__(self, net: nn.Module, sigma_data: float = 0.5):
        super().__init__()
        self.net, self.sigma_data = net, sigma_data

    def forward(self, x: torch.Tensor, sigma: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        sigma = sigma.to(torch.float32).reshape(-1, 1, 1, 1)
        s2 = self.sigma_data**2
        c_skip = s2 / (sigma**2 + s2)
        c_out = sigma * self.sigma_data / (sigma**2 + s2).sqrt()
        c_in = 1 / (sigma**2 + s2).sqrt()
        out = self.net((c_in * x).to(torch.float32), sigma.log().flatten() / 4, cond)
        return c_skip * x + c_out * out.to(torch.float32)


def edm_loss(denoiser: Denoiser, images: torch.Tensor, cond: torch.Tensor | None, *, generator: torch.Generator,
             p_mean: float = -1.2, p_std: float = 1.2) -> torch.Tensor:
    """The mean over the batch of lambda(sigma) ||D(y + sigma n; sigma, c) - y||^2 / (3 H W) (eq. 8).

    sigma and n are drawn from `generator` on the CPU and moved to the images' device, so a run draws the same
    noise on any device and a resumed run (whose checkpoint holds the generator) the same as an uninterrupted one.
    """
    n = len(images)
    sigma = (torch.randn(n, generator=generator) * p_std + p_mean).exp().to(images.device)
    noise = torch.randn(images.shape, generator=generator).to(images.device)
    s = denoiser.sigma_data
    weight = (sigma**2 + s**2) / (sigma * s) ** 2
    denoised = denoiser(images + sigma.reshape(-1, 1, 1, 1) * noise, sigma, cond)
    return (weight * ((denoised - images) ** 2).mean(dim=(1, 2, 3))).mean()


def noise_levels(steps: int, *, sigma_min: float = 0.002, sigma_max: float = 80.0, rho: float = 7.0) -> np.ndarray:
    """t_0 > ... > t_{N-1} of eq. 5, then t_N = 0: (steps + 1,) float64."""
    if steps < 1:
        raise ValueError(f"steps={steps!r}: the sampler needs at least 1 step.")
    i = np.arange(steps) / max(steps - 1, 1)
    t = (sigma_max ** (1 / rho) + i * (sigma_min ** (1 / rho) - sigma_max ** (1 / rho))) ** rho
    return np.append(t, 0.0)


@torch.no_grad()
def heun_sample(denoise: DenoiseFn, noise: torch.Tensor, *, steps: int = 18, sigma_min: float = 0.002,
                sigma_max: float = 80.0, rho: float = 7.0) -> torch.Tensor:
    """Algorithm 1 of EDM from x_0 = t_0 * noise: the sample (same shape as noise, unclipped)."""
    t = torch.as_tensor(noise_levels(steps, sigma_min=sigma_min, sigma_max=sigma_max, rho=rho),
                        dtype=torch.float64, device=noise.device)
    x = noise.to(torch.float64) * t[0]
    ones = torch.ones(len(noise), dtype=torch.float64, device=noise.device)
    for i in range(steps):
        d = (x - denoise(x.float(), (t[i] * ones).float()).double()) / t[i]
        x_next = x + (t[i + 1] - t[i]) * d
        if t[i + 1] > 0:
            d_next = (x_next - denoise(x_next.float(), (t[i + 1] * ones).float()).double()) / t[i + 1]
            x_next = x + (t[i + 1] - t[i]) * (d + d_next) / 2
        x = x_next
    return x.float()


def guided(denoiser: Denoiser, cond: torch.Tensor | None, guidance: float = 1.0) -> DenoiseFn:
    """D(x; sigma) of the conditioned denoiser: plain for guidance 1 (and for an unconditional net), else
    classifier-free guidance against the zero condition, evaluated in one batch of 2n."""
    if cond is None or guidance == 1.0:
        return lambda x, sigma: denoiser(x, sigma, cond)

    def denoise(x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        both = denoiser(torch.cat([x, x]), torch.cat([sigma, sigma]), torch.cat([cond, torch.zeros_like(cond)]))
        conditional, empty = both.chunk(2)
        return empty + guidance * (conditional - empty)

    return denoise


def to_model_space(images: np.ndarray) -> torch.Tensor:
    """(n, H, W, 3) uint8 -> (n, 3, H, W) float32 in [-1, 1]."""
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 127.5 - 1


def to_uint8(x: torch.Tensor) -> np.ndarray:
    """(n, 3, H, W) in about [-1, 1] -> (n, H, W, 3) uint8, clipped and rounded as EDM saves its images."""
    return ((x.float() * 127.5 + 128).clamp(0, 255).to(torch.uint8)).permute(0, 2, 3, 1).cpu().numpy()
