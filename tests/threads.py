"""Thread-count checks shared by the tests: run a computation at 1 and at 2 CPU threads and list what differs,
bit for bit. Use with conftest's `thread_count` fixture, which puts the process-wide thread settings back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def at_one_and_two_threads(thread_count: Callable[[int], int], compute: Callable[[], Any]) -> tuple[Any, Any]:
    """compute() after thread_count(1), then after thread_count(2)."""
    results = []
    for n in (1, 2):
        thread_count(n)
        results.append(compute())
    return results[0], results[1]


def differing(a: Any, b: Any, where: str = "") -> list[str]:
    """The places (dict keys / list indices, dotted) where a and b are not bit-identical: float arrays, tensors,
    modules (by state dict) and numbers; NaN equals NaN."""
    if isinstance(a, torch.nn.Module):
        a, b = a.state_dict(), b.state_dict()
    if isinstance(a, dict):
        if set(a) != set(b):
            return [f"{where}keys"]
        return [d for k in a for d in differing(a[k], b[k], f"{where}{k}.")]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}len"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differing(x, y, f"{where}{i}.")]
    if isinstance(a, torch.Tensor):
        a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if isinstance(a, (np.ndarray, float, int, np.number)):
        a, b = np.asarray(a), np.asarray(b)
        same = a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        name = where.rstrip(".") or "the result"
        return [] if same else [f"{name} (max |diff| {np.max(np.abs(a - b)):.2g})" if a.shape == b.shape
                                else f"{name} (shape)"]
    return []
