"""Device choice: CUDA when present, else CPU. Never hard-code a device elsewhere."""

from __future__ import annotations

import platform
from pathlib import Path

import torch


def pick_device(prefer: str | None = None) -> torch.device:
    """Return `prefer` if given ("cpu", "cuda", "cuda:1", ...), else CUDA when available, else CPU.

    Notebooks expose this as a `DEVICE: str = "auto"` parameter; "auto" maps to `prefer=None`.
    """
    if prefer is not None and prefer != "auto":
        try:
            device = torch.device(prefer)
        except RuntimeError:
            raise ValueError(f"DEVICE={prefer!r} is not a device; use 'auto', 'cpu', 'cuda' or 'cuda:N'.") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"DEVICE={prefer!r} was requested but CUDA is not available here; use 'auto' or 'cpu'.")
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo where there is one, else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: torch.device) -> str:
    """A human-readable name for `device`, used in notebook headers and benchmark reports."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({cpu_model()}, {torch.get_num_threads()} threads)"
