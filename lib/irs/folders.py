"""The paper-scale IRS as a command: three image folders (training set, held-out real images, generated
images) and one extractor, e.g. ImageNet-1k train / val, 50,000 samples of a model and SwAV (spec §2.1, §7).

    python -m lib.irs.folders --train /data/imagenet/train --real /data/imagenet/val \\
        --fake /data/samples/edm2-xl --extractor swav --weights /models/swav_rn50.ts --n 50000 --out runs/own-04

Features are cached per folder and extractor (`data/cache/04/folder-*`), so a second generator against the
same training set only extracts its own images. Notebook 04 runs the same method on CIFAR-10 offline. It prints
IRS_inf of the real and generated sets and IRS_inf,a as JSON; with `--out` it writes them (and every chunk's
IRS_inf,a) as `results.json` with `figure.png`. docs/own-models.md shows it on the example folders.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from lib.cli import check_out_folder, command_parser, write_outputs
from lib.device import pick_device
from lib.irs.features import EXTRACTORS, WITH_USER_WEIGHTS, Extractor, get_extractor
from lib.irs.method import ALPHA_E, image_retrieval_score
from lib.irs.stages import FOLDER_FEATURES
from lib.params import check_choice, check_int, check_real
from lib.run import pinned

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
    """Every folder exists and holds images (at least 2 held-out real and 2 generated ones: the estimator needs
    n >= 2), and the settings are in range, before any image is read."""
    for name in ("train_dir", "real_dir", "fake_dir"):
        if not Path(getattr(s, name)).is_dir():
            raise ValueError(f"{name}={getattr(s, name)!r} is not a folder of images.")
        count = len(image_paths(getattr(s, name)))
        if count < (1 if name == "train_dir" else 2):
            raise ValueError(f"{name}={getattr(s, name)!r} holds {count} image(s) (looked for {sorted(SUFFIXES)} "
                             f"in it and its subfolders); it needs at least {1 if name == 'train_dir' else 2}.")
    check_choice("extractor", s.extractor, EXTRACTORS)
    check_int("image_size", s.image_size, minimum=8)
    check_int("n", s.n, minimum=2)
    check_real("alpha_e", s.alpha_e, low=0.0, high=0.5, open_low=True, open_high=True)


def image_paths(root: str) -> list[Path]:
    """Every image file under `root` and its subfolders (by suffix, SUFFIXES), in sorted order."""
    return sorted(p for p in Path(root).rglob("*") if p.suffix in SUFFIXES and p.is_file())


def folder_listing(root: str) -> str:
    """A digest of the folder's images (relative path, size, modification time of each): part of the features'
    cache key, so that images added, removed or rewritten in a folder are extracted again, not read stale."""
    digest = hashlib.sha256()
    for p in image_paths(root):
        st = p.stat()
        digest.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def iter_image_folder(root: str, image_size: int, batch: int = 256) -> Iterator[np.ndarray]:
    """uint8 batches (b, image_size, image_size, 3) of every image under `root` (sorted paths): RGB, shorter
    side resized to image_size (bicubic), centre-cropped; the paper-scale input (spec §2.1 step 1, §7)."""
    from PIL import Image

    paths = image_paths(root)
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


def folder_extractor(name: str, *, weights: str = "", image_size: int = 224,
                     device: torch.device | str | None = None) -> Extractor:
    """The extractor `name` with the options a folder command passes it: the user's weights and the image size
    for swav / inception / dinov2, the image size for efficientnet_lite0, none for the others."""
    options = {}
    if name in WITH_USER_WEIGHTS:
        options = {"weights": weights or None, "image_size": image_size}
    elif name == "efficientnet_lite0":
        options = {"image_size": image_size}
    return get_extractor(name, device=device, **options)


def folder_features(folder: str, ex: Extractor, image_size: int, *, label: str) -> np.ndarray:
    """(n, dim) float32 features of every image under `folder` (`iter_image_folder`), cached per folder, its
    listing and the extractor (`data/cache/04/folder-<extractor>-<label>-*`)."""
    folder = str(Path(folder).resolve())
    key = {"extractor": ex.key, "folder": folder, "image_size": image_size, "files": folder_listing(folder)}
    return pinned(FOLDER_FEATURES, f"folder-{ex.name}-{label}", key,
                  lambda: {"feats": ex.extract_batches(iter_image_folder(folder, image_size))})["feats"]


def folder_score(s: FolderSettings, device: torch.device | str | None = None) -> dict:
    """IRS of a generator from three image folders: cached features (extracted on `device`, default CPU),
    then `image_retrieval_score` (equal n, every chunk of the generated set, no centring: the authors'
    unnormalised Euclidean 1-NN)."""
    validate(s)
    ex = folder_extractor(s.extractor, weights=s.weights, image_size=s.image_size, device=device)
    feats = {name: folder_features(getattr(s, name), ex, s.image_size, label=name)
             for name in ("train_dir", "real_dir", "fake_dir")}
    return image_retrieval_score(feats["train_dir"], feats["real_dir"], feats["fake_dir"][: s.n], s.alpha_e,
                                 center=False)


def summary(result: dict) -> dict:
    """The numbers a reader wants from `folder_score`: IRS_inf of both sets and the adjusted score (the first
    chunk's, with its interval), the mean of the chunks' adjusted scores and their number."""
    pick = lambda r: {k: r[k] for k in ("irs_alpha", "estimate", "lower", "upper", "k_distinct")}  # noqa: E731
    return {"n": result["n"], "real": pick(result["real"]), "fake": pick(result["fake"]),
            "adjusted": result["adjusted"], "adjusted_mean": result["adjusted_mean"],
            "chunks": len(result["adjusted_chunks"])}


def irs_report(*, train: str, real: str, fake: str, extractor: str = "swav", weights: str = "",
               image_size: int = 224, n: int = 50_000, alpha_e: float = ALPHA_E,
               device: torch.device | str | None = None) -> dict:
    """The Image Retrieval Score of your own generator from three image folders (spec 04 §2.1, §3), as
    `python -m lib.irs.folders` computes it.

    train: folder of the training images (the retrieval database, N images); real: held-out real images of the
    same distribution; fake: your generated images (the first `n` by sorted path are used). Images are found in
    the folder and its subfolders (.png, .jpg, .jpeg, .webp, .bmp), read as RGB, resized and centre-cropped to
    `image_size`, and embedded by `extractor` (one of lib.irs.features.EXTRACTORS; "swav" is the paper's and
    needs `weights`, "pixels", "randproj", "randcnn", the CIFAR ResNets and "efficientnet_lite0" run offline).

    Each query (real or generated) retrieves its nearest training image (exact Euclidean 1-NN); with k distinct
    images retrieved by n queries, IRS_alpha = k / N and IRS_inf is the coupon-collector estimate of the share of
    the training set the generator reaches, with a two-sided interval at alpha_e per tail (90 % for 0.05). Both
    query sets are brought to the same n; the generated set, if larger, is scored in chunks of n.

    Returns {"settings", "n", "real", "fake": {"irs_alpha", "estimate", "lower", "upper", "k_distinct"} (IRS_inf
    of the held-out real images and of the first generated chunk), "adjusted": {"estimate", "lower", "upper"}
    (IRS_inf,a = IRS_inf(fake) / IRS_inf(real), the measurement gap removed, with its bounds-ratio interval;
    the first chunk's), "adjusted_mean": the mean over chunks, "chunks": their number, "adjusted_chunks": each
    chunk's {"estimate", "lower", "upper"}}.
    """
    s = FolderSettings(train, real, fake, extractor, weights, image_size, n, alpha_e)
    result = folder_score(s, device)
    return {"settings": asdict(s), **summary(result), "adjusted_chunks": result["adjusted_chunks"]}


def report_figure(report: dict):
    """IRS_inf of the held-out real and the generated images, and IRS_inf,a of every chunk, with their intervals."""
    import matplotlib.pyplot as plt

    from lib.plotting import PALETTE

    fig, (left, right) = plt.subplots(1, 2, figsize=(8.5, 3.4), layout="constrained")
    for i, r in enumerate((report["real"], report["fake"])):
        left.errorbar([i], [r["estimate"]], yerr=[[r["estimate"] - r["lower"]], [r["upper"] - r["estimate"]]],
                      fmt="o", color=PALETTE[i], capsize=4)
        left.plot([i], [r["irs_alpha"]], "x", color=PALETTE[i])
    left.set(xticks=[0, 1], xticklabels=["held-out real", "generated"], xlim=(-0.5, 1.5),
             ylabel="share of the training set", title=f"IRS_inf (o, interval) and IRS_alpha (x), n = {report['n']}")
    chunks = report["adjusted_chunks"]
    for j, c in enumerate(chunks):
        right.errorbar([j], [c["estimate"]], yerr=[[c["estimate"] - c["lower"]], [c["upper"] - c["estimate"]]],
                       fmt="o", color=PALETTE[2], capsize=4)
    right.axhline(1.0, color="k", lw=0.8, ls=":")
    right.set(xticks=range(len(chunks)), xlabel="chunk of the generated images", ylabel="IRS_inf,a",
              title=f"IRS_inf,a {report['adjusted']['estimate']:.3f} (chunk 0)")
    return fig


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
    parser.add_argument("--out", default="", help="folder for results.json and figure.png (default: print only)")
    a = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        if a.out:
            check_out_folder("--out", a.out)
        device = pick_device(a.device, name="--device")
        report = irs_report(train=a.train, real=a.real, fake=a.fake, extractor=a.extractor, weights=a.weights,
                            image_size=a.image_size, n=a.n, alpha_e=a.alpha_e, device=device)
    except ValueError as err:
        parser.error(str(err))
    report["device"], report["seconds"] = str(device), round(time.perf_counter() - start, 2)
    print(json.dumps({k: v for k, v in report.items() if k != "adjusted_chunks"}, indent=1, default=float))
    if a.out:
        written = write_outputs(a.out, report, report_figure(report))
        print(f"wrote {written['json']} and {written['figure']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
