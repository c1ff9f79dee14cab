"""One image normaliser for every network in the workbook: uint8 (n, H, W, 3) RGB -> float32 (n, 3, H, W).

The CIFAR ResNets (akamaster's weights, notebooks 03 and 04) were trained with the ImageNet channel
statistics, as were the ImageNet extractors of notebook 04, so one pair of constants serves all of them.
"""

from __future__ import annotations

import numpy as np
import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def to_tensor(images: np.ndarray, mean: tuple[float, float, float] = IMAGENET_MEAN,
              std: tuple[float, float, float] = IMAGENET_STD, device: torch.device | str = "cpu") -> torch.Tensor:
    """(n, H, W, 3) uint8 -> (n, 3, H, W) float32 on `device`, scaled to [0, 1] and normalised per channel."""
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise ValueError(f"images must be uint8 (n, H, W, 3), got {images.dtype} {images.shape}")
    x = torch.from_numpy(np.ascontiguousarray(images)).to(device).permute(0, 3, 1, 2).float().div_(255.0)
    return (x - torch.tensor(mean, device=device).view(1, 3, 1, 1)) / torch.tensor(std, device=device).view(1, 3, 1, 1)
