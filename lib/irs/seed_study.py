"""Notebook 04's generator findings over training seeds: each arm trained again with other seeds at one width, each
seed's sets measured exactly as the notebook measures its own (`generators.measure_set`, the same reference rows,
extractors and bootstrap), and the arms compared seed by seed (`lib.replicates`).

A seed changes everything `Family.seed` drives: the network's initialisation, the data order and diffusion noise of
training, the training rows a conditioned set conditions on and the sampler's noise. The evaluation (the real
reference, the FID bootstrap) keeps the notebook's seed, so that the seeds differ by their generators alone. The
notebook's own seed (`config.seed`) is seed 0 of the study: its sets are the notebook's, read from the same stored
entries.

    python -m lib.irs.seed_study --preset cpu --seeds 0 1 2 --channels 16 [--out FILE.json]

measures every seed whose arms are trained (`python -m lib.irs.train_generators seeds ARM:SEED ...` trains them)
and prints the comparisons.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from lib.diffusion.family import (
    ARMS,
    Family,
    GeneratedSet,
    epochs_at,
    generated_images,
    set_key,
    set_path,
    weights_path,
)
from lib.irs import generators as gen
from lib.irs.config import IRSConfig
from lib.irs.stages import CACHE_NAMESPACE
from lib.replicates import SeedComparison, compare_over_seeds, log_ratio_se, most_seeds
from lib.run import Run


def seed_sets(config: IRSConfig, channels: int) -> list[GeneratedSet]:
    """The sets of each seed: every arm at full budget, unguided, and the class arm at each other guidance scale of
    the preset (notebook 02's reversal compares guidance scales), all at width `channels`."""
    sets = [GeneratedSet(arm, channels, 1.0) for arm in ARMS]
    return sets + [GeneratedSet("class", channels, 1.0, w) for w in config.gen_guidance if w != 1.0]


def seeded_family(config: IRSConfig, seed: int) -> Family:
    """The notebook's generator family with training seed `seed` (module docstring)."""
    return replace(config.family, seed=seed)


def slug_of(config: IRSConfig, spec: GeneratedSet, seed: int) -> str:
    """The stored entry's name: the notebook's own for its seed, with the seed appended for the others."""
    return spec.slug if seed == config.seed else f"{spec.slug}-s{seed}"


class NotTrained(LookupError):
    """A set whose measurement is neither cached nor stored, and whose arm is not trained at that seed."""


def seed_rows(config: IRSConfig, low: dict, runs: dict[str, gen.EvaluationRun], conditioning,
              conditioning_key: dict, *, seeds: list[int], channels: int, run: Run) -> tuple[pd.DataFrame, list[str]]:
    """(rows, missing): one row per (seed, set, evaluation extractor) with the set's description and
    `generators.set_scores`; the sets left out because their arm is not trained at that seed. A set is measured
    from its samples (cache), sampled from its trained arm (cache) where needed; this never trains an arm."""
    reference, rows, missing = gen.reference_rows(config, config.family.n), [], []
    for seed in seeds:
        family = seeded_family(config, seed)
        for spec in seed_sets(config, channels):
            def images(spec=spec, family=family, seed=seed):
                trained = weights_path(family, low, spec.arm, spec.channels, epochs_at(family, spec.fraction),
                                       conditioning_key).exists()
                if not (trained or set_path(family, low, spec, conditioning_key).exists()):
                    raise NotTrained(f"{spec.label}, seed {seed}")
                return generated_images(family, low, spec, conditioning, conditioning_key, run=run)
            try:
                measured = gen.measure_set(config, low, runs, reference, slug=slug_of(config, spec, seed),
                                           images=lambda f=images: f()["images"],
                                           sources=lambda f=images: f()["sources"],
                                           key=set_key(family, low, spec, conditioning_key), run=run)
            except NotTrained as err:
                missing.append(str(err))
                continue
            rows += gen.score_rows(measured, spec.label, {"seed": seed, "arm": spec.arm, "channels": channels,
                                                          "guidance": spec.guidance})
    return pd.DataFrame(rows), missing


def _pick(rows: pd.DataFrame, extractor: str, arm: str, guidance: float = 1.0) -> pd.DataFrame:
    t = rows[(rows.extractor == extractor) & (rows.arm == arm) & (rows.guidance == guidance)]
    return t.set_index("seed").sort_index()


def irs_comparison(rows: pd.DataFrame, config: IRSConfig, extractor: str, arm: str, baseline: str = "unconditional",
                   *, level: float = 0.95) -> SeedComparison:
    """log IRS_inf of `arm` minus that of `baseline`, per seed (both arms of one seed), over the seeds. Both arms
    share the real reference, so this is also the log ratio of their adjusted scores IRS_inf,a; each seed's
    sampling error comes from the two arms' IRS_inf intervals (level 1 - 2 alpha_e, independent samples)."""
    a, b = _pick(rows, extractor, arm), _pick(rows, extractor, baseline)
    seeds = a.index.intersection(b.index)
    sampling = 1 - 2 * config.alpha_e
    effects = [math.log(a.at[s, "irs_inf"]) - math.log(b.at[s, "irs_inf"]) for s in seeds]
    se = [math.hypot(log_ratio_se(a.at[s, "irs_inf_lower"], a.at[s, "irs_inf_upper"], level=sampling),
                     log_ratio_se(b.at[s, "irs_inf_lower"], b.at[s, "irs_inf_upper"], level=sampling))
          for s in seeds]
    return compare_over_seeds(effects, se, level=level)


def fid_comparison(rows: pd.DataFrame, config: IRSConfig, extractor: str, arm: str, baseline: str = "unconditional",
                   *, level: float = 0.95) -> SeedComparison:
    """FID (test reference) of `baseline` minus that of `arm` (> 0: `arm` is better), per seed, over the seeds;
    each seed's sampling error from the bootstrap intervals (first extractor only: elsewhere NaN, counted 0)."""
    a, b = _pick(rows, extractor, arm), _pick(rows, extractor, baseline)
    seeds = a.index.intersection(b.index)
    from scipy.stats import norm

    z = float(norm.ppf(1 - config.alpha_e))  # the bootstrap interval's level is 1 - 2 alpha_e
    half = lambda t, s: (t.at[s, "fid_upper"] - t.at[s, "fid_lower"]) / (2 * z)  # noqa: E731
    se = [math.hypot(*(0.0 if math.isnan(h) else h for h in (half(a, s), half(b, s)))) for s in seeds]
    return compare_over_seeds([b.at[s, "fid"] - a.at[s, "fid"] for s in seeds], se, level=level)


def comparisons(rows: pd.DataFrame, config: IRSConfig, *, level: float = 0.95) -> pd.DataFrame:
    """Per evaluation extractor: DiADM and the class arm against the unconditional arm, on log IRS_inf and on FID,
    each over the seeds: mean, interval, seeds, spread, training sd and verdict (effect > 0 = the arm is better)."""
    out = []
    for extractor in rows.extractor.unique():
        for arm in ("diadm", "class"):
            for metric, compare in (("log IRS_inf ratio", irs_comparison), ("FID gain", fid_comparison)):
                c = compare(rows, config, extractor, arm, level=level)
                out.append({"extractor": extractor, "comparison": f"{arm} − unconditional", "metric": metric,
                            "per seed": c.effects, "mean": c.mean, "lower": c.lower, "upper": c.upper,
                            "seeds": c.seeds, "spread": c.spread, "training sd": c.training_sd,
                            "verdict": c.verdict})
    return pd.DataFrame(out)


SEEDS_DIR = Path("04") / "seeds"  # under results/: the committed weights and measurements of the other seeds


def stored_rows(channels: int, root: Path | None = None) -> tuple[pd.DataFrame, str]:
    """(rows, file name) of the committed measurements at width `channels` (results/04/seeds/
    measurements-c<channels>-seeds-<s>-<s>....json, written by this module's command with --out) that cover the
    most seeds; FileNotFoundError naming the folder when there is none."""
    from lib.paths import results_root

    path = most_seeds(Path(root or results_root()) / SEEDS_DIR, "measurements", channels, "lib.irs.seed_study")
    return pd.DataFrame(json.loads(path.read_text(encoding="utf-8"))["rows"]), path.name


CHECK_IMAGES = 8  # images of a stored arm's set kept beside its weights, that re-sampling the weights must give


def stored_weights(arm: str, channels: int, seed: int, root: Path | None = None) -> tuple[dict, dict]:
    """(state_dict of float32 tensors, record) of an arm's committed float16 EMA weights at a training seed
    (results/04/seeds/weights-<arm>-c<channels>-s<seed>.npz and .json, `python -m lib.irs.train_generators
    export-weights`); FileNotFoundError naming the file when there are none."""
    import numpy as np
    import torch

    from lib.paths import results_root

    base = Path(root or results_root()) / SEEDS_DIR / f"weights-{arm}-c{channels}-s{seed}"
    npz, meta = base.with_suffix(".npz"), base.with_suffix(".json")
    if not (npz.is_file() and meta.is_file()):
        raise FileNotFoundError(f"{npz} and {meta.name}: no stored weights of the {arm} arm at width {channels}, "
                                f"seed {seed}")
    with np.load(npz, allow_pickle=False) as arrays:
        state = {name: torch.from_numpy(arrays[name].astype(np.float32)) for name in arrays.files}
    return state, json.loads(meta.read_text(encoding="utf-8"))


def resample_unconditional(config: IRSConfig, channels: int, seed: int, n: int = CHECK_IMAGES,
                           root: Path | None = None) -> np.ndarray:
    """The first `n` images of the unconditional arm's set at a training seed, sampled again from its stored float16
    weights (`stored_weights`) with the set's own sampler seed and steps: (n, r, r, 3) uint8. The sampler draws
    its starting noise at once, so these are the set's first n images up to the weights' float16 rounding."""
    from lib.diffusion.family import CONDITION_OF, SAMPLES_STREAM, recipe_of
    from lib.diffusion.training import load_denoiser, sample
    from lib.seeds import derive_seed

    family = seeded_family(config, seed)
    state, _ = stored_weights("unconditional", channels, seed, root)
    model = load_denoiser(state, recipe_of(family, channels, "unconditional"), resolution=family.resolution,
                          condition=CONDITION_OF["unconditional"], cond_dim=0)
    return sample(model, n, steps=family.steps, seed=derive_seed(family.seed, SAMPLES_STREAM))


def comparison_record(table: pd.DataFrame) -> dict[str, dict]:
    """`comparisons`' table as the notebook records it: {"extractor / comparison / metric": {"per seed" (the
    effects, "; "-joined), "mean", "lower", "upper", "seeds", "training sd", "verdict"}}."""
    return {f"{r['extractor']} / {r['comparison']} / {r['metric']}": {
        "per seed": "; ".join(f"{e:.3f}" for e in r["per seed"]), "mean": float(r["mean"]),
        "lower": float(r["lower"]), "upper": float(r["upper"]), "seeds": int(r["seeds"]),
        "training sd": None if math.isnan(r["training sd"]) else float(r["training sd"]), "verdict": r["verdict"]}
        for r in table.to_dict("records")}


def main(argv: list[str] | None = None) -> int:
    from lib.cli import command_parser
    from lib.irs import experiment as ie

    parser = command_parser("lib.irs.seed_study", __doc__)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--out", type=Path, help="write the rows and comparisons as JSON")
    args = parser.parse_args(argv)
    config = ie.resolve_config(args.preset)
    if args.channels not in config.gen_channels:
        parser.error(f"--channels {args.channels}: the preset's widths are {config.gen_channels}")
    run = Run.for_notebook(CACHE_NAMESPACE, args.preset, source="stored", force=False, device="cpu", progress=False)
    low = gen.low_res_sets(config, ie.cifar_sets(config))
    conditioning, key = gen.conditioning_for(config, run)
    runs = gen.evaluation_runs(config, low, run)
    rows, missing = seed_rows(config, low, runs, conditioning, key, seeds=args.seeds, channels=args.channels,
                              run=run)
    table = comparisons(rows, config)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.drop(columns="per seed").to_string())
    print("not trained:", ", ".join(missing) or "none")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows.to_dict("records"), "comparisons": table.to_dict("records"),
                                        "missing": missing}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
