"""Notebook 04's experiments (spec 04 §2.2, §5): presets, data, cached features and retrievals, and the
four studies: the estimator on simulated ground truth, the measurement gap (E1), the controlled class
fraction and memorising-generator control (E2, E3), and toy generators ranked by IRS, FID and PRDC (E5).

The nearest training image of every held-out test image is computed once per extractor; E1 and E2 then
reduce to counting distinct indices over subsets (spec §6). All features and retrievals are cached under
data/cache/04/ by the extractor's settings and the images' content.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lib.diffusion.family import first_per_class
from lib.irs import generators
from lib.irs import method as irs
from lib.irs.config import FEATURE_DIMS, NUM_CLASSES, POOL_SPLITS, PRESETS, IRSConfig, extractor_for
from lib.irs.features import OFFLINE, RESNETS, Extractor, cached_features
from lib.irs.generators import (  # noqa: F401  (ie.MEMORISER_STREAM: the streams below)
    MEMORISER_STREAM,
    REFERENCE_STREAM,
    memorised_copies,
    reference_rows,
)
from lib.irs.stages import RETRIEVAL, TOY, TOY_COVERAGE_K
from lib.linalg import linear_fit  # noqa: F401  notebook 04 calls it as ie.linear_fit
from lib.manifold import coverage_by_k, precision_recall_density_coverage
from lib.metrics import frechet_distance
from lib.params import (
    MemoryTerm,
    check_choice,
    check_int,
    check_list,
    check_memory,
    check_real,
    check_seed,
    resolve_preset,
    shown,
)
from lib.reading import sig
from lib.run import Run
from lib.seeds import derive_seed

# Notebook 04's random streams: derive_seed(seed, <what the draw depends on>..., <STREAM>); the draws of
# `simulate_estimator` and `class_fraction_experiment` are told apart by their own keys (sizes, fraction, regime)
GAP_STREAM = 1  # `measurement_gap`: the subsamples of the held-out retrievals
PCA_SAMPLES_STREAM = 5  # `sample_pca_gaussians`: classes and latent draws
ADJUSTED_STREAM = 7  # `simulate_adjusted`: the fake and real draws
KEPT_CLASSES_STREAM = 55  # the 5 classes the mode-dropping PCA-Gaussian keeps
# MEMORISER_STREAM = 3 and REFERENCE_STREAM = 9 live in lib.irs.generators beside `memorised_copies` and
# `reference_rows`, which its trained generators' anchors use too




def resolve_config(preset: str, **overrides: Any) -> IRSConfig:
    """The preset's config with `overrides` applied (None keeps the preset's value), validated at once, and
    refused when `memory_estimate` exceeds the memory available. A `seed` or `cifar_source` given is the
    generators' family's too (as SEED and CIFAR_SOURCE set both), unless `family` gives its own, which must
    agree."""
    family = dict(overrides.pop("family", None) or {})
    for name in ("seed", "cifar_source"):
        if overrides.get(name) is not None:
            family.setdefault(name, overrides[name])
    config = resolve_preset(PRESETS, preset, {**overrides, "family": family or None})
    validate(config)
    check_memory(memory_estimate(config))
    return config


def _check_fractions(name: str, values: tuple, *, low_open: bool = True) -> None:
    for v in check_list(name, values):
        check_real(f"{name} entry", v, low=0.0, high=1.0, open_low=low_open)


def validate(config: IRSConfig) -> None:
    """Raise ValueError naming the parameter, the value and what is allowed."""
    check_choice("cifar_source", config.cifar_source, ("jpeg", "python"))
    for name in check_list("extractors", config.extractors):
        check_choice("extractors entry", name, OFFLINE)  # the paper's extractors need image folders: lib.irs.folders
    check_int("train_per_class", config.train_per_class, minimum=2, maximum=5000)
    check_int("pool_per_class", config.pool_per_class, minimum=2, maximum=500)
    check_int("rp_dim", config.rp_dim, minimum=1)
    check_int("efficientnet_size", config.efficientnet_size, minimum=32)
    check_int("sim_n_train", config.sim_n_train, minimum=10)
    _check_fractions("sim_s_fractions", config.sim_s_fractions)
    _check_fractions("sim_ratios", config.sim_ratios)
    check_int("sim_reps", config.sim_reps, minimum=2)
    held_out = 2 * NUM_CLASSES * config.pool_per_class
    for n in check_list("gap_ns", config.gap_ns):
        check_int("gap_ns entry", n, minimum=2, maximum=held_out)
    check_int("gap_reps", config.gap_reps, minimum=1)
    _check_fractions("fractions", config.fractions)
    check_choice("pool_split", config.pool_split, POOL_SPLITS)
    smallest = min(config.fractions)
    if math.floor(NUM_CLASSES * smallest) < 1:
        raise ValueError(f"{shown('fractions')} entry {smallest!r} keeps floor(10 f) = 0 classes; use f >= 0.1.")
    for f in config.fractions:  # the draw keeps whole classes: another fraction would be run as floor(10 f) / 10
        if abs(NUM_CLASSES * f - round(NUM_CLASSES * f)) > 1e-9:
            kept = math.floor(NUM_CLASSES * f + 1e-9)
            raise ValueError(f"{shown('fractions')} entry {f!r} is not a multiple of 1/{NUM_CLASSES}: a draw keeps "
                             f"whole classes, so it would keep {kept} of {NUM_CLASSES} (a fraction of "
                             f"{kept / NUM_CLASSES}) and be labelled {f!r}; give multiples of 0.1.")
    available = config.pool_per_class * math.floor(NUM_CLASSES * smallest) * (2 if config.pool_split == "shared" else 1)
    check_int("n_fixed", config.n_fixed, minimum=2, maximum=available)
    check_int("e2_reps", config.e2_reps, minimum=1)
    _check_fractions("mem_fractions", config.mem_fractions)
    check_real("mem_noise", config.mem_noise, low=0.0)
    check_int("family.n", config.family.n, minimum=2, maximum=NUM_CLASSES * config.pool_per_class)
    check_int("pca_dims", config.pca_dims, minimum=1, maximum=config.train_per_class - 1)
    check_int("prdc_k", config.prdc_k, minimum=1, maximum=config.family.n - 1)
    check_real("alpha_e", config.alpha_e, low=0.0, high=0.5, open_low=True, open_high=True)
    check_seed("seed", config.seed)
    generators.validate_generators(config)


def memory_estimate(config: IRSConfig) -> list[MemoryTerm]:
    """The main parts of what a run of notebook 04 holds in memory (bytes, rough; for `check_memory`).

    - the CIFAR-10 images (uint8, all 60,000 decoded) and every extractor's float32 features of the database and
      both pools, which the notebook keeps;
    - EfficientNet-Lite0's activations on one batch of 100 images resized to efficientnet_size (about 60
      float32 maps of the image's size per image: its widest layers, input and output alive at once);
    - the simulation's result rows (about 1 KB each) of one setting, sim_reps of them;
    - the class-fraction rows (about 1.5 KB each), two regimes x fractions x e2_reps.
    Sizes the checks cap (train_per_class, pool_per_class, gap_ns, n_fixed, family.n) stay small.
    """
    rows = NUM_CLASSES * (config.train_per_class + 2 * config.pool_per_class)
    dims = sum(config.rp_dim if name == "randproj" else FEATURE_DIMS[name] for name in config.extractors)
    terms = [
        MemoryTerm("the CIFAR-10 images and the extractors' features", 3072 * 60_000 + 4 * rows * dims,
                   {"train_per_class": config.train_per_class, "extractors": config.extractors}),
        MemoryTerm("the simulation's rows", 1000 * config.sim_reps, {"sim_reps": config.sim_reps}),
        MemoryTerm("the class-fraction rows", 1500 * 2 * len(config.fractions) * config.e2_reps,
                   {"e2_reps": config.e2_reps, "fractions": config.fractions}),
    ]
    if "efficientnet_lite0" in config.extractors:
        terms.append(MemoryTerm("EfficientNet-Lite0's activations on a batch of 100 images",
                                100 * 4 * 60 * config.efficientnet_size**2,
                                {"efficientnet_size": config.efficientnet_size}))
    return terms


# ----------------------------------------------------------------------------------------------------
# Data and cached features
# ----------------------------------------------------------------------------------------------------
def cifar_sets(config: IRSConfig) -> dict:
    """{"train", "train_labels"}: the retrieval database (first train_per_class of each class);
    {"ref", "ref_labels", "syn", "syn_labels"}: the held-out pools (test images 0..m-1 and m..2m-1 of each
    class, in original test order). Images (n, 32, 32, 3) uint8 from the JPEG copy (spec §2.2), or from the
    official lossless archive with cifar_source="python"."""
    from lib.data import cifar10

    data = cifar10.load_cifar10(config.cifar_source)
    train_x, train_y = data["train"].images, data["train"].labels
    test_x, test_y = data["test"].images, data["test"].labels
    rows = first_per_class(train_y, config.train_per_class)
    ref = first_per_class(test_y, config.pool_per_class)
    syn = first_per_class(test_y, config.pool_per_class, offset=config.pool_per_class)
    return {"train": train_x[rows], "train_labels": train_y[rows], "ref": test_x[ref], "ref_labels": test_y[ref],
            "syn": test_x[syn], "syn_labels": test_y[syn]}


RETRIEVAL_VERSION = 3  # v3: keyed by the images (not their features), so a stored retrieval needs no features


def retrieve(extractor: Extractor, train: Callable[[], np.ndarray] | np.ndarray, images: np.ndarray, *, label: str,
             train_images: np.ndarray, run: Run) -> np.ndarray:
    """Nearest training index (n,) int64 of each image, cached and stored (`lib.store`) by the extractor, the
    database images and the query images; `run` finds it or computes it (`lib.run`).

    `train`: the database features, or a function returning them (called only when the retrieval is computed,
    so a stored retrieval reads no features). The query features are cached under `label`, the retrieval
    under `label` plus the database size."""
    key = {"extractor": extractor.key, "train": train_images, "queries": images, "version": RETRIEVAL_VERSION}

    def compute() -> dict:
        feats = cached_features(extractor, images, label=label, run=run)
        return {"idx": irs.nearest_train(train() if callable(train) else train, feats)}

    return run.stage(RETRIEVAL, f"nn-{extractor.name}-{label}-db{len(train_images)}", key, compute)["idx"]


# ----------------------------------------------------------------------------------------------------
# 1. The estimator on simulated ground truth
# ----------------------------------------------------------------------------------------------------
def simulate_estimator(n_train: int, s_true: int, n: int, reps: int, *, seed: int, alpha_e: float = 0.05) -> dict:
    """Draw n indices uniformly from s_true of n_train, `reps` times; bias, sd and interval coverage."""
    rng = np.random.default_rng(derive_seed(seed, n_train, s_true, n))
    rows = [irs.irs_inf(n_train, n, int(np.unique(rng.integers(0, s_true, n)).size), alpha_e) for _ in range(reps)]
    est = np.array([r["estimate"] for r in rows])
    lower, upper = np.array([r["lower"] for r in rows]), np.array([r["upper"] for r in rows])
    truth = s_true / n_train
    covered = (lower <= truth) & (truth <= upper)
    return {"n_train": n_train, "s_true": s_true, "n": n, "ratio": n / n_train, "truth": truth,
            "mean": est.mean(), "bias": est.mean() - truth, "sd": est.std(ddof=1), "coverage": covered.mean(),
            "miss_low": (upper < truth).mean(), "miss_high": (lower > truth).mean(),
            "width": (upper - lower).mean(), "capped": (est >= 1.0).mean()}


# the simulation of the adjusted interval in section 1: s_synth / N and s_real / N (n = N / 2)
ADJUSTED_SYNTH, ADJUSTED_REAL = 0.5, 0.8


def simulate_adjusted(n_train: int, s_fake: int, s_real: int, n: int, reps: int, *, seed: int,
                      alpha_e: float = 0.05) -> dict:
    """Coverage of the bounds-ratio interval of IRS_inf,a = s_fake / s_real (both sets at the same n)."""
    rng = np.random.default_rng(derive_seed(seed, s_fake, s_real, n, ADJUSTED_STREAM))
    hits, ratios = [], []
    for _ in range(reps):
        f = irs.irs_inf(n_train, n, int(np.unique(rng.integers(0, s_fake, n)).size), alpha_e)
        r = irs.irs_inf(n_train, n, int(np.unique(rng.integers(0, s_real, n)).size), alpha_e)
        a = irs.adjusted_score(f, r)
        hits.append(a["lower"] <= s_fake / s_real <= a["upper"])
        ratios.append(a["estimate"])
    return {"truth": s_fake / s_real, "mean": float(np.mean(ratios)), "coverage": float(np.mean(hits))}


# ----------------------------------------------------------------------------------------------------
# 2. Measurement gap (E1) and 3. controlled experiment (E2)
# ----------------------------------------------------------------------------------------------------
def measurement_gap(n_train: int, heldout_idx: np.ndarray, ns: tuple[int, ...], reps: int, *, seed: int,
                    alpha_e: float = 0.05) -> list[dict]:
    """IRS of held-out real images at several n: seeded subsamples of the held-out retrievals (n,)."""
    rows = []
    for n in ns:
        rng = np.random.default_rng(derive_seed(seed, n, GAP_STREAM))
        for rep in range(reps if n < len(heldout_idx) else 1):
            pick = heldout_idx[rng.permutation(len(heldout_idx))[:n]]
            r = irs.retrieval_result(n_train, pick, alpha_e)
            rows.append({"n": n, "rep": rep, **{k: r[k] for k in ("irs_alpha", "lower", "estimate", "upper",
                                                                  "collisions")}})
    return rows


def check_inputs(config: IRSConfig) -> list[str]:
    """Every data file the configured run reads, checked (present, SHA-256) before any work; returns their
    names. CIFAR-10 (the JPEG copy and its test labels, or the lossless archive) and the pretrained CIFAR
    ResNets' weights."""
    from lib.data.cifar10 import PYTHON_ARCHIVE
    from lib.data.files import DataFileError, data_file, data_root
    from lib.models.cifar_resnet import weight_file

    names = ["cifar10/cifar10-jpeg.zip", "cifar10/test_labels.npy"] if config.cifar_source == "jpeg" else []
    names += [weight_file(int(e.removeprefix("resnet"))) for e in config.extractors if e in RESNETS]
    for name in names:
        data_file(name)
    if config.cifar_source == "python" and not (data_root() / PYTHON_ARCHIVE).is_file():
        raise DataFileError(f"Data file {PYTHON_ARCHIVE} is missing (looked for {data_root() / PYTHON_ARCHIVE}): "
                            "download https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz there, or use "
                            "CIFAR_SOURCE='jpeg'.")
    return names


def class_fraction_pool_size(f: float, pool_per_class: int, pool_split: str) -> int:
    """How many synthetic images a class-fraction draw at `f` can hold: pool_per_class per kept class
    (floor(10 f) classes), twice that when both pools are shared. Regime "a" caps n_fixed at it."""
    return pool_per_class * math.floor(NUM_CLASSES * f + 1e-9) * (2 if pool_split == "shared" else 1)


def class_fraction_draw(f: float, regime: str, *, ref_idx: np.ndarray, ref_labels: np.ndarray, syn_idx: np.ndarray,
                        syn_labels: np.ndarray, pool_per_class: int, n_fixed: int, pool_split: str,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Retrieved training indices of one E2 draw (spec §2.2 E2): (synthetic, reference), equal n.

    Synthetic = held-out images of floor(10 f) random classes, n = pool_per_class * floor(10 f) of them in
    regime "b", n = n_fixed in regime "a". Reference = n held-out images of all classes. With
    pool_split="disjoint" the synthetic images come from SYN and the reference from REF; with "shared" both
    draw from SYN and REF together."""
    check_choice("regime", regime, ("a", "b"))
    classes = rng.choice(NUM_CLASSES, math.floor(NUM_CLASSES * f + 1e-9), replace=False)
    if pool_split == "shared":
        ref_idx = syn_idx = np.concatenate([syn_idx, ref_idx])
        ref_labels = syn_labels = np.concatenate([syn_labels, ref_labels])
    pool = syn_idx[np.isin(syn_labels, classes)]
    n = pool_per_class * len(classes) if regime == "b" else n_fixed
    fake = pool[rng.permutation(len(pool))[:n]]
    real = ref_idx[rng.permutation(len(ref_idx))[:n]]
    return fake, real


def class_fraction_experiment(n_train: int, *, ref_idx: np.ndarray, ref_labels: np.ndarray, syn_idx: np.ndarray,
                              syn_labels: np.ndarray, config: IRSConfig) -> list[dict]:
    """E2 rows (f, regime, rep, n, IRS_alpha, IRS_inf with interval for synthetic and reference, IRS_inf,a)."""
    rows = []
    for regime in ("b", "a"):
        for f in config.fractions:
            for rep in range(config.e2_reps):
                rng = np.random.default_rng(derive_seed(config.seed, round(f * 1000), rep, ord(regime)))
                fake, real = class_fraction_draw(
                    f, regime, ref_idx=ref_idx, ref_labels=ref_labels, syn_idx=syn_idx, syn_labels=syn_labels,
                    pool_per_class=config.pool_per_class, n_fixed=config.n_fixed, pool_split=config.pool_split,
                    rng=rng)
                fr, rr = irs.retrieval_result(n_train, fake, config.alpha_e), irs.retrieval_result(
                    n_train, real, config.alpha_e)
                adj = irs.adjusted_score(fr, rr)
                rows.append({"regime": regime, "f": f, "rep": rep, "n": len(fake), "irs_alpha": fr["irs_alpha"],
                             "irs_inf": fr["estimate"], "irs_inf_lower": fr["lower"], "irs_inf_upper": fr["upper"],
                             "irs_inf_real": rr["estimate"], "irs_adj": adj["estimate"],
                             "irs_adj_lower": adj["lower"], "irs_adj_upper": adj["upper"],
                             "collisions": fr["collisions"], "collisions_real": rr["collisions"]})
    return rows


# ----------------------------------------------------------------------------------------------------
# Generators: the per-class PCA-Gaussian (E5); the memoriser (E3) is lib.irs.generators' `memorised_copies`
# ----------------------------------------------------------------------------------------------------
def fit_pca_gaussians(train: np.ndarray, labels: np.ndarray, dims: int) -> list[dict]:
    """Per class: mean image and the top `dims` principal directions with their variances (pixels in [0, 1])."""
    models = []
    for c in range(NUM_CLASSES):
        x = train[labels == c].reshape((labels == c).sum(), -1) / 255.0
        mean = x.mean(0)
        _, sing, vt = np.linalg.svd(x - mean, full_matrices=False)
        models.append({"mean": mean, "components": vt[:dims], "std": sing[:dims] / math.sqrt(len(x) - 1)})
    return models


def sample_pca_gaussians(models: list[dict], n: int, *, classes: np.ndarray | None = None, temperature: float = 1.0,
                         seed: int) -> np.ndarray:
    """n images (uint8, 32 x 32 x 3): class uniform over `classes` (all by default), z ~ N(0, T^2 diag(var))."""
    rng = np.random.default_rng(derive_seed(seed, n, round(temperature * 1000), PCA_SAMPLES_STREAM))
    classes = np.arange(len(models)) if classes is None else np.asarray(classes)
    labels = classes[rng.integers(0, len(classes), n)]
    out = np.empty((n, models[0]["mean"].size))
    for c in np.unique(labels):
        m, rows = models[c], np.flatnonzero(labels == c)
        z = rng.standard_normal((len(rows), len(m["std"]))) * m["std"] * temperature
        out[rows] = m["mean"] + z @ m["components"]
    return np.round(np.clip(out, 0, 1) * 255).astype(np.uint8).reshape(n, 32, 32, 3)


# ----------------------------------------------------------------------------------------------------
# FID-style and PRDC numbers on the same features
# ----------------------------------------------------------------------------------------------------
def generator_scores(train_n: int, *, fake_idx: np.ndarray, real_idx: np.ndarray, fake_feats: np.ndarray,
                     real_feats: np.ndarray, prdc_k: int, alpha_e: float) -> dict:
    """IRS_inf (fake, real), IRS_inf,a with its interval, FID and precision/recall/density/coverage."""
    fake, real = irs.retrieval_result(train_n, fake_idx, alpha_e), irs.retrieval_result(train_n, real_idx, alpha_e)
    adj = irs.adjusted_score(fake, real)
    pr = precision_recall_density_coverage(real=real_feats, fake=fake_feats, k=prdc_k)
    return {"irs_alpha": fake["irs_alpha"], "irs_inf": fake["estimate"], "irs_inf_lower": fake["lower"],
            "irs_inf_upper": fake["upper"], "irs_inf_real": real["estimate"], "irs_adj": adj["estimate"],
            "irs_adj_lower": adj["lower"], "irs_adj_upper": adj["upper"],
            "fid": frechet_distance(real=real_feats, fake=fake_feats), **pr}


# ----------------------------------------------------------------------------------------------------
# The pipeline per extractor (cached)
# ----------------------------------------------------------------------------------------------------
def simulation_table(config: IRSConfig) -> list[dict]:
    """`simulate_estimator` over sim_s_fractions x sim_ratios at N = sim_n_train."""
    n_train = config.sim_n_train
    return [simulate_estimator(n_train, round(sf * n_train), max(2, round(r * n_train)), config.sim_reps,
                               seed=config.seed, alpha_e=config.alpha_e)
            for sf in config.sim_s_fractions for r in config.sim_ratios]


@dataclass(frozen=True)
class ExtractorRun:
    """One extractor's part of a run of notebook 04 (`extractor_run`): the extractor, its features of the retrieval
    database and of both held-out pools on demand (`features["train" | "ref" | "syn"]()`: extracted and cached at
    the first call), and the training index each held-out image retrieves."""

    extractor: Extractor
    features: Mapping[str, Callable[[], np.ndarray]]
    ref_idx: np.ndarray
    syn_idx: np.ndarray


def extractor_run(config: IRSConfig, name: str, sets: dict, *, run: Run) -> ExtractorRun:
    """The held-out retrievals of one extractor (on `run.device`), and its features on demand. Under
    SOURCE="stored" the retrievals come from the stored layer and no feature is extracted unless a later stage
    asks for one."""
    ex = extractor_for(config, name, run.device)
    labels = {"train": f"train{config.train_per_class}", "ref": f"ref{config.pool_per_class}",
              "syn": f"syn{config.pool_per_class}"}
    features = {pool: functools.cache(lambda pool=pool: cached_features(ex, sets[pool], label=labels[pool], run=run))
                for pool in labels}
    idx = {f"{pool}_idx": retrieve(ex, features["train"], sets[pool], label=labels[pool], train_images=sets["train"],
                                   run=run) for pool in ("ref", "syn")}
    return ExtractorRun(ex, features, **idx)


def generated_sets(config: IRSConfig, sets: dict) -> dict[str, dict]:
    """The generated image sets of E3 and the toy-generator study, each {"images", "sources" (or None)}.

    memorise-g: the memorising generator for each g; pca-T1 / pca-T0.5: the per-class PCA-Gaussian at
    temperature 1 and 0.5; pca-5cls: the PCA-Gaussian restricted to 5 classes (mode dropping by a model)."""
    n = config.family.n
    out = {f"memorise-{g:g}": memorised_copies(sets["train"], g, n, config.mem_noise, seed=config.seed)
           for g in config.mem_fractions}
    models = fit_pca_gaussians(sets["train"], sets["train_labels"], config.pca_dims)
    keep = np.random.default_rng(derive_seed(config.seed, KEPT_CLASSES_STREAM)).choice(NUM_CLASSES, 5, replace=False)
    for label, kwargs in (("pca-T1", {}), ("pca-T0.5", {"temperature": 0.5}), ("pca-5cls", {"classes": keep})):
        out[label] = {"images": sample_pca_gaussians(models, n, seed=config.seed, **kwargs), "sources": None}
    return out


# ----------------------------------------------------------------------------------------------------
# 4. Generated sets: the memoriser (E3) and the toy generators, per extractor (cached and stored)
# ----------------------------------------------------------------------------------------------------
GENERATED_VERSION = 1  # salt of the keys below (lib.lineage detects their code's changes: never bumped)


def generated_retrievals(config: IRSConfig, extracted: ExtractorRun, sets: dict, generated: dict[str, dict], *,
                         run: Run) -> dict[str, np.ndarray]:
    """{label: nearest training index of each image of the generated set `label`} for one extractor's
    `extractor_run` (`extracted`)."""
    return {label: retrieve(extracted.extractor, extracted.features["train"], g["images"], label=label,
                            train_images=sets["train"], run=run)
            for label, g in generated.items()}


def e3_rows(config: IRSConfig, name: str, extracted: ExtractorRun, generated: dict[str, dict],
            gen_idx: dict[str, np.ndarray], n_train: int) -> list[dict]:
    """E3, the memorising generator: per g, how often a copy retrieves its own source, IRS_inf with its
    interval (does it cover g?), and IRS_inf,a against the real reference of the same n (`extracted`: the
    extractor's `extractor_run`)."""
    real = irs.retrieval_result(n_train, extracted.ref_idx[reference_rows(config, config.family.n)], config.alpha_e)
    rows = []
    for g in config.mem_fractions:
        label = f"memorise-{g:g}"
        r = irs.retrieval_result(n_train, gen_idx[label], config.alpha_e)
        hit = float(np.mean(gen_idx[label] == generated[label]["sources"]))
        adj = irs.adjusted_score(r, real)
        rows.append({"extractor": name, "g": g, "source_hit": hit, "irs_alpha": r["irs_alpha"],
                     "irs_inf": r["estimate"], "lower": r["lower"], "upper": r["upper"],
                     "covers_g": bool(r["lower"] <= g <= r["upper"]), "irs_inf_real": real["estimate"],
                     "irs_adj": adj["estimate"], "irs_adj_lower": adj["lower"], "irs_adj_upper": adj["upper"]})
    return rows


def toy_rows(config: IRSConfig, name: str, extracted: ExtractorRun, sets: dict, generated: dict[str, dict],
             gen_idx: dict[str, np.ndarray], n_train: int, *, run: Run) -> list[dict]:
    """The toy-generator study for one extractor (`extracted`: its `extractor_run`): IRS, FID and
    precision/recall/density/coverage of real images (the SYN pool), a 5-class drop of them, and every generated
    set, each against the REF reference of the same n. Cached and stored by the extractor and every image set it
    reads, so a stored run extracts no feature."""
    key = {"v": GENERATED_VERSION, "extractor": extracted.extractor.key, "train": sets["train"], "ref": sets["ref"],
           "syn": sets["syn"], "syn_labels": sets["syn_labels"],
           "generated": {k: g["images"] for k, g in generated.items()}, "gen_n": config.family.n,
           "prdc_k": config.prdc_k, "alpha_e": config.alpha_e, "seed": config.seed}
    return run.stage(TOY, f"toy-{name}-n{config.family.n}", key,
                     lambda: _toy_rows(config, name, extracted, sets, generated, gen_idx, n_train, run))


def _toy_sets(config: IRSConfig, extracted: ExtractorRun, sets: dict, generated: dict[str, dict],
              gen_idx: dict[str, np.ndarray], run: Run) -> tuple[tuple[np.ndarray, np.ndarray], dict]:
    """The toy study's sets on one extractor: ((real_feats, real_idx) of the REF reference of n = family.n,
    {generator: (feats, retrieval idx)}) for real images (the SYN pool), a 5-class drop of them and every
    generated set."""
    rows_ref = reference_rows(config, config.family.n)  # the same positions serve the SYN pool's "real" set
    real_feats, real_idx = extracted.features["ref"]()[rows_ref], extracted.ref_idx[rows_ref]
    syn_feats, drop = extracted.features["syn"](), np.isin(sets["syn_labels"], np.arange(5))
    candidates = {"real (SYN pool)": (syn_feats[rows_ref], extracted.syn_idx[rows_ref]),
                  "drop 5 classes (SYN)": (syn_feats[drop][: config.family.n],
                                           extracted.syn_idx[drop][: config.family.n])}
    for label, g in generated.items():  # the rows are recomputed under FORCE_RECOMPUTE, these features are not
        candidates[label] = (cached_features(extracted.extractor, g["images"], label=label,
                                             run=run), gen_idx[label])
    return (real_feats, real_idx), candidates


def _toy_rows(config: IRSConfig, name: str, extracted: ExtractorRun, sets: dict, generated: dict[str, dict],
              gen_idx: dict[str, np.ndarray], n_train: int, run: Run) -> list[dict]:
    (real_feats, real_idx), candidates = _toy_sets(config, extracted, sets, generated, gen_idx, run)
    rows = []
    for label, (feats, idx) in candidates.items():
        n = min(len(idx), len(real_idx))
        scores = generator_scores(n_train, fake_idx=idx[:n], real_idx=real_idx[:n], fake_feats=feats[:n],
                                  real_feats=real_feats[:n], prdc_k=config.prdc_k, alpha_e=config.alpha_e)
        rows.append({"extractor": name, "generator": label, "n": n, **{k: float(v) for k, v in scores.items()}})
    return rows


COVERAGE_KS = (3, 5, 10)  # k of the k-NN balls at which the toy generators' coverage is compared (04.coverage-k)


def toy_coverage_by_k(config: IRSConfig, name: str, extracted: ExtractorRun, sets: dict, generated: dict[str, dict],
                      gen_idx: dict[str, np.ndarray], *, run: Run,
                      ks: tuple[int, ...] = COVERAGE_KS) -> dict[str, dict[str, float]]:
    """Coverage (Naeem et al. 2020; spec 04 §1, "coverage depends on a hyperparameter") of each toy generator of
    `toy_rows` against the same REF reference of n images, at each k of `ks` (`lib.manifold.coverage_by_k`).
    Returns {generator: {str(k): coverage}}. Cached (not stored): it reads the features the toy study reads, which
    a stored run extracts here once (pinned in the cache)."""
    key = {"v": GENERATED_VERSION, "extractor": extracted.extractor.key, "train": sets["train"], "ref": sets["ref"],
           "syn": sets["syn"], "syn_labels": sets["syn_labels"],
           "generated": {k: g["images"] for k, g in generated.items()}, "gen_n": config.family.n, "ks": list(ks)}

    def compute() -> dict[str, dict[str, float]]:
        (real_feats, real_idx), candidates = _toy_sets(config, extracted, sets, generated, gen_idx, run)
        out = {}
        for label, (feats, idx) in candidates.items():
            n = min(len(idx), len(real_idx))
            out[label] = {str(k): v for k, v in coverage_by_k(real=real_feats[:n], fake=feats[:n], ks=ks).items()}
        return out

    return run.stage(TOY_COVERAGE_K, f"toy-coverage-k-{name}-n{config.family.n}", key, compute)


# ----------------------------------------------------------------------------------------------------
# The toy-generator table as notebook 04 shows it
# ----------------------------------------------------------------------------------------------------
def toy_tables(toy: pd.DataFrame, config: IRSConfig) -> dict[str, pd.DataFrame]:
    """`toy` (the rows of `toy_rows`) as two tables that fit a page (about 800 and 650 px wide where the
    one table of 16 columns took 1,300-1,450), each indexed by (extractor, generator) and keyed by its title:
    the IRS scores, each estimate with its interval, and FID with the k-NN precision, recall, density and
    coverage. Every value of `toy` is shown, IRS to 3 decimals, FID to 3 significant digits."""
    level = f"{1 - 2 * config.alpha_e:.0%}".replace("%", " %")
    rows = toy.set_index(["extractor", "generator"])

    def estimate(name: str) -> pd.Series:
        return pd.Series([f"{e:.3f} [{lo:.3f}, {hi:.3f}]" for e, lo, hi in
                          zip(rows[name], rows[f"{name}_lower"], rows[f"{name}_upper"])], index=rows.index)

    irs_table = pd.DataFrame({"n": rows["n"].astype(int), "IRS_α": rows["irs_alpha"].map("{:.3f}".format),
                              "IRS_∞ [interval]": estimate("irs_inf"),
                              "IRS_∞ of real": rows["irs_inf_real"].map("{:.3f}".format),
                              "IRS_∞,a [interval]": estimate("irs_adj")})
    knn = {"FID": rows["fid"].map(lambda v: sig(v, 3)),
           **{c: rows[c].map("{:.3f}".format) for c in ("precision", "recall", "density", "coverage")}}
    return {f"IRS of each set of n queries (against as many REF images): estimate [{level} interval]": irs_table,
            f"FID and k-NN precision / recall / density / coverage (k = {config.prdc_k}), on the same features":
            pd.DataFrame(knn)}
