"""Notebook 02's evaluation on your own conditional generator: CReL per condition, Coverage-Z, the worst cases.

    python -m lib.crel.own --conditions x.npy --samples samples.npy --reference reference.npy \\
        --similarity cosine --alpha 0.1 --out runs/own-02

conditions: (n, p) one condition per row (e.g. an image embedding, a label's one-hot code, a regression input);
samples: (n, M, D) M outputs your model sampled for each condition, or their embeddings; reference: (n, D) what
each condition's outputs should resemble (the ground truth, a caption's embedding). Writes `results.json` and
`figure.png` into `--out`. docs/own-models.md shows it on the example files.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace

import numpy as np

from lib.cli import check_out_folder, command_parser, read_array, write_outputs
from lib.crel.embeddings import SIMILARITIES, crel_on_embeddings
from lib.crel.hf_captioners import EmbeddingCReLSettings, random_folds
from lib.crel.method import min_calibration_points
from lib.params import check_choice, check_finite, check_int, check_probability, check_seed

MIN_FOLD = 2  # conditions in the LGM, DQR and test folds (the calibration fold needs min_calibration_points)


def check_inputs(conditions: np.ndarray, samples: np.ndarray, reference: np.ndarray,
                 similarity: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three arrays as finite float64 of matching shapes (n, p), (n, M, D), (n, D); a ValueError names the
    argument and what is wrong. Under the cosine a zero vector has no direction, so it is refused too."""
    arrays = {"conditions": (conditions, 2, "(n, p)"), "samples": (samples, 3, "(n, M, D)"),
              "reference": (reference, 2, "(n, D)")}
    out = {}
    for name, (arr, ndim, shape) in arrays.items():
        arr = check_finite(name, np.asarray(arr))
        if arr.ndim != ndim or 0 in arr.shape:
            raise ValueError(f"{name} must be a non-empty {shape} array; got shape {arr.shape}.")
        out[name] = arr.astype(np.float64)
    x, y, ref = out.values()
    if not len(x) == len(y) == len(ref):
        raise ValueError(f"conditions, samples and reference must have one row per condition; got n = {len(x)}, "
                         f"{len(y)} and {len(ref)}.")
    if y.shape[2] != ref.shape[1]:
        raise ValueError(f"samples (n, M, D) and reference (n, D) must have the same D; got {y.shape[2]} and "
                         f"{ref.shape[1]}.")
    if similarity == "cosine":
        for name, arr in (("samples", y), ("reference", ref)):
            zero = np.linalg.norm(arr, axis=-1) == 0
            if zero.any():
                raise ValueError(f"{name} holds {int(zero.sum())} zero vector(s) (first at index "
                                 f"{tuple(int(i) for i in np.argwhere(zero)[0])}), which have no cosine; "
                                 "use --similarity dot or neg_euclidean, or drop them.")
    return x, y, ref


def check_folds(n: int, fractions: tuple[float, float, float], alpha: float) -> None:
    """Enough conditions for every fold: MIN_FOLD in the LGM, DQR and test folds and min_calibration_points(alpha)
    in the calibration fold (else gamma is infinite)."""
    sizes = dict(zip(("lgm", "dqr", "cal"), (int(f * n) for f in fractions)))
    sizes["test"] = n - sum(sizes.values())
    need = {"lgm": MIN_FOLD, "dqr": MIN_FOLD, "cal": min_calibration_points(alpha), "test": MIN_FOLD}
    short = {f: (sizes[f], need[f]) for f in need if sizes[f] < need[f]}
    if short:
        detail = ", ".join(f"{f} fold {have} < {want}" for f, (have, want) in short.items())
        raise ValueError(f"too few conditions (n = {n}) for the folds {fractions} and alpha = {alpha}: {detail}; "
                         "give more conditions or a larger alpha.")


def crel_report(*, conditions: np.ndarray, samples: np.ndarray, reference: np.ndarray, similarity: str = "cosine",
                alpha: float = 0.1, fractions: tuple[float, float, float] = (0.4, 0.3, 0.2), num_worst: int = 5,
                seed: int = 0, settings: EmbeddingCReLSettings | None = None, progress: bool = False) -> dict:
    """CReL of your own conditional generator from its sampled outputs (or their embeddings), as notebook 02's
    captions experiment scores captioners (`lib.crel.embeddings.crel_on_embeddings`, spec 02 §2.4-§2.5).

    conditions: (n, p) float, the condition x of each row; samples: (n, M, D) float, M outputs sampled for each
    condition; reference: (n, D) float, what rho compares an output with. similarity: rho, one of SIMILARITIES
    ("cosine", the paper's CLIP-SIM / BERT-SIM; "dot"; "neg_euclidean"), higher is better.

    The conditions are split at random (seeded) into the LGM, DQR and calibration folds (`fractions` of n) and a
    held-out test fold (the rest). A CVAE on PCA codes of x and of the samples is the latent generative model, a
    directional quantile region of its codes is calibrated at level alpha (the set S^gamma(x), spec §3), and
    CReL(x) = min over S^gamma(x) of rho(decoded output, reference) is found by projected gradient descent.

    Returns {"settings", "n_test", "crel": mean CReL over the test conditions, "mean_similarity": mean rho of the
    sampled outputs (what CReL is a worst case of), "coverage_z": share of test conditions whose first sample's
    code lies in S^gamma(x) (Coverage-Z; at least 1 - alpha in expectation), "gamma": the calibrated radius,
    "spread": mean spread of the PGD's starts, "per_condition": [{"index": row of the inputs, "crel",
    "mean_similarity"}] for every test condition, "worst": the `num_worst` test conditions of lowest CReL, each
    with "worst_output" (D,) the decoded output that attains it}.
    """
    check_choice("similarity", similarity, SIMILARITIES)
    check_probability("alpha", alpha)
    check_int("num_worst", num_worst, minimum=0)
    check_seed("seed", seed)
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or sum(fractions) >= 1:
        raise ValueError(f"fractions={fractions!r} must be three positive shares (LGM, DQR, calibration) summing "
                         "to less than 1 (the rest is the test fold).")
    x, y, ref = check_inputs(conditions, samples, reference, similarity)
    check_folds(len(x), fractions, alpha)
    s = replace(settings or EmbeddingCReLSettings(), alpha=alpha, fractions=tuple(fractions), seed=seed)
    res = crel_on_embeddings(x, y, ref, random_folds(len(x), s.fractions, s.seed), s, similarity=similarity,
                             progress=progress)
    sims = res["sims"].mean(axis=1)
    rows = [{"index": int(i), "crel": float(c), "mean_similarity": float(m)}
            for i, c, m in zip(res["test_images"], res["crel_per_x"], sims)]
    order = np.argsort(res["crel_per_x"], kind="stable")[:num_worst]
    worst = [{**rows[j], "worst_output": res["worst_y"][j]} for j in order]
    return {"settings": {**asdict(s), "similarity": similarity}, "n_test": len(rows), "crel": res["crel"],
            "mean_similarity": res["mean_sim"], "coverage_z": res["coverage_z"], "gamma": res["gamma"],
            "spread": res["spread"], "per_condition": rows, "worst": worst}


def report_figure(report: dict):
    """CReL of each test condition against the mean similarity of its samples; the worst cases marked."""
    import matplotlib.pyplot as plt

    from lib.plotting import PALETTE

    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    rows = report["per_condition"]
    ax.scatter([r["mean_similarity"] for r in rows], [r["crel"] for r in rows], s=14, color=PALETTE[0],
               label="test condition")
    ax.scatter([r["mean_similarity"] for r in report["worst"]], [r["crel"] for r in report["worst"]], s=40,
               facecolors="none", edgecolors=PALETTE[3], label="worst cases")
    lims = [min(ax.get_xlim()[0], ax.get_ylim()[0]), max(ax.get_xlim()[1], ax.get_ylim()[1])]
    ax.plot(lims, lims, color="k", lw=0.8, ls=":")
    sim = report["settings"]["similarity"]
    ax.set(xlabel=f"mean {sim} of the sampled outputs", ylabel=f"CReL (worst {sim} in the set)",
           title=f"CReL {report['crel']:.3f}, Coverage-Z {report['coverage_z']:.3f} "
                 f"(α = {report['settings']['alpha']:g}, {report['n_test']} test conditions)")
    ax.legend(fontsize="small")
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.crel.own", __doc__)
    parser.add_argument("--conditions", required=True, help="(n, p) .npy")
    parser.add_argument("--samples", required=True, help="(n, M, D) .npy: sampled outputs or their embeddings")
    parser.add_argument("--reference", required=True, help="(n, D) .npy")
    parser.add_argument("--similarity", default="cosine", choices=SIMILARITIES)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--num-worst", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=EmbeddingCReLSettings.epochs, help="of the CVAE and the DQR")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="folder for results.json and figure.png")
    a = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        check_out_folder("--out", a.out)
        check_int("--epochs", a.epochs, minimum=1)
        arrays = {name: read_array(getattr(a, name), name=f"--{name}") for name in ("conditions", "samples",
                                                                                     "reference")}
        report = crel_report(**arrays, similarity=a.similarity, alpha=a.alpha, num_worst=a.num_worst, seed=a.seed,
                             settings=EmbeddingCReLSettings(epochs=a.epochs), progress=True)
    except ValueError as err:
        parser.error(str(err))
    report["seconds"] = round(time.perf_counter() - start, 2)
    written = write_outputs(a.out, report, report_figure(report))
    print(json.dumps({k: report[k] for k in ("crel", "mean_similarity", "coverage_z", "gamma", "n_test")}, indent=1,
                     default=float))
    print("worst:", [(w["index"], round(w["crel"], 3)) for w in report["worst"]])
    print(f"wrote {written['json']} and {written['figure']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
