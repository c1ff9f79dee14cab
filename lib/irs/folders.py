"""The paper-scale IRS as a command: three image folders (training set, held-out real images, generated
images) and one extractor, e.g. ImageNet-1k train / val, 50,000 samples of a model and SwAV (spec §2.1, §7).

    python -m lib.irs.folders --train /data/imagenet/train --real /data/imagenet/val \\
        --fake /data/samples/edm2-xl --extractor swav --weights /models/swav_rn50.ts --n 50000

Features are cached per folder and extractor (`data/cache/04/folder-*`), so a second generator against the
same training set only extracts its own images. Notebook 04 runs the same method on CIFAR-10 offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from lib.cache import cache_path
from lib.cli import command_parser
from lib.device import pick_device
from lib.irs.features import CACHE_NAMESPACE, EXTRACTORS, WITH_USER_WEIGHTS, get_extractor
from lib.irs.method import ALPHA_E, image_retrieval_score
from lib.params import check_choice, check_int, check_real
from lib.run import pinned_npz

SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".JPEG"}


@dataclass(frozen=True)
class FolderSettings:
    train_dir: str
    real_dir: str
    fake_dir: str
    extractor: str = "swav"  # the paper's; "inception" and "dinov2" also need --weights
    weights: str = ""  # TorchScript weights of the extractor (see lib.irs.features)
    image_size: int = 224
    n: int = 50_000  # generated images used (the real set is brought to the same n)
    alpha_e: float = ALPHA_E


def validate(s: FolderSettings) -> None:
    """Every folder exists and the settings are in range, before any image is read."""
    for name in ("train_dir", "real_dir", "fake_dir"):
        if not Path(getattr(s, name)).is_dir():
            raise ValueError(f"{name}={getattr(s, name)!r} is not a folder of images.")
    check_choice("extractor", s.extractor, EXTRACTORS)
    check_int("image_size", s.image_size, minimum=8)
    check_int("n", s.n, minimum=2)
    check_real("alpha_e", s.alpha_e, low=0.0, high=0.5, open_low=True, open_high=True)


def iter_image_folder(root: str, image_size: int, batch: int = 256) -> Iterator[np.ndarray]:
    """uint8 batches (b, image_size, image_size, 3) of every image under `root` (sorted paths): RGB, shorter
    side resized to image_size (bicubic), centre-cropped; the paper-scale input (spec §2.1 step 1, §7)."""
    from PIL import Image

    paths = sorted(p for p in Path(root).rglob("*") if p.suffix in SUFFIXES)
    if not paths:
        raise ValueError(f"no images found under {root!r} (looked for {sorted(SUFFIXES)}).")
    buf = []
    for p in paths:
        img = Image.open(p).convert("RGB")
        scale = image_size / min(img.size)
        img = img.resize((max(image_size, round(img.width * scale)), max(image_size, round(img.height * scale))),
                         Image.BICUBIC)
        left, top = (img.width - image_size) // 2, (img.height - image_size) // 2
        buf.append(np.asarray(img.crop((left, top, left + image_size, top + image_size))))
        if len(buf) == batch:
            yield np.stack(buf)
            buf = []
    if buf:
        yield np.stack(buf)


def folder_score(s: FolderSettings, device: torch.device | str | None = None) -> dict:
    """IRS of a generator from three image folders: cached features (extracted on `device`, default CPU),
    then `image_retrieval_score` (equal n, every chunk of the generated set, no centring: the authors'
    unnormalised Euclidean 1-NN)."""
    validate(s)
    options = {}
    if s.extractor in WITH_USER_WEIGHTS:
        options = {"weights": s.weights or None, "image_size": s.image_size}
    elif s.extractor == "efficientnet_lite0":
        options = {"image_size": s.image_size}
    ex = get_extractor(s.extractor, device=device, **options)
    feats = {}
    for name in ("train_dir", "real_dir", "fake_dir"):
        folder = str(Path(getattr(s, name)).resolve())
        key = {"extractor": ex.key, "folder": folder, "image_size": s.image_size}
        path = cache_path(CACHE_NAMESPACE, f"folder-{ex.name}-{name}", key, ".npz")
        feats[name] = pinned_npz(path, lambda f=folder: {"feats": ex.extract_batches(  # the cache alone
            iter_image_folder(f, s.image_size))})["feats"]
    return image_retrieval_score(feats["train_dir"], feats["real_dir"], feats["fake_dir"][: s.n], s.alpha_e,
                                 center=False)


def summary(result: dict) -> dict:
    """The numbers a reader wants from `folder_score`: IRS_inf of both sets and the adjusted score."""
    pick = lambda r: {k: r[k] for k in ("irs_alpha", "estimate", "lower", "upper", "k_distinct")}  # noqa: E731
    return {"n": result["n"], "real": pick(result["real"]), "fake": pick(result["fake"]),
            "adjusted": result["adjusted"]}


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.irs.folders", __doc__)
    parser.add_argument("--train", required=True, help="training images (the retrieval database)")
    parser.add_argument("--real", required=True, help="held-out real images (the measurement-gap reference)")
    parser.add_argument("--fake", required=True, help="generated images")
    parser.add_argument("--extractor", default="swav", choices=sorted(EXTRACTORS))
    parser.add_argument("--weights", default="", help="TorchScript weights of swav / inception / dinov2")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--alpha-e", type=float, default=ALPHA_E)
    parser.add_argument("--device", default="auto", help='"auto" (CUDA when present), "cpu", "cuda", ...')
    a = parser.parse_args(argv)
    s = FolderSettings(a.train, a.real, a.fake, a.extractor, a.weights, a.image_size, a.n, a.alpha_e)
    device = pick_device(a.device, name="--device")
    print(json.dumps({"settings": asdict(s), "device": str(device), **summary(folder_score(s, device))}, indent=1,
                     default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
