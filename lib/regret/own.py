"""Notebook 03's evaluation on your own uncertainty method: the regret decomposition, AuReC with its interval, P-gap.

    python -m lib.regret.own --probs member_0.npy member_1.npy member_2.npy --soft-labels soft_labels.npy \\
        --out runs/own-03 [--score score.npy]

--probs: your model's predicted probabilities, (N, K): one file, or one file per ensemble member (or one (S, N, K)
file of S members or MC-dropout passes); --soft-labels: (N, K) label distributions of the same N points (e.g.
CIFAR-10H's annotator votes over their number), each row summing to 1; --score: (N,) your uncertainty score (the
higher, the less certain), needed with one set of probabilities, and otherwise used in place of the members'
epistemic estimate. Writes `results.json` and `figure.png` into `--out`. docs/own-models.md shows it on the
example files.
"""

from __future__ import annotations

import json
import time

import numpy as np

from lib.cli import check_out_folder, command_parser, read_array, write_outputs
from lib.params import check_choice, check_finite, check_int, check_real, check_seed
from lib.progress import progress
from lib.regret import method as regret

SUM_TOLERANCE = 1e-4  # |row sum - 1| allowed in probabilities and soft labels (float32 softmax rounds to ~1e-7)


def check_distributions(name: str, values: np.ndarray) -> np.ndarray:
    """`values` (..., K) as float64 probability rows: finite, non-negative, each summing to 1 within SUM_TOLERANCE
    (rows that do not are refused, not rescaled: they are usually logits or counts). Errors name `name`."""
    arr = check_finite(name, np.asarray(values)).astype(np.float64)
    if arr.shape[-1] < 2 or 0 in arr.shape:
        raise ValueError(f"{name} must hold K >= 2 probabilities per row; got shape {arr.shape}.")
    if arr.min() < 0:
        raise ValueError(f"{name} holds negative values (first at index "
                         f"{tuple(int(i) for i in np.argwhere(arr < 0)[0])}); "
                         "give probabilities, not logits.")
    off = np.abs(arr.sum(axis=-1) - 1.0) > SUM_TOLERANCE
    if off.any():
        first = tuple(int(i) for i in np.argwhere(off)[0])
        raise ValueError(f"{name}: {int(off.sum())} row(s) do not sum to 1 (first at index {first}: sum "
                         f"{arr.sum(axis=-1)[first]:.6g}); give probabilities (counts divided by their total, "
                         "softmax of logits).")
    return arr


def estimates(probs: np.ndarray, scores: np.ndarray | None, loss: str) -> dict:
    """{"q", "A_hat", "E_hat"} as notebook 03 forms them (`lib.regret.uq.estimates`): from S >= 2 members the
    estimates of spec §3.2 (`regret.estimate`; q their mean); from one (N, K) prediction DDU's aleatoric part
    (`regret.ddu_aleatoric`). Your `scores`, when given, are Ê."""
    if probs.ndim == 3:
        est = regret.estimate(probs, loss)
        q, a_hat, e_hat = probs.mean(axis=0), est["A"], est["E"]
    else:
        q = probs
        a_hat, e_hat = regret.ddu_aleatoric(q, loss), None
    if scores is not None:
        e_hat = scores
    return {"q": regret.normalise_rows(q), "A_hat": a_hat, "E_hat": e_hat}


def regret_report(*, probs: np.ndarray, soft_labels: np.ndarray, scores: np.ndarray | None = None,
                  losses: tuple[str, ...] = regret.CLASSIFICATION_LOSSES, reps: int = 500, level: float = 0.95,
                  seed: int = 0, norm: str = "selective", ties: str = "stable", pgap_scale: str = "none",
                  show_progress: bool = True) -> dict:
    """Epistemic uncertainty of your own classifier evaluated by regret, as notebook 03 evaluates the paper's four
    methods on CIFAR-10H (`lib.regret.experiment.evaluate`, spec 03 §3).

    probs: (N, K) float, one predictive distribution per point, or (S, N, K) with S >= 2 ensemble members or
    MC-dropout passes; soft_labels: (N, K) float, p*(y | x) (the annotators' label distribution); both in rows
    that sum to 1. scores: (N,) float, your uncertainty score, higher = less certain (required with an (N, K)
    probs; with members it replaces their epistemic estimate Ê). losses: of "ce" (cross-entropy) and "zero_one".

    For each loss: the oracle decomposition T* = A* + E* of the model's Bayes act against p* (`regret.decompose`:
    A* the aleatoric risk, E* the epistemic regret), the estimates Â, Ê, and the table's metrics
    (`regret.regret_metrics`: AuReC = area under the regret-coverage curve of Ê, lower is better; ex-AuReC its
    excess over ordering by E* itself; P-gap = IGD+ of the fronts of (Â, Ê) to the optimal front; Spearman
    r_s(Â, Ê) and r_s(A*, E*)), AuReC's percentile interval over `reps` bootstrap draws of the points at `level`
    (`regret.aurec_interval`), and P-gap at the other scale, as the notebook reports them.

    Returns {"settings", "n", "members", "losses": {loss: {"mean_A*", "mean_E*", "mean_T*", "AuReC": {"estimate",
    "lower", "upper"}, "metrics": the regret_metrics row (plus "P-gap_<other scale>", "ties_A*",
    "accuracy_vs_argmax_p*"), "curve": {"coverage", "score_order", "oracle_order"} the selective regret curves,
    "A*", "E*", "A_hat", "E_hat": (N,) per point}}}.
    """
    losses = tuple(losses)
    if not losses:
        raise ValueError("losses is empty; give one or both of ('ce', 'zero_one').")
    for loss in losses:
        check_choice("losses entry", loss, regret.CLASSIFICATION_LOSSES)
    check_int("reps", reps, minimum=100)
    check_real("level", level, low=0.0, high=1.0, open_low=True, open_high=True)
    check_seed("seed", seed)
    check_choice("norm", norm, regret.CURVE_NORMS)
    check_choice("ties", ties, regret.TIES)
    check_choice("pgap_scale", pgap_scale, regret.PGAP_SCALES)
    probs = check_distributions("probs", probs)
    p_true = check_distributions("soft_labels", soft_labels)
    if probs.ndim not in (2, 3) or (probs.ndim == 3 and len(probs) < 2):
        raise ValueError(f"probs must be (N, K) or (S, N, K) with S >= 2 members; got shape {probs.shape}.")
    if p_true.ndim != 2 or probs.shape[-2:] != p_true.shape:
        raise ValueError(f"soft_labels must be (N, K) with the N and K of probs {probs.shape}; got {p_true.shape}.")
    if len(p_true) < 2:
        raise ValueError(f"need at least 2 points for a regret-coverage curve; got N = {len(p_true)}.")
    if scores is not None:
        scores = check_finite("scores", np.asarray(scores)).astype(np.float64)
        if scores.shape != (len(p_true),):
            raise ValueError(f"scores must be (N,) = ({len(p_true)},), one per point; got shape {scores.shape}.")
    elif probs.ndim == 2:
        raise ValueError("scores are needed with one (N, K) prediction: give your uncertainty score, or the "
                         "probabilities of S >= 2 ensemble members for the estimates of spec 03 §3.2.")
    out = {"settings": {"losses": list(losses), "reps": reps, "level": level, "seed": seed, "norm": norm,
                        "ties": ties, "pgap_scale": pgap_scale, "scores_given": scores is not None},
           "n": len(p_true), "members": len(probs) if probs.ndim == 3 else 1, "losses": {}}
    other = "ref_range" if pgap_scale == "none" else "none"
    for loss in progress(losses, desc="losses", enabled=show_progress):
        est = estimates(probs, scores, loss)
        oracle = regret.decompose(p_true, est["q"], loss)
        metrics = regret.regret_metrics(est["A_hat"], est["E_hat"], oracle["A"], oracle["E"], norm=norm, ties=ties,
                                        pgap_scale=pgap_scale)
        metrics[f"P-gap_{other}"] = regret.pareto_gap(est["A_hat"], est["E_hat"], oracle["A"], oracle["E"],
                                                      scale=other, norm=norm)
        metrics["ties_A*"] = regret.spearman(oracle["A"], oracle["E"])["ties_a"]
        metrics["accuracy_vs_argmax_p*"] = float(np.mean(est["q"].argmax(1) == p_true.argmax(1)))
        interval = regret.aurec_interval(est["E_hat"], oracle["E"], reps=reps, seed=seed, level=level, norm=norm,
                                         ties=ties)
        curve = regret.selective_curve(scores=est["E_hat"], metric=oracle["E"], norm=norm, ties=ties)
        best = regret.selective_curve(scores=oracle["E"], metric=oracle["E"], norm=norm, ties=ties)
        out["losses"][loss] = {
            "mean_A*": float(oracle["A"].mean()), "mean_E*": float(oracle["E"].mean()),
            "mean_T*": float(oracle["T"].mean()), "AuReC": {k: interval[k] for k in ("estimate", "lower", "upper")},
            "metrics": metrics, "curve": {"coverage": curve["coverage"], "score_order": curve["value"],
                                          "oracle_order": best["value"]},
            "A*": oracle["A"], "E*": oracle["E"], "A_hat": est["A_hat"], "E_hat": est["E_hat"]}
    return out


LOSS_NAMES = {"ce": "cross-entropy", "zero_one": "0/1"}


def report_figure(report: dict):
    """Per loss, the selective regret against coverage when points are accepted by your score (solid) and by E*
    itself (dotted, the best any score can do)."""
    import matplotlib.pyplot as plt

    from lib.plotting import PALETTE

    losses = report["losses"]
    fig, axes = plt.subplots(1, len(losses), figsize=(4.8 * len(losses), 3.6), squeeze=False, layout="constrained")
    for ax, (loss, r) in zip(axes[0], losses.items()):
        c = r["curve"]
        au = r["AuReC"]
        ax.plot(c["coverage"], c["score_order"], color=PALETTE[0],
                label=f"your score: AuReC {au['estimate']:.3f} [{au['lower']:.3f}, {au['upper']:.3f}]")
        ax.plot(c["coverage"], c["oracle_order"], color=PALETTE[0], ls=":",
                label=f"ordered by E*: {r['metrics']['oracle_AuReC']:.3f}")
        ax.set(xlabel="coverage", ylabel="selective regret E[E* | accepted]",
               title=f"{LOSS_NAMES[loss]}; P-gap {r['metrics']['P-gap']:.3g}")
        ax.legend(fontsize="x-small", loc="upper left")
    return fig


def read_probs(files: list[str]) -> np.ndarray:
    """One file: (N, K) or (S, N, K); several: one (N, K) per member, stacked to (S, N, K) (same shape each)."""
    arrays = [read_array(f, name="--probs") for f in files]
    if len(arrays) == 1:
        return arrays[0]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1 or arrays[0].ndim != 2:
        raise ValueError(f"--probs: one (N, K) array per member, all of one shape; got "
                         f"{[f'{f}: {a.shape}' for f, a in zip(files, arrays)]}.")
    return np.stack(arrays)


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.regret.own", __doc__)
    parser.add_argument("--probs", nargs="+", required=True, help="(N, K) .npy, one per member, or one (S, N, K)")
    parser.add_argument("--soft-labels", required=True, help="(N, K) .npy, rows summing to 1")
    parser.add_argument("--score", default=None, help="(N,) .npy: your uncertainty score (higher: less certain)")
    parser.add_argument("--losses", nargs="+", default=list(regret.CLASSIFICATION_LOSSES),
                        choices=regret.CLASSIFICATION_LOSSES)
    parser.add_argument("--reps", type=int, default=500, help="bootstrap draws of AuReC's interval")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="folder for results.json and figure.png")
    a = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        check_out_folder("--out", a.out)
        probs = read_probs(a.probs)
        soft = read_array(a.soft_labels, name="--soft-labels")
        score = None if a.score is None else read_array(a.score, name="--score")
        report = regret_report(probs=probs, soft_labels=soft, scores=score, losses=tuple(a.losses), reps=a.reps,
                               seed=a.seed)
    except ValueError as err:
        parser.error(str(err))
    report["seconds"] = round(time.perf_counter() - start, 2)
    written = write_outputs(a.out, report, report_figure(report))
    print(json.dumps({loss: {"mean_A*": r["mean_A*"], "mean_E*": r["mean_E*"], "AuReC": r["AuReC"],
                             "P-gap": r["metrics"]["P-gap"]} for loss, r in report["losses"].items()}, indent=1))
    print(f"wrote {written['json']} and {written['figure']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
