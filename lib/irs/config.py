"""Notebook 04's settings (spec 04 §2.2, §5, §8): `IRSConfig`, its presets, and the extractor a setting names.

Its own module so that every part of the package (the experiments, the trained generators, their seed study and
training commands) takes an `IRSConfig`, typed, and builds its extractors itself (`extractor_for`). The trained
generators' settings are one `lib.diffusion.family.Family` (`IRSConfig.family`), the object notebook 02 holds too:
each preset's family is `FAMILIES[preset]`, typed once, so both notebooks of a preset read the same cache entries.
Validation, which needs the studies' own rules, is `lib.irs.experiment.validate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lib.diffusion.family import FAMILIES, Family
from lib.irs.features import RESNETS, Extractor, get_extractor
from lib.params import PARAMETER

NUM_CLASSES = 10
POOL_SPLITS = ("disjoint", "shared")


@dataclass(frozen=True)
class IRSConfig:
    """Every setting of notebook 04; comments name the spec section."""

    preset: str = field(metadata={PARAMETER: None})  # PRESET chooses the preset; it sets no field
    cifar_source: str = "jpeg"  # "jpeg" (the shared JPEG copy) | "python" (the official lossless archive)
    train_per_class: int = 5000  # retrieval database: the first m train images of each class (5000 = all)
    pool_per_class: int = 500  # held-out REF and SYN pools, m test images of each class each (§2.2 E2)
    extractors: tuple[str, ...] = ("pixels", "randproj", "randcnn", "resnet20", "resnet32", "resnet44", "resnet56",
                                   "efficientnet_lite0")
    rp_dim: int = 256  # randproj m
    efficientnet_size: int = 224  # input size of EfficientNet-Lite0 (its native 224; the cpu preset reduces it)
    # 1. simulation (§5)
    sim_n_train: int = 10_000
    sim_s_fractions: tuple[float, ...] = (0.3, 0.6, 0.9)
    sim_ratios: tuple[float, ...] = (0.05, 0.2, 0.5, 1.0)  # n / N
    sim_reps: int = 200
    # 2. measurement gap (E1)
    gap_ns: tuple[int, ...] = (1000, 2500, 5000, 10000)
    gap_reps: int = 5
    # 3. controlled experiment (E2, E3)
    fractions: tuple[float, ...] = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
    pool_split: str = "disjoint"
    n_fixed: int = 500  # regime (a)
    e2_reps: int = field(default=10, metadata={PARAMETER: "CLASS_DRAWS"})  # class draws per f
    mem_fractions: tuple[float, ...] = (0.1, 0.3, 0.6)  # g
    mem_noise: float = 0.02  # sigma of the Gaussian pixel noise on copies (pixels in [0, 1])
    # 4. toy generators (their sets hold family.n images, GEN_N, as the trained generators' do)
    pca_dims: int = 40  # per-class PCA-Gaussian generator: principal components kept
    prdc_k: int = 5
    alpha_e: float = 0.05
    # 5. trained generators (§8, lib.irs.generators): three diffusion arms of the family; its database is the
    # first family.train_per_class images of each class of the retrieval database, at family.resolution; its set
    # size family.n is also E3's and the toy generators' (GEN_N); SEED and CIFAR_SOURCE set its seed and source
    family: Family = field(default_factory=lambda: FAMILIES["cpu"])
    gen_channels: tuple[int, ...] = (32, 16)  # widths; the first is the main one, the others train at 100 % only
    gen_fractions: tuple[float, ...] = (0.25, 0.5, 1.0)  # checkpoints measured, as fractions of family.epochs
    gen_guidance: tuple[float, ...] = (1.0, 2.0, 4.0)  # classifier-free guidance scales of the class arm
    gen_eval_extractors: tuple[str, ...] = ("resnet56", "pixels", "randcnn", "efficientnet_lite0")
    gen_boot: int = 200  # FID bootstrap resamples
    gen_grid: int = 64  # samples per set kept (stored) for the image grids
    seed: int = 0


PRESETS: dict[str, IRSConfig] = {
    "smoke": IRSConfig(
        preset="smoke", train_per_class=200, pool_per_class=50, extractors=("pixels", "randproj", "resnet20"),
        sim_n_train=2000, sim_s_fractions=(0.3, 0.9), sim_ratios=(0.1, 0.5), sim_reps=40, gap_ns=(250, 500),
        gap_reps=2, fractions=(0.2, 0.5, 1.0), n_fixed=100, e2_reps=2, mem_fractions=(0.1, 0.5), pca_dims=10,
        family=FAMILIES["smoke"], gen_channels=(8,), gen_fractions=(0.5, 1.0), gen_guidance=(1.0, 2.0),
        efficientnet_size=32, gen_eval_extractors=("resnet20", "pixels"), gen_boot=20, gen_grid=16),
    "cpu": IRSConfig(
        preset="cpu", train_per_class=2000, pool_per_class=500,
        extractors=("pixels", "randproj", "randcnn", "resnet20", "resnet56", "efficientnet_lite0"),
        efficientnet_size=64, gap_ns=(1000, 2500, 5000, 10000), gap_reps=5, e2_reps=10),
    # all of CIFAR-10 with the eight offline extractors at their native sizes (GPU recommended); the paper's own
    # setting (ImageNet + SwAV) reads image folders: `python -m lib.irs.folders`
    "paper": IRSConfig(preset="paper", family=FAMILIES["paper"], gen_channels=(64, 32)),
}
FEATURE_DIMS = {"pixels": 3072, "randcnn": 64, "efficientnet_lite0": 1280, **{name: 64 for name in RESNETS}}


def extractor_for(config: IRSConfig, name: str, device: torch.device | str | None = None) -> Extractor:
    """The extractor `name` with this config's settings (randproj's dimension and seed, randcnn's seed,
    EfficientNet-Lite0's input size) on `device`."""
    options = {"randproj": {"rp_dim": config.rp_dim, "seed": config.seed}, "randcnn": {"seed": config.seed},
               "efficientnet_lite0": {"image_size": config.efficientnet_size}}.get(name, {})
    return get_extractor(name, device=device, **options)
