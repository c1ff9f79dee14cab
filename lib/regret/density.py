"""How dense must the human labels be? (spec 03 §1.4, the paper's stated limitation: the benchmark needs dense soft
labels.) Notebook 03, section 3, draws k of each image's CIFAR-10H annotations without replacement, takes their
frequencies as p*, recomputes the oracle decomposition and AuReC of every method, and compares the method ranking
with the one under all annotations (Kendall τ over several draws).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from lib.regret import method as regret

ALL = 0  # k = ALL stands for every annotation of the image (p* = the CIFAR-10H row)


def subsample_counts(counts: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k annotations of each row drawn without replacement (multivariate hypergeometric), as counts.

    counts: (n, c) int, every row summing to at least k. Returns (n, c) int64, every row summing to k;
    k = ALL returns `counts` unchanged.
    """
    counts = np.asarray(counts)
    if k == ALL:
        return counts.astype(np.int64)
    totals = counts.sum(axis=1)
    if k < 1 or k > totals.min():
        raise ValueError(f"k must lie in [1, {totals.min()}] (the fewest annotations of a row), got {k}")
    n, c = counts.shape
    width = int(totals.max())
    # each row's annotations as class labels, padded with c; a random key per annotation, the k smallest drawn
    cum = np.cumsum(counts, axis=1)
    position = np.arange(width)[None, :]
    labels = np.where(position < totals[:, None], (position[:, :, None] >= cum[:, None, :]).sum(axis=2), c)
    keys = np.where(labels < c, rng.random((n, width)), np.inf)
    drawn = np.take_along_axis(labels, np.argpartition(keys, k - 1, axis=1)[:, :k], axis=1)
    return (drawn[:, :, None] == np.arange(c)[None, None, :]).sum(axis=1).astype(np.int64)


def soft_labels(counts: np.ndarray) -> np.ndarray:
    """p* as annotation frequencies: (n, c) float64, rows summing to 1."""
    counts = np.asarray(counts, dtype=float)
    return counts / counts.sum(axis=1, keepdims=True)


def density_rows(evals: dict, counts: np.ndarray, ks: tuple[int, ...], draws: int, *, seed: int,
                 norm: str = "selective", ties: str = "stable") -> list[dict]:
    """AuReC, ex-AuReC, mean A* and mean E* of every method and loss with p* from k annotations per image.

    evals: {(method, loss): {"q": (n, c) float, "E_hat": (n,) float}} (notebook 03's `evals`); counts: (n, c) int
    annotation counts of the same rows. One draw for k = ALL, `draws` draws (seeded) for every other k.
    Returns one row per (k, draw, method, loss).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for k in ks:
        for draw in range(1 if k == ALL else draws):
            p_star = soft_labels(subsample_counts(counts, k, rng))
            for (method, loss), ev in evals.items():
                oracle = regret.decompose(p_star, ev["q"], loss)
                rows.append({"k": k, "draw": draw, "method": method, "loss": loss,
                             "AuReC": regret.aurec(ev["E_hat"], oracle["E"], norm=norm, ties=ties),
                             "ex-AuReC": regret.ex_aurec(ev["E_hat"], oracle["E"], norm=norm, ties=ties),
                             "mean_A*": float(oracle["A"].mean()), "mean_E*": float(oracle["E"].mean())})
    return rows


def ranking_taus(rows: list[dict], metric: str = "AuReC") -> list[dict]:
    """Kendall τ (tau-b) of each draw's method ranking by `metric` against the ranking with all annotations
    (k = ALL), per loss. Returns one row per (loss, k, draw): {"loss", "k", "draw", "tau", "same"} where `same`
    says the order of the methods is identical."""
    full = {(r["loss"], r["method"]): r[metric] for r in rows if r["k"] == ALL}
    groups: dict[tuple, dict[str, float]] = {}
    for r in rows:
        if r["k"] != ALL:
            groups.setdefault((r["loss"], r["k"], r["draw"]), {})[r["method"]] = r[metric]
    out = []
    for (loss, k, draw), values in groups.items():
        methods = sorted(values)
        ours, theirs = [values[m] for m in methods], [full[(loss, m)] for m in methods]
        tau = stats.kendalltau(ours, theirs).statistic
        same = list(np.argsort(ours, kind="stable")) == list(np.argsort(theirs, kind="stable"))
        out.append({"loss": loss, "k": k, "draw": draw, "tau": float(tau), "same": bool(same)})
    return out


def tau_summary(taus: list[dict], level: float = 0.9) -> list[dict]:
    """Per (loss, k): the median τ, the central `level` interval of τ over the draws, and the share of draws that
    reproduce the full-label order exactly."""
    keys = sorted({(t["loss"], t["k"]) for t in taus})
    out = []
    for loss, k in keys:
        values = np.array([t["tau"] for t in taus if (t["loss"], t["k"]) == (loss, k)])
        same = np.mean([t["same"] for t in taus if (t["loss"], t["k"]) == (loss, k)])
        lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
        out.append({"loss": loss, "k": k, "median_tau": float(np.median(values)), "low": float(lo),
                    "high": float(hi), "share_same": float(same), "draws": len(values)})
    return out


def stable_from(summary: list[dict], loss: str, share: float = 0.9) -> int | None:
    """The smallest k from which on (it and every larger k measured) at least `share` of the draws reproduce the
    full-label ranking exactly; None if even the largest k does not."""
    rows = sorted((r for r in summary if r["loss"] == loss), key=lambda r: r["k"])
    stable = None
    for r in reversed(rows):
        if r["share_same"] < share:
            break
        stable = r["k"]
    return stable


def mean_by_k(rows: list[dict], column: str) -> dict[tuple[str, int], float]:
    """{(loss, k): the mean of `column` over methods and draws} of `density_rows`."""
    sums: dict[tuple[str, int], list[float]] = {}
    for r in rows:
        sums.setdefault((r["loss"], r["k"]), []).append(r[column])
    return {key: float(np.mean(v)) for key, v in sums.items()}
