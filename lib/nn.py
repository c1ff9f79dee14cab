"""The small MLPs of notebooks 02 and 03 (their training loop is `lib.train`)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn


def mlp(sizes: Sequence[int], activation: type[nn.Module] = nn.LeakyReLU, **activation_kwargs) -> nn.Sequential:
    """Linear layers sizes[0] -> ... -> sizes[-1] with `activation(**activation_kwargs)` between them (none
    after the last), e.g. `mlp([4, 64, 64, 1], nn.LeakyReLU, negative_slope=0.2)`."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(activation(**activation_kwargs))
    return nn.Sequential(*layers)
