"""The CIFAR-10 ResNets of He et al. (2016, section 4.2) and the pretrained weights of akamaster.

Architecture (He et al. 2016, "Deep residual learning", CIFAR-10 variant; as in
github.com/akamaster/pytorch_resnet_cifar10): a 3x3 convolution to 16 channels, three stages of
n basic blocks with 16, 32 and 64 channels (stride 2 at the start of stages 2 and 3), global
average pooling and a linear classifier; depth = 6n + 2 (ResNet-20/32/44/56: n = 3/5/7/9).
Shortcuts are "option A": identity, or, where the shape changes, subsample by 2 and zero-pad the
new channels (no parameters). Inputs are RGB in [0, 1] normalised with the ImageNet mean and std
that the weights were trained with (`MEAN`, `STD`).

The weight files are legacy `torch.save` dicts {"state_dict", "best_prec1"} with keys prefixed
`module.` (they were saved from a DataParallel model) and no BatchNorm `num_batches_tracked`.
"""

from __future__ import annotations

import re

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lib.data.files import FILES, data_file
from lib.models.images import IMAGENET_MEAN, IMAGENET_STD, to_tensor

DEPTHS = (20, 32, 44, 56)
MEAN, STD = IMAGENET_MEAN, IMAGENET_STD  # what the weights were trained with
FEATURE_DIM = 64


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers and an option-A shortcut (He et al. 2016, Fig. 2)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.pad = planes - in_planes if (stride != 1 or in_planes != planes) else None

    def shortcut(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad is None:
            return x
        half = self.pad // 2
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, half, self.pad - half))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class CifarResNet(nn.Module):
    """ResNet-(6n+2) for 32x32 images. `forward` gives logits (B, 10); `features` the 64-d pooled layer."""

    def __init__(self, depth: int = 20, num_classes: int = 10):
        super().__init__()
        if (depth - 2) % 6 != 0 or depth < 8:
            raise ValueError(f"depth={depth} is not 6n+2 with n >= 1 (for example 20, 32, 44, 56)")
        n = (depth - 2) // 6
        self.depth = depth
        self.conv1 = nn.Conv2d(3, 16, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._stage(16, 16, n, stride=1)
        self.layer2 = self._stage(16, 32, n, stride=2)
        self.layer3 = self._stage(32, 64, n, stride=2)
        self.linear = nn.Linear(FEATURE_DIM, num_classes)

    @staticmethod
    def _stage(in_planes: int, planes: int, n: int, stride: int) -> nn.Sequential:
        blocks = [BasicBlock(in_planes, planes, stride)] + [BasicBlock(planes, planes) for _ in range(n - 1)]
        return nn.Sequential(*blocks)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, 3, 32, 32) normalised float -> (B, 64) after global average pooling."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        return out.mean(dim=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.features(x))


def weight_file(depth: int) -> str:
    """The registered weight file of ResNet-`depth` (a name under the data root)."""
    if depth not in DEPTHS:
        raise ValueError(f"depth={depth}: pretrained CIFAR-10 ResNets exist for depths {DEPTHS}")
    return next(name for name in FILES if re.search(rf"/resnet{depth}-[0-9a-f]{{8}}\.th$", name))


def load_pretrained(depth: int = 20, device: torch.device | str = "cpu") -> tuple[CifarResNet, float]:
    """ResNet-`depth` with akamaster's CIFAR-10 weights, in eval mode, and the stored accuracy (percent,
    measured by its authors on the lossless test set)."""
    checkpoint = torch.load(data_file(weight_file(depth)), map_location="cpu", weights_only=True)
    state = {k.removeprefix("module."): v for k, v in checkpoint["state_dict"].items()}
    model = CifarResNet(depth)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise ValueError(f"{weight_file(depth)} does not fit ResNet-{depth}: missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]}")
    return model.to(device).eval(), float(checkpoint["best_prec1"])


def to_input(images: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """uint8 (B, 32, 32, 3) RGB -> normalised float32 (B, 3, 32, 32) as the weights expect."""
    return to_tensor(images, MEAN, STD, device)


@torch.no_grad()
def predict(model: CifarResNet, images: np.ndarray, batch_size: int = 500, features: bool = False) -> np.ndarray:
    """Softmax probabilities (B, 10) float32, or the 64-d features with `features=True`, in batches."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(images), batch_size):
        x = to_input(images[start:start + batch_size], device)
        out.append((model.features(x) if features else model(x).softmax(dim=1)).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, FEATURE_DIM if features else 10), np.float32)


def lossless_anchor_accuracy(model: CifarResNet, test_labels: np.ndarray, human_probs: np.ndarray,
                             bins: tuple[float, ...] = (0.5, 0.8, 0.95)) -> dict:
    """Accuracy of `model` on the lossless anchor images, raw and post-stratified to the whole test set.

    The anchors (`cifar10/test_lossless_anchors.npz`) are the only lossless CIFAR-10 test images here,
    but they are not a random sample: most come from CIFAR-10S, chosen among images humans find
    ambiguous (mean CIFAR-10H probability of the official label 0.85, against 0.95 over the test set).
    Their raw accuracy is therefore well below the authors' full-test figure. Post-stratifying by the
    human probability of the official label (strata cut at `bins`), each stratum's anchor accuracy
    weighted by its share of the 10,000 test images, estimates the full lossless test accuracy.
    test_labels: (10000,) int; human_probs: (10000, 10) CIFAR-10H soft labels, same order.
    """
    with np.load(data_file("cifar10/test_lossless_anchors.npz")) as anchors:
        idx, images = anchors["idx"], anchors["x"]
    correct = predict(model, images).argmax(axis=1) == test_labels[idx]
    agreement = human_probs[np.arange(len(test_labels)), test_labels]
    stratum = np.digitize(agreement, bins)
    weights = np.bincount(stratum, minlength=len(bins) + 1) / len(stratum)
    anchor_stratum = stratum[idx]
    if np.any((weights > 0) & (np.bincount(anchor_stratum, minlength=len(bins) + 1) == 0)):
        raise ValueError(f"bins={bins} leave a stratum of the test set without anchor images")
    per_stratum = [correct[anchor_stratum == s].mean() if w > 0 else 0.0 for s, w in enumerate(weights)]
    return {"raw": float(correct.mean()), "post_stratified": float(np.dot(weights, per_stratum)),
            "num_anchors": int(len(idx))}
