"""The small torch pieces that notebooks 02 and 03 share: an MLP builder and the shuffled minibatch order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
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


def shuffled_batches(n: int, batch_size: int, generator: torch.Generator,
                     device: torch.device | str | None = None) -> Iterator[torch.Tensor]:
    """One epoch's minibatch indices: a permutation of range(n) drawn from `generator`, cut into batches of
    `batch_size` (the last may be smaller). Lazy, so draws made between batches keep their order."""
    order = torch.randperm(n, generator=generator)
    if device is not None:
        order = order.to(device)
    for start in range(0, n, batch_size):
        yield order[start:start + batch_size]
