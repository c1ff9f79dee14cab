"""The extractor vote of Dombrowski et al. (CVPR 2025, §4.1, "feature extractor selection"; spec 04 §2.2 E4).

The paper retrieves the nearest training image of every real query with nine extractors, takes a retrieval
on which at least five of them agree as pseudo ground truth, rates each extractor by how often it retrieves
that consensus image, and chooses the best-rated (SwAV). Notebook 04, section 3b, applies the rule to the
extractors whose retrievals it stores and sets the choice beside the class-fraction linearity ranking.
Retrievals are indices into one shared training database, so agreement is equality of indices.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

NO_CONSENSUS = -1


def consensus(retrievals: np.ndarray, min_agree: int) -> dict[str, np.ndarray]:
    """The consensus retrieval of each query: the index that at least `min_agree` extractors retrieved.

    retrievals: (E, Q) int, row e the nearest-training-image indices of extractor e for Q queries.
    Returns {"index": (Q,) int64, the consensus index or NO_CONSENSUS (-1) where fewer than `min_agree` agree
    or two indices tie for most votes; "votes": (Q,) int64, the most votes any one index got}.
    """
    retrievals = np.asarray(retrievals)
    n_extractors, _ = retrievals.shape
    if not 1 <= min_agree <= n_extractors:
        raise ValueError(f"min_agree must lie in [1, {n_extractors}] (the number of extractors), got {min_agree}")
    votes = (retrievals[:, None, :] == retrievals[None, :, :]).sum(axis=1)  # (E, Q): votes for entry e's index
    top = votes.max(axis=0)
    top_index = retrievals[votes.argmax(axis=0), np.arange(retrievals.shape[1])]
    tied = (votes == top).sum(axis=0) > top  # more most-voted entries than one index's votes: two indices tie
    index = np.where((top >= min_agree) & ~tied, top_index, NO_CONSENSUS).astype(np.int64)
    return {"index": index, "votes": top.astype(np.int64)}


def agreement_rates(retrievals: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Each extractor's agreement with the consensus: the share of queries with a consensus whose retrieval
    equals it. retrievals: (E, Q) int; index: (Q,) int from `consensus`. Returns (E,) float64 (NaN where no query
    has a consensus)."""
    has = index != NO_CONSENSUS
    if not has.any():
        return np.full(len(retrievals), np.nan)
    return (np.asarray(retrievals)[:, has] == index[has]).mean(axis=1)


def leave_one_out_rates(retrievals: np.ndarray, min_agree: int) -> np.ndarray:
    """Each extractor's agreement with the consensus of the *other* extractors (at least `min_agree` of them),
    so that its own vote cannot make the consensus it is rated against. Returns (E,) float64."""
    retrievals = np.asarray(retrievals)
    rates = np.empty(len(retrievals))
    for e in range(len(retrievals)):
        others = np.delete(retrievals, e, axis=0)
        index = consensus(others, min(min_agree, len(others)))["index"]
        rates[e] = agreement_rates(retrievals[e:e + 1], index)[0]
    return rates


def vote_table(retrievals: dict[str, np.ndarray], thresholds: tuple[int, ...] | None = None) -> list[dict]:
    """The vote at each agreement threshold: one row per threshold with the share of queries that have a
    consensus, each extractor's agreement rate (own vote counted, as the paper; and leave-one-out), and the
    extractor the rule chooses (highest rate; None on a tie, `best`).

    retrievals: {extractor: (Q,) int}, all over the same Q queries and training database.
    thresholds: minimum agreeing extractors; default 2 .. E.
    """
    names = list(retrievals)
    matrix = np.stack([np.asarray(retrievals[name]) for name in names])
    rows = []
    for t in thresholds or range(2, len(names) + 1):
        result = consensus(matrix, t)
        rates = agreement_rates(matrix, result["index"])
        loo = leave_one_out_rates(matrix, t) if t < len(names) else np.full(len(names), np.nan)
        rows.append({"min_agree": t, "share": float(np.mean(result["index"] != NO_CONSENSUS)),
                     "rates": dict(zip(names, rates.tolist())), "loo_rates": dict(zip(names, loo.tolist())),
                     "chosen": best(dict(zip(names, rates))), "chosen_loo": best(dict(zip(names, loo)))})
    return rows


def best(rates: dict[str, float]) -> str | None:
    """The extractor with the highest rate; None when none is finite or several share the highest."""
    finite = {name: rate for name, rate in rates.items() if np.isfinite(rate)}
    if not finite:
        return None
    top = max(finite.values())
    winners = [name for name, rate in finite.items() if rate == top]
    return winners[0] if len(winners) == 1 else None


def paper_threshold(n_extractors: int, paper_agree: int = 5, paper_extractors: int = 9) -> int:
    """The threshold with the paper's agreeing share (5 of 9) for `n_extractors`: ceil(E * 5 / 9)."""
    return int(np.ceil(n_extractors * paper_agree / paper_extractors - 1e-12))


def compare_rankings(rates: dict[str, float], linearity: dict[str, float]) -> dict:
    """The vote's ranking (higher agreement first) against the class-fraction linearity ranking (smaller
    |slope - 1| first), over the extractors both rank.

    Returns {"vote_order", "linear_order": lists of names, best first; "same_best": bool; "tau": Kendall tau
    of the two rankings (NaN for fewer than two extractors)}.
    """
    names = [name for name in rates if name in linearity and np.isfinite(rates[name])]
    vote_order = sorted(names, key=lambda name: -rates[name])
    linear_order = sorted(names, key=lambda name: linearity[name])
    tau = (stats.kendalltau([rates[n] for n in names], [-linearity[n] for n in names]).statistic
           if len(names) > 1 else np.nan)
    return {"vote_order": vote_order, "linear_order": linear_order,
            "same_best": bool(names) and best({n: rates[n] for n in names}) == linear_order[0], "tau": float(tau)}


def pairwise_agreement(retrievals: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """The share of queries on which two extractors retrieve the same training image, for every pair.
    Correlated voters (one feature space seen twice) form a bloc that the vote counts twice."""
    return {a: {b: float(np.mean(np.asarray(ra) == np.asarray(rb))) for b, rb in retrievals.items()}
            for a, ra in retrievals.items()}


def vote_summary(retrievals: dict[str, np.ndarray], slope_gaps: dict[str, float]) -> dict:
    """Notebook 04's vote facts: the table over thresholds; at the paper's share (`paper_threshold`) the chosen
    extractor and its ranking against linearity (`slope_gaps`: |slope - 1| of the class-fraction fit); the pair
    that agrees most with each other beside the median pair; and the choice once that pair votes as one (its
    second member left out)."""
    if len(retrievals) < 2:
        raise ValueError(f"the vote needs at least 2 extractors, got {len(retrievals)}: {list(retrievals)}")
    rows = vote_table(retrievals)
    t = paper_threshold(len(retrievals))
    at_t = next(row for row in rows if row["min_agree"] == t)
    pairs = pairwise_agreement(retrievals)
    names = list(retrievals)
    off = {(a, b): pairs[a][b] for i, a in enumerate(names) for b in names[i + 1:]}
    bloc = max(off, key=off.get)
    merged = {name: r for name, r in retrievals.items() if name != bloc[1]}
    t_merged = paper_threshold(len(merged))
    merged_row = vote_table(merged, thresholds=(t_merged,))[0]
    return {"rows": rows, "threshold": t, "share": at_t["share"], "chosen": at_t["chosen"],
            "chosen_loo": at_t["chosen_loo"], "rates": at_t["rates"],
            "ranking": compare_rankings(at_t["rates"], slope_gaps),
            "bloc": list(bloc), "bloc_agreement": off[bloc], "chosen_in_bloc": at_t["chosen"] in bloc,
            "median_pair_agreement": float(np.median(list(off.values()))),
            "merged_threshold": t_merged, "merged_chosen": merged_row["chosen"], "merged_share": merged_row["share"],
            "merged_ranking": compare_rankings(merged_row["rates"], slope_gaps)}
