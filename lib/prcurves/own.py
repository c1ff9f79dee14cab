"""Notebook 01's evaluation on your own generators: ensemble PR curves, their bands and the pointwise comparison.

    python -m lib.prcurves.own --real real.npy --ensemble small s0.npy s1.npy s2.npy \\
        --ensemble large l0.npy l1.npy l2.npy --compare large small --out runs/own-01

Each file is one member's generated samples, (m, D) float (or one .npz holding every member of an ensemble, one
array each); `--real` holds the real samples, (n, D). Writes `results.json` (each member's PR curve summary, the
bands, the AUCs and the comparison) and `figure.png` (the bands, the recall ranges where the first ensemble of
`--compare` is better) into `--out`. docs/own-models.md shows it on the example files.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

import numpy as np

from lib.cli import check_out_folder, command_parser, read_arrays, write_outputs
from lib.params import check_choice, check_int, check_percentiles, check_probability, check_seed
from lib.prcurves.experiment import evaluation_sets
from lib.prcurves.method import DUP_RECALL, as_points, default_k, ensemble_band, pr_curve, summarise
from lib.prcurves.stats import TESTS, compare_scalars, pointwise_compare
from lib.progress import progress
from lib.seeds import derive_seed

MIN_SAMPLES = 8  # per set: a 50/50 split leaves 4 per half, and k = floor(sqrt(n)) >= 2 neighbours
PAPER_TEST = "paired_t"  # the paper's test (spec 01 §3.4); the others are shown beside it, as in notebook 01


def check_ensembles(real: np.ndarray, ensembles: Mapping[str, Sequence[np.ndarray]]) -> tuple[np.ndarray, dict]:
    """`real` and every member as finite float64 (n, D) arrays of one dimension D, with at least MIN_SAMPLES rows;
    at least one ensemble and two members in each (a band and a test need two). Errors name the member."""
    real = as_points("real", real, min_rows=MIN_SAMPLES)
    if not ensembles:
        raise ValueError("ensembles is empty: give at least one ensemble of at least 2 members.")
    checked = {}
    for name, members in ensembles.items():
        if len(members) < 2:
            raise ValueError(f"ensemble {name!r} has {len(members)} member(s); a band needs at least 2.")
        checked[name] = [as_points(f"ensemble {name!r} member {i}", m, min_rows=MIN_SAMPLES)
                         for i, m in enumerate(members)]
        for i, m in enumerate(checked[name]):
            if m.shape[1] != real.shape[1]:
                raise ValueError(f"ensemble {name!r} member {i} has dimension D = {m.shape[1]}, real has "
                                 f"D = {real.shape[1]}.")
    return real, checked


def compare_all(a: np.ndarray, b: np.ndarray, *, alpha: float, num_permutations: int, seed: int) -> list[dict]:
    """Notebook 01's comparison rows (`lib.prcurves.experiment.compare_ensembles`): every test, with and without
    Benjamini-Hochberg (max-T is family-wise already); the paired tests only for ensembles of equal size."""
    rows = []
    for test in TESTS:
        for correction in ("none", "bh") if test != "permutation_maxT" else ("none",):
            if test in ("paired_t", "wilcoxon") and len(a) != len(b):
                continue
            out = pointwise_compare(a, b, test, alpha, correction=correction, num_permutations=num_permutations,
                                    seed=seed)
            rows.append({"test": test, "correction": correction, "fraction": out["fraction"],
                         "min_p": float(np.nanmin(out["pvalues"])), "significant": out["significant"]})
    return rows


def ensemble_report(*, real: np.ndarray, ensembles: Mapping[str, Sequence[np.ndarray]],
                    compare: tuple[str, str] | None = None, k: int | None = None, num_angles: int = 200,
                    grid_size: int = 1000, band: tuple[float, float] = (10.0, 90.0), dup_recall: str = "replicate",
                    alpha: float = 0.05, num_permutations: int = 10_000, seed: int = 0,
                    show_progress: bool = True) -> dict:
    """Ensemble PR curves of your own generators, as notebook 01 evaluates the paper's DDPM ensembles.

    real: (n, D) float, real samples (the paper's held-out set). ensembles: {name: [member samples (m_i, D) float,
    ...]}, at least 2 members each, every array finite with at least 8 rows. compare: two ensemble names (a, b),
    "is a better than b?"; default: the first two ensembles, none with one ensemble.

    Each member gets the paper's kNN PR curve (`pr_curve`, spec 01 §3.2: k = floor(sqrt(n)) unless given,
    `num_angles` slopes, its own 50/50 split seeded derive_seed(seed, ensemble index, member index)) against
    `real` cut to the member's number of samples, as the notebook does. The band is the mean and the
    [band[0], band[1]] percentiles of precision on a recall grid of `grid_size` (`ensemble_band`, spec §2.5).

    Returns {"settings", "ensembles": {name: {"members": [{"max_precision", "max_recall", "auc_raw", "f8",
    "f1_8"} per member] (`summarise`, the paper's AUC is auc_raw), "auc_grid": (M,) AUC on the grid, "band":
    {"recall", "mean", "lo", "hi"}: (grid_size,) each, "band_width": mean of hi - lo}}, "comparison": None or
    {"a", "b", "tests": rows of `compare_all` (share of the recall grid where a is significantly better, per
    test and correction; the paper's is paired_t without correction), "auc": `compare_scalars` of the members'
    auc_raw (Welch and Mann-Whitney p-values)}}.
    """
    check_int("num_angles", num_angles, minimum=1)
    check_int("grid_size", grid_size, minimum=2)
    lo, hi = check_percentiles("band", band)
    check_choice("dup_recall", dup_recall, DUP_RECALL)
    check_probability("alpha", alpha)
    check_int("num_permutations", num_permutations, minimum=99)
    check_seed("seed", seed)
    real, ensembles = check_ensembles(real, ensembles)
    names = list(ensembles)
    if compare is None and len(names) >= 2:
        compare = (names[0], names[1])
    if compare is not None:
        if len(compare) != 2 or compare[0] == compare[1] or any(c not in ensembles for c in compare):
            raise ValueError(f"compare={compare!r} must name two different ensembles of {names}.")
    if k is not None:  # at most the points of the smallest union of training halves
        sizes = [min(len(real), len(m)) for members in ensembles.values() for m in members]
        check_int("k", k, minimum=1, maximum=min(2 * round(n / 2) for n in sizes))
    out: dict = {"settings": {"k": k, "num_angles": num_angles, "grid_size": grid_size, "band": [lo, hi],
                              "dup_recall": dup_recall, "alpha": alpha, "num_permutations": num_permutations,
                              "seed": seed, "compare": compare}, "ensembles": {}}
    bands = {}
    total = sum(len(m) for m in ensembles.values())
    bar = progress(total=total, desc="PR curves of the members", enabled=show_progress)
    for e, name in enumerate(names):
        curves = []
        for i, fake in enumerate(ensembles[name]):
            real_i, fake = evaluation_sets(real, fake)
            curves.append(pr_curve(real_i, fake, k=k or default_k(len(real_i)), num_angles=num_angles,
                                   seed=derive_seed(seed, e, i)))
            bar.update(1)
        bands[name] = ensemble_band(curves, grid_size, lo, hi, dup_recall=dup_recall)
        b = bands[name]
        out["ensembles"][name] = {"members": [summarise(c) for c in curves], "auc_grid": b["auc"],
                                  "band": {key: b[key] for key in ("recall", "mean", "lo", "hi")},
                                  "band_width": float(np.mean(b["hi"] - b["lo"]))}
    bar.close()
    out["comparison"] = None
    if compare is not None:
        a, b = (bands[c]["members"] for c in compare)
        aucs = [[m["auc_raw"] for m in out["ensembles"][c]["members"]] for c in compare]
        out["comparison"] = {"a": compare[0], "b": compare[1], "paper_test": PAPER_TEST,
                             "tests": compare_all(a, b, alpha=alpha, num_permutations=num_permutations, seed=seed),
                             "auc": compare_scalars(*aucs)}
    return out


def report_figure(report: dict):
    """The bands of every ensemble; shaded, the recall ranges where compare's a is better by the paper's test
    (or Welch's when the ensembles differ in size), with Benjamini-Hochberg."""
    import matplotlib.pyplot as plt

    from lib.plotting import PALETTE, legend_beside
    from lib.prcurves.plots import plot_band, shade_mask

    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    for color, (name, ens) in zip(PALETTE, report["ensembles"].items()):
        b = {key: np.asarray(v) for key, v in ens["band"].items()}
        plot_band(ax, b, label=f"{name} (band width {ens['band_width']:.3f})", color=color)
    comp = report["comparison"]
    if comp is not None:
        rows = {(r["test"], r["correction"]): r for r in comp["tests"]}
        test = PAPER_TEST if (PAPER_TEST, "bh") in rows else "welch"
        row = rows[(test, "bh")]
        recall = np.asarray(next(iter(report["ensembles"].values()))["band"]["recall"])
        shade_mask(ax, recall, np.asarray(row["significant"]), color="green",
                   label=f"{comp['a']} better ({test}, BH)")
        ax.set_title(f"{comp['a']} better than {comp['b']} on {row['fraction']:.1%} of the recall grid "
                     f"({test}, BH, level {report['settings']['alpha']:g})")
    legend_beside(ax)
    return fig


def parse_ensembles(entries: list[list[str]]) -> dict[str, list[np.ndarray]]:
    """--ensemble NAME FILE [FILE ...] entries as {name: members}; a .npz file gives one member per array."""
    ensembles: dict[str, list[np.ndarray]] = {}
    for name, *files in entries:
        if name in ensembles:
            raise ValueError(f"--ensemble {name!r} is given twice.")
        if not files:
            raise ValueError(f"--ensemble {name!r} names no file.")
        ensembles[name] = [arr for f in files for arr in read_arrays(f, name=f"--ensemble {name}")]
    return ensembles


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.prcurves.own", __doc__)
    parser.add_argument("--real", required=True, help="real samples, (n, D) .npy")
    parser.add_argument("--ensemble", nargs="+", action="append", required=True, metavar="NAME FILE",
                        help="an ensemble: its name, then one .npy per member (or one .npz of every member)")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="is ensemble A better than B?")
    parser.add_argument("--out", required=True, help="folder for results.json and figure.png")
    parser.add_argument("--k", type=int, default=None, help="k of the kNN estimator (default floor(sqrt(n)))")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--num-permutations", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        check_out_folder("--out", a.out)
        real = read_arrays(a.real, name="--real")
        if len(real) != 1:
            raise ValueError(f"--real: {a.real!r} holds {len(real)} arrays; give one.")
        report = ensemble_report(real=real[0], ensembles=parse_ensembles(a.ensemble),
                                 compare=tuple(a.compare) if a.compare else None, k=a.k, alpha=a.alpha,
                                 num_permutations=a.num_permutations, seed=a.seed)
    except ValueError as err:
        parser.error(str(err))
    report["seconds"] = round(time.perf_counter() - start, 2)
    written = write_outputs(a.out, report, report_figure(report))
    print(json.dumps(headline(report), indent=1))
    print(f"wrote {written['json']} and {written['figure']}")
    return 0


def headline(report: dict) -> dict:
    """What the command prints: per ensemble the mean AUC and band width; the comparison's shares of the grid."""
    out = {name: {"auc_raw_mean": round(float(np.mean([m["auc_raw"] for m in e["members"]])), 4),
                  "band_width": round(e["band_width"], 4), "members": len(e["members"])}
           for name, e in report["ensembles"].items()}
    comp = report["comparison"]
    if comp is not None:
        out["comparison"] = {f"{r['test']}/{r['correction']}": round(r["fraction"], 4) for r in comp["tests"]}
    return out


if __name__ == "__main__":
    raise SystemExit(main())
