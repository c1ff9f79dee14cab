"""Notebook 04's trained generators (spec 04 §8): three diffusion arms at equal budget and seed on the retrieval
database, measured by IRS, FID and k-NN precision/recall/density/coverage, with the controls for copying.

- `unconditional`: EDM on the database images, no condition;
- `diadm`: DiADM (the paper's second contribution): each training image's EfficientNet-Lite0 feature is that
  image's own condition, and sampling conditions on training images' features (the authors use Inception,
  SwAV for chest X-rays: MischaD/Trichotomy `edm2/`); no label dropout, no guidance, as their
  `generate_images.py`;
- `class`: the CIFAR-10 class as condition, label dropout 0.1, sampled at several classifier-free guidance scales.

Every set (database, reference, generated) is at `gen_resolution` (16 x 16: an area average of 2 x 2 pixels)
and is upsampled identically (bilinear, to 32 x 32) before every extractor, the conditioning one included.
The model family itself is the core's (`lib.diffusion`), shared with notebook 02.

Caching: the trained EMA weights and the generated images are cached (not stored: weights and 2,500 images per
set are too large for results/); what the tables and figures need is one stored entry per generated set
(`generator_measurements`): per evaluation extractor the retrieved training index and distance of every
sample and the set's scores, plus the first `gen_grid` samples for the image grids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from lib.cache import cache_path, cached_npz, cached_torch
from lib.diffusion import Recipe, load_denoiser, one_hot, sample, train_denoiser
from lib.irs import method as irs
from lib.manifold import precision_recall_density_coverage
from lib.metrics import frechet_distance
from lib.seeds import derive_seed

ARMS = ("unconditional", "diadm", "class")
CONDITION_OF = {"unconditional": "none", "diadm": "feature", "class": "class"}
GENERATORS_VERSION = 1  # bump when a trained arm, a generated set or a measurement is computed differently
SOURCES_STREAM = 11  # the training rows a conditioned set conditions on
SAMPLES_STREAM = 13  # the sampler's starting noise
TRAIN_STREAM = 17  # the arms' training (data order, noise), equal for every arm
BOOT_STREAM = 19  # FID's bootstrap


@dataclass(frozen=True)
class GeneratedSet:
    """One generated set: an arm of width `channels`, its EMA at `fraction` of the training budget, sampled at
    classifier-free `guidance`; a DiADM set conditioned on `heldout` (SYN pool) features instead of the
    database's is the held-out control."""

    arm: str
    channels: int
    fraction: float = 1.0
    guidance: float = 1.0
    heldout: bool = False

    @property
    def label(self) -> str:
        text = f"{self.arm} c{self.channels} {self.fraction:.0%}"
        text += f" w{self.guidance:g}" if self.arm == "class" else ""
        return text + (" held-out cond." if self.heldout else "")

    @property
    def slug(self) -> str:
        return self.label.replace(" ", "-").replace("%", "pct").replace(".", "")


def generated_sets_of(config: Any) -> list[GeneratedSet]:
    """The sets a run measures: every arm at the main width at each checkpoint fraction (the class arm at
    guidance 1), the class arm at each guidance scale at the full budget, every arm at the other widths at the
    full budget, and the DiADM held-out control."""
    main, out = config.gen_channels[0], []
    for f in config.gen_fractions:
        out += [GeneratedSet(arm, main, f) for arm in ARMS]
    out += [GeneratedSet("class", main, 1.0, w) for w in config.gen_guidance if w != 1.0]
    out += [GeneratedSet(arm, ch, 1.0) for ch in config.gen_channels[1:] for arm in ARMS]
    return [*out, GeneratedSet("diadm", main, 1.0, heldout=True)]


def recipe_of(config: Any, channels: int, arm: str) -> Recipe:
    return Recipe(channels=channels, batch_size=config.gen_batch, lr=config.gen_lr,
                  label_dropout=config.gen_label_dropout if arm == "class" else 0.0)


# ----------------------------------------------------------------------------------------------------
# Images at the generators' resolution
# ----------------------------------------------------------------------------------------------------
def downsample(images: np.ndarray, size: int) -> np.ndarray:
    """(n, H, W, 3) uint8 -> (n, size, size, 3) uint8: the mean of each (H / size)^2 block, rounded."""
    n, h, w, _ = images.shape
    if h % size or w % size:
        raise ValueError(f"cannot downsample {h} x {w} images to {size} x {size} by whole blocks.")
    blocks = images.reshape(n, size, h // size, size, w // size, 3).astype(np.float32).mean(axis=(2, 4))
    return np.round(blocks).astype(np.uint8)


def for_extractor(images: np.ndarray, size: int = 32) -> np.ndarray:
    """(n, h, w, 3) uint8 -> (n, size, size, 3) uint8, bilinear (the same map for every set and extractor)."""
    if images.shape[1] == size:
        return images
    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float()
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()


def low_res_sets(config: Any, sets: dict) -> dict:
    """The database and both held-out pools at gen_resolution, each with its upsampled copy for extractors."""
    out = {}
    for pool in ("train", "ref", "syn"):
        low = downsample(sets[pool], config.gen_resolution)
        out[pool], out[f"{pool}_up"] = low, for_extractor(low)
    return out


# ----------------------------------------------------------------------------------------------------
# Conditions, training and sampling (cached, not stored)
# ----------------------------------------------------------------------------------------------------
def condition_rows(config: Any, low: dict, sets: dict, arm: str, conditioning, *, heldout: bool = False,
                   rows: np.ndarray | None = None) -> np.ndarray | None:
    """The condition vectors of database rows `rows` (all by default), or of SYN rows when `heldout`:
    EfficientNet-Lite0 features for DiADM, one-hot classes for the class arm, None for the unconditional."""
    if arm == "unconditional":
        return None
    pool = "syn" if heldout else "train"
    if arm == "class":
        cond = one_hot(sets[f"{pool}_labels"], 10)
    else:
        cond = conditioning(low[f"{pool}_up"], f"{pool}{len(low[pool])}-lr{config.gen_resolution}")
    return cond if rows is None else cond[rows]


def training_key(config: Any, low: dict, arm: str, channels: int, conditioning_key: dict) -> dict:
    return {"v": GENERATORS_VERSION, "recipe": recipe_of(config, channels, arm).key(), "arm": arm,
            "train": low["train"], "seed": config.seed,
            "conditioning": conditioning_key if arm == "diadm" else None}


def trained_weights(config: Any, low: dict, sets: dict, arm: str, channels: int, fraction: float, conditioning,
                    conditioning_key: dict, *, device="cpu", progress: bool = False) -> dict:
    """The EMA weights after round(fraction * gen_epochs) epochs (cached); every fraction continues one run
    through its checkpoint, so the 100 % weights are those of a single uninterrupted run."""
    key = training_key(config, low, arm, channels, conditioning_key)
    epochs = max(1, round(fraction * config.gen_epochs))
    checkpoint = cache_path("04", f"diffusion-{arm}-c{channels}-ckpt", key, ".pt")
    path = cache_path("04", f"diffusion-{arm}-c{channels}-e{epochs}", {**key, "epochs": epochs}, ".pt")

    def compute() -> dict:
        cond = condition_rows(config, low, sets, arm, conditioning)
        return train_denoiser(low["train"], cond, recipe_of(config, channels, arm), condition=CONDITION_OF[arm],
                              epochs=epochs, seed=derive_seed(config.seed, TRAIN_STREAM), checkpoint=checkpoint,
                              device=device, progress=progress)

    return cached_torch(path, compute)


def source_rows(config: Any, n_pool: int, heldout: bool) -> np.ndarray:
    """The gen_n rows (sorted, distinct) a conditioned set conditions on: of the database, or of SYN."""
    rng = np.random.default_rng(derive_seed(config.seed, config.gen_n, int(heldout), SOURCES_STREAM))
    return np.sort(rng.choice(n_pool, config.gen_n, replace=False))


def set_key(config: Any, low: dict, spec: GeneratedSet, conditioning_key: dict) -> dict:
    return {**training_key(config, low, spec.arm, spec.channels, conditioning_key),
            "epochs": max(1, round(spec.fraction * config.gen_epochs)), "guidance": spec.guidance,
            "heldout": spec.heldout, "steps": config.gen_steps, "n": config.gen_n,
            "heldout_pool": low["syn"] if spec.heldout else None}


def generated_images(config: Any, low: dict, sets: dict, spec: GeneratedSet, conditioning, conditioning_key: dict,
                     *, device="cpu", progress: bool = False) -> dict:
    """{"images": (gen_n, r, r, 3) uint8, "sources": the conditioning row of each sample (-1: none)} (cached)."""
    path = cache_path("04", f"gen-{spec.slug}-n{config.gen_n}", set_key(config, low, spec, conditioning_key), ".npz")

    def compute() -> dict:
        weights = trained_weights(config, low, sets, spec.arm, spec.channels, spec.fraction, conditioning,
                                  conditioning_key, device=device, progress=progress)
        pool = len(low["syn" if spec.heldout else "train"])
        rows = source_rows(config, pool, spec.heldout)
        cond = condition_rows(config, low, sets, spec.arm, conditioning, heldout=spec.heldout, rows=rows)
        model = load_denoiser(weights["ema"], recipe_of(config, spec.channels, spec.arm),
                              resolution=config.gen_resolution, condition=CONDITION_OF[spec.arm],
                              cond_dim=0 if cond is None else cond.shape[1], device=device)
        images = sample(model, config.gen_n, cond=cond, guidance=spec.guidance, steps=config.gen_steps,
                        seed=derive_seed(config.seed, SAMPLES_STREAM), progress=progress)
        return {"images": images, "sources": rows if spec.arm == "diadm" else np.full(config.gen_n, -1)}

    return cached_npz(path, compute)


# ----------------------------------------------------------------------------------------------------
# Measurements (stored)
# ----------------------------------------------------------------------------------------------------
def fid_interval(real: np.ndarray, fake: np.ndarray, *, reps: int, seed: int, alpha_e: float) -> dict:
    """FID with a percentile bootstrap interval (both sets resampled with replacement, `reps` times)."""
    rng = np.random.default_rng(seed)
    boots = [frechet_distance(real=real[rng.integers(0, len(real), len(real))],
                              fake=fake[rng.integers(0, len(fake), len(fake))]) for _ in range(reps)]
    lower, upper = np.quantile(boots, [alpha_e, 1 - alpha_e])
    return {"fid": frechet_distance(real=real, fake=fake), "fid_lower": float(lower), "fid_upper": float(upper)}


def set_scores(n_train: int, *, fake_idx: np.ndarray, real_idx: np.ndarray, fake_feats: np.ndarray,
               real_feats: np.ndarray, train_feats: np.ndarray, fake_dist: np.ndarray, real_dist: np.ndarray,
               config: Any, seed: int) -> dict:
    """IRS_alpha, IRS_inf and IRS_inf,a (against the real reference at equal n), FID against the reference
    (test) and against as many database images, each with its bootstrap interval, k-NN precision / recall /
    density / coverage, and the median distance to the nearest training image over that of the real images."""
    fake, real = irs.retrieval_result(n_train, fake_idx, config.alpha_e), irs.retrieval_result(
        n_train, real_idx, config.alpha_e)
    adj = irs.adjusted_score(fake, real)
    train_rows = np.random.default_rng(seed).choice(len(train_feats), len(fake_feats), replace=False)
    test = fid_interval(real_feats, fake_feats, reps=config.gen_boot, seed=seed, alpha_e=config.alpha_e)
    train = fid_interval(train_feats[train_rows], fake_feats, reps=config.gen_boot, seed=seed + 1,
                         alpha_e=config.alpha_e)
    prdc = precision_recall_density_coverage(real=real_feats, fake=fake_feats, k=config.prdc_k)
    return {"irs_alpha": fake["irs_alpha"], "irs_inf": fake["estimate"], "irs_inf_lower": fake["lower"],
            "irs_inf_upper": fake["upper"], "irs_inf_real": real["estimate"], "irs_adj": adj["estimate"],
            "irs_adj_lower": adj["lower"], "irs_adj_upper": adj["upper"], **test,
            **{f"{k}_train": v for k, v in train.items()}, **prdc,
            "nn_ratio": float(np.median(np.sqrt(fake_dist)) / np.median(np.sqrt(real_dist)))}
