"""Notebook 02's guidance pair over training seeds: the class-conditional arm sampled at guidance w = 2 and w = 4,
each set scored as notebook 02 scores its own (`lib.crel.images.generator_crel`: mean ρ and CReL-ρ), at several
training seeds of the arm, and the two differences compared over the seeds (`lib.replicates`).

Notebook 02's reversal (w = 2 best by mean ρ, w = 4 best by CReL-ρ) rests on one training run of the arm, one LGM
fit and one fold split. A replicate here redraws all three: replicate k samples the arm trained with seed k
(`Family.seed`: initialisation, data order, diffusion noise, the sampler's noise) and evaluates it with evaluation
seed k (`ImageSettings.seed`: the folds, the CVAE and DQR fits, PGD's starts). Within a replicate the two guidance
scales share their arm and evaluation seed, so each replicate gives one paired difference per score:

- mean ρ, w = 2 − w = 4, with the sampling standard error of two independent means of the sets' ρ;
- CReL-ρ, w = 4 − w = 2, with the standard error of the mean of its ten per-class differences.

"The reversal holds" means both differences are positive over the seeds (Student's t over the replicates).

    python -m lib.crel.guidance_seeds --preset cpu --seeds 0 1 2 --channels 16 [--out FILE.json]

trains nothing: an arm not trained at a seed (`python -m lib.irs.train_generators seeds class:SEED`) is named and
left out.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from lib.crel import images as im
from lib.crel.stages import CACHE_NAMESPACE
from lib.diffusion import family as fam
from lib.replicates import SeedComparison, compare_over_seeds, most_seeds

PAIR = (2.0, 4.0)  # the guidance scales notebook 02's reversal compares
CHANNELS = 16  # the width the pair is repeated at over seeds on the CPU (an arm trains in about an hour of one core)
SEEDS_DIR = Path("02") / "seeds"  # under results/: the committed measurements
# what a replicate keeps of each set's `generator_crel` (the scalars and per-class scores, not the images)
KEPT = ("mean_rho", "crel", "coverage_z", "spread", "gamma", "seconds")


def replicate_settings(s: im.ImageSettings, seed: int, channels: int) -> im.ImageSettings:
    """Replicate `seed` of the pair (module docstring): the arm's training seed and the evaluation seed both
    `seed`, the two guided sets at width `channels` and the full budget, no real reference row."""
    return replace(s, family=replace(s.family, seed=seed), seed=seed, include_real=False,
                   generators=tuple((channels, 1.0, w) for w in PAIR))


def set_record(result: dict) -> dict:
    """The part of a set's `generator_crel` a replicate keeps: the scalars, the per-class CReL, and the mean,
    standard deviation and count of ρ over the set's samples."""
    rho = np.asarray(result["rho"], dtype=np.float64)
    return {**{k: float(result[k]) for k in KEPT},
            "crel_per_class": [float(v) for v in result["crel_per_class"]],
            "rho_sd": float(rho.std(ddof=1)), "n": int(rho.size)}


def effects(replicate: dict[str, dict]) -> dict[str, tuple[float, float]]:
    """{score: (difference, sampling standard error)} of one replicate, whose `replicate` maps "w2" and "w4" to
    their `set_record`s (module docstring)."""
    w2, w4 = replicate["w2"], replicate["w4"]
    mean_se = math.sqrt(w2["rho_sd"] ** 2 / w2["n"] + w4["rho_sd"] ** 2 / w4["n"])
    per_class = np.asarray(w4["crel_per_class"]) - np.asarray(w2["crel_per_class"])
    return {im.MEAN: (w2["mean_rho"] - w4["mean_rho"], mean_se),
            im.WORST: (float(per_class.mean()), float(per_class.std(ddof=1) / math.sqrt(per_class.size)))}


@dataclass(frozen=True)
class PairOverSeeds:
    """The pair's two comparisons over the replicates, and the reversal's verdict: *holds* when both hold,
    *fails* when either fails, else *undecided*."""

    seeds: tuple[int, ...]
    mean: SeedComparison  # mean rho, w = 2 - w = 4
    crel: SeedComparison  # CReL-rho, w = 4 - w = 2
    classes_w4_higher: tuple[int, ...]  # per replicate: classes whose CReL is higher at w = 4
    sd: SeedComparison  # the standard deviation of rho over the samples, w = 4 - w = 2 (the paper's reason)

    @property
    def verdict(self) -> str:
        both = (self.mean.verdict, self.crel.verdict)
        return "holds" if both == ("holds", "holds") else "fails" if "fails" in both else "undecided"


def compare(record: dict) -> PairOverSeeds:
    """The comparisons of a stored record ({"replicates": {seed: {"w2": ..., "w4": ...}}})."""
    seeds = sorted(record["replicates"], key=int)
    per = [effects(record["replicates"][k]) for k in seeds]

    def over(score: str) -> SeedComparison:
        return compare_over_seeds([p[score][0] for p in per], [p[score][1] for p in per])

    higher = tuple(int(np.sum(np.asarray(r["w4"]["crel_per_class"]) > np.asarray(r["w2"]["crel_per_class"])))
                   for r in (record["replicates"][k] for k in seeds))
    reps = [record["replicates"][k] for k in seeds]
    # the sampling error of a standard deviation over n samples: sd / sqrt(2 (n - 1)) (normal theory)
    sd = compare_over_seeds([r["w4"]["rho_sd"] - r["w2"]["rho_sd"] for r in reps],
                            [math.hypot(*(r[w]["rho_sd"] / math.sqrt(2 * (r[w]["n"] - 1)) for w in ("w2", "w4")))
                             for r in reps])
    return PairOverSeeds(seeds=tuple(int(k) for k in seeds), mean=over(im.MEAN), crel=over(im.WORST),
                         classes_w4_higher=higher, sd=sd)


def comparison_rows(pair: PairOverSeeds) -> list[dict]:
    """One row per score: the difference per seed, its mean, interval, the seeds' spread, the training standard
    deviation it implies, and the verdict on "difference > 0"."""
    rows = []
    for name, c in ((f"{im.MEAN}, w2 − w4", pair.mean), (f"{im.WORST}, w4 − w2", pair.crel)):
        rows.append({"difference": name, "per seed": "; ".join(f"{e:+.4f}" for e in c.effects),
                     "sampling se": "; ".join(f"{e:.4f}" for e in c.sampling_se), "mean": c.mean,
                     "lower": c.lower, "upper": c.upper, "seeds": c.seeds,
                     "training sd": None if math.isnan(c.training_sd) else c.training_sd, "verdict": c.verdict})
    return rows


def glued(pair: PairOverSeeds, file: str) -> dict:
    """What notebook 02 records of the pair over seeds (its claims ledger decides the reversal on it)."""
    def one(c: SeedComparison) -> dict:
        return {"per_seed": list(c.effects), "mean": c.mean, "lower": c.lower, "upper": c.upper,
                "verdict": c.verdict}

    return {"file": file, "seeds": list(pair.seeds), "mean_w2_minus_w4": one(pair.mean),
            "crel_w4_minus_w2": one(pair.crel), "sd_w4_minus_w2": one(pair.sd),
            "classes_w4_higher": list(pair.classes_w4_higher), "verdict": pair.verdict}


def stored_record(channels: int, root: Path | None = None) -> tuple[dict, str]:
    """(record, file name) of the committed measurements at width `channels` with the most replicates
    (results/02/seeds/guidance-c<channels>-seeds-....json); FileNotFoundError naming the folder when none."""
    from lib.paths import results_root

    path = most_seeds(Path(root or results_root()) / SEEDS_DIR, "guidance", channels, "lib.crel.guidance_seeds")
    return json.loads(path.read_text(encoding="utf-8")), path.name


def measure(s: im.ImageSettings, seeds: list[int], channels: int, run) -> tuple[dict, list[str]]:
    """(record, missing): each trained seed's replicate (`replicate_settings`, the sets scored by
    `generator_crel`, cached); the seeds left out because the arm is not trained there."""
    replicates, missing = {}, []
    for seed in seeds:
        rs = replicate_settings(s, seed, channels)
        low = fam.database(rs.family)
        specs = rs.specs()
        ready = [fam.weights_path(rs.family, low, "class", channels, rs.family.epochs).exists()
                 or fam.set_path(rs.family, low, spec).exists() for spec in specs]
        if not all(ready):
            missing.append(f"class arm, width {channels}, seed {seed}")
            continue
        replicates[str(seed)] = {f"w{w:g}": set_record(im.generator_crel(rs, spec, run))
                                 for (_, _, w), spec in zip(rs.generators, specs)}
    settings = asdict(replace(s, family=replace(s.family, seed=-1), seed=-1, generators=(), include_real=False))
    return {"channels": channels, "pair": list(PAIR), "settings": settings, "replicates": replicates}, missing


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    from lib.cli import command_parser
    from lib.crel import experiment as ex
    from lib.run import Run

    parser = command_parser("lib.crel.guidance_seeds", __doc__)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--channels", type=int, default=CHANNELS)
    parser.add_argument("--out", type=Path, help="write the replicates as JSON")
    args = parser.parse_args(argv)
    if len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0:
        parser.error(f"--seeds {args.seeds}: distinct seeds >= 0")
    config = ex.resolve_config(args.preset)
    run = Run.for_notebook(CACHE_NAMESPACE, args.preset, source="stored", force=False, device="cpu", progress=False)
    record, missing = measure(config.images, args.seeds, args.channels, run)
    record["preset"] = args.preset
    print("not trained:", ", ".join(missing) or "none")
    if len(record["replicates"]) >= 2:
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(pd.DataFrame(comparison_rows(compare(record))).to_string(index=False))
    if args.out:
        args.out.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
