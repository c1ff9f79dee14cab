"""Notebook 01's experiment: presets, and the cached train -> sample -> PR-curve pipeline per ensemble.

An *ensemble* is M DDPM members of one complexity C trained on one training set for one number of
steps (spec 01 §2.3-2.5). `run_ensemble` trains them (batched, checkpointed), samples from each, and
computes each member's kNN PR curve against the held-out ring. Every stage is cached under
data/cache/01/ by a hash of everything it depends on, so an interrupted run resumes where it stopped.
Each stage takes the notebook's run (`lib.run.Run`: the cache, the stored layer, FORCE_RECOMPUTE, the device and
the progress bars); the facts the notebook's text states are `lib.prcurves.readings`'.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from lib.data.ring import RingSettings, check_truncation, ring_train_heldout
from lib.params import (
    PARAMETER,
    MemoryTerm,
    check_choice,
    check_int,
    check_ints,
    check_list,
    check_memory,
    check_percentiles,
    check_probability,
    check_seed,
    resolve_preset,
    shown,
)
from lib.prcurves import budget, ddpm, families, paper
from lib.prcurves import method as prcurves
from lib.prcurves.families import FamilySettings
from lib.prcurves.paper import EPOCHS as PAPER_EPOCHS  # the authors' epochs per C (the `paper` preset's budget)
from lib.prcurves.stages import CURVES, ENSEMBLE, FAMILY, FAMILY_MEMBER, LOSSES, SAMPLES
from lib.prcurves.stats import TESTS, pointwise_compare
from lib.progress import progress as progress_bar
from lib.run import Run
from lib.seeds import derive_seed

RESAMPLING = ("resplit", "bootstrap")


@dataclass(frozen=True)
class EnsemblePRConfig:
    """Every setting of notebook 01. Comments give the spec section or ambiguity (A#) each follows."""

    preset: str
    n_train: int = 10_000  # A1: training-set size; the held-out set has the same size
    complexities: tuple[int, ...] = (1, 2, 4, 8)  # C2: residual blocks
    num_members: int = 30  # C1: M (the paper's, paper.MEMBERS)
    budget_unit: str = "epochs"  # A2: "epochs" (the authors') or "steps"
    budget: int | None = None  # per member, in budget_unit; None: the authors' epochs per C (§2.3)
    num_generated: int = 10_000  # samples per member for evaluation (the authors: n_train)
    k: int | None = None  # A10: None -> floor(sqrt(n_real))
    num_angles: int = 200
    grid_size: int = 1000
    band: tuple[float, float] = (10.0, 90.0)  # A11: percentile band
    dup_recall: str = "replicate"  # A8
    compare: tuple[int, int] = (4, 2)  # Fig. 3: is the first better than the second?
    test: str = "paired_t"  # A3: the paper's test; the notebook shows the others beside it
    alpha: float = 0.05
    num_permutations: int = 10_000
    small_n: int = 2_500  # A1: Fig. 4's small training set
    small_complexities: tuple[int, ...] = (4,)
    num_resplits: int = 10  # sampling uncertainty: re-splits / bootstrap draws per member
    base_seed: int = 0  # A4: member seed = base_seed + 1000 C + i
    split_seed: int = 0  # A4: member i's PR split uses derive_seed(split_seed, C, i)
    ring: RingSettings = field(default_factory=RingSettings)  # A5, A6
    train: ddpm.TrainSettings = field(default_factory=ddpm.TrainSettings)
    # the frontier study (beyond the paper; lib.prcurves.budget.frontier_study): ((C, budgets in Adam steps), ...)
    # of the authors' recipe, frontier_members members each; stored entries of the layer
    frontier: tuple[tuple[int, tuple[int, ...]], ...] = ()
    frontier_members: int = 8
    # other model families (beyond the paper; spec §8, lib.prcurves.families): family_members members of each, at
    # the DDPM's budget, beside the DDPMs' first family_members members; stored entries of the layer
    families: tuple[str, ...] = ()
    family_members: int = 8
    family: FamilySettings = field(default_factory=FamilySettings, metadata={PARAMETER: None})


PRESETS: dict[str, EnsemblePRConfig] = {
    "smoke": EnsemblePRConfig(
        preset="smoke", n_train=2_000, complexities=(2, 4), num_members=4, budget_unit="steps", budget=200,
        num_generated=1_000, num_permutations=999, small_n=1_000, num_resplits=3,
        frontier=((1, (20, 40)),), frontier_members=2, families=("vae", "flow"), family_members=2,
        family=FamilySettings(hidden=16, transforms=2, bins=4)),
    # The budget study (lib.prcurves.budget, results/01/budget_study.csv): stratified t + warm-up/cosine lr + EMA
    # at batch 128 reach AUC 0.99 for C = 2 and 4 in 4,000 steps; the authors' settings give 0.39 / 0.32 after
    # 1,000 steps of 500.
    "cpu": EnsemblePRConfig(
        # M = 30, the paper's ensemble size: 2.6 h of one core to train the six ensembles (the first 8 members are
        # the former M = 8 preset's, bit for bit); stored
        preset="cpu", n_train=10_000, complexities=(1, 2, 4, 8), num_members=paper.MEMBERS, budget_unit="steps",
        budget=8_000, num_generated=5_000, small_n=2_500, num_resplits=5,
        train=ddpm.TrainSettings(batch_size=128, t_sampling="stratified", lr_schedule="cosine", warmup_steps=100,
                                 ema_decay=budget.EMA_DECAY),
        # the frontier study: C = 1 to 60,000 steps (60 min of one core), C = 8 to 10,000 (32 min); stored
        frontier=((1, (1000, 2000, 5000, 10000, 20000, 40000, 60000)), (8, (1000, 2000, 5000, 10000))),
        # the families: 8 VAEs (about 13 min of one core) and 8 flows (about 25 min); stored
        families=("vae", "flow"), family_members=8),
    "paper": EnsemblePRConfig(preset="paper"),
}


def resolve_config(preset: str, **overrides: Any) -> EnsemblePRConfig:
    """The preset's config with `overrides` applied (a value of None keeps the preset's), checked.

    `train` overrides fields of the preset's `ddpm.TrainSettings` the same way (e.g. {"ema_decay": 0.999}).

    Raises ValueError naming the parameter for any bad value, or when `memory_estimate` exceeds the memory
    available, before any work is done.
    `compare` and `small_complexities` follow an override of `complexities` when they are not given
    themselves and the preset's values are no longer among the complexities (`derive_comparisons`).
    """
    config = resolve_preset(PRESETS, preset, overrides)  # train={...}: nested TrainSettings overrides
    config = derive_comparisons(config, given=[k for k, v in overrides.items() if v is not None])
    validate(config)
    check_memory(memory_estimate(config))
    return config


def derive_comparisons(config: EnsemblePRConfig, given: tuple[str, ...] | list[str] = ()) -> EnsemblePRConfig:
    """Fit `compare` and `small_complexities` to `config.complexities` unless they are in `given`.

    The notebook exposes COMPLEXITIES but not these two, so `COMPLEXITIES=[1, 8]` would otherwise be
    refused for the presets' compare = (4, 2) and small_complexities = (4,). A preset value that is
    still among the complexities is kept. Otherwise compare becomes the two largest complexities, the
    larger first (is more capacity better? as Fig. 3 asks of 4 vs 2), and small_complexities becomes
    (compare[0],) (Fig. 4 reruns the larger model of the comparison on the small training set).
    """
    complexities = set(check_ints("complexities", config.complexities, minimum=1))
    changes: dict[str, Any] = {}
    if "compare" not in given and not set(config.compare) <= complexities:
        if len(complexities) < 2:
            raise ValueError(f"{shown('complexities')}={config.complexities!r} needs at least two entries: the "
                             f"notebook compares two ensembles (Fig. 3, compare={config.compare!r}).")
        changes["compare"] = tuple(sorted(complexities, reverse=True)[:2])
    compare = changes.get("compare", config.compare)
    if "small_complexities" not in given and not set(config.small_complexities) <= complexities:
        changes["small_complexities"] = (compare[0],)
    return replace(config, **changes) if changes else config


def validate(config: EnsemblePRConfig) -> None:
    """Check every field; raise ValueError naming the parameter, the value and what is allowed."""
    check_ints("complexities", config.complexities, minimum=1)
    check_ints("small_complexities", config.small_complexities, minimum=1, min_len=0)
    if set(config.small_complexities) - set(config.complexities):
        raise ValueError(f"small_complexities={config.small_complexities!r} must be among "
                         f"{shown('complexities')}={config.complexities!r} (Fig. 4 compares with the large "
                         "training set).")
    check_int("num_members", config.num_members, minimum=2)
    check_int("n_train", config.n_train, minimum=32)
    check_int("small_n", config.small_n, minimum=32)
    check_choice("budget_unit", config.budget_unit, ("epochs", "steps"))
    if config.budget is None:
        if config.budget_unit != "epochs" or set(config.complexities) - set(PAPER_EPOCHS):
            raise ValueError(f"{shown('budget')}=None means the authors' epochs, defined for "
                             f"{shown('budget_unit')}='epochs' and {shown('complexities')} in "
                             f"{sorted(PAPER_EPOCHS)}; give an integer budget instead.")
    else:
        check_int("budget", config.budget, minimum=1)
    check_int("num_generated", config.num_generated, minimum=8, maximum=config.n_train)
    if config.k is not None:
        check_int("k", config.k, minimum=1, maximum=config.num_generated // 2)
    check_int("num_angles", config.num_angles, minimum=1)
    check_int("grid_size", config.grid_size, minimum=2)
    check_percentiles("band", config.band)
    check_choice("dup_recall", config.dup_recall, prcurves.DUP_RECALL)
    if len(config.compare) != 2 or any(c not in config.complexities for c in config.compare):
        raise ValueError(f"compare={config.compare!r} must name two of {shown('complexities')}={config.complexities}.")
    check_choice("test", config.test, TESTS)
    check_probability("alpha", config.alpha)
    check_int("num_permutations", config.num_permutations, minimum=99)
    check_int("frontier_members", config.frontier_members, minimum=2)
    for family in check_list("families", config.families, min_len=0):
        check_choice("families entry", family, families.FAMILIES)
    check_int("family_members", config.family_members, minimum=2)
    config.family.check("family")
    for complexity, budgets in config.frontier:
        check_int("frontier complexity", complexity, minimum=1)
        check_ints("frontier budgets", budgets, minimum=1)
    check_int("num_resplits", config.num_resplits, minimum=2)
    check_seed("base_seed", config.base_seed)
    check_seed("split_seed", config.split_seed)
    check_truncation("ring.trunc_factor", config.ring)
    config.train.check("train")


def memory_estimate(config: EnsemblePRConfig) -> list[MemoryTerm]:
    """The main parts of what a run of notebook 01 holds in memory (bytes, rough; for `check_memory`).

    - the rings: training and held-out points of the main and the small training set, about 56 bytes a
      point with the temporaries of their draw;
    - training: each member's draws (indices, time steps, noise: 24 bytes a point) for a block of epochs
      (about n_train + BLOCK_STEPS x batch_size points), the activations of one minibatch kept for the backward
      pass (about 1,000 float32 per point, member and residual block), the weights with their gradients, Adam
      moments, moving average and copies (6 x 4 bytes a parameter), and the losses of every step and member
      (with their checkpoint copy);
    - sampling: every member's num_generated points through the denoiser at once (about 1,000 float32 each),
      and the samples of every ensemble, which the notebook keeps;
    - the PR curves of the re-split draws on the recall grid.
    Measured on a CPU (8 members): training 0.66 GB at batch 2,000 and C = 8 (estimate 0.67), sampling 0.58
    GB for 20,000 points (estimate 0.64).
    """
    M, n, ng, b = config.num_members, config.n_train, config.num_generated, config.train.batch_size
    ensembles = (*config.complexities, *config.small_complexities)
    steps = sum(training_steps(config, C) for C in ensembles)
    params = ddpm.num_parameters(0) + (ddpm.num_parameters(1) - ddpm.num_parameters(0)) * max(ensembles)
    points = n + max(n, ng) + config.small_n + max(config.small_n, ng)
    draw = 24 * (M + 1) * (n + ddpm.BLOCK_STEPS * b)
    curves = 8 * M * config.num_resplits * (2 * (config.num_angles + 2) + config.grid_size) * len(ensembles)
    return [
        MemoryTerm("the training and held-out rings", 56 * points, {"n_train": n, "small_n": config.small_n}),
        MemoryTerm("the members' training draws for a block of epochs", draw,
                   {"n_train": n, "num_members": M, "train.batch_size": b}),
        MemoryTerm("a minibatch's activations", 4 * 1000 * M * b * (max(ensembles) + 1),
                   {"train.batch_size": b, "num_members": M, "complexities": config.complexities}),
        MemoryTerm("the members' weights and optimiser state", 6 * 4 * M * params,
                   {"complexities": config.complexities, "num_members": M}),
        MemoryTerm("the training losses of every step and member", 8 * M * steps,
                   {"budget": config.budget, "num_members": M}),
        MemoryTerm("sampling all members at once", 4 * M * ng * (1000 + 2 * len(ensembles)),
                   {"num_generated": ng, "num_members": M}),
        MemoryTerm("the PR curves of the re-split draws", curves,
                   {"num_resplits": config.num_resplits, "num_members": M}),
    ]


# ----------------------------------------------------------------------------------------------------
# Budgets and seeds
# ----------------------------------------------------------------------------------------------------
def steps_per_epoch(n_train: int, batch_size: int) -> int:
    """Minibatches per epoch; the last partial batch is kept (spec §2.3)."""
    return math.ceil(n_train / batch_size)


def training_steps(config: EnsemblePRConfig, complexity: int, n_train: int | None = None,
                   match: str = "steps") -> int:
    """Adam steps per member for complexity C on a training set of `n_train` points.

    At the config's own n_train this is the budget. For another n (Fig. 4's small set), match="steps"
    keeps the same number of steps, match="epochs" the same number of epochs (the authors' choice,
    which gives a small set fewer steps: spec A2).
    """
    check_choice("match", match, ("steps", "epochs"))
    batch = config.train.batch_size
    budget = PAPER_EPOCHS[complexity] if config.budget is None else config.budget
    epochs = budget if config.budget_unit == "epochs" else budget / steps_per_epoch(config.n_train, batch)
    steps = round(epochs * steps_per_epoch(config.n_train, batch))
    if n_train is None or n_train == config.n_train or match == "steps":
        return steps
    return max(1, round(epochs * steps_per_epoch(n_train, batch)))


def member_seeds(config: EnsemblePRConfig, complexity: int) -> list[int]:
    """Seed of member i of complexity C (`ddpm.member_seeds`, spec A4)."""
    return ddpm.member_seeds(config.base_seed, complexity, config.num_members)


def ring_data(config: EnsemblePRConfig, n_train: int | None = None) -> dict:
    """Training (seed 7) and held-out (seed 3) rings (spec §2.1, A1).

    The held-out set has n_train points (the authors' choice), or num_generated if that is larger (a
    small training set), so that every ensemble is evaluated on num_generated real and fake points.
    """
    n = config.n_train if n_train is None else n_train
    return ring_train_heldout(n, max(n, config.num_generated), settings=config.ring)


# ----------------------------------------------------------------------------------------------------
# The cached pipeline
# ----------------------------------------------------------------------------------------------------
def _train_key(config: EnsemblePRConfig, complexity: int, n_train: int, num_steps: int) -> dict:
    return {"stage": "train", "version": 2, "complexity": complexity, "n_train": n_train, "num_steps": num_steps,
            "seeds": member_seeds(config, complexity), "ring": config.ring, "train": config.train}


def _label(complexity: int, n_train: int, num_steps: int, num_members: int) -> str:
    return f"C{complexity}-M{num_members}-n{n_train}-{num_steps}steps"


def trained_ensemble(config: EnsemblePRConfig, *, complexity: int, train_points: np.ndarray, num_steps: int,
                     run: Run) -> dict:
    """{"params": stacked member weights, "losses": (num_steps, M)}; cached (not stored), resumable mid-training;
    trained on `run.device`."""
    key = _train_key(config, complexity, len(train_points), num_steps)
    label = _label(complexity, len(train_points), num_steps, config.num_members)
    checkpoint = ENSEMBLE.entry(f"ensemble-{label}", key).path.with_suffix(".ckpt")
    if run.force and checkpoint.exists():
        checkpoint.unlink()

    def train() -> dict:
        result = ddpm.train_ensemble(train_points, complexity=complexity, seeds=member_seeds(config, complexity),
                                     num_steps=num_steps, settings=config.train, device=run.device,
                                     checkpoint=checkpoint, checkpoint_every=500, progress=run.progress)
        return result

    result = run.stage(ENSEMBLE, f"ensemble-{label}", key, train)
    checkpoint.unlink(missing_ok=True)
    return result


def generated_samples(config: EnsemblePRConfig, *, complexity: int, n_train: int, num_steps: int,
                      params: dict | Callable[[], dict], run: Run) -> np.ndarray:
    """(M, num_generated, 2) float32 ancestral samples of every member (non-finite rows kept), drawn on
    `run.device`; cached and stored (`lib.store`). `params` may be a function returning them, called only when
    the samples are computed (a stored run trains nothing)."""
    key = {**_train_key(config, complexity, n_train, num_steps), "stage": "sample", "n": config.num_generated}
    label = _label(complexity, n_train, num_steps, config.num_members)
    compute = lambda: {"samples": ddpm.sample_ensemble(  # noqa: E731
        params() if callable(params) else params, num_samples=config.num_generated,
        seeds=member_seeds(config, complexity), device=run.device, progress=run.progress)}
    return run.stage(SAMPLES, f"samples-{label}-{config.num_generated}", key, compute)["samples"]


def training_losses(config: EnsemblePRConfig, *, complexity: int, n_train: int, num_steps: int,
                    trained: Callable[[], dict], run: Run) -> np.ndarray:
    """(num_steps, M) float32 training losses of every member, from `trained()` (the cached training, called
    only when the losses are neither cached nor stored); cached and stored apart from the weights."""
    key = {**_train_key(config, complexity, n_train, num_steps), "stage": "losses"}
    label = _label(complexity, n_train, num_steps, config.num_members)
    compute = lambda: {"losses": np.asarray(trained()["losses"], dtype=np.float32)}  # noqa: E731
    return run.stage(LOSSES, f"losses-{label}", key, compute)["losses"]


def evaluation_sets(heldout: np.ndarray, fake: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(real, fake): the member's finite samples, and the held-out set truncated to their number (§2.4)."""
    fake = fake[np.isfinite(fake).all(axis=1)]
    return heldout[: len(fake)], fake


def member_curves(config: EnsemblePRConfig, *, complexity: int, heldout: np.ndarray, samples: np.ndarray,
                  resample: str | None = None, num_draws: int = 1, progress: bool = False) -> dict:
    """PR curves of every member: {"precision", "recall": (M, R, L), "lambdas": (L,)}.

    resample=None gives one curve per member (R = 1) from its own split derive_seed(split_seed, C, i).
    "resplit" draws R = num_draws new splits; "bootstrap" keeps the member's split and resamples each
    of its four halves with replacement. Both hold the member fixed, so their spread is the
    sampling-induced part of the evaluation uncertainty.
    """
    curves = []
    desc = f"PR curves C={complexity}" + (f" ({resample} x{num_draws})" if resample else "")
    for i, fake in enumerate(progress_bar(samples, desc=desc, enabled=progress)):
        real, fake = evaluation_sets(heldout, fake)
        k = config.k or prcurves.default_k(len(real))
        base_seed = derive_seed(config.split_seed, complexity, i)
        draws = [_one_curve(real, fake, k, config.num_angles, base_seed, resample, r) for r in range(num_draws)]
        curves.append(draws)
    return {"precision": np.array([[c["precision"] for c in d] for d in curves]),
            "recall": np.array([[c["recall"] for c in d] for d in curves]),
            "lambdas": curves[0][0]["lambdas"]}


def _one_curve(real, fake, k, num_angles, seed, resample, draw) -> dict:
    # draw r resamples from derive_seed(seed, r + 1): never the member's own split, which is seed itself
    if resample == "resplit":
        return prcurves.pr_curve(real, fake, k=k, num_angles=num_angles, seed=derive_seed(seed, draw + 1))
    if resample is None:
        return prcurves.pr_curve(real, fake, k=k, num_angles=num_angles, seed=seed)
    check_choice("resample", resample, RESAMPLING)
    boot = np.random.default_rng(derive_seed(seed, draw + 1))
    halves = {name: h[boot.integers(0, len(h), len(h))]
              for name, h in prcurves.seeded_split(real, fake, seed=seed).items()}
    return prcurves.pr_curve_from_split(**halves, k=k, num_angles=num_angles)


def curve_list(curves: dict, draw: int = 0) -> list[dict]:
    """The per-member dicts of draw `draw` of `member_curves`' arrays, as `ensemble_band` takes them."""
    return [{"precision": p[draw], "recall": r[draw], "lambdas": curves["lambdas"]}
            for p, r in zip(curves["precision"], curves["recall"])]


def cached_curves(config: EnsemblePRConfig, ensemble: dict, heldout: np.ndarray, run: Run,
                  resample: str | None = None) -> dict:
    """`member_curves` of `ensemble` ({"complexity", "n_train", "num_steps", "samples": (M, n, 2)}, as
    `run_ensemble` returns it), cached and stored (resample=None: one curve per member; else num_resplits draws
    each)."""
    complexity, n_train, num_steps = ensemble["complexity"], ensemble["n_train"], ensemble["num_steps"]
    samples = ensemble["samples"]
    num_draws = 1 if resample is None else config.num_resplits
    key = {**_train_key(config, complexity, n_train, num_steps), "stage": "curves", "n": config.num_generated,
           "k": config.k, "angles": config.num_angles, "split": config.split_seed, "resample": resample,
           "draws": num_draws, "heldout": heldout}
    label = _label(complexity, n_train, num_steps, config.num_members)
    compute = lambda: member_curves(config, complexity=complexity, heldout=heldout, samples=samples,  # noqa: E731
                                    resample=resample, num_draws=num_draws, progress=run.progress)
    return run.stage(CURVES, f"curves-{label}-{resample or 'main'}", key, compute)


def run_ensemble(config: EnsemblePRConfig, *, complexity: int, data: dict, num_steps: int,
                 run: Run) -> dict:
    """Train, sample and evaluate one ensemble; each stage cached (the run's lookup: `lib.run.Run`).

    data: {"train": (n, 2), "heldout": (n, 2)} from `ring_data`. Returns {"complexity", "n_train",
    "num_steps", "losses": (num_steps, M), "samples": (M, num_generated, 2), "num_dropped": (M,) non-finite
    samples dropped, "curves": list of M curve dicts, "band": `ensemble_band` dict, "summary": list of
    per-member `summarise` dicts}.
    """
    n_train = len(data["train"])
    trained = functools.cache(lambda: trained_ensemble(config, complexity=complexity, train_points=data["train"],
                                                       num_steps=num_steps, run=run))  # only if a stage needs it
    losses = training_losses(config, complexity=complexity, n_train=n_train, num_steps=num_steps, trained=trained,
                             run=run)
    samples = generated_samples(config, complexity=complexity, n_train=n_train, num_steps=num_steps,
                                params=lambda: ddpm.sampling_params(trained()), run=run)
    ensemble = {"complexity": complexity, "n_train": n_train, "num_steps": num_steps, "samples": samples}
    curves = curve_list(cached_curves(config, ensemble, data["heldout"], run))
    band = prcurves.ensemble_band(curves, config.grid_size, *config.band, dup_recall=config.dup_recall)
    return {**ensemble, "losses": losses, "num_dropped": (~np.isfinite(samples).all(axis=2)).sum(axis=1),
            "curves": curves, "band": band, "summary": [prcurves.summarise(c) for c in curves]}


# ----------------------------------------------------------------------------------------------------
# Summaries for the notebook's tables
# ----------------------------------------------------------------------------------------------------
def summary_row(result: dict) -> dict:
    """One row of the AUC / band-width table for an ensemble returned by `run_ensemble`."""
    auc = np.array([s["auc_raw"] for s in result["summary"]])
    band = result["band"]
    width = band["hi"] - band["lo"]
    at = {f"width@{r}": float(np.interp(r, band["recall"], width)) for r in paper.WIDTH_RECALLS}
    return {"C": result["complexity"], "n_train": result["n_train"], "steps": result["num_steps"],
            "members": len(auc), "auc_mean": float(auc.mean()), "auc_sd": float(auc.std(ddof=1)),
            "auc_median": float(np.median(auc)), "auc_grid_mean": float(band["auc"].mean()),
            "below_0.9": int((auc < paper.FAILED_AUC).sum()), "width": float(width.mean()), **at,
            "dropped_samples": int(result["num_dropped"].sum())}


def compare_ensembles(better: dict, worse: dict, config: EnsemblePRConfig) -> list[dict]:
    """The share of the recall grid where `better` beats `worse`, for every test and correction.

    better, worse: results of `run_ensemble`. Returns rows {"test", "correction", "fraction",
    "min_p", "pvalues": (G,) float, "significant": (G,) bool}.
    """
    a, b = better["band"]["members"], worse["band"]["members"]
    rows = []
    for test in TESTS:
        for correction in ("none", "bh") if test != "permutation_maxT" else ("none",):
            if test in ("paired_t", "wilcoxon") and len(a) != len(b):
                continue
            out = pointwise_compare(a, b, test, config.alpha, correction=correction,
                                    num_permutations=config.num_permutations, seed=config.split_seed)
            rows.append({"test": test, "correction": correction, "fraction": out["fraction"],
                         "min_p": float(np.nanmin(out["pvalues"])), "pvalues": out["pvalues"],
                         "significant": out["significant"]})
    return rows


def first_members(config: EnsemblePRConfig, result: dict, m: int) -> dict:
    """The ensemble of `result`'s first m members (a `run_ensemble` result, its band recomputed): member i's seed
    does not depend on M (spec A4) and members train independently, so these are exactly the members an M = m run
    trains (the `cpu` preset's M = 30 run and its stored M = 8 run agree to the bit)."""
    check_int("m", m, minimum=2, maximum=len(result["curves"]))
    curves = result["curves"][:m]
    first = {k: None if result.get(k) is None else result[k][:m] for k in ("samples", "num_dropped")}  # None:
    losses = result.get("losses")  # a result from stored curves (lib.prcurves.stored) has no samples or losses
    return {**result, **first, "losses": None if losses is None else losses[:, :m], "curves": curves,
            "summary": result["summary"][:m],
            "band": prcurves.ensemble_band(curves, config.grid_size, *config.band, dup_recall=config.dup_recall)}


MEMBER_TESTS = (("paired_t", "none"), ("paired_t", "bh"), ("permutation_maxT", "none"))  # the members study's


def members_study(config: EnsemblePRConfig, results: dict, counts: tuple[int, ...]) -> pd.DataFrame:
    """Per ensemble size m in `counts` (the first m members of each ensemble): the share of the recall grid where
    compare[0] beats compare[1] under the paired t-test, with BH, and by max-T; and per complexity the mean AUC and
    the mean band width. One row per m, beside the paper's row (M = 30)."""
    rows = []
    for m in counts:
        subset = {C: first_members(config, r, m) for C, r in results.items()}
        a, b = (subset[C]["band"]["members"] for C in config.compare)
        shares = {(t, c): pointwise_compare(a, b, t, config.alpha, correction=c, seed=config.split_seed,
                                            num_permutations=config.num_permutations)["fraction"]
                  for t, c in MEMBER_TESTS}
        rows.append({"M": f"{m} (ours)", **{f"{t} {c}".replace(" none", ""): shares[t, c] for t, c in MEMBER_TESTS},
                     **{f"AUC C={C}": summary_row(r)["auc_mean"] for C, r in subset.items()},
                     **{f"width C={C}": summary_row(r)["width"] for C, r in subset.items()}})
    rows.append({"M": f"{paper.MEMBERS} (paper)", "paired_t": paper.FRACTION_PAIRED_T,
                 **{f"AUC C={C}": paper.TABLE[C]["auc_mean"] for C in results if C in paper.TABLE},
                 **{f"width C={C}": paper.TABLE[C]["width"] for C in results if C in paper.TABLE}})
    return pd.DataFrame(rows).set_index("M")


def resampled_members(config: EnsemblePRConfig, result: dict, data: dict, resample: str, run: Run) -> np.ndarray:
    """(M, R, G) precision on the recall grid: each member evaluated R times by `resample` (cached and stored)."""
    arrays = cached_curves(config, result, data["heldout"], run, resample)
    per_draw = [prcurves.member_matrix(curve_list(arrays, r), config.grid_size, config.dup_recall)
                for r in range(arrays["precision"].shape[1])]
    return np.stack(per_draw, axis=1)


# ----------------------------------------------------------------------------------------------------
# Other model families (lib.prcurves.families; spec 01 §8): one stored entry per family
# ----------------------------------------------------------------------------------------------------
def family_steps(config: EnsemblePRConfig) -> int:
    """The families' budget in Adam steps: the DDPM's at the smallest complexity (the same for every C when the
    budget is in steps, as in the `cpu` preset; the authors' C = 1 epochs under the `paper` preset)."""
    return training_steps(config, min(config.complexities))


def run_family(config: EnsemblePRConfig, family: str, data: dict, run: Run) -> dict:
    """Train, sample and evaluate one family's ensemble, as `run_ensemble` does for a DDPM complexity, and return a
    result of the same form ({"complexity": the family's name, "band", "summary", ...}), so that `summary_row` and
    the notebook's band plots take it. The entry of the layer holds the samples, the epoch losses and the member
    curves; each member is cached on its own (an interrupted run resumes at the next member, and 8 members are the
    first 8 of 30). `config.family_members` members, `config.family` their settings."""
    check_choice("family", family, families.FAMILIES)
    steps, settings, m = family_steps(config), config.family, config.family_members
    key = {"v": families.VERSION[family], "family": family, "settings": settings, "ring": config.ring,
           "train": data["train"], "steps": steps, "batch": config.train.batch_size, "base_seed": config.base_seed,
           "n": config.num_generated}

    def member(i: int) -> dict:
        seed = families.member_seed(config.base_seed, family, i)
        model, history = families.train_member(family, data["train"], seed=seed, num_steps=steps,
                                               batch_size=config.train.batch_size, settings=settings,
                                               progress=run.progress)
        return {"samples": families.sample_member(model, config.num_generated, seed), "history": history,
                "scale": families.output_scale(model)}

    def compute() -> dict:
        members = [run.stage(FAMILY_MEMBER, f"family-{family}-member{i}", {**key, "member": i},
                             lambda i=i: member(i)) for i in range(m)]
        samples = np.stack([m["samples"] for m in members])
        curves = member_curves(config, complexity=families.FAMILY_STREAM[family], heldout=data["heldout"],
                               samples=samples)
        return {"samples": samples, "history": np.stack([m["history"] for m in members]),
                "scale": np.stack([m["scale"] for m in members]),
                "parameters": np.array([families.num_parameters(family, settings)]), **curves}

    arrays = run.stage(FAMILY, f"family-{family}-M{m}-{steps}steps",
                       {**key, "members": m, "k": config.k, "angles": config.num_angles, "split": config.split_seed,
                        "heldout": data["heldout"]}, compute)
    curves = curve_list(arrays)
    band = prcurves.ensemble_band(curves, config.grid_size, *config.band, dup_recall=config.dup_recall)
    samples = arrays["samples"]
    return {"complexity": family, "n_train": len(data["train"]), "num_steps": steps, "losses": None,
            "history": arrays["history"], "parameters": int(arrays["parameters"][0]), "samples": samples,
            "scale": arrays["scale"],
            "num_dropped": (~np.isfinite(samples).all(axis=2)).sum(axis=1), "curves": curves, "band": band,
            "summary": [prcurves.summarise(c) for c in curves]}


def families_table(config: EnsemblePRConfig, results: dict, family_results: dict) -> pd.DataFrame:
    """The families beside the DDPMs at the same ensemble size (each DDPM complexity's first `family_members`
    members, `first_members`): parameters per member, mean and sd of the members' AUC, the band width (mean over
    the recall grid), the members below AUC 0.9, the VAE's learned output noise sigma (ring units, the mean over
    members and coordinates; blank for the others, which add none), the radial spread of the samples (the sd of
    their distance from the ring's centre, mean over members; blank without samples) and the diverged samples
    (`far_points`: the share of points beyond FAR_RADIUS, and the members with any). One row per model."""
    m = config.family_members
    rows = []
    for C, result in results.items():
        if len(result["curves"]) >= m:
            first = first_members(config, result, m)
            share, members = far_points(first["samples"])
            rows.append({"model": f"DDPM C = {C}", "parameters": ddpm.num_parameters(C),
                         **_family_columns(summary_row(first)), "output sd": np.nan,
                         "radial sd": radial_sd(first["samples"]), "far points": share, "far members": members})
    for family, result in family_results.items():
        scale = result["scale"]
        share, members = far_points(result["samples"])
        rows.append({"model": families.NAMES[family], "parameters": result["parameters"],
                     **_family_columns(summary_row(result)),
                     "output sd": float(np.mean(scale)) if np.isfinite(scale).all() else np.nan,
                     "radial sd": radial_sd(result["samples"]), "far points": share, "far members": members})
    return pd.DataFrame(rows).set_index("model")


FAR_RADIUS = 10.0  # a sample this far from the ring's centre (radius about 1-3) is a diverged sample, not a mode


def far_points(samples: np.ndarray | None, radius: float = FAR_RADIUS) -> tuple[float, int]:
    """(share of all points beyond `radius` from the centre, members with any) of (M, n, 2) samples; (NaN, 0)
    without samples. A handful of diverged points is invisible to the kNN curves but dominates `radial_sd`."""
    if samples is None:
        return float("nan"), 0
    points = np.asarray(samples).reshape(-1, *np.shape(samples)[-2:])
    far = np.linalg.norm(points, axis=-1) > radius
    return float(far.mean()), int(far.any(axis=1).sum())


def radial_sd(samples: np.ndarray | None) -> float:
    """The sd of the points' distance from the ring's centre, the mean over members of (M, n, 2) samples (a single
    (n, 2) set is one member; NaN without samples): how far a model spreads its points across the ring's width."""
    if samples is None:
        return float("nan")
    points = np.asarray(samples).reshape(-1, *np.shape(samples)[-2:])
    return float(np.mean([np.linalg.norm(p[np.isfinite(p).all(axis=1)], axis=1).std() for p in points]))


def _family_columns(row: dict) -> dict:
    return {"members": row["members"], "AUC mean": row["auc_mean"], "AUC sd": row["auc_sd"],
            "band width": row["width"], "below 0.9": row["below_0.9"]}
