"""Image folders as feature arrays, for the commands that take arrays (`python -m lib.prcurves.own`, your own
analysis): one `.npy` of (n, dim) float32 features per folder, from one of notebook 04's extractors.

    python -m lib.irs.embed --extractor resnet20 --image-size 32 --out features/ samples/real samples/member_0 ...

writes features/real.npy, features/member_0.npy, ... (each named after its folder; images are found in the
folder and its subfolders, in sorted order, read as RGB, resized and centre-cropped as `lib.irs.folders` does).
"pixels", "randproj", "randcnn", the CIFAR ResNets and "efficientnet_lite0" run offline; "swav", "inception" and
"dinov2" need `--weights`. Features are cached per folder and extractor. docs/own-models.md (section 01) shows it.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from lib.cache import atomic_write
from lib.cli import check_out_folder, command_parser
from lib.device import pick_device
from lib.irs.features import EXTRACTORS
from lib.irs.folders import folder_extractor, folder_features, image_paths
from lib.params import check_choice, check_int, check_name, path_inside
from lib.progress import progress


def check_folders(folders: list[str]) -> list[str]:
    """Each a folder holding at least one image, and no two with the same name (their files would collide)."""
    if not folders:
        raise ValueError("no folder given: name at least one folder of images.")
    names: dict[str, str] = {}
    for f in folders:
        if not Path(f).is_dir():
            raise ValueError(f"folder {f!r} is not a folder of images.")
        if not image_paths(f):
            raise ValueError(f"folder {f!r} holds no image (looked in it and its subfolders).")
        name = check_name(f"the name of folder {f!r}", Path(f).resolve().name)
        if name in names:
            raise ValueError(f"folders {names[name]!r} and {f!r} have the same name {name!r}: their features would "
                             "be written to one file.")
        names[name] = f
    return folders


def embed_folders(folders: list[str], *, extractor: str = "pixels", weights: str = "", image_size: int = 32,
                  device: torch.device | str | None = None, show_progress: bool = True) -> dict[str, np.ndarray]:
    """{folder name: (n_images, dim) float32 features} of every image in each folder, by `extractor` (one of
    lib.irs.features.EXTRACTORS) on images resized and centre-cropped to `image_size`. Every folder is checked
    (it exists, holds images, no two share a name) before any image is read."""
    check_choice("extractor", extractor, EXTRACTORS)
    check_int("image_size", image_size, minimum=8)
    check_folders(folders)
    ex = folder_extractor(extractor, weights=weights, image_size=image_size, device=device)
    return {Path(f).resolve().name: folder_features(f, ex, image_size, label="embed")
            for f in progress(folders, desc="folders", enabled=show_progress)}


def save(path: Path, arr: np.ndarray) -> None:
    """`arr` as .npy at exactly `path` (np.save given a name would add ".npy" to a temporary file's name)."""
    with open(path, "wb") as fh:
        np.save(fh, arr)


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.irs.embed", __doc__)
    parser.add_argument("folders", nargs="+", help="folders of images, one .npy each")
    parser.add_argument("--extractor", default="pixels", choices=sorted(EXTRACTORS))
    parser.add_argument("--weights", default="", help="TorchScript weights of swav / inception / dinov2")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--device", default="auto", help='"auto" (CUDA when present), "cpu", "cuda", ...')
    parser.add_argument("--out", required=True, help="folder for the .npy files")
    a = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        check_out_folder("--out", a.out)
        feats = embed_folders(a.folders, extractor=a.extractor, weights=a.weights, image_size=a.image_size,
                              device=pick_device(a.device, name="--device"))
    except ValueError as err:
        parser.error(str(err))
    for name, arr in feats.items():
        path = atomic_write(path_inside(a.out, f"{name}.npy", name="folder name"), lambda tmp, x=arr: save(tmp, x))
        print(f"wrote {path}: {arr.shape[0]} images, {arr.shape[1]} features")
    print(f"{time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
