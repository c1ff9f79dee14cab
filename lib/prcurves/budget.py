"""Notebook 01's budget study: AUC and band width against Adam steps, with and without each training change.

The `cpu` preset was chosen from its measurements: the settings that get close to the paper's regime on 2 cores.
This module trains small ensembles under the authors' settings and under each change the diffusion
literature uses to converge faster (`ddpm.TrainSettings`: stratified time steps, a warm-up + cosine
learning-rate schedule, a smaller batch, an EMA of the weights for sampling), evaluates each at several
budgets with the notebook's own estimator (kNN PR curves, AUC_raw, 10-90 % band), and writes one CSV row per
(variant, EMA or not, C, steps). Every run tracks an EMA beside the trained weights, so "with EMA" and
"without EMA" come from the same run. Runs with a constant learning rate are evaluated at every budget from
snapshots of one run; runs with a schedule are trained once per budget (the schedule's length is the budget).

Everything is cached under data/cache/01/budget/ per run and per evaluation, so an interrupted study resumes.
Usage (CPU, in the background; the figures are wall-clock under whatever load the machine has):
    OMP_NUM_THREADS=1 python -m lib.prcurves.budget --complexities 4 --out results/01/budget_study-C4.csv
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from lib.cache import Entry, atomic_savez, atomic_write, cache_path
from lib.cli import command_parser
from lib.data.ring import ring_train_heldout
from lib.paths import PROJECT_ROOT
from lib.prcurves import ddpm
from lib.prcurves import method as prcurves
from lib.prcurves.paper import FAILED_AUC, MEMBERS
from lib.prcurves.stages import FRONTIER
from lib.run import Run, pinned_torch
from lib.seeds import derive_seed
from lib.templates import Readings

NAMESPACE = "01/budget"
TEXT = Readings("01", __name__)  # the frontier study's sentence: docs/results/templates/readings-01.md
STUDY_CSV = PROJECT_ROOT / "results" / "01" / "budget_study.csv"  # the committed study notebook 01 plots
EMA_DECAY = 0.999  # the EMA of the weights every run of the study tracks, and the `cpu` preset samples with

# name -> TrainSettings overrides; the learning rate, clipping and t range stay the authors'.
VARIANTS: dict[str, dict] = {
    "paper": {},
    "stratified_t": {"t_sampling": "stratified"},
    "stratified_t+cosine_lr": {"t_sampling": "stratified", "lr_schedule": "cosine", "warmup_steps": 100},
    "stratified_t+cosine_lr+batch128": {"t_sampling": "stratified", "lr_schedule": "cosine", "warmup_steps": 100,
                                        "batch_size": 128},
}

CSV_FIELDS = ["variant", "ema", "C", "steps", "batch_size", "point_steps", "members", "num_generated",
              "auc_mean", "auc_sd", "auc_min", "width", "train_seconds", "aucs", "settings"]


@dataclass(frozen=True)
class StudySpec:
    """What the study trains: `runs` lists (variant, budgets in Adam steps) in the order they are run."""

    complexities: tuple[int, ...] = (2, 4)
    num_members: int = 4
    n_train: int = 10_000
    num_generated: int = 1_000
    num_angles: int = 200
    base_seed: int = 0
    split_seed: int = 0
    runs: tuple[tuple[str, tuple[int, ...]], ...] = field(default=(
        ("paper", (250, 500, 1000)),
        ("stratified_t+cosine_lr+batch128", (1000, 4000)),
        ("stratified_t", (250, 500, 1000)),
        ("stratified_t+cosine_lr", (1000,)),
    ))


# The frontier study: the authors' recipe unchanged (spec 01 §2.3: batch 500, learning rate 2e-3, one uniform
# time step per minibatch, no schedule, no EMA for the `ema=False` rows) at budgets far beyond the budget study's,
# with more members, to see whether and when members fail as the authors' released curves suggest. Its rows are
# one stored entry per complexity (`frontier_study`) in notebook 01's layer results/01/<preset>/.
AUTHORS_RECIPE_BUDGETS = (1000, 2000, 5000, 10000, 20000, 40000, 60000)  # those of the stored C = 1 study
FRONTIER_VERSION = 1


def authors_recipe_spec(complexities: tuple[int, ...] = (1,), num_members: int = 8,
                        budgets: tuple[int, ...] = AUTHORS_RECIPE_BUDGETS) -> StudySpec:
    """The frontier study's spec: the authors' settings ("paper") only, evaluated at `budgets`."""
    return StudySpec(complexities=complexities, num_members=num_members, runs=(("paper", tuple(budgets)),))


def settings_of(variant: str) -> ddpm.TrainSettings:
    """The TrainSettings of a variant, with the EMA every run of the study tracks."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} must be one of {sorted(VARIANTS)}.")
    return replace(ddpm.TrainSettings(**VARIANTS[variant]), ema_decay=EMA_DECAY)


def schedule_runs(variant: str, budgets: tuple[int, ...]) -> list[tuple[int, tuple[int, ...]]]:
    """[(num_steps of a training run, budgets evaluated from its snapshots)]: one run for a constant
    learning rate, one run per budget for a schedule (whose shape depends on its length)."""
    if settings_of(variant).lr_schedule == "constant":
        return [(max(budgets), tuple(sorted(budgets)))]
    return [(b, (b,)) for b in sorted(budgets)]


def _train(spec: StudySpec, variant: str, complexity: int, num_steps: int, snapshots: tuple[int, ...],
           train_points: np.ndarray) -> dict:
    settings = settings_of(variant)
    seeds = ddpm.member_seeds(spec.base_seed, complexity, spec.num_members)
    key = {"stage": "budget-train", "version": 1, "C": complexity, "seeds": seeds, "n": spec.n_train,
           "steps": num_steps, "snapshots": snapshots, "train": settings}
    path = cache_path(NAMESPACE, f"train-{variant}-C{complexity}-{num_steps}", key, ".pt")

    def compute() -> dict:
        start = time.perf_counter()
        times = {}

        checkpoint = path.with_suffix(".ckpt")  # a long run resumes; it goes once the entry is written
        result = ddpm.train_ensemble(train_points, complexity=complexity, seeds=seeds, num_steps=num_steps,
                                     settings=settings, snapshots=snapshots, progress=False,
                                     checkpoint=checkpoint, checkpoint_every=1000)
        checkpoint.unlink(missing_ok=True)
        total = time.perf_counter() - start
        for s in snapshots:  # wall time to reach a snapshot, assuming a steady step time
            times[s] = total * s / num_steps
        return {"snapshots": result["snapshots"], "seconds": times}

    return pinned_torch(path, compute)  # FORCE_RECOMPUTE reaches the study's entry, built on these


def evaluate(params: dict, spec: StudySpec, complexity: int, heldout: np.ndarray) -> dict:
    """Sample every member, then its kNN PR curve (the notebook's estimator and splits): AUC_raw per member
    and the mean 10-90 % band width on the 1000-point recall grid."""
    seeds = ddpm.member_seeds(spec.base_seed, complexity, spec.num_members)
    samples = ddpm.sample_ensemble(params, num_samples=spec.num_generated, seeds=seeds, progress=False)
    curves = []
    for i, fake in enumerate(samples):
        fake = fake[np.isfinite(fake).all(axis=1)]
        real = heldout[: len(fake)]
        curves.append(prcurves.pr_curve(real, fake, num_angles=spec.num_angles,
                                        seed=derive_seed(spec.split_seed, complexity, i)))
    band = prcurves.ensemble_band(curves)
    return {"aucs": [prcurves.auc_raw(c) for c in curves], "width": float((band["hi"] - band["lo"]).mean())}


def run_study(spec: StudySpec, out: Path | None = None, log=print, cached_only: bool = False) -> list[dict]:
    """Run (or read from the cache) every row of the study; write them to `out` as CSV. Returns the rows.

    cached_only: skip the rows not in the cache instead of computing them (to collect a partial study)."""
    data = ring_train_heldout(spec.n_train, max(spec.n_train, spec.num_generated))
    rows = []
    for variant, budgets in spec.runs:
        settings = settings_of(variant)
        for complexity in spec.complexities:
            for num_steps, snaps in schedule_runs(variant, budgets):
                trained = None
                for steps in snaps:
                    for use_ema in (False, True):
                        key = {"stage": "budget-eval", "version": 1, "spec": _eval_spec(spec),
                               "variant": variant, "C": complexity, "run_steps": num_steps, "steps": steps,
                               "ema": use_ema, "train": settings}
                        path = cache_path(NAMESPACE, f"eval-{variant}-C{complexity}-{steps}-ema{int(use_ema)}",
                                          key, ".json")
                        if not path.exists() and cached_only:
                            continue
                        if not path.exists():
                            if trained is None:
                                log(f"train {variant} C={complexity} {num_steps} steps (snapshots {snaps})")
                                trained = _train(spec, variant, complexity, num_steps, snaps, data["train"])
                            snap = trained["snapshots"][steps]
                            row = evaluate(snap["ema" if use_ema else "params"], spec, complexity, data["heldout"])
                            row["train_seconds"] = trained["seconds"][steps]
                            atomic_write(path, lambda tmp, r=row: tmp.write_text(json.dumps(r)))
                        rows.append(_row(spec, variant, settings, complexity, steps, use_ema,
                                         json.loads(path.read_text())))
                        log(_describe(rows[-1]))
                        if out is not None:
                            write_csv(rows, out)
    return rows


def _eval_spec(spec: StudySpec) -> dict:
    """The fields of the spec an evaluation depends on (not which complexities or runs a process does)."""
    return {k: v for k, v in asdict(spec).items() if k not in ("complexities", "runs")}


def _row(spec, variant, settings, complexity, steps, use_ema, result) -> dict:
    aucs = np.array(result["aucs"])
    return {"variant": variant, "ema": use_ema, "C": complexity, "steps": steps, "batch_size": settings.batch_size,
            "point_steps": steps * settings.batch_size, "members": len(aucs), "num_generated": spec.num_generated,
            "auc_mean": float(aucs.mean()), "auc_sd": float(aucs.std(ddof=1)), "auc_min": float(aucs.min()),
            "width": result["width"], "train_seconds": round(result["train_seconds"], 1),
            "aucs": ";".join(f"{a:.4f}" for a in aucs),
            "settings": json.dumps({k: v for k, v in asdict(settings).items() if k != "ema_decay"})}


def _describe(row: dict) -> str:
    return (f"{row['variant']:32s} ema={row['ema']!s:5s} C={row['C']} steps={row['steps']:5d}: "
            f"AUC {row['auc_mean']:.3f} +- {row['auc_sd']:.3f} (min {row['auc_min']:.3f}), width {row['width']:.3f}")


def write_csv(rows: list[dict], out: Path) -> None:
    """Write rows (as `run_study` returns them) to `out`, atomically."""
    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
            writer.writeheader()
            for r in rows:
                writer.writerow({k: (f"{v:.4f}" if isinstance(v, float) and k != "train_seconds" else v)
                                 for k, v in r.items()})

    atomic_write(Path(out), write)


# ----------------------------------------------------------------------------------------------------
# The frontier study's summaries (notebook 01, "The authors' recipe at longer budgets")
# ----------------------------------------------------------------------------------------------------
def read_study(path: Path) -> list[dict]:
    """The rows of a study CSV written by `write_csv`, with `aucs` as a list of floats per row."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or set(CSV_FIELDS) - set(rows[0]):
        raise ValueError(f"{path} is not a study written by lib.prcurves.budget (columns {CSV_FIELDS}).")
    return [_parsed(r) for r in rows]


def _parsed(row: dict) -> dict:
    """A study row as the summaries read it, from a CSV's strings or `run_study`'s values."""
    return {**row, "ema": row["ema"] in (True, "True"), "C": int(row["C"]), "steps": int(row["steps"]),
            "width": float(row["width"]), "train_seconds": float(row["train_seconds"]),
            "aucs": [float(a) for a in row["aucs"].split(";")]}


def member_trajectories(rows: list[dict], complexity: int, ema: bool = False) -> dict:
    """AUC_raw of every member against Adam steps, for one complexity: {"steps": (S,) int, "aucs": (M, S)
    float, "width": (S,) float band widths, "seconds": (S,) float}; rows of the authors' settings only."""
    part = sorted((r for r in rows if r["C"] == complexity and r["ema"] == ema and r["variant"] == "paper"),
                  key=lambda r: r["steps"])
    if not part:
        raise ValueError(f"no rows for C={complexity}, ema={ema} in the study.")
    return {"steps": np.array([r["steps"] for r in part]), "aucs": np.array([r["aucs"] for r in part]).T,
            "width": np.array([r["width"] for r in part]), "seconds": np.array([r["train_seconds"] for r in part])}


def failure_summary(trajectory: dict, threshold: float = FAILED_AUC) -> dict:
    """How members fail along one trajectory (`member_trajectories`): per budget, the number below
    `threshold`; per member, whether it ever passed the threshold and whether it ends below it after having
    passed it (a collapse) or without ever passing it (never converged); and `crossings`, how many times a
    member moved across the threshold from one budget to the next (summed over members)."""
    aucs = trajectory["aucs"]
    below = aucs < threshold
    ever_above = (~below).any(axis=1)
    return {"steps": trajectory["steps"].tolist(), "below": below.sum(axis=0).tolist(), "members": len(aucs),
            "final_below": int(below[:, -1].sum()), "never_converged": int((~ever_above).sum()),
            "crossings": int((below[:, 1:] != below[:, :-1]).sum()),
            "collapsed": int((ever_above & below[:, -1]).sum()),
            "first_above": [int(trajectory["steps"][np.argmax(~b)]) if a else None
                            for b, a in zip(below, ever_above)]}


def _frontier_label_key(complexity: int, budgets: tuple[int, ...], num_members: int) -> tuple[str, dict]:
    """The label and key of one complexity's frontier rows (keyed by the study's whole spec)."""
    spec = authors_recipe_spec((complexity,), num_members, tuple(budgets))
    key = {"stage": "authors-recipe", "version": FRONTIER_VERSION, "spec": asdict(spec),
           "train": settings_of("paper")}
    return f"authors-recipe-C{complexity}", key


def frontier_entry(complexity: int, budgets: tuple[int, ...], num_members: int) -> Entry:
    """The cache entry of one complexity's frontier rows (stage `FRONTIER`)."""
    return FRONTIER.entry(*_frontier_label_key(complexity, budgets, num_members))


def frontier_path(complexity: int, budgets: tuple[int, ...], num_members: int) -> Path:
    """The file of `frontier_entry`."""
    return frontier_entry(complexity, budgets, num_members).path


def frontier_study(complexity: int, budgets: tuple[int, ...], num_members: int, *, run: Run,
                   log=print) -> list[dict]:
    """The frontier study's rows for one complexity (as `read_study` gives them): `num_members` members trained
    with the authors' recipe and evaluated at `budgets` Adam steps, with and without the EMA. A stored entry
    (`lib.store`: the default run reads it from results/01/<preset>/), else computed by `run_study` (about an
    hour of one core for C = 1 to 60,000 steps; its trainings and evaluations are cached and checkpointed). `run`
    looks the entry up; its trainings and evaluations are pinned entries of the cache (`lib.run`)."""
    spec = authors_recipe_spec((complexity,), num_members, tuple(budgets))

    def compute() -> dict:
        return {"rows": np.array(json.dumps(run_study(spec, log=log)))}

    arrays = run.stage(FRONTIER, *_frontier_label_key(complexity, budgets, num_members), compute)
    return [_parsed(row) for row in json.loads(str(arrays["rows"]))]


def convert_frontier_csv(path: Path, origin: dict) -> Path:
    """Write the rows of a frontier CSV (`main --authors-recipe --out`, the format it was first stored in) as the
    cache entry `frontier_study` looks up for the spec the rows were made with, `origin` (the command, commit
    and machine that made them) beside them; returns the entry's path. Nothing is trained."""
    parsed = read_study(path)
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    complexities, members = {r["C"] for r in parsed}, {len(r["aucs"]) for r in parsed}
    if len(complexities) != 1 or len(members) != 1 or {r["variant"] for r in parsed} != {"paper"}:
        raise ValueError(f"{path}: not one complexity's frontier study (the authors' recipe only, one ensemble)")
    budgets = tuple(sorted({r["steps"] for r in parsed}))
    target = frontier_path(complexities.pop(), budgets, members.pop())
    for row in rows:  # the types run_study writes
        row.update({k: int(row[k]) for k in ("C", "steps", "batch_size", "point_steps", "members", "num_generated")})
        row.update({k: float(row[k]) for k in ("auc_mean", "auc_sd", "auc_min", "width", "train_seconds")})
        row["ema"] = row["ema"] == "True"
    atomic_savez(target, {"rows": np.array(json.dumps(rows)), "origin": np.array(json.dumps(origin))})
    return target


def frontier_rows(trajectories: dict[int, dict], paper_below: dict[int, int],
                  paper_members: int = MEMBERS) -> list[dict]:
    """The frontier table: per complexity and budget, members below `FAILED_AUC`, mean and median AUC, band
    width and training hours, beside the authors' released curves' failures at their 200k-400k steps."""
    out = []
    for C, t in trajectories.items():
        below = failure_summary(t)["below"]
        for j, steps in enumerate(t["steps"]):
            aucs = t["aucs"][:, j]
            out.append({"C": C, "steps": int(steps), "members": len(aucs), "below_0.9": below[j],
                        "auc_mean": float(aucs.mean()), "auc_median": float(np.median(aucs)),
                        "width": float(t["width"][j]), "train_hours": float(t["seconds"][j] / 3600),
                        "paper_below_0.9": f"{paper_below[C]} of {paper_members}" if C in paper_below else "—"})
    return out


def frontier_reading(summaries: dict[int, dict], paper_below: dict[int, int], paper_members: int = MEMBERS) -> str:
    """One Markdown sentence per complexity stating what the stored frontier study measured (its numbers come
    from the study's rows, so the text follows a rerun): section `frontier-ensemble` of readings-01.md."""
    return "\n".join(TEXT("frontier-ensemble", C=C, s=s, paper_below=paper_below, paper_members=paper_members)
                     for C, s in summaries.items())


def _csv_origin(path: Path) -> dict:
    """What is known of how a frontier CSV was made: the command that writes it, the commit that added it."""
    import subprocess

    rows = read_study(path)
    budgets = " ".join(str(s) for s in sorted({r["steps"] for r in rows}))
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H %cs", "-1", "--", str(path)],
                           capture_output=True, text=True, cwd=PROJECT_ROOT).stdout.split()
    return {"file": str(Path(path).relative_to(PROJECT_ROOT) if Path(path).is_absolute() else path),
            "command": f"OMP_NUM_THREADS=1 python -m lib.prcurves.budget --complexities {rows[0]['C']} --members "
                       f"{len(rows[0]['aucs'])} --authors-recipe {budgets} --out {Path(path).name}",
            "committed_in": added[0] if added else None, "date": added[1] if added else None,
            "device": "cpu, one thread (the 2-core build machine, beside other work)",
            "train_seconds": max(r["train_seconds"] for r in rows)}


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.prcurves.budget", __doc__)
    parser.add_argument("--complexities", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--members", type=int, default=StudySpec.num_members)
    parser.add_argument("--num-generated", type=int, default=StudySpec.num_generated)
    parser.add_argument("--out", type=Path, default=None, help="CSV to write (rows so far, after each row)")
    parser.add_argument("--cached-only", action="store_true", help="write the cached rows only, compute nothing")
    parser.add_argument("--authors-recipe", type=int, nargs="*", default=None, metavar="STEPS",
                        help="the frontier study instead: the authors' settings only, evaluated at these budgets "
                             f"(default {' '.join(map(str, AUTHORS_RECIPE_BUDGETS))})")
    parser.add_argument("--convert", type=Path, nargs="+", default=None, metavar="CSV",
                        help="write frontier CSVs (the format they were first committed in) as the cache entries "
                             "notebook 01 reads (`frontier_study`), instead of running a study")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.convert:
        for path in args.convert:
            print(f"{path} -> {convert_frontier_csv(path, _csv_origin(path))}")
        return 0
    if args.authors_recipe is not None:
        spec = replace(authors_recipe_spec(tuple(args.complexities), args.members,
                                           tuple(args.authors_recipe) or AUTHORS_RECIPE_BUDGETS),
                       num_generated=args.num_generated)
    else:
        spec = StudySpec(complexities=tuple(args.complexities), num_members=args.members,
                         num_generated=args.num_generated)
    run_study(spec, args.out, log=lambda s: print(time.strftime("%H:%M:%S"), s, flush=True),
              cached_only=args.cached_only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
