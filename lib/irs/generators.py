"""Notebook 04's trained generators (spec 04 §8): three diffusion arms at equal budget and seed on the retrieval
database, measured by IRS, FID and k-NN precision/recall/density/coverage, with the controls for copying.

- `unconditional`: EDM on the database images, no condition;
- `diadm`: DiADM (the paper's second contribution): each training image's EfficientNet-Lite0 feature is that
  image's own condition, and sampling conditions on training images' features (the authors use Inception,
  SwAV for chest X-rays: MischaD/Trichotomy `edm2/`); no label dropout, no guidance, as their
  `generate_images.py`;
- `class`: the CIFAR-10 class as condition, label dropout 0.1, sampled at several classifier-free guidance scales.

Every set (database, reference, generated) is at `family.resolution` (16 x 16: an area average of 2 x 2 pixels)
and is upsampled identically (bilinear, to 32 x 32) before every extractor, the conditioning one included.
The arms, their training and sampling are the core's (`lib.diffusion.family`, shared with notebook 02, which
ranks the class arm's sets by CReL); this module chooses the sets, measures them and makes the tables.

Caching: the trained EMA weights and the generated images are cached (not stored: weights and 2,500 images per
set are too large for results/); what the tables and figures need is one stored entry per generated set
(`generator_measurements`): per evaluation extractor the retrieved training index and distance of every
sample and the set's scores, plus the first `gen_grid` samples for the image grids.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lib.diffusion.family import (
    ARMS,
    NUM_CLASSES,
    GeneratedSet,
    budget_fraction,
    downsample,
    first_per_class,
    for_extractor,
    generated_images,
    set_key,
)
from lib.irs import method as irs
from lib.irs.config import IRSConfig, extractor_for
from lib.irs.features import Extractor, cached_features
from lib.irs.stages import GENERATOR_SCORES
from lib.manifold import precision_recall_density_coverage
from lib.metrics import frechet_distance
from lib.params import shown
from lib.reading import sig
from lib.run import Run
from lib.seeds import derive_seed

MEASURE_VERSION = 2  # key salt, frozen (lib.lineage sees code changes; v2: first extractor's retrievals only)
BOOT_STREAM = 19  # FID's bootstrap (against the test reference)
FID_TRAIN_STREAM = 1  # FID against the database: its rows and bootstrap draw from the test bootstrap's seed + this
MEMORISER_STREAM = 3  # `memorised_copies`: the memorised images, their draws and noise (notebook 04's streams)
REFERENCE_STREAM = 9  # `reference_rows`: the real reference rows of the generated sets (notebook 04's streams)


def budget_fractions(config: IRSConfig) -> list[float]:
    """gen_fractions as the fractions of whole epochs they train (`lib.diffusion.family.budget_fraction`: 0.5 of 25
    epochs is 0.48), in increasing order; two that train one budget are refused, naming both."""
    family, used = config.family, {}
    for f in config.gen_fractions:
        budget = budget_fraction(family, f, "gen_fractions entry")
        if budget in used:
            raise ValueError(f"{shown('gen_fractions')}: {used[budget]!r} and {f!r} are one budget, "
                             f"{round(budget * family.epochs)} of the {family.epochs} epochs (a budget trains whole "
                             "epochs); list it once.")
        used[budget] = f
    return sorted(used)


def generated_sets_of(config: IRSConfig) -> list[GeneratedSet]:
    """The sets a run measures: every arm at the main width at each checkpoint fraction (the class arm at
    guidance 1; in increasing budget, so that each continues its run's checkpoint, and at the fraction of whole
    epochs it trains: `budget_fractions`), the class arm at each guidance scale at the full budget, every arm at
    the other widths at the full budget, and the DiADM held-out control."""
    main, out = config.gen_channels[0], []
    for f in budget_fractions(config):
        out += [GeneratedSet(arm, main, f) for arm in ARMS]
    out += [GeneratedSet("class", main, 1.0, w) for w in config.gen_guidance if w != 1.0]
    out += [GeneratedSet(arm, ch, 1.0) for ch in config.gen_channels[1:] for arm in ARMS]
    return [*out, GeneratedSet("diadm", main, 1.0, heldout=True)]


def validate_generators(config: IRSConfig) -> None:
    """The generator study's settings (errors name the notebook's parameters through lib.params.shown)."""
    from lib.irs.features import OFFLINE
    from lib.params import check_choice, check_int, check_list, check_real

    check_choice("family.resolution", config.family.resolution, (8, 16, 32))
    check_int("family.train_per_class", config.family.train_per_class, minimum=2, maximum=config.train_per_class)
    check_int("family.n", config.family.n, minimum=2, maximum=10 * config.family.train_per_class)
    for ch in check_list("gen_channels", config.gen_channels):
        check_int("gen_channels entry", ch, minimum=8, maximum=512)
    check_int("family.epochs", config.family.epochs, minimum=1, maximum=100_000)
    for f in check_list("gen_fractions", config.gen_fractions):
        check_real("gen_fractions entry", f, low=0.0, high=1.0, open_low=True)
    for w in check_list("gen_guidance", config.gen_guidance):
        check_real("gen_guidance entry", w, low=0.0, high=100.0)
    if 1.0 not in config.gen_fractions or 1.0 not in config.gen_guidance:
        raise ValueError(f"{shown('gen_fractions')} and {shown('gen_guidance')} must each hold 1.0 (the full budget, "
                         f"no guidance), got {config.gen_fractions!r} and {config.gen_guidance!r}.")
    budget_fractions(config)  # each a whole number of epochs, none twice
    check_int("family.batch", config.family.batch, minimum=1, maximum=10 * config.family.train_per_class)
    check_real("family.lr", config.family.lr, low=0.0, high=1.0, open_low=True)
    check_real("family.label_dropout", config.family.label_dropout, low=0.0, high=1.0, open_high=True)
    check_int("family.steps", config.family.steps, minimum=1, maximum=1000)
    for name in ("seed", "cifar_source"):  # one parameter (SEED, CIFAR_SOURCE) sets the notebook's and the family's
        if getattr(config.family, name) != getattr(config, name):
            raise ValueError(f"{shown(name)} sets both {name}={getattr(config, name)!r} and the generators' "
                             f"family.{name}={getattr(config.family, name)!r}; give them one value.")
    for name in check_list("gen_eval_extractors", config.gen_eval_extractors):
        check_choice("gen_eval_extractors entry", name, OFFLINE)
    check_int("gen_boot", config.gen_boot, minimum=2, maximum=100_000)
    check_int("gen_grid", config.gen_grid, minimum=1, maximum=config.family.n)


# ----------------------------------------------------------------------------------------------------
# Images at the generators' resolution
# ----------------------------------------------------------------------------------------------------
def low_res_sets(config: IRSConfig, sets: dict) -> dict:
    """The generators' database (the first family.train_per_class images of each class of the retrieval
    database) and both held-out pools at family.resolution, each with its labels and its upsampled copy for
    extractors."""
    rows = first_per_class(sets["train_labels"], config.family.train_per_class)
    out = {"train_labels": sets["train_labels"][rows], "ref_labels": sets["ref_labels"],
           "syn_labels": sets["syn_labels"]}
    for pool, images in (("train", sets["train"][rows]), ("ref", sets["ref"]), ("syn", sets["syn"])):
        low = downsample(images, config.family.resolution)
        out[pool], out[f"{pool}_up"] = low, for_extractor(low)
    return out


def conditioning_for(config: IRSConfig, run: Run):
    """(conditioning(images_up, label) -> the conditioning extractor's features (pinned; extracted on
    `run.device`), its key) for DiADM."""
    extractor = extractor_for(config, "efficientnet_lite0", run.device)
    return (lambda images, label: cached_features(extractor, images, label=label, run=run)), extractor.key


# ----------------------------------------------------------------------------------------------------
# Measurements (stored)
# ----------------------------------------------------------------------------------------------------
def fid_interval(real: np.ndarray, fake: np.ndarray, *, reps: int, seed: int, alpha_e: float) -> dict:
    """FID with a bias-corrected percentile bootstrap interval: both sets resampled with replacement `reps`
    times; since a resample repeats points, FID of a resample is biased upward (real against real of the same
    distribution gives about twice the FID), so the percentiles are shifted by the bootstrap's bias
    mean(boot) - FID."""
    rng = np.random.default_rng(seed)
    fid = frechet_distance(real=real, fake=fake)
    if reps == 0:
        return {"fid": fid, "fid_lower": float("nan"), "fid_upper": float("nan")}
    boots = np.array([frechet_distance(real=real[rng.integers(0, len(real), len(real))],
                                       fake=fake[rng.integers(0, len(fake), len(fake))]) for _ in range(reps)])
    lower, upper = np.quantile(boots, [alpha_e, 1 - alpha_e]) - (boots.mean() - fid)
    return {"fid": fid, "fid_lower": float(max(lower, 0.0)), "fid_upper": float(upper)}


def set_scores(n_train: int, *, fake_idx: np.ndarray, real_idx: np.ndarray, fake_feats: np.ndarray,
               real_feats: np.ndarray, train_feats: np.ndarray, fake_dist: np.ndarray, real_dist: np.ndarray,
               config: IRSConfig, seed: int, boot: int) -> dict:
    """IRS_alpha, IRS_inf and IRS_inf,a (against the real reference at equal n), FID against the reference
    (test) and against as many database images, each with a bootstrap interval of `boot` resamples (none, NaN,
    for boot = 0), k-NN precision / recall / density / coverage, and the median distance to the nearest training
    image over that of the real images."""
    fake, real = irs.retrieval_result(n_train, fake_idx, config.alpha_e), irs.retrieval_result(
        n_train, real_idx, config.alpha_e)
    adj = irs.adjusted_score(fake, real)
    train_rows = np.random.default_rng(seed).choice(len(train_feats), len(fake_feats), replace=False)
    test = fid_interval(real_feats, fake_feats, reps=boot, seed=seed, alpha_e=config.alpha_e)
    train = fid_interval(train_feats[train_rows], fake_feats, reps=boot, seed=seed + FID_TRAIN_STREAM,
                         alpha_e=config.alpha_e)
    prdc = precision_recall_density_coverage(real=real_feats, fake=fake_feats, k=config.prdc_k)
    return {"irs_alpha": fake["irs_alpha"], "irs_inf": fake["estimate"], "irs_inf_lower": fake["lower"],
            "irs_inf_upper": fake["upper"], "irs_inf_real": real["estimate"], "irs_adj": adj["estimate"],
            "irs_adj_lower": adj["lower"], "irs_adj_upper": adj["upper"], **test,
            **{f"{k}_train": v for k, v in train.items()}, **prdc,
            "nn_ratio": float(np.median(np.sqrt(fake_dist)) / np.median(np.sqrt(real_dist)))}


@dataclass(frozen=True)
class EvaluationRun:
    """One evaluation extractor of the generator study (`evaluation_runs`): the extractor, and its features of the
    upsampled low-resolution database and REF pool on demand (extracted and pinned at the first call)."""

    extractor: Extractor
    train: Callable[[], np.ndarray]
    ref: Callable[[], np.ndarray]


def evaluation_runs(config: IRSConfig, low: dict, run: Run) -> dict[str, EvaluationRun]:
    """Per evaluation extractor (on `run.device`), its `EvaluationRun`."""
    runs = {}
    for name in config.gen_eval_extractors:
        ex = extractor_for(config, name, run.device)
        runs[name] = EvaluationRun(ex, **{pool: functools.cache(
            lambda pool=pool, ex=ex: cached_features(ex, low[f"{pool}_up"], run=run,
                                                     label=f"{pool}{len(low[pool])}-lr{config.family.resolution}"))
            for pool in ("train", "ref")})
    return runs


def grid_rows(n: int, count: int) -> np.ndarray:
    """`count` rows spread evenly over n samples (a conditioned set's rows run through the classes in order)."""
    return np.unique(np.linspace(0, n - 1, min(count, n)).round().astype(int))


def measure_set(config: IRSConfig, low: dict, runs: dict[str, EvaluationRun], reference: np.ndarray, *, slug: str,
                images, sources, key: dict, run: Run) -> dict:
    """Stored: the scores of one set of family.n images under every evaluation extractor, against the REF rows
    `reference`, with each sample's retrieved training index under the first extractor (the grids' nearest
    training images; kept small for results/), and `gen_grid` samples. FID's
    bootstrap interval (gen_boot resamples) is computed for the main (first) extractor only: for 3072-d pixels or
    1280-d EfficientNet features at n = 2,500 each resample costs seconds.

    `images`: a function returning (family.n, r, r, 3) uint8, called only when the entry is computed; `sources`:
    likewise, the training row each sample came from or was conditioned on (-1: none). `run` finds the entry or
    computes it (`lib.run`); the samples' features are the cache's alone, never recomputed under `run.force`."""
    full = {**key, "measure_v": MEASURE_VERSION, "extractors": {k: r.extractor.key for k, r in runs.items()},
            "ref": low["ref"], "reference": reference, "prdc_k": config.prdc_k, "alpha_e": config.alpha_e,
            "boot": config.gen_boot, "grid": config.gen_grid}

    def compute() -> dict:
        from lib.knn import nearest_neighbour

        fake, src = images(), np.asarray(sources())
        rows = grid_rows(len(fake), config.gen_grid)
        out = {"grid": fake[rows], "grid_sources": src[rows], "by_extractor": {}}
        for i, (name, evaluation) in enumerate(runs.items()):
            train_f, ref_f = evaluation.train(), evaluation.ref()[reference]
            fake_f = cached_features(evaluation.extractor, for_extractor(fake), label=f"gen-{slug}",
                                     run=run)
            fake_d, fake_i = nearest_neighbour(fake_f, train_f)
            ref_d, ref_i = nearest_neighbour(ref_f, train_f)
            scores = set_scores(len(train_f), fake_idx=fake_i, real_idx=ref_i, fake_feats=fake_f, real_feats=ref_f,
                                train_feats=train_f, fake_dist=fake_d, real_dist=ref_d, config=config,
                                seed=derive_seed(config.seed, BOOT_STREAM), boot=config.gen_boot if i == 0 else 0)
            hit = float(np.mean(fake_i[src >= 0] == src[src >= 0])) if (src >= 0).any() else float("nan")
            out["by_extractor"][name] = {"source_hit": hit, **{k: float(v) for k, v in scores.items()}}
            if i == 0:
                out["idx"] = fake_i.astype(np.int32)
        return out

    return run.stage(GENERATOR_SCORES, f"genscores-{slug}-n{config.family.n}", full, compute)


def memorised_copies(train: np.ndarray, g: float, n: int, noise: float, *, seed: int) -> dict:
    """A memorising generator: g N training images chosen (seeded); n draws from them with replacement,
    each with Gaussian pixel noise sigma = noise (pixels in [0, 1]), clipped and rounded to uint8.
    Returns {"images", "sources": the training row of each draw}."""
    rng = np.random.default_rng(derive_seed(seed, round(g * 1e6), n, MEMORISER_STREAM))
    chosen = rng.choice(len(train), max(1, round(g * len(train))), replace=False)
    sources = chosen[rng.integers(0, len(chosen), n)]
    noisy = train[sources] / 255.0 + noise * rng.standard_normal((n, *train.shape[1:]))
    return {"images": np.round(np.clip(noisy, 0, 1) * 255).astype(np.uint8), "sources": sources}


def reference_rows(config: IRSConfig, n: int) -> np.ndarray:
    """The n REF-pool rows used as the real reference of every generated set (seeded, fixed)."""
    return np.sort(np.random.default_rng(derive_seed(config.seed, n, REFERENCE_STREAM)).permutation(
        NUM_CLASSES * config.pool_per_class)[:n])


def anchors(config: IRSConfig, low: dict) -> dict[str, dict]:
    """The reference points of the ranking at family.resolution: real held-out images (SYN rows at the reference's
    positions) and the memorising generator of notebook 04 §3 at each g, on the low-resolution database."""
    real_rows = reference_rows(config, config.family.n)
    out = {"real held-out (SYN)": {"images": low["syn"][real_rows], "sources": np.full(config.family.n, -1),
                                   "key": {"anchor": "real", "syn": low["syn"], "rows": real_rows}}}
    for g in config.mem_fractions:
        copies = memorised_copies(low["train"], g, config.family.n, config.mem_noise, seed=config.seed)
        out[f"memorise {g:g}"] = {**copies, "key": {"anchor": "memorise", "g": g, "train": low["train"],
                                                     "noise": config.mem_noise, "seed": config.seed}}
    return out


def generator_study(config: IRSConfig, low: dict, runs: dict[str, EvaluationRun], conditioning,
                    conditioning_key: dict, *, run: Run) -> tuple[pd.DataFrame, dict]:
    """(rows, grids): one row per (set, evaluation extractor) with the set's description and `set_scores`, and
    per set {"grid", "grid_sources", "idx" (resnet-like first extractor's retrievals of the grid)}. Generated
    sets first (`generated_sets_of`; trained and sampled on `run.device`, from the cache alone), then the
    anchors (`anchors`)."""
    reference = reference_rows(config, config.family.n)
    rows, grids = [], {}
    family = config.family
    for spec in generated_sets_of(config):
        def images(spec=spec):
            return generated_images(family, low, spec, conditioning, conditioning_key, run=run)
        m = measure_set(config, low, runs, reference, slug=spec.slug, images=lambda: images()["images"],
                        sources=lambda: images()["sources"], key=set_key(family, low, spec, conditioning_key),
                        run=run)
        rows += score_rows(m, spec.label, {"kind": "generator", "arm": spec.arm, "channels": spec.channels,
                                         "fraction": spec.fraction, "guidance": spec.guidance,
                                         "heldout": spec.heldout})
        grids[spec.label] = _grid_of(m)
    for label, anchor in anchors(config, low).items():
        slug = label.split(" (")[0].replace(" ", "-")
        m = measure_set(config, low, runs, reference, slug=f"anchor-{slug}", images=lambda a=anchor: a["images"],
                        sources=lambda a=anchor: a["sources"], key=anchor["key"], run=run)
        rows += score_rows(m, label, {"kind": "anchor", "arm": label.split(" ")[0]})
        grids[label] = _grid_of(m)
    return pd.DataFrame(rows), grids


def score_rows(measured: dict, label: str, about: dict) -> list[dict]:
    """A measured set (`measure_set`) as table rows, one per evaluation extractor: {"set": label, **about,
    "extractor", **its scores}."""
    return [{"set": label, **about, "extractor": name, **scores} for name, scores in measured["by_extractor"].items()]


def _grid_of(measured: dict) -> dict:
    rows = grid_rows(len(measured["idx"]), len(measured["grid"]))
    return {"grid": measured["grid"], "grid_sources": measured["grid_sources"], "idx": measured["idx"][rows]}


# ----------------------------------------------------------------------------------------------------
# Tables and the facts the notebook states
# ----------------------------------------------------------------------------------------------------
RANKED_BY = {"irs_adj": False, "fid": True, "recall": False}  # metric -> ascending (True: lower is better)


def _interval(rows: pd.DataFrame, name: str, fmt=lambda v: f"{v:.3f}") -> pd.Series:
    """"estimate [lower, upper]" per row; the estimate alone where no interval was computed (NaN)."""
    return pd.Series([fmt(e) if np.isnan(lo) else f"{fmt(e)} [{fmt(lo)}, {fmt(hi)}]"
                      for e, lo, hi in zip(rows[name], rows[f"{name}_lower"], rows[f"{name}_upper"])],
                     index=rows.index)


def main_sets(rows: pd.DataFrame, config: IRSConfig) -> pd.DataFrame:
    """The three arms at the main width and full budget, unguided, conditioned on the database."""
    keep = ((rows.kind == "generator") & (rows.channels == config.gen_channels[0]) & (rows.fraction == 1.0)
            & (rows.guidance == 1.0) & ~rows.heldout.astype(bool))
    return rows[keep]


def diadm_table(rows: pd.DataFrame, config: IRSConfig) -> pd.DataFrame:
    """Per evaluation extractor and arm (main width, full budget): IRS_inf,a and FID against the test reference,
    each with its interval, FID against as many database images, recall and coverage."""
    t = main_sets(rows, config).set_index(["extractor", "arm"])
    t = t.reindex([(e, a) for e in config.gen_eval_extractors for a in ARMS if (e, a) in t.index])
    return pd.DataFrame({"IRS_∞,a [interval]": _interval(t, "irs_adj"),
                         "FID test [interval]": _interval(t, "fid", lambda v: sig(v, 3)),
                         "FID train": t["fid_train"].map(lambda v: sig(v, 3)),
                         "recall": t["recall"].map("{:.3f}".format), "coverage": t["coverage"].map("{:.3f}".format)})


def diadm_facts(rows: pd.DataFrame, config: IRSConfig) -> dict:
    """Per extractor: DiADM's IRS_inf,a and FID (test) against the unconditional arm's; whether IRS_inf,a is
    higher and FID lower (point estimates); whether IRS_inf,a rose (fell) beyond both intervals, and whether FID
    got worse (better) beyond both intervals (FID intervals exist on the first extractor only)."""
    t = main_sets(rows, config).set_index(["extractor", "arm"])
    out = {}
    for e in config.gen_eval_extractors:
        d, u = t.loc[(e, "diadm")], t.loc[(e, "unconditional")]
        out[e] = {"irs_diadm": d.irs_adj, "irs_uncond": u.irs_adj, "fid_diadm": d.fid, "fid_uncond": u.fid,
                  "irs_higher": bool(d.irs_adj > u.irs_adj), "fid_lower": bool(d.fid < u.fid),
                  "irs_rose": bool(d.irs_adj_lower > u.irs_adj_upper),
                  "irs_fell": bool(d.irs_adj_upper < u.irs_adj_lower),
                  "fid_worse": bool(d.fid_lower > u.fid_upper), "fid_better": bool(d.fid_upper < u.fid_lower)}
    return out


def ranking(rows: pd.DataFrame, extractor: str) -> pd.DataFrame:
    """Every set under one extractor: IRS_inf,a, FID (test), recall and their ranks (1 = judged best)."""
    t = rows[rows.extractor == extractor].set_index("set")[list(RANKED_BY)]
    ranks = pd.DataFrame({f"rank {m}": t[m].rank(ascending=asc, method="min").astype(int)
                          for m, asc in RANKED_BY.items()})
    return pd.concat([t, ranks], axis=1)


def ranking_agreement(table: pd.DataFrame) -> dict:
    """Kendall tau between each pair of the rankings of `ranking`, and the pairs of sets IRS_inf,a and FID order
    oppositely (each pair once, IRS's better one first)."""
    from scipy.stats import kendalltau

    sign = {m: (1 if asc else -1) for m, asc in RANKED_BY.items()}
    taus = {f"{a} / {b}": float(kendalltau(sign[a] * table[a], sign[b] * table[b]).statistic)
            for i, a in enumerate(RANKED_BY) for b in list(RANKED_BY)[i + 1:]}
    sets = list(table.index)
    disagree = [(x, y) for i, x in enumerate(sets) for y in sets[i + 1:]
                if (table.at[x, "irs_adj"] - table.at[y, "irs_adj"]) * (table.at[y, "fid"] - table.at[x, "fid"]) < 0]
    disagree = [(x, y) if table.at[x, "irs_adj"] > table.at[y, "irs_adj"] else (y, x) for x, y in disagree]
    return {"tau": taus, "disagree": disagree, "pairs": len(sets) * (len(sets) - 1) // 2}


def copy_controls(rows: pd.DataFrame, config: IRSConfig) -> pd.DataFrame:
    """Per extractor, for DiADM conditioned on the database and on held-out images, the other arms, the real
    held-out images and the memorisers: source-hit rate (how often a sample retrieves its own conditioning or
    copied image), the median distance to the nearest training image over that of real held-out images, and
    IRS_inf,a."""
    keep = (rows.kind == "anchor") | (
        (rows.channels == config.gen_channels[0]) & (rows.fraction == 1.0) & (rows.guidance == 1.0))
    t = rows[keep].set_index(["extractor", "set"])
    return pd.DataFrame({"source hit": t["source_hit"].map(lambda v: "" if np.isnan(v) else f"{v:.3f}"),
                         "NN distance / real's": t["nn_ratio"].map("{:.2f}".format),
                         "IRS_∞,a": t["irs_adj"].map("{:.3f}".format)})


def trend_facts(rows: pd.DataFrame, config: IRSConfig, extractor: str) -> dict:
    """IRS_inf,a and FID of each arm at each checkpoint fraction (main width) and at each width (full budget),
    and the class arm's at each guidance scale, under one extractor: {"fractions", "widths", "guidance"}."""
    t = rows[(rows.extractor == extractor) & (rows.kind == "generator") & ~rows.heldout.astype(bool)]
    main = t[(t.channels == config.gen_channels[0]) & (t.guidance == 1.0)]
    full = t[(t.fraction == 1.0) & (t.guidance == 1.0)]
    guided = t[(t.arm == "class") & (t.channels == config.gen_channels[0]) & (t.fraction == 1.0)]
    pick = lambda frame, by: {a: {k: (r.irs_adj, r.fid) for k, r in g.set_index(by).iterrows()}  # noqa: E731
                              for a, g in frame.groupby("arm")}
    return {"fractions": pick(main, "fraction"), "widths": pick(full, "channels"),
            "guidance": {w: (r.irs_adj, r.fid) for w, r in guided.set_index("guidance").iterrows()}}


def grid_labels(config: IRSConfig) -> list[str]:
    """The sets the image grid shows: each arm at the main width and full budget (the class arm unguided and at
    its strongest guidance), DiADM on held-out conditions, the smallest memoriser and real held-out images."""
    main = config.gen_channels[0]
    specs = [GeneratedSet(a, main) for a in ARMS] + [GeneratedSet("class", main, 1.0, max(config.gen_guidance)),
                                                     GeneratedSet("diadm", main, 1.0, heldout=True)]
    return [*dict.fromkeys(s.label for s in specs), f"memorise {min(config.mem_fractions):g}", "real held-out (SYN)"]


def copy_facts(rows: pd.DataFrame, config: IRSConfig, extractor: str) -> dict:
    """Under one extractor: DiADM's source-hit rate conditioned on the database, its IRS_inf,a conditioned on the
    database and on held-out images, the NN-distance ratios of DiADM, the unconditional arm and the smallest
    memoriser, and the memoriser's source-hit rate."""
    t = rows[rows.extractor == extractor].set_index("set")
    main = config.gen_channels[0]
    diadm, held = GeneratedSet("diadm", main).label, GeneratedSet("diadm", main, heldout=True).label
    uncond, mem = GeneratedSet("unconditional", main).label, f"memorise {min(config.mem_fractions):g}"
    return {"diadm_hit": t.at[diadm, "source_hit"], "heldout_hit": t.at[held, "source_hit"],
            "irs_diadm": t.at[diadm, "irs_adj"], "irs_heldout": t.at[held, "irs_adj"],
            "ratio_diadm": t.at[diadm, "nn_ratio"], "ratio_heldout": t.at[held, "nn_ratio"],
            "ratio_uncond": t.at[uncond, "nn_ratio"], "ratio_memoriser": t.at[mem, "nn_ratio"],
            "memoriser_hit": t.at[mem, "source_hit"]}


def headline(rows: pd.DataFrame, config: IRSConfig) -> dict:
    """What the README row and the results page state, on the main extractor: [IRS_inf,a, FID (test)] of each arm
    at the main width and full budget, of the class arm at its strongest guidance and of DiADM on held-out
    conditions, and DiADM's source-hit rate."""
    e, main = config.gen_eval_extractors[0], config.gen_channels[0]
    t = rows[rows.extractor == e].set_index("set")
    pick = lambda spec: [float(t.at[spec.label, "irs_adj"]), float(t.at[spec.label, "fid"])]  # noqa: E731
    return {"extractor": e, **{arm: pick(GeneratedSet(arm, main)) for arm in ARMS},
            "class_guided": pick(GeneratedSet("class", main, 1.0, max(config.gen_guidance))),
            "guidance": max(config.gen_guidance),
            "heldout": pick(GeneratedSet("diadm", main, heldout=True)),
            "diadm_hit": float(t.at[GeneratedSet("diadm", main).label, "source_hit"])}
