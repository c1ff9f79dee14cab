"""A small EDM-style UNet for 16 x 16 and 32 x 32 images, with three condition paths.

The backbone follows the DDPM++ UNet that EDM trains on CIFAR-10 (Karras et al. 2022, `training/networks.py`:
residual blocks with GroupNorm and SiLU, the noise embedding modulating each block's second normalisation,
self-attention at the coarse resolutions, skips scaled by sqrt(1/2)), at a few per cent of its size.

The condition enters as in EDM2 (Karras et al. 2024, `training/networks_edm2.py`): a vector c is scaled to norm
sqrt(D) (`normalize`), mapped by a bias-free linear layer, and blended with the noise embedding by the
magnitude-preserving sum `mp_sum(noise, label, t=1/2)`. The same path serves

- `condition="none"`: no condition and no label weights at all (the unconditional arm);
- `condition="class"`: a one-hot class (D = number of classes); the zero vector is the unconditional
  branch that label dropout trains and classifier-free guidance samples;
- `condition="feature"`: DiADM (spec 04 §8), the pretrained extractor's feature of one training image, L2
  normalised and multiplied by sqrt(D) inside the network, as the authors' code does (MischaD/Trichotomy,
  `edm2/training/dataset.py` stores the raw feature, `networks_edm2.py` normalises it).

Shapes: x (n, 3, H, W) float32 in about [-1, 1] (times the preconditioning's c_in), noise_labels (n,),
cond (n, D) float32 or None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

CONDITIONS = ("none", "class", "feature")


def normalize(x: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """Each row scaled to norm sqrt(D) (EDM2's `normalize`); a zero row stays zero."""
    norm = torch.linalg.vector_norm(x, dim=1, keepdim=True)
    return x / (eps + norm / math.sqrt(x.shape[1]))


def mp_sum(a: torch.Tensor, b: torch.Tensor, t: float = 0.5) -> torch.Tensor:
    """EDM2's magnitude-preserving blend ((1 - t) a + t b) / sqrt((1 - t)^2 + t^2)."""
    return a.lerp(b, t) / math.sqrt((1 - t) ** 2 + t**2)


def positional_embedding(noise_labels: torch.Tensor, dim: int, max_positions: int = 10_000) -> torch.Tensor:
    """(n,) -> (n, dim): cosines then sines of noise_labels at dim / 2 geometric frequencies (DDPM++)."""
    freqs = torch.arange(dim // 2, dtype=torch.float32, device=noise_labels.device) / (dim // 2)
    x = noise_labels.float().outer((1 / max_positions) ** freqs)
    return torch.cat([x.cos(), x.sin()], dim=1)


def _groups(channels: int) -> int:
    return math.gcd(32, channels) if channels >= 8 else 1


class ResBlock(nn.Module):
    """GroupNorm-SiLU-conv, then a GroupNorm whose scale and shift come from the embedding, SiLU, dropout and a
    zero-initialised conv; skip connection (1x1 conv when the width changes), both scaled by sqrt(1/2)."""

    def __init__(self, in_ch: int, out_ch: int, emb_ch: int, dropout: float = 0.0):
        super().__init__()
        self.norm0, self.conv0 = nn.GroupNorm(_groups(in_ch), in_ch), nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.affine = nn.Linear(emb_ch, 2 * out_ch)
        self.norm1, self.conv1 = nn.GroupNorm(_groups(out_ch), out_ch), nn.Conv2d(out_ch, out_ch, 3, padding=1)
        nn.init.zeros_(self.conv1.weight)
        nn.init.zeros_(self.conv1.bias)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()
        self.dropout = dropout

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = self.conv0(F.silu(self.norm0(x)))
        scale, shift = self.affine(emb)[:, :, None, None].chunk(2, dim=1)
        h = F.silu(torch.addcmul(shift, self.norm1(h), scale + 1))
        h = self.conv1(F.dropout(h, p=self.dropout, training=self.training))
        return (self.skip(x) + h) * math.sqrt(0.5)


class Attention(nn.Module):
    """Single-head self-attention over the H x W positions, residual, scaled by sqrt(1/2)."""

    def __init__(self, ch: int):
        super().__init__()
        self.norm, self.qkv, self.proj = nn.GroupNorm(_groups(ch), ch), nn.Conv2d(ch, 3 * ch, 1), nn.Conv2d(ch, ch, 1)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(n, 3, c, h * w).transpose(2, 3).unbind(1)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, c, h, w)
        return (x + self.proj(a)) * math.sqrt(0.5)


class UNet(nn.Module):
    """F(x, noise_labels, cond): the raw network inside EDM's preconditioning (`lib.diffusion.edm.Denoiser`).

    resolution: image side (16 or 32); channels: width of the first level; channel_mult: width factor per
    level (each level after the first halves the resolution); blocks: residual blocks per level;
    attention_res: resolutions with self-attention; condition / cond_dim: the condition path (module doc);
    dropout: inside the residual blocks.
    """

    def __init__(self, *, resolution: int = 16, channels: int = 64, channel_mult: Sequence[int] = (1, 2, 2),
                 blocks: int = 2, attention_res: Sequence[int] = (4,), condition: str = "none", cond_dim: int = 0,
                 dropout: float = 0.0):
        super().__init__()
        if condition not in CONDITIONS:
            raise ValueError(f"condition={condition!r}: choose from {list(CONDITIONS)}.")
        if (condition == "none") != (cond_dim == 0):
            raise ValueError(f"condition={condition!r} needs cond_dim {'0' if condition == 'none' else '>= 1'}, "
                             f"got {cond_dim}.")
        self.condition, self.cond_dim, self.channels, self.resolution = condition, cond_dim, channels, resolution
        emb = 4 * channels
        self.emb_noise = nn.Sequential(nn.Linear(channels, emb), nn.SiLU(), nn.Linear(emb, emb))
        self.emb_label = nn.Linear(cond_dim, emb, bias=False) if cond_dim else None
        self.conv_in = nn.Conv2d(3, channels, 3, padding=1)
        self.down, self.up, skips, ch, res = nn.ModuleList(), nn.ModuleList(), [channels], channels, resolution
        for level, mult in enumerate(channel_mult):
            for _ in range(blocks):
                self.down.append(self._level_block(ch, channels * mult, emb, res in attention_res, dropout))
                ch = channels * mult
                skips.append(ch)
            if level < len(channel_mult) - 1:
                self.down.append(nn.AvgPool2d(2))
                skips.append(ch)
                res //= 2
        self.mid = nn.ModuleList([ResBlock(ch, ch, emb, dropout), Attention(ch), ResBlock(ch, ch, emb, dropout)])
        for level, mult in reversed(list(enumerate(channel_mult))):
            for _ in range(blocks + 1):
                self.up.append(self._level_block(ch + skips.pop(), channels * mult, emb, res in attention_res,
                                                 dropout))
                ch = channels * mult
            if level > 0:
                self.up.append(nn.Upsample(scale_factor=2, mode="nearest"))
                res *= 2
        self.norm_out, self.conv_out = nn.GroupNorm(_groups(ch), ch), nn.Conv2d(ch, 3, 3, padding=1)
        nn.init.zeros_(self.conv_out.weight)
        nn.init.zeros_(self.conv_out.bias)

    @staticmethod
    def _level_block(in_ch: int, out_ch: int, emb: int, attend: bool, dropout: float) -> nn.ModuleList:
        return nn.ModuleList([ResBlock(in_ch, out_ch, emb, dropout), *([Attention(out_ch)] if attend else [])])

    def embedding(self, noise_labels: torch.Tensor, cond: torch.Tensor | None) -> torch.Tensor:
        """SiLU of the noise embedding, blended with the condition's (mp_sum, t = 1/2) when the net has one."""
        emb = self.emb_noise(positional_embedding(noise_labels, self.channels))
        if self.emb_label is not None:
            if cond is None or cond.shape != (len(noise_labels), self.cond_dim):
                raise ValueError(f"a {self.condition}-conditioned net needs cond of shape "
                                 f"({len(noise_labels)}, {self.cond_dim}), got "
                                 f"{None if cond is None else tuple(cond.shape)}.")
            emb = mp_sum(emb, self.emb_label(normalize(cond.float())))
        elif cond is not None:
            raise ValueError("the unconditional net takes no cond (got a tensor).")
        return F.silu(emb)

    def forward(self, x: torch.Tensor, noise_labels: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        emb = self.embedding(noise_labels, cond)
        h, skips = self.conv_in(x), []
        skips.append(h)
        for block in self.down:
            h = self._run(block, h, emb)
            skips.append(h)
        for block in self.mid:
            h = block(h, emb) if isinstance(block, ResBlock) else block(h)
        for block in self.up:
            h = h if isinstance(block, nn.Upsample) else torch.cat([h, skips.pop()], dim=1)
            h = self._run(block, h, emb)
        return self.conv_out(F.silu(self.norm_out(h)))

    @staticmethod
    def _run(block: nn.Module, h: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        if not isinstance(block, nn.ModuleList):
            return block(h)
        for layer in block:
            h = layer(h, emb) if isinstance(layer, ResBlock) else layer(h)
        return h
