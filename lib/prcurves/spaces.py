"""Feature-space dependence (the paper's stated limitation, spec 01 §1): the same stored samples evaluated in fixed
embeddings of the plane instead of the plane itself. kNN precision–recall depends on the distances of the space it
runs in, so a change of space can move the members' curves, the bands and the significance of C = 4 against C = 2.
Notebook 01, section "Figure 3", calls `space_rows` on its ensembles.

Every embedding is fixed (seeded, or fitted on the held-out real points only) and applied to the real and the
generated points alike: standardised (each axis to mean 0, sd 1), a random Fourier map (Rahimi & Recht: √(2/D)
cos(Wx + b), W ~ N(0, 1/ℓ²)) and a random MLP (tanh layers with Gaussian weights).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from lib.seeds import derive_seed

if TYPE_CHECKING:  # the experiment module imports this one's callers; the config is only named here
    from lib.prcurves.experiment import EnsemblePRConfig

FOURIER_STREAM = 1  # derive_seed(seed, FOURIER_STREAM) seeds the random Fourier map's W and b
MLP_STREAM = 2  # derive_seed(seed, MLP_STREAM) seeds the random MLP's weights
Embedding = Callable[[np.ndarray], np.ndarray]
SPACES = ("plane", "standardised", "fourier", "mlp")


def standardiser(reference: np.ndarray) -> Embedding:
    """x -> (x − mean) / sd with the mean and sd of `reference` (n, 2), per axis."""
    mean, sd = reference.mean(axis=0), reference.std(axis=0)
    return lambda x: (x - mean) / sd


def random_fourier(dim: int = 64, lengthscale: float = 1.0, seed: int = 0, in_dim: int = 2) -> Embedding:
    """Random Fourier features of an RBF kernel of length scale `lengthscale`: (n, in_dim) -> (n, dim) float64."""
    rng = np.random.default_rng(seed)
    W = rng.normal(0.0, 1.0 / lengthscale, (in_dim, dim))
    b = rng.uniform(0.0, 2 * np.pi, dim)
    return lambda x: np.sqrt(2.0 / dim) * np.cos(x @ W + b)


def random_mlp(widths: tuple[int, ...] = (64, 32), seed: int = 0, in_dim: int = 2, scale: float = 1.0) -> Embedding:
    """A random tanh MLP (weights N(0, scale² / fan-in), biases N(0, 0.1²)): (n, in_dim) -> (n, widths[-1])."""
    rng = np.random.default_rng(seed)
    layers, fan_in = [], in_dim
    for width in widths:
        layers.append((rng.normal(0.0, scale / np.sqrt(fan_in), (fan_in, width)), rng.normal(0.0, 0.1, width)))
        fan_in = width

    def embed(x: np.ndarray) -> np.ndarray:
        for W, b in layers:
            x = np.tanh(x @ W + b)
        return x

    return embed


def embeddings(reference: np.ndarray, seed: int = 0) -> dict[str, Embedding]:
    """The notebook's spaces: {"plane": identity, "standardised", "fourier" (64-d, ℓ = 1, about a mode's width),
    "mlp" (64 -> 32, on the standardised plane so that tanh does not saturate at radius 5)}."""
    standard = standardiser(reference)
    mlp = random_mlp(seed=derive_seed(seed, MLP_STREAM))
    fourier = random_fourier(seed=derive_seed(seed, FOURIER_STREAM))
    return {"plane": lambda x: x, "standardised": standard, "fourier": fourier,
            "mlp": lambda x: mlp(standard(x))}


def embed_samples(embed: Embedding, samples: np.ndarray) -> np.ndarray:
    """`embed` applied to every member's samples: (M, n, 2) -> (M, n, D); a non-finite point stays non-finite."""
    out = np.stack([embed(np.nan_to_num(s)) for s in samples])
    out[~np.isfinite(samples).all(axis=2)] = np.nan
    return out


def space_facts(rows: list[dict], reference: str = "plane") -> dict:
    """Do the conclusions survive a change of space? rows: one per (space, C) with "auc_mean", "width", and per
    space the share significant ("fraction"). Returns {space: {"best_C", "same_best", "same_order" (the AUC order of
    all C), "width_ratio" (mean over C of
    its band width / the reference space's), "fraction", "fraction_change" (minus the reference's)}}."""
    by_space: dict[str, dict[int, dict]] = {}
    for r in rows:
        by_space.setdefault(r["space"], {})[r["C"]] = r
    ref = by_space[reference]
    best_ref = max(ref, key=lambda C: ref[C]["auc_mean"])
    order_ref = sorted(ref, key=lambda C: ref[C]["auc_mean"])
    out = {}
    for space, per_C in by_space.items():
        best = max(per_C, key=lambda C: per_C[C]["auc_mean"])
        ratios = [per_C[C]["width"] / ref[C]["width"] for C in per_C if C in ref and ref[C]["width"] > 0]
        fraction = next(iter(per_C.values()))["fraction"]
        out[space] = {"best_C": int(best), "same_best": best == best_ref,
                      "same_order": sorted(per_C, key=lambda C: per_C[C]["auc_mean"]) == order_ref,
                      "width_ratio": float(np.mean(ratios)),
                      "fraction": float(fraction), "fraction_change": float(fraction - ref[best_ref]["fraction"])}
    return out


def space_ensemble(config: EnsemblePRConfig, result: dict, heldout: np.ndarray, embed: Embedding) -> dict:
    """One ensemble of `run_ensemble` (`result`) evaluated in the space `embed`: its members' curves on the same
    splits (same seeds) as in the plane, band and per-member summaries, in `run_ensemble`'s form."""
    from lib import prcurves
    from lib.prcurves import experiment as ex

    arrays = ex.member_curves(config, complexity=result["complexity"], heldout=embed(heldout),
                              samples=embed_samples(embed, result["samples"]))
    curves = ex.curve_list(arrays)
    band = prcurves.ensemble_band(curves, config.grid_size, *config.band, dup_recall=config.dup_recall)
    return {**result, "curves": curves, "band": band, "summary": [prcurves.summarise(c) for c in curves]}


def space_rows(config: EnsemblePRConfig, results: dict, data: dict) -> list[dict]:
    """Every ensemble of `results` ({C: `run_ensemble` output with samples}) in every space of `embeddings`: one row
    per (space, C) with `summary_row`'s AUC and band widths, and the space's share of the recall grid where
    config.compare[0] beats config.compare[1] ("fraction": config.test uncorrected, "fraction_bh", "fraction_maxT")."""
    from lib.prcurves import experiment as ex

    rows = []
    for space, embed in embeddings(data["heldout"], seed=config.split_seed).items():
        ens = {C: space_ensemble(config, res, data["heldout"], embed) for C, res in results.items()}
        better, worse = (ens[C] for C in config.compare)
        share = {(r["test"], r["correction"]): r["fraction"] for r in ex.compare_ensembles(better, worse, config)}
        fractions = {"fraction": share[(config.test, "none")], "fraction_bh": share.get((config.test, "bh")),
                     "fraction_maxT": share.get(("permutation_maxT", "none"))}
        rows += [{"space": space, **ex.summary_row(e), **fractions} for e in ens.values()]
    return rows


def space_verdict(facts: dict, reference: str = "plane", tol: float = 5e-4) -> dict:
    """Across the other spaces of `space_facts`: {"order_kept": the AUC order of C is the reference's everywhere;
    "lower", "higher", "same": the spaces whose significant share is below, above or within `tol` (half a grid
    point of 1000) of the reference's}."""
    others = {space: f for space, f in facts.items() if space != reference}
    return {"order_kept": all(f["same_order"] for f in others.values()),
            "lower": [s for s, f in others.items() if f["fraction_change"] < -tol],
            "higher": [s for s, f in others.items() if f["fraction_change"] > tol],
            "same": [s for s, f in others.items() if abs(f["fraction_change"]) <= tol]}
