"""Notebook 02's guidance pair over training seeds (lib.crel.guidance_seeds): the paired differences and their
standard errors against a direct computation, the verdicts over replicates, and the committed measurements."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lib.crel import experiment as ex
from lib.crel import guidance_seeds as gs
from lib.crel import images as im


def replicate(mean_w2: float, mean_w4: float, crel_w2: list[float], crel_w4: list[float], *, sd=0.05, n=2500):
    def one(mean, crel):
        return {"mean_rho": mean, "crel": float(np.mean(crel)), "crel_per_class": crel, "rho_sd": sd, "n": n}

    return {"w2": one(mean_w2, crel_w2), "w4": one(mean_w4, crel_w4)}


def test_a_replicate_gives_the_two_paired_differences_and_their_sampling_errors():
    rng = np.random.default_rng(0)
    c2, c4 = rng.uniform(0.5, 0.7, 10).tolist(), rng.uniform(0.6, 0.8, 10).tolist()
    out = gs.effects(replicate(0.92, 0.91, c2, c4, sd=0.04, n=2000))
    assert out[im.MEAN][0] == pytest.approx(0.01) and out[im.MEAN][1] == pytest.approx(math.sqrt(2 * 0.04 ** 2 / 2000))
    d = np.subtract(c4, c2)
    assert out[im.WORST][0] == pytest.approx(d.mean())
    assert out[im.WORST][1] == pytest.approx(np.std(d, ddof=1) / math.sqrt(10))


def test_the_reversal_holds_only_when_both_differences_hold_over_the_seeds():
    base = [0.6] * 10
    consistent = {"replicates": {str(k): replicate(0.92 + 0.001 * k, 0.91, base, [0.7 + 0.01 * k] * 9 + [0.65])
                                 for k in range(3)}}
    pair = gs.compare(consistent)
    assert (pair.mean.verdict, pair.crel.verdict, pair.verdict) == ("holds", "holds", "holds")
    assert pair.seeds == (0, 1, 2) and pair.classes_w4_higher == (10, 10, 10)
    mixed = {"replicates": {"0": replicate(0.92, 0.91, base, [0.7] * 10), "1": replicate(0.90, 0.91, base, [0.7] * 10),
                            "2": replicate(0.92, 0.91, base, [0.71] * 10)}}
    assert gs.compare(mixed).verdict == "undecided" and gs.compare(mixed).crel.verdict == "holds"
    lower = {"replicates": {str(k): replicate(0.92, 0.91, base, [0.5 - 0.01 * k] * 10) for k in range(3)}}
    assert gs.compare(lower).verdict == "fails"
    rows = gs.comparison_rows(pair)
    assert [r["verdict"] for r in rows] == ["holds", "holds"] and rows[0]["seeds"] == 3


def test_a_replicate_redraws_the_arm_and_the_evaluation_and_keeps_the_rest():
    s = ex.resolve_config("cpu").images
    r = gs.replicate_settings(s, 2, 16)
    assert (r.family.seed, r.seed, r.include_real) == (2, 2, False)
    assert r.generators == ((16, 1.0, 2.0), (16, 1.0, 4.0)) and r.pgd_starts == s.pgd_starts
    assert [spec.label for spec in r.specs()] == ["class c16 100% w2", "class c16 100% w4"]


def test_the_committed_measurements_hold_three_seeds_of_both_sets_and_decide_the_ledger():
    from lib.crel import claims as crel_claims

    record, name = gs.stored_record(gs.CHANNELS)
    assert name == "guidance-c16-seeds-0-1-2.json" and sorted(record["replicates"]) == ["0", "1", "2"]
    for rep in record["replicates"].values():
        assert set(rep) == {"w2", "w4"} and all(len(rep[w]["crel_per_class"]) == 10 for w in rep)
        assert all(rep[w]["n"] == 2500 for w in rep)
    pair = gs.compare(record)
    glued = gs.glued(pair, name)
    verdict = crel_claims._reversal({"label_to_image_ranking": {"reversed": [], "n_pairs": 15, "tau": 1.0},
                                     "guidance_seeds": glued})
    assert verdict.verdict == {"holds": "holds", "fails": "fails"}.get(pair.verdict, "undecided")


def test_the_new_ledger_rules_flip_with_their_evidence():
    """02's area-on-par, runtime and concentration rules on synthetic records: each verdict follows its interval."""
    from lib.crel import claims as cc

    def per_seed(feldman: list[float], crel: list[float]) -> list[dict]:
        return [{"lgm": "flow", "method": m, "seed": s, "alpha": 0.1, "area": a}
                for m, values in (("Feldman", feldman), ("CReL", crel)) for s, a in enumerate(values)]

    base = [300.0, 310.0, 290.0, 305.0, 295.0]
    assert cc._area_par({"per_seed": per_seed(base, [v + 3 for v in base])}).verdict == "holds"
    assert cc._area_par({"per_seed": per_seed(base, [v * 1.5 for v in base])}).verdict == "fails"
    dims = range(2, 8)
    flat = {str(d): [1e-4 * (1 + 0.01 * d), 0.1 * 2.0 ** d] for d in dims}
    assert cc._runtime({"runtime": flat}).verdict == "holds"
    cubic = {str(d): [1e-4 * d ** 3, 0.1 * 2.0 ** d] for d in dims}
    assert cc._runtime({"runtime": cubic}).verdict == "fails"
    sd = {"per_seed": [-0.002, -0.0021, -0.0019], "mean": -0.002, "lower": -0.0023, "upper": -0.0017}
    assert cc._concentration({"guidance_seeds": {"sd_w4_minus_w2": sd}}).verdict == "holds"


@pytest.mark.parametrize("alpha", [0.1, 0.02])
def test_the_halfspace_intersection_of_a_gaussian_latent_covers_the_disk_share(alpha):
    """The measured cause of 02's DQR row: 64 halfspaces u·z ≤ q_{1−α}(u·z) of a standard 2-D Gaussian jointly
    cover 1 − exp(−z²/2), checked by simulation against the closed form."""
    from scipy.stats import norm

    from lib.crel import claims as cc

    rng = np.random.default_rng(0)
    z = rng.normal(size=(200_000, 2))
    angles = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    u = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    inside = (z @ u.T <= norm.ppf(1 - alpha)).all(axis=1).mean()
    assert inside == pytest.approx(cc.gaussian_halfspace_coverage(alpha), abs=0.004)
    assert cc.gaussian_halfspace_coverage(alpha) < 1 - alpha
