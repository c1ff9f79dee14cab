"""Notebook 02's experiments: presets, the synthetic calibration table, the coverage re-splits and the
runtime-against-dimension study (spec 02 §2.3, §5, §6). The caption experiment is in `lib.crel.captions`, the
label-to-image generators' in `lib.crel.images`.

Every trained model is cached under data/cache/02/ by a hash of what it depends on.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from lib.crel import baselines as cb
from lib.crel import captions as cap
from lib.crel import evaluation as ev_mod
from lib.crel import images as im
from lib.crel import method as crel
from lib.crel import paper
from lib.crel.cvae import SMALL_X_HIDDEN, CVAESettings, check_collapse, dead_dimensions, train_cvae
from lib.crel.flow import FlowSettings, train_flow
from lib.crel.stages import GUARD, IDENTITY_DQR, LATENT_DQR, LGM, TABLE
from lib.data.banana import banana
from lib.diffusion.family import FAMILIES
from lib.params import (
    PARAMETER,
    MemoryTerm,
    check_choice,
    check_int,
    check_ints,
    check_list,
    check_memory,
    check_probability,
    check_real,
    check_seed,
    resolve_preset,
    shown,
)
from lib.run import Run

DQR_BASELINES = ("identity_convex", "latent_uncalibrated")
# What the cached LGMs and CReL models may be built of when loaded (lib.cache.load_torch's `allow`)
LGMS = ("cvae", "flow")  # the latent generative models
RESTART_STRIDE = 10_000  # a CVAE's k-th re-training after a collapse is initialised from seed + k * RESTART_STRIDE


@dataclass(frozen=True)
class CReLConfig:
    """Every setting of notebook 02 (comments: spec section; "interp." marks the spec's interpretations).

    Each notebook parameter sets the field of its name in lower case, or the fields whose metadata names it
    (`lib.params.setting_parameters`): LGM sets `lgm` and `captions.lgm`; PGD_STARTS and PGD_STEPS the captions'
    and the images' PGD; `pgd_steps` here (the decoded-set distance) is no parameter."""

    preset: str
    alphas: tuple[float, ...] = (0.1, 0.02)  # §2.2
    num_seeds: int = 20  # §2.2 (mqr: 20)
    seed: int = 0  # seeds used: seed, seed + 1, ...
    latent_dim: int = 2  # r for the synthetic task (§2.2; exact latent polygon)
    n_directions: int = 64  # K (§2.2)
    feldman_directions: int = 256  # Feldman's region (mqr q_model_ens.py)
    tau_dir: float | None = None  # per-direction level; None: = alpha (interp., §2.2)
    folds: tuple[int, int, int, int] = (6000, 6000, 4000, 4000)  # lgm / dqr / cal / test (§2.2, proposal)
    lgm: str = "flow"  # the LGM of the re-splits and the headline rows: "cvae" (the paper's) or "flow"
    table_lgms: tuple[str, ...] = ("cvae", "flow")  # the LGMs whose rows the synthetic table shows
    cvae_epochs: int = 100
    kl_mult: float = 1e-3  # mqr: 0.01, which collapses a latent dimension on some seeds
    kl_warmup_epochs: int = 20  # the KL weight grows linearly from 0 over these epochs
    free_bits: float = 0.0  # nats per latent dimension free of KL cost (0: off)
    collapse_threshold: float = 0.05  # a latent dimension with mean KL below this (nats) is reported dead
    sensitivity_threshold: float = 0.1  # ... or one the decoder uses less than this share of the most-used one
    cvae_restarts: int = 4  # a collapsed CVAE is trained again with another initialisation, at most this often
    flow_epochs: int = 100
    flow_transforms: int = 4
    decoded_tolerance: float = 0.01  # Y units: y is in the CVAE's decoded set iff its distance is <= this
    # projected-gradient steps of the decoded-set distance (PGD_STEPS sets the captions' and the images')
    pgd_steps: int = field(default=40, metadata={PARAMETER: None})
    dqr_epochs: int = 100
    z_grid_size: int = 10_000  # Feldman's latent grid (§3.7: 1e4 for r = 2)
    y_grid_size: int = 3_000  # Y-grid (§3.7: 55 x 55 for d = 2)
    area_eval_n_x: int = 500  # test conditions on which Coverage-Y and area are evaluated (§6)
    feldman_n_cal: int | None = None  # calibration points for Feldman's grid (None: all)
    max_cloud_points: int = 20_000  # the most decoded latent-grid points `lib.crel.plots.plot_condition` draws
    inflation: str = "ball"  # interp. (strongly implied), §3.5
    calibration_score: str = "nonneg"  # "signed": ablation, §3.4
    empty_region: str = "shift"  # proposal, §3.3
    dqr_baseline: str = "identity_convex"  # which DQR row the paper row is compared with; interp., §3.8
    include_pcp: bool = True
    include_feldman: bool = True  # Feldman's row (its decoded-set scores are the slowest part of the table)
    coverage_resplits: int = 200  # §5
    runtime_dims: tuple[int, ...] = (2, 3, 4)  # §2.3
    runtime_y_grid: tuple[int, ...] = (3_000, 100_000, 200_000)  # §3.7, per runtime dim
    runtime_z_grid: tuple[int, ...] = (10_000, 40_000, 100_000)  # latent grid per runtime dim (r = d)
    runtime_n_points: int = 200  # calibration points timed for CReL
    runtime_n_feldman: int = 10  # calibration points timed for the grid baseline
    runtime_epochs: int = 20
    cond_bins: int = 6  # conditional coverage: equal-width bins of x over (0.8, 3.2)
    cond_n_feldman: int = 500  # test points whose Feldman membership is decided (the slow one; the rest: all)
    spread_n_x: int = 20  # conditions at which the PGD's spread across starts is measured (§3.6)
    spread_starts: int = 50  # §2.2: the paper's 50 starts
    spread_steps: int = 100  # §2.2: pgd_steps 50-100
    captions: cap.CaptionSettings = field(default_factory=cap.CaptionSettings)  # §2.4
    images: im.ImageSettings = field(default_factory=im.ImageSettings)  # §2.6: the label-to-image generators


PRESETS: dict[str, CReLConfig] = {
    "smoke": CReLConfig(
        preset="smoke", num_seeds=1, folds=(1500, 1500, 500, 500), cvae_epochs=30, dqr_epochs=20, flow_epochs=30,
        kl_warmup_epochs=10, pgd_steps=10, y_grid_size=1_000, feldman_directions=64,  # smoke: a 3x cheaper table
        z_grid_size=900, area_eval_n_x=10, feldman_n_cal=50, coverage_resplits=100,
        runtime_dims=(2, 3), runtime_y_grid=(1_000, 8_000), runtime_z_grid=(900, 8_000), runtime_n_points=50,
        runtime_n_feldman=3, runtime_epochs=5, max_cloud_points=5_000, cond_bins=3, cond_n_feldman=30,
        spread_n_x=3, spread_starts=10, spread_steps=20,
        captions=cap.CaptionSettings(
            num_images=150, folds=(50, 40, 40, 20), samples_per_image=10, reference_samples=100,
            captioners=("A", "B"), p_fail_sweep=(), near_band=(1, 5), mid_band=(10, 30), unrelated_min_rank=80,
            epochs=5, n_test=20, pgd_starts=10, pgd_steps=10),
        # notebook 04's smoke generators (8 x 8, width 8, 4 epochs): seconds to train where not cached
        images=im.ImageSettings(
            family=FAMILIES["smoke"], generators=((8, 1.0, 1.0), (8, 1.0, 2.0), (8, 0.5, 1.0)), folds=(100, 60, 50, 40),
            prototype_per_class=20, pca_dim=16, epochs=10, pgd_starts=10, pgd_steps=10, shown_per_class=1)),
    "cpu": CReLConfig(
        preset="cpu", num_seeds=5, folds=(4000, 4000, 2000, 2000), cvae_epochs=60, dqr_epochs=40, flow_epochs=60,
        z_grid_size=2_500, area_eval_n_x=100, feldman_n_cal=500, runtime_n_points=200, runtime_n_feldman=3,
        runtime_epochs=5, max_cloud_points=10_000,
        # runtime up to d = 7: the spec's grids to d = 4, then the Y-grid doubles per dimension (as from 3 to 4)
        runtime_dims=(2, 3, 4, 5, 6, 7), runtime_y_grid=(3_000, 100_000, 200_000, 400_000, 800_000, 1_600_000),
        runtime_z_grid=(10_000, 40_000, 100_000, 250_000, 400_000, 600_000),
        captions=cap.CaptionSettings(
            num_images=1000, folds=(400, 300, 200, 100), samples_per_image=20, reference_samples=200,
            near_band=(1, 10), mid_band=(20, 100), p_fail_sweep=(0.0, 0.05, 0.15, 0.3), unrelated_min_rank=500,
            epochs=15, n_test=100, pgd_starts=50, pgd_steps=30)),
    "paper": CReLConfig(preset="paper", cvae_epochs=300, dqr_epochs=300, images=im.ImageSettings(
        family=FAMILIES["paper"],
        generators=((64, 1.0, 1.0), (64, 1.0, 2.0), (64, 1.0, 4.0), (64, 0.5, 1.0), (64, 0.25, 1.0), (32, 1.0, 1.0)))),
}
EMBEDDING_DIM = 384  # the caption embeddings' dimension (all-MiniLM-L6-v2)


def resolve_config(preset: str, **overrides: Any) -> CReLConfig:
    """The preset's config with `overrides` (None keeps the preset's value; `captions` takes a dict of the
    caption settings), validated before any work, and refused when `memory_estimate` exceeds the memory
    available."""
    config = resolve_preset(PRESETS, preset, overrides)
    validate(config)
    check_memory(memory_estimate(config))
    return config


def validate(config: CReLConfig) -> None:
    """Raise ValueError naming the parameter, the value and what is allowed."""
    _validate_levels(config)
    _validate_models(config)
    _validate_folds(config)
    _validate_grids_and_options(config)
    im.validate(config.images)


def _validate_levels(config: CReLConfig) -> None:
    """The levels, the seeds and the latent dimension of the synthetic table."""
    for a in check_list("alphas", config.alphas):
        check_probability("alphas entry", a)
    if config.tau_dir is not None:
        check_probability("tau_dir", config.tau_dir)
    check_int("num_seeds", config.num_seeds, minimum=1)
    check_seed("seed", config.seed)
    check_int("latent_dim", config.latent_dim, minimum=1)
    if config.latent_dim != 2:
        raise ValueError(f"latent_dim={config.latent_dim} is not supported by the synthetic table, which uses the "
                         "exact 2-D polygon for Coverage-Y, area and the Steiner area; use 2.")


def _validate_models(config: CReLConfig) -> None:
    """The LGMs, their collapse guard and training, and the directions of the DQR and of Feldman's region."""
    check_choice("lgm", config.lgm, LGMS)
    for name in check_list("table_lgms", config.table_lgms):
        check_choice("table_lgms entry", name, LGMS)
    if config.lgm not in config.table_lgms:
        raise ValueError(f"{shown('lgm')}={config.lgm!r} must be one of {shown('table_lgms')}={config.table_lgms!r} "
                         "(its rows lead the table).")
    for name in ("kl_mult", "free_bits", "collapse_threshold", "sensitivity_threshold", "decoded_tolerance"):
        check_real(name, getattr(config, name), low=0.0)
    check_int("kl_warmup_epochs", config.kl_warmup_epochs, minimum=0)
    check_int("cvae_restarts", config.cvae_restarts, minimum=0)
    check_int("flow_transforms", config.flow_transforms, minimum=1)
    check_int("pgd_steps", config.pgd_steps, minimum=1)
    check_int("n_directions", config.n_directions, minimum=3)
    check_int("feldman_directions", config.feldman_directions, minimum=3)


def _validate_folds(config: CReLConfig) -> None:
    """The four fold sizes, enough calibration points for the smallest alpha, and the subsets of them used."""
    folds = tuple(config.folds)  # four sizes: equal ones are fine, so no check_list
    if len(folds) != 4 or any(isinstance(f, bool) or not isinstance(f, int) or f < 1 for f in folds):
        raise ValueError(f"{shown('folds')}={config.folds!r} must be four positive integers (lgm, dqr, cal, test).")
    n_cal = folds[2]
    need = crel.min_calibration_points(min(config.alphas))
    if n_cal < need:
        raise ValueError(f"{shown('folds')}[2]={n_cal} calibration points are too few for alpha={min(config.alphas)}"
                         f": ceil((n+1)(1-alpha)) <= n needs at least {need}.")
    if config.feldman_n_cal is not None:
        check_int("feldman_n_cal", config.feldman_n_cal, minimum=need, maximum=n_cal)
    check_int("area_eval_n_x", config.area_eval_n_x, minimum=1, maximum=folds[3])


def _validate_grids_and_options(config: CReLConfig) -> None:
    """Epochs, grid sizes and the runtime study's sizes; the set's options; the captions' settings."""
    for name in ("cvae_epochs", "flow_epochs", "dqr_epochs", "z_grid_size", "y_grid_size", "coverage_resplits",
                 "runtime_n_points", "runtime_n_feldman", "runtime_epochs", "max_cloud_points"):
        check_int(name, getattr(config, name), minimum=1)
    check_choice("inflation", config.inflation, crel.INFLATIONS)
    check_choice("calibration_score", config.calibration_score, crel.CALIBRATION_SCORES)
    check_choice("empty_region", config.empty_region, crel.EMPTY_REGION)
    check_choice("dqr_baseline", config.dqr_baseline, DQR_BASELINES)
    check_ints("runtime_dims", config.runtime_dims, minimum=2)
    cap.validate(config.captions)
    for name in ("runtime_y_grid", "runtime_z_grid"):
        if len(getattr(config, name)) != len(config.runtime_dims):
            raise ValueError(f"{name}={getattr(config, name)!r} needs one entry per runtime_dims entry.")


def memory_estimate(config: CReLConfig) -> list[MemoryTerm]:
    """The main parts of what a run of notebook 02 holds in memory (bytes, rough; for `check_memory`).

    - the synthetic folds (x, y and their latent codes in float64, with copies: about 100 bytes a point);
    - the DQR's quantiles of a fold's points in every direction: the (points, n_directions) inputs through its
      64-wide layers in float32 (two layers alive at once) and the float64 result, about 540 bytes a pair, for
      the largest of the calibration and test folds;
    - the captions: every image's samples_per_image sampled embeddings (384 float32) and their PCA pairs;
    - the captions' PGD: test images x pgd_starts starting points, each with its copy of the image's quantiles
      (one per direction), its latent point, condition, reference embedding and decoder activations;
    - with the CVAE captions LGM, its latent_dim-wide layers (weights, gradients, Adam moments) and directions.
    The flow's latent dimension is the PCA dimension; it needs max(n_directions, 4 r) directions (lib.crel.embeddings).
    """
    fold = max(config.folds[2], config.folds[3])
    c = config.captions
    images = 5000 if c.num_images is None else c.num_images
    n_test = c.folds[3] if c.n_test is None else min(c.n_test, c.folds[3])
    latent = c.latent_dim if c.lgm == "cvae" else c.pca_dim or EMBEDDING_DIM
    directions = c.n_directions if c.lgm == "cvae" else max(c.n_directions, 4 * latent)
    terms = [
        MemoryTerm("the synthetic folds", 100 * sum(config.folds), {"folds": config.folds}),
        MemoryTerm("the DQR's quantiles of a fold in every direction", 540 * fold * config.n_directions,
                   {"n_directions": config.n_directions, "folds": config.folds}),
        MemoryTerm("the sampled captions' embeddings", images * c.samples_per_image * (4 * EMBEDDING_DIM + 512),
                   {"captions.samples_per_image": c.samples_per_image, "captions.num_images": c.num_images}),
        MemoryTerm("the captions' PGD starts", n_test * c.pgd_starts * (8 * (directions + 4 * latent) + 8192),
                   {"captions.pgd_starts": c.pgd_starts}),
    ]
    if c.lgm == "cvae":
        layers = 16 * latent * (2 * c.hidden[-1] + c.hidden[0]) + 8 * directions * latent
        terms.append(MemoryTerm("the captions CVAE's latent layers and directions", layers,
                                {"captions.latent_dim": c.latent_dim}))
    return terms


def tau_for(config: CReLConfig, alpha: float) -> float:
    return alpha if config.tau_dir is None else config.tau_dir


# ----------------------------------------------------------------------------------------------------
# Data and models (cached)
# ----------------------------------------------------------------------------------------------------
def synthetic_folds(config: CReLConfig, seed: int, d: int = 2) -> dict:
    """The banana data (data seed = seed) cut into the lgm / dqr / cal / test folds."""
    n = sum(config.folds)
    x, y = banana(n, seed, d)
    cuts = np.cumsum((0, *config.folds))
    names = ("lgm", "dqr", "cal", "test")
    return {name: (x[a:b], y[a:b]) for name, a, b in zip(names, cuts[:-1], cuts[1:])}


def lgm_settings(config: CReLConfig, epochs: int | None = None, lgm: str | None = None) -> CVAESettings | FlowSettings:
    """The training settings of the config's LGM (`lgm` overrides config.lgm; lr 2e-3, mqr: 1e-3, converges in the
    few epochs a CPU run affords)."""
    lgm = config.lgm if lgm is None else lgm
    if lgm == "flow":
        return FlowSettings(transforms=config.flow_transforms, epochs=epochs or config.flow_epochs, lr=2e-3)
    return CVAESettings(hidden=SMALL_X_HIDDEN, epochs=epochs or config.cvae_epochs, batch_size=256, lr=2e-3,
                        kl_mult=config.kl_mult, kl_warmup_epochs=config.kl_warmup_epochs, free_bits=config.free_bits)


def healthy_lgm(config: CReLConfig, seed: int, folds: dict, settings: CVAESettings | FlowSettings, lgm_name: str, *,
                run: Run, d: int, r: int, keep: bool = False) -> dict:
    """The LGM of one seed, trained (or loaded) until the collapse guard finds no dead dimension.

    Training k initialises from seed + k * RESTART_STRIDE; the data, its folds and the DQR's seed stay those of
    `seed`. A CVAE whose guard (on the dqr fold, never the calibration or test folds) finds a dead dimension is
    trained again, at most `config.cvae_restarts` times (on the cpu preset the first training of 2 of 5
    seeds collapses, and another initialisation of the same seed does not); if every training collapses the first
    is kept and `fitted_models`' guard names it. A flow is trained once. Returns {"model", "key" (its cache key),
    "label", "attempt" (the training used), "dead" and "kl" (the guard's reading of it: `dead_dimensions`),
    "collapsed_attempts" (the trainings rejected)}.
    """
    key_lgm = {"v": 3, "folds": config.folds, "seed": seed, "d": d, "r": r, lgm_name: settings}  # v3: LGM choice

    def trained(attempt: int) -> dict:
        init = seed + RESTART_STRIDE * attempt
        key = key_lgm if attempt == 0 else {**key_lgm, "init_seed": init}  # key policy in lib.store: a default
        label = f"banana-{lgm_name}-d{d}-r{r}-s{seed}" + (f"-init{init}" if attempt else "")
        if lgm_name == "flow":
            train = lambda: train_flow(*folds["lgm"], settings=settings, seed=init)  # noqa: E731
        else:
            train = lambda: train_cvae(*folds["lgm"], latent_dim=r, settings=settings, seed=init)  # noqa: E731
        model = run.stage(LGM, label, key, train, keep=keep)
        dead, kl, _ = dead_dimensions(model, folds["dqr"][1], folds["dqr"][0], threshold=config.collapse_threshold,
                                      sensitivity_threshold=config.sensitivity_threshold)
        return {"model": model, "key": key, "label": label, "attempt": attempt, "dead": dead, "kl": kl}

    tried = []
    for attempt in range(config.cvae_restarts + 1 if lgm_name == "cvae" else 1):
        tried.append(trained(attempt))
        if not tried[-1]["dead"]:
            break
    chosen = tried[-1] if not tried[-1]["dead"] else tried[0]  # every training collapsed: the first one
    return {**chosen, "collapsed_attempts": [t["attempt"] for t in tried if t["dead"]]}


GUARD_VERSION = 1  # key salt, frozen (lib.lineage detects changes of `healthy_lgm`'s code)


def lgm_choice(config: CReLConfig, seed: int, lgm_name: str, *, d: int = 2, latent_dim: int | None = None,
               epochs: int | None = None, run: Run) -> dict:
    """`healthy_lgm`'s verdict for one seed without its model: {"attempt", "dead", "kl", "collapsed_attempts"};
    cached and stored (`lib.store`), so a stored table run knows which training it measured without training."""
    r = (config.latent_dim if latent_dim is None else latent_dim) if lgm_name == "cvae" else d
    settings = lgm_settings(config, epochs, lgm_name)
    key = {"v": GUARD_VERSION, "folds": config.folds, "seed": seed, "d": d, "r": r, lgm_name: settings,
           "restarts": config.cvae_restarts if lgm_name == "cvae" else 0,
           "thresholds": [config.collapse_threshold, config.sensitivity_threshold]}

    def compute() -> dict:
        chosen = healthy_lgm(config, seed, synthetic_folds(config, seed, d), settings, lgm_name, run=run, d=d, r=r)
        kl = None if chosen["kl"] is None else [float(v) for v in np.ravel(chosen["kl"])]
        return {"attempt": int(chosen["attempt"]), "dead": [int(i) for i in chosen["dead"]], "kl": kl,
                "collapsed_attempts": [int(a) for a in chosen["collapsed_attempts"]]}  # plain data: loads as such

    return run.stage(GUARD, f"guard-{lgm_name}-d{d}-r{r}-s{seed}", key, compute)


def fitted_models(config: CReLConfig, seed: int, alpha: float, *, d: int = 2, latent_dim: int | None = None,
                  epochs: tuple[int, int] | None = None, run: Run, lgm: str | None = None,
                  identity: bool = True, keep: bool = False) -> dict:
    """{"crel": latent CReL, "dqr": identity-transform DQR (None with `identity=False`), "lgm_kl": per-dimension
    KL (CVAE) or None, "collapsed": dead latent dimensions, "lgm_attempt": which training of the LGM is used,
    "collapsed_attempts": the trainings the guard rejected} for one seed, alpha and LGM (`lgm` overrides
    config.lgm; cached). A CVAE whose every training collapsed raises a `CollapseWarning` naming the seed and
    the dimension. `run`: where the models come from; `keep`: the models are entries of the stored layer (their
    stages are ON_REQUEST, `lib.crel.stages`: the figures' runs keep them), a property of the entries, not of the
    run.
    """
    lgm_name = config.lgm if lgm is None else lgm
    check_choice("lgm", lgm_name, LGMS)
    r = (config.latent_dim if latent_dim is None else latent_dim) if lgm_name == "cvae" else d
    ce, de = epochs or (None, config.dqr_epochs)
    folds = synthetic_folds(config, seed, d)
    chosen = healthy_lgm(config, seed, folds, lgm_settings(config, ce, lgm_name), lgm_name, run=run, d=d, r=r,
                         keep=keep)
    if chosen["dead"]:  # the warning (it reads the guard's numbers again, only in this rare case)
        check_collapse(chosen["model"], folds["dqr"][1], folds["dqr"][0], seed=seed,
                       trainings=len(chosen["collapsed_attempts"]), threshold=config.collapse_threshold,
                       sensitivity_threshold=config.sensitivity_threshold)
    fit = crel.FitSettings(n_directions=config.n_directions, tau_dir=tau_for(config, alpha),
                           dqr=crel.DQRSettings(epochs=de, batch_size=256, lr=2e-3), inflation=config.inflation,
                           calibration_score=config.calibration_score, empty_region=config.empty_region)
    m = _latent_crel(chosen, folds, fit, seed, alpha, run=run, keep=keep)
    ident = _identity_dqr(config, folds, fit, seed, alpha, d=d, run=run, keep=keep) if identity else None
    for model in (m, ident) if identity else (m,):  # the options do not change training: set them on cached models
        for name in ("inflation", "calibration_score", "empty_region"):
            setattr(model, name, getattr(fit, name))
    return {"crel": m, "dqr": ident, "folds": folds, "lgm_kl": None if lgm_name == "flow" else chosen["kl"],
            "collapsed": chosen["dead"], "lgm_name": lgm_name, "lgm_attempt": chosen["attempt"],
            "collapsed_attempts": chosen["collapsed_attempts"]}


def _latent_crel(chosen: dict, folds: dict, fit: crel.FitSettings, seed: int, alpha: float, *, run: Run,
                 keep: bool) -> crel.CReL:
    """The DQR of `fit` on the LGM `healthy_lgm` chose, on the dqr fold's codes (cached beside the LGM's key)."""
    key = {**chosen["key"], "tau": fit.tau_dir, "K": fit.n_directions, "dqr": fit.dqr}

    def fit_latent() -> dict:
        return {"crel": crel.fit(*folds["lgm"], fit, x_dqr=folds["dqr"][0], y_dqr=folds["dqr"][1],
                                 lgm=chosen["model"], seed=seed)}

    # (entries written before the Y-space DQR had its own also hold it under "dqr"; it is not read from there)
    label = f"{chosen['label'].replace('banana-', 'banana-dqr-')}-a{alpha}"
    return run.stage(LATENT_DQR, label, key, fit_latent, keep=keep)["crel"]


def _identity_dqr(config: CReLConfig, folds: dict, fit: crel.FitSettings, seed: int, alpha: float, *, d: int,
                  run: Run, keep: bool) -> crel.CReL:
    """The DQR of `fit` in the output space (transform "identity", §3.8) on the dqr fold; it does not depend on
    the LGM, so one cache entry serves both."""
    key = {"v": 1, "folds": config.folds, "seed": seed, "d": d, "tau": fit.tau_dir, "K": fit.n_directions,
           "dqr": fit.dqr}

    def fit_identity() -> crel.CReL:
        return crel.fit(*folds["dqr"], replace(fit, transform="identity"), x_dqr=folds["dqr"][0],
                        y_dqr=folds["dqr"][1], seed=seed)

    return run.stage(IDENTITY_DQR, f"banana-dqr-identity-d{d}-s{seed}-a{alpha}", key, fit_identity, keep=keep)


# ----------------------------------------------------------------------------------------------------
# The synthetic table (§2.3)
# ----------------------------------------------------------------------------------------------------
def _measurement_grids(model: crel.CReL, folds: dict, y_size: int, z_size: int) -> tuple[cb.Grid, np.ndarray]:
    """(the Y-grid: ~y_size points over the [1 %, 99 %] box of the lgm and dqr folds' outputs padded by 0.2,
    Feldman's latent grid: ~z_size points, (z_size, r), over that box of the dqr fold's codes padded by 1) (§3.7)."""
    y_grid = cb.quantile_box_grid(np.vstack([folds["lgm"][1], folds["dqr"][1]]), y_size, pad=0.2)
    return y_grid, cb.quantile_box_grid(model.latent(*folds["dqr"]), z_size, pad=1.0).points


def latent_area(model: crel.CReL, q: np.ndarray) -> float:
    """Exact area of the calibrated latent set at one condition (r = 2): Steiner for the ball inflation, the
    shifted polygon for the half-space shift or a negative (signed-score) gamma."""
    g = model.gamma
    if crel.is_shifted_set(model.inflation, g):
        return crel.steiner_area(crel.polygon(model.U, q - g), 0.0)
    return crel.steiner_area(crel.polygon(model.U, q), g)


# Fields that do not change one table run's measurements: left out of its cache key (key policy in lib.store)
_NOT_IN_TABLE_KEY = ("preset", "alphas", "num_seeds", "seed", "lgm", "table_lgms", "coverage_resplits", "runtime_dims",
                     "runtime_y_grid", "runtime_z_grid", "runtime_n_points", "runtime_n_feldman", "runtime_epochs",
                     "captions", "images", "collapse_threshold", "sensitivity_threshold",  # the guard: at loading
                     "cvae_restarts",  # the training used is in the key instead (`lgm_attempt`)
                     "cond_bins", "cond_n_feldman", "spread_n_x", "spread_starts", "spread_steps")  # read the runs
TABLE_VERSION = 1  # key salt, frozen (lib.lineage detects changes of `synthetic_table_rows`' code)
# Columns of the retired decoded-cloud check (distance to the decoded latent-grid points <= their own 0.9-quantile
# nearest-neighbour gap, biased by the grid's spacing), dropped when read; `max_cloud_points` stays in the key
# (key policy in lib.store: a retired output).
_RETIRED_COLUMNS = ("coverage_y_cloud", "area_cloud")


def _without(rows: list[dict], columns: tuple[str, ...]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in columns} for r in rows]


def table_key(config: CReLConfig, seed: int, alpha: float, lgm: str, include_dqr: bool, lgm_attempt: int = 0) -> dict:
    """What one (LGM, seed, alpha) table run depends on: every setting except those in `_NOT_IN_TABLE_KEY`, and
    which training of the LGM it measured (`fitted_models`' "lgm_attempt"; the first adds nothing: key policy in
    lib.store)."""
    settings = {k: v for k, v in asdict(config).items() if k not in _NOT_IN_TABLE_KEY}
    key = {"v": TABLE_VERSION, "settings": settings, "seed": seed, "alpha": alpha, "lgm": lgm,
           "include_dqr": include_dqr}
    return {**key, "lgm_attempt": lgm_attempt} if lgm_attempt else key


def synthetic_table_rows(config: CReLConfig, seed: int, alpha: float, run: Run, *,
                         lgm: str | None = None, include_dqr: bool = True, with_model: bool = True) -> dict:
    """Coverage-Z, Coverage-Y and area of every method at one seed, alpha and LGM, and CReL's scores.

    The measurements (rows, CReL's scores and calibration) are cached per run under data/cache/02/ (`table_key`)
    and stored (`lib.store`), so an interrupted table resumes at the first run it had not finished and a stored
    run trains nothing; the models come from `fitted_models`' cache, only when the run is measured or
    `with_model` asks for them (then they are stored entries too), and the grids are rebuilt (cheap). Returns
    {"rows", "cal_scores", "test_scores", "info" (the calibration's), "lgm"} and, `with_model`, "model" (the
    calibrated CReL), "y_grid", "z_grid". `run`: the notebook's.
    """
    lgm_name = config.lgm if lgm is None else lgm
    check_choice("lgm", lgm_name, LGMS)
    choice = lgm_choice(config, seed, lgm_name, run=run)  # which training the collapse guard keeps
    models = functools.cache(lambda: fitted_models(config, seed, alpha, run=run, lgm=lgm_name,
                                                   identity=include_dqr, keep=with_model))  # the guard warns
    measure = lambda: _measure_table_run(config, seed, alpha, models(), _table_run(config, models()),  # noqa: E731
                                         include_dqr)
    measured = run.stage(TABLE, f"table-{lgm_name}-s{seed}-a{alpha}",
                         table_key(config, seed, alpha, lgm_name, include_dqr, choice["attempt"]), measure)
    guard = {"collapsed": list(choice["dead"]), "lgm_attempt": choice["attempt"],
             "collapsed_attempts": list(choice["collapsed_attempts"])}
    rows = [{**r, **guard} if r["lgm"] == lgm_name else {"lgm_attempt": 0, "collapsed_attempts": [], **r}
            for r in _without(measured["rows"], _RETIRED_COLUMNS)]  # the guard's verdict at the config's thresholds
    out = {"rows": rows, "cal_scores": measured["info"]["cal_scores"], "test_scores": measured["test_scores"],
           "info": dict(measured["info"]), "lgm": lgm_name}
    if not with_model:
        return out
    m, table_run = models()["crel"], _table_run(config, models())
    m.gamma, m.alpha, m.info = measured["gamma"], alpha, dict(measured["info"])
    return {**out, "model": m, "y_grid": table_run.y_grid, "z_grid": table_run.z_grid}


@dataclass(frozen=True)
class _TableRun:
    """What every row of one table run measures on: the calibration and evaluation folds, the grids, and how
    Coverage-Y is decided (`tol`, `pgd`); `common` holds the columns every LGM row shares."""

    cal: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]
    ev: slice  # the test conditions on which Coverage-Y and area are measured
    y_grid: cb.Grid
    z_grid: np.ndarray
    pgd: ev_mod.PGDSettings
    tol: float
    common: dict

    @property
    def evaluated(self) -> tuple[np.ndarray, np.ndarray]:
        return self.test[0][self.ev], self.test[1][self.ev]


def _tolerance(config: CReLConfig, m: crel.CReL) -> float:
    """How far (Y units) y may lie from a decoded set and count as in it: 0 for a bijective LGM (exact
    membership), `decoded_tolerance` otherwise."""
    return 0.0 if getattr(m.lgm, "bijective", False) else config.decoded_tolerance


def _table_run(config: CReLConfig, models: dict) -> _TableRun:
    m, folds = models["crel"], models["folds"]
    tol = _tolerance(config, m)
    measure = "exact" if getattr(m.lgm, "bijective", False) else f"decoded set, tol {tol:g}"
    common = dict(lgm=models["lgm_name"], measure=measure,
                  collapsed=list(models["collapsed"]),
                  lgm_kl=None if models["lgm_kl"] is None else [float(v) for v in models["lgm_kl"]])
    return _TableRun(folds["cal"], folds["test"], slice(0, config.area_eval_n_x),
                     *_measurement_grids(m, folds, config.y_grid_size, config.z_grid_size),
                     ev_mod.PGDSettings(steps=config.pgd_steps), tol, common)


def _crel_rows(m: crel.CReL, alpha: float, run: _TableRun) -> tuple[list[dict], np.ndarray]:
    """CReL's row (calibrating `m`) and the uncalibrated latent DQR region's, and CReL's test scores.

    Coverage-Y and area (`lib.crel.evaluation`): with the flow, exact (Enc(y) in S(x); the count of Y-grid points
    whose code is in S(x)); with the CVAE, y within `tol` of the decoded set Dec(S(x)) (projected optimisation
    over S(x))."""
    t0 = time.perf_counter()
    m.calibrate(*run.cal, alpha)
    cal_time = time.perf_counter() - t0
    test_scores = m.scores(*run.test)
    cov_z = float(np.mean(test_scores <= m.gamma))
    bijective = getattr(m.lgm, "bijective", False)
    t0 = time.perf_counter()
    if bijective:
        out = ev_mod.exact_output_evaluation(m, *run.evaluated, run.y_grid)
    else:
        out = ev_mod.decoded_set_evaluation(m, *run.evaluated, run.z_grid, run.y_grid, run.tol, run.pgd)
    eval_s = time.perf_counter() - t0
    steiner = float(np.mean([latent_area(m, q) for q in m.quantiles(run.evaluated[0])]))
    # bijective: Enc(y) in S(x) is exactly the Coverage-Z event, so Coverage-Y is measured on the whole test fold
    cov_y = float(np.mean(test_scores <= m.gamma + 1e-12)) if bijective else float(out["covered"].mean())
    pre = m.info["pre_calibration_coverage"]
    return [dict(method="CReL", coverage_z=cov_z, coverage_y=cov_y, area=float(out["area"].mean()),
                 latent_area=steiner, gamma=m.gamma, pre_coverage=pre,
                 calibration_s_per_point=cal_time / len(run.cal[0]), evaluation_s=eval_s, **run.common),
            dict(method="DQR (latent, uncalibrated)", coverage_z=float(np.mean(test_scores <= 0)), coverage_y=np.nan,
                 area=np.nan, latent_area=np.nan, gamma=0.0, pre_coverage=pre, calibration_s_per_point=np.nan,
                 **run.common)], test_scores


def _feldman_row(config: CReLConfig, m: crel.CReL, alpha: float, run: _TableRun) -> dict:
    """Feldman et al.'s region on the same LGM and DQR network (`config.feldman_directions` directions),
    calibrated on the first `config.feldman_n_cal` calibration points and measured as CReL's set is."""
    nf = config.feldman_n_cal or len(run.cal[0])
    feld = ev_mod.FeldmanRegion(m, crel.directions(config.feldman_directions, m.latent_dim), run.z_grid, run.y_grid,
                                tol=run.tol, pgd=run.pgd)
    t0 = time.perf_counter()
    feld.calibrate(run.cal[0][:nf], run.cal[1][:nf], alpha)
    f_time = (time.perf_counter() - t0) / nf
    fo = feld.evaluate(*run.evaluated)
    return dict(method="Feldman", coverage_z=np.nan, coverage_y=float(fo["covered"].mean()),
                area=float(fo["area"].mean()), latent_area=np.nan, gamma=feld.radius, pre_coverage=np.nan,
                calibration_s_per_point=f_time, **run.common)


def _dqr_row(ident: crel.CReL, alpha: float, run: _TableRun) -> dict:
    """The DQR fitted in Y (calibrating `ident`): its latent space is Y, so Coverage-Z = Coverage-Y, exact."""
    ident.calibrate(*run.cal, alpha)
    io = cb.convex_output_evaluation(ident, *run.evaluated, run.y_grid)
    full_cov = float(np.mean(ident.contains(*run.test)))
    return dict(method="DQR (Y-space)", coverage_z=full_cov, coverage_y=full_cov, area=float(io["area"].mean()),
                latent_area=np.nan, gamma=ident.gamma, pre_coverage=ident.info["pre_calibration_coverage"],
                calibration_s_per_point=np.nan, lgm="none", measure="exact", collapsed=[], lgm_kl=None)


def _pcp_row(m: crel.CReL, seed: int, alpha: float, run: _TableRun) -> dict:
    """PCP with the LGM as its generator (`cb.PCP`, seeded `seed`), its Coverage-Y on the whole test fold."""
    pcp = cb.PCP(m.lgm, seed=seed).calibrate(*run.cal, alpha)
    po = pcp.evaluate(*run.evaluated, run.y_grid)
    full = pcp.scores(*run.test, seed + cb.PCP_COVERAGE_STREAM) <= pcp.radius
    return dict(method="PCP", coverage_z=np.nan, coverage_y=float(full.mean()), area=float(po["area"].mean()),
                latent_area=np.nan, gamma=pcp.radius, pre_coverage=np.nan, calibration_s_per_point=np.nan,
                **{**run.common, "measure": "exact"})


PCP_SAMPLE_COUNTS = (10, 50, 200, 1000)  # K, the generator samples PCP's balls sit on (the paper does not state its K)


def pcp_by_samples(config: CReLConfig, seed: int, alpha: float, run: Run,
                   counts: tuple[int, ...] = PCP_SAMPLE_COUNTS) -> list[dict]:
    """PCP's radius, area and Coverage-Y at each number of generator samples K in `counts`, on the flow's table run
    of one seed and alpha (the table's PCP row uses `cb.PCP`'s default K). Not cached: a minute at K = 1000 on the
    `cpu` preset. Returns [{"K", "radius", "area", "coverage_y"}]."""
    models = fitted_models(config, seed, alpha, run=run, lgm="flow", keep=run.namespace == "02")
    table_run = _table_run(config, models)
    rows = []
    for k in counts:
        pcp = cb.PCP(models["crel"].lgm, num_samples=k, seed=seed).calibrate(*table_run.cal, alpha)
        area = pcp.evaluate(*table_run.evaluated, table_run.y_grid)["area"]
        covered = pcp.scores(*table_run.test, seed + cb.PCP_COVERAGE_STREAM) <= pcp.radius
        rows.append({"K": k, "radius": float(pcp.radius), "area": float(area.mean()),
                     "coverage_y": float(covered.mean())})
    return rows


def _measure_table_run(config: CReLConfig, seed: int, alpha: float, models: dict, run: _TableRun,
                       include_dqr: bool) -> dict:
    """The uncached body of `synthetic_table_rows`: every method's row at one seed, alpha and LGM (`models`:
    `fitted_models`' output; its CReL and DQR models are calibrated here), in the table's order."""
    m = models["crel"]
    rows, test_scores = _crel_rows(m, alpha, run)
    if config.include_feldman:
        rows.append(_feldman_row(config, m, alpha, run))
    if include_dqr:
        rows.append(_dqr_row(models["dqr"], alpha, run))
    if config.include_pcp:
        rows.append(_pcp_row(m, seed, alpha, run))
    for r in rows:
        r.update(seed=seed, alpha=alpha)
    return {"rows": rows, "test_scores": test_scores, "gamma": m.gamma, "info": dict(m.info)}


SYNTHETIC_COLUMNS = ("coverage_z", "coverage_y", "area", "latent_area", "gamma",
                     "pre_coverage")  # the measured columns of `synthetic_table_rows`' rows
SUMMARY_COLUMNS = ("coverage_z", "coverage_y", "area")  # shown as 'mean ± sd'


def mean_sd(stats: pd.DataFrame, column: str) -> pd.Series:
    """'mean ± sd' over seeds of `column` from `stats` (a groupby's agg(["mean", "std", ...])): areas to one
    decimal, coverages to four; sd left out for one seed, the cell blank where a method has no such value."""
    m, s = stats[(column, "mean")], stats[(column, "std")]
    digits = 1 if column.startswith("area") else 4
    return pd.Series([("" if np.isnan(a) else f"{a:.{digits}f}" + ("" if np.isnan(b) else f" ± {b:.{digits}f}"))
                      for a, b in zip(m, s)], index=stats.index)


def paper_dqr_row(dqr_baseline: str) -> dict[str, str]:
    """{our method name: the paper's row it stands beside}: which of our two DQR rows is compared with the paper's
    DQR row (`dqr_baseline`, §3.8 [interpretation])."""
    return {"DQR (Y-space)" if dqr_baseline == "identity_convex" else "DQR (latent, uncalibrated)": "DQR"}


def synthetic_summary(rows: pd.DataFrame, dqr_baseline: str) -> pd.DataFrame:
    """The synthetic table over seeds (§2.3, §3.7), one row per (alpha, lgm, method) in the order of `rows`:
    'mean ± sd' of each of SUMMARY_COLUMNS, the number of seeds with a Coverage-Y, and the paper's Coverage-Z,
    Coverage-Y and Area beside (`paper_coverage_z`, ...; blank where the paper has no such row). The paper's DQR
    row stands beside the DQR row that `dqr_baseline` names (§3.8 [interpretation]).

    rows: the rows of `synthetic_table_rows` (every LGM, seed and alpha), as a DataFrame.
    """
    keys = ["alpha", "lgm", "method"]
    stats = rows.groupby(keys, sort=False)[list(SYNTHETIC_COLUMNS)].agg(["mean", "std", "count"])
    reported = pd.DataFrame([dict(alpha=a, method=m, paper_coverage_z=v[0], paper_coverage_y=v[1], paper_area=v[2])
                             for (m, a), v in paper.TABLE.items()])
    short = paper_dqr_row(dqr_baseline)
    side = pd.DataFrame({c: mean_sd(stats, c) for c in SUMMARY_COLUMNS})
    side["seeds"] = stats[("coverage_y", "count")].astype(int)
    side = side.reset_index()
    side["paper_name"] = side["method"].map(lambda m: short.get(m, m))
    side = side.merge(reported, left_on=["alpha", "paper_name"], right_on=["alpha", "method"], how="left",
                      suffixes=("", "_p")).drop(columns=["paper_name", "method_p"])
    return side.astype(object).fillna("")


def resplit_coverage(scores: np.ndarray, n_cal: int, alpha: float, repeats: int, seed: int) -> dict:
    """Coverage over `repeats` random re-splits of pooled scores into n_cal calibration and the rest test
    (spec §5): per split gamma = conformal_radius(cal), coverage = mean(test <= gamma)."""
    rng = np.random.default_rng(seed)
    cov = np.empty(repeats)
    for i in range(repeats):
        perm = rng.permutation(len(scores))
        gamma = crel.conformal_radius(scores[perm[:n_cal]], alpha)
        cov[i] = np.mean(scores[perm[n_cal:]] <= gamma)
    n_test = len(scores) - n_cal
    return {"coverage": cov, "lower": 1 - alpha, "upper": 1 - alpha + 1 / (n_cal + 1), "n_test": n_test,
            "mean": float(cov.mean()), "se": float(cov.std(ddof=1) / math.sqrt(repeats))}


def conditional_coverage(config: CReLConfig, runs: dict, seeds: list[int], alpha: float, run: Run) -> dict:
    """Per-point coverage on the test fold of each method with the headline LGM (`config.lgm`), for
    `lib.crel.conditional.binned_coverage`: CReL over every seed (its measured test scores against γ: Coverage-Y for
    the flow, Coverage-Z for the CVAE), DQR in Y and Feldman's region on the first seed (Feldman's signed score
    against its calibrated radius on the first `config.cond_n_feldman` test points).

    runs: notebook 02's {(lgm, seed, alpha): `synthetic_table_rows` output}, the first seed's with its model.
    run: the notebook's, for the first seed's stored models (under FORCE_RECOMPUTE the table runs refitted them,
    and this run reads them back: `lib.run`). Returns {method: {"x": (n,) float, "covered": (n,) bool}}.
    """
    gamma = lambda measured, method: next(r["gamma"] for r in measured["rows"] if r["method"] == method)  # noqa: E731
    crel_x, crel_cov = [], []
    for seed in seeds:
        measured = runs[config.lgm, seed, alpha]
        crel_x.append(synthetic_folds(config, seed)["test"][0][:, 0])
        crel_cov.append(measured["test_scores"] <= gamma(measured, "CReL") + 1e-12)
    first = runs[config.lgm, seeds[0], alpha]
    models = fitted_models(config, seeds[0], alpha, run=run, lgm=config.lgm, identity=True, keep=True)
    (x_cal, y_cal), (x_te, y_te) = models["folds"]["cal"], models["folds"]["test"]
    ident = models["dqr"].calibrate(x_cal, y_cal, alpha)
    m, n = first["model"], config.cond_n_feldman
    feld = ev_mod.FeldmanRegion(m, crel.directions(config.feldman_directions, m.latent_dim), first["z_grid"],
                                first["y_grid"], tol=_tolerance(config, m),
                                pgd=ev_mod.PGDSettings(steps=config.pgd_steps), radius=gamma(first, "Feldman"))
    return {"CReL": {"x": np.concatenate(crel_x), "covered": np.concatenate(crel_cov)},
            "Feldman": {"x": x_te[:n, 0], "covered": feld.scores(x_te[:n], y_te[:n]) <= feld.radius},
            "DQR (Y-space)": {"x": x_te[:, 0], "covered": np.asarray(ident.contains(x_te, y_te), bool)}}


SPREAD_REFERENCE_STREAM = 1  # `worst_case_starts`: the fresh outputs whose mean is the reference E[Y|x]


def worst_case_starts(config: CReLConfig, model: crel.CReL, seed: int) -> np.ndarray:
    """Each PGD start's worst case at `config.spread_n_x` conditions evenly inside (0.8, 3.2): ρ(y) = −‖y − E[Y|x]‖
    (the explorer's; E[Y|x] from 2,000 fresh outputs), `config.spread_starts` starts of `config.spread_steps` steps
    (§3.6). Returns (spread_n_x, spread_starts) float, `CReL.reliability`'s "start_scores"."""
    from lib.crel.plots import negative_distance
    from lib.data.banana import sample_y

    xs = np.linspace(0.8, 3.2, config.spread_n_x + 2)[1:-1]
    ref = np.stack([sample_y(np.full(2000, v), np.random.default_rng(seed + SPREAD_REFERENCE_STREAM)).mean(0)
                    for v in xs])
    rel = model.reliability(xs[:, None], ref, negative_distance, starts=config.spread_starts,
                            steps=config.spread_steps, lr=0.05, seed=seed)
    return rel["start_scores"]


# ----------------------------------------------------------------------------------------------------
# Runtime against output dimension (§2.3, §6)
# ----------------------------------------------------------------------------------------------------
RUNTIME_REPEATS = 5  # CReL's seconds per point: the median of this many timings of its calibration points


def runtime_rows(config: CReLConfig, run: Run, alpha: float = 0.1) -> list[dict]:
    """Seconds per calibration point of CReL (one exact QP; the median of RUNTIME_REPEATS timings of the same
    points: one timing takes about 10 ms on the `cpu` preset, within a shared machine's jitter) and of Feldman's grid
    score (the mean over its points, each timed once: seconds each), at each d (r = d); the models from `run` (none
    is an entry of the stored layer)."""
    rows = []
    for d, yg, zg in zip(config.runtime_dims, config.runtime_y_grid, config.runtime_z_grid):
        models = fitted_models(config, config.seed, alpha, d=d, latent_dim=d,
                               epochs=(config.runtime_epochs, config.runtime_epochs), run=run, identity=False)
        m, folds = models["crel"], models["folds"]
        x_cal, y_cal = folds["cal"]
        n_c, n_f = min(config.runtime_n_points, len(x_cal)), min(config.runtime_n_feldman, len(x_cal))
        timings = []
        for _ in range(RUNTIME_REPEATS):
            t0 = time.perf_counter()
            m.scores(x_cal[:n_c], y_cal[:n_c])
            timings.append((time.perf_counter() - t0) / n_c)
        t_crel = float(np.median(timings))
        y_grid, z_grid = _measurement_grids(m, folds, yg, zg)
        feld = ev_mod.FeldmanRegion(m, crel.directions(config.feldman_directions, d, config.seed), z_grid, y_grid,
                                    tol=_tolerance(config, m), pgd=ev_mod.PGDSettings(steps=config.pgd_steps))
        split = _feldman_point_times(feld, x_cal[:n_f], y_cal[:n_f])
        rows.append(dict(d=d, crel_s=t_crel, feldman_s=split["mean_s"], ratio=split["mean_s"] / t_crel,
                         y_grid=len(y_grid.points), z_grid=len(z_grid), feldman_inside=split["inside"],
                         feldman_in_s=split["in_s"], feldman_out_s=split["out_s"]))
    return rows


def _feldman_point_times(feld: ev_mod.FeldmanRegion, x: np.ndarray, y: np.ndarray) -> dict:
    """Seconds of Feldman's score point by point, split by where the point lies: inside its region the score
    scans the whole Y-grid (the distance to the nearest grid point outside), outside it descends to the decoded
    region, so the mean over a few points depends on how many of them are inside. Returns {"mean_s", "inside"
    (count), "in_s", "out_s" (means; NaN where no point)}."""
    seconds, inside = np.empty(len(x)), np.empty(len(x), bool)
    for i in range(len(x)):
        t0 = time.perf_counter()
        inside[i] = feld.scores(x[i:i + 1], y[i:i + 1])[0] <= 0
        seconds[i] = time.perf_counter() - t0
    mean = lambda mask: float(seconds[mask].mean()) if mask.any() else math.nan  # noqa: E731
    return {"mean_s": float(seconds.mean()), "inside": int(inside.sum()), "in_s": mean(inside), "out_s": mean(~inside)}


def growth_rates(dims: np.ndarray, seconds: np.ndarray) -> dict:
    """Fitted growth of seconds in d: the exponential rate (slope of log t) and the linear slope."""
    dims, seconds = np.asarray(dims, float), np.asarray(seconds, float)
    log_slope = np.polyfit(dims, np.log(seconds), 1)[0]
    lin_slope = np.polyfit(dims, seconds, 1)[0]
    return {"factor_per_dim": float(np.exp(log_slope)), "linear_slope_s": float(lin_slope)}
