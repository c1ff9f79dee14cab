"""A conditional normalising flow as CReL's latent generative model (LGM): a bijection y <-> z given x.

The flow is zuko's conditional neural spline flow (`zuko.flows.NSF`: monotonic rational-quadratic
splines, Durkan et al. 2019) with coupling passes (`passes=2`), so both directions cost one network pass
per transform. Training maximises log p(y | x) = log N(f(y; x); 0, I) + log |det df/dy|.

It has the CVAE's interface (`encode(y, x) -> (code, log-variance)`, `decode(z, x) -> y`, `latent_dim`,
the standardisation buffers), so `lib.crel.cvae.encode_mean`, `decode`, `CReL` and PCP use either LGM.
The differences that matter for CReL:
- the code is exact: Dec(Enc(y; x); x) = y up to float32 rounding, so "y is in the decoded set
  Dec(S(x); x)" is exactly "Enc(y; x) is in S(x)" (`bijective = True`), and Coverage-Y equals
  Coverage-Z on the same pairs (spec 02 §2.3);
- the latent dimension equals the output dimension (r = d); the base distribution is N(0, I), so PCP's
  samples Dec(z; x), z ~ N(0, I), are draws from the fitted conditional law.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
import zuko
from torch import nn

from lib.params import check_int
from lib.train import Epochs, float_rows, make_optimiser, seeded, train_epochs


@dataclass(frozen=True)
class FlowSettings:
    transforms: int = 4  # spline coupling layers
    hidden: tuple[int, ...] = (64, 64)  # hyper-network of each layer
    bins: int = 8  # spline bins
    epochs: int = 60
    batch_size: int = 256
    lr: float = 2e-3


class FlowLGM(nn.Module):
    """z = f(y; x) with standardised x and y inside; `encode` returns (z, zeros) to match the CVAE."""

    bijective = True

    def __init__(self, y_dim: int, x_dim: int, settings: FlowSettings):
        super().__init__()
        check_int("flow transforms", settings.transforms, minimum=1)
        self.latent_dim = y_dim
        self.flow = zuko.flows.NSF(features=y_dim, context=x_dim, transforms=settings.transforms,
                                   bins=settings.bins, hidden_features=tuple(settings.hidden), passes=2)
        for name in ("x_mean", "x_std", "y_mean", "y_std"):
            self.register_buffer(name, torch.zeros(1))

    def set_scaling(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x_mean, self.x_std = x.mean(0), x.std(0).clamp_min(1e-8)
        self.y_mean, self.y_std = y.mean(0), y.std(0).clamp_min(1e-8)

    def _transform(self, x: torch.Tensor):
        return self.flow((x - self.x_mean) / self.x_std).transform

    def encode(self, y: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(z, zeros): the exact code f(y; x), each (n, d), for outputs y: (n, d) given x: (n, p)."""
        z = self._transform(x)((y - self.y_mean) / self.y_std)
        return z, torch.zeros_like(z)

    def decode(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """f^{-1}(z; x): (n, d) in the original output units (differentiable in z)."""
        return self._transform(x).inv(z) * self.y_std + self.y_mean

    def loss(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of the standardised outputs."""
        return -self.flow((x - self.x_mean) / self.x_std).log_prob((y - self.y_mean) / self.y_std).mean()


# The classes a stored flow is made of (zuko's NSF keeps its spline as a functools.partial of the transform
# class): what loading its cache entry may build (lib.cache.load_torch's `allow`)
CACHE_CLASSES = (FlowLGM, nn.ModuleList, nn.ReLU, partial, zuko.flows.NSF,
                 zuko.flows.autoregressive.MaskedAutoregressiveTransform, zuko.lazy.LazyComposedTransform,
                 zuko.lazy.UnconditionalDistribution, zuko.distributions.DiagNormal, zuko.nn.MaskedLinear,
                 zuko.nn.MaskedMLP, zuko.transforms.MonotonicRQSTransform)


def train_flow(x: np.ndarray, y: np.ndarray, *, settings: FlowSettings, seed: int,
               device: torch.device | str = "cpu") -> FlowLGM:
    """Fit the flow on (x: (n, p), y: (n, d)) by maximum likelihood with Adam and a cosine schedule over the epochs;
    returns it in eval mode on CPU."""
    check_int("flow epochs", settings.epochs, minimum=1)
    gen = seeded(seed)
    xt, yt = float_rows(x, y)
    model = FlowLGM(yt.shape[1], xt.shape[1], settings)
    model.set_scaling(xt, yt)
    model.to(device)
    xt, yt = xt.to(device), yt.to(device)

    def batch_loss(idx: torch.Tensor, _epoch: int) -> torch.Tensor:
        loss = model.loss(yt[idx], xt[idx])
        if not torch.isfinite(loss):
            raise FloatingPointError(f"the flow's training loss became {loss.item()} (seed {seed}); lower lr.")
        return loss

    train_epochs(model, batch_loss, make_optimiser(model, lr=settings.lr), num_items=len(xt),
                 plan=Epochs(settings.epochs, settings.batch_size, schedule="cosine_epochs"), generator=gen,
                 index_device=device)
    return model.cpu()
