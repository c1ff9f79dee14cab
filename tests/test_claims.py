"""The claims ledger (`lib.claims`) and notebook 04's claims (`lib.irs.claims`): verdicts decided by their rules on
hand-made results whose answers are known."""

from __future__ import annotations

import copy

import pytest

from lib import claims
from lib.claims import FAILS, HOLDS, OFFLINE, UNDECIDED, Claim, Verdict
from lib.irs import claims as irs_claims


def test_a_verdict_is_one_of_four_and_says_why():
    with pytest.raises(ValueError, match="not one of"):
        Verdict("mostly holds", "0.5", "because")
    with pytest.raises(ValueError, match="says why"):
        Verdict(HOLDS, "0.5", "")
    with pytest.raises(ValueError, match="either"):
        Claim("x", "§1", "words", "0.1", "what")  # neither a rule nor what is missing
    with pytest.raises(ValueError, match="either"):
        Claim("x", "§1", "words", "0.1", "what", decide=lambda r: None, missing="a GPU")


def test_a_claim_the_run_did_not_measure_is_undecided_and_one_not_testable_offline_names_what_is_missing():
    measured = Claim("m", "§1", "w", "p", "q", decide=lambda r: Verdict(HOLDS, f"{claims.need(r, 'a', 'b')}", "rule"))
    offline = Claim("o", "§2", "w", "p", "q", missing="ImageNet")
    judged = dict((c.id, v) for c, v in claims.judge([measured, offline], {"a": {"c": 1}}))
    assert judged["m"].verdict == UNDECIDED and "a/b" in judged["m"].why
    assert judged["o"] == Verdict(OFFLINE, "—", "ImageNet")
    assert claims.judge([measured], {"a": {"b": 0.5}})[0][1].verdict == HOLDS


def test_the_shared_rules_give_known_answers():
    assert claims.side_of(0.1, 0.3) == HOLDS and claims.side_of(-0.3, -0.1) == FAILS
    assert claims.side_of(-0.1, 0.3) == UNDECIDED and claims.side_of(0.9, 1.2, above=1.0) == UNDECIDED
    lower, upper = claims.wilson(90, 100)
    assert lower == pytest.approx(0.8256, abs=1e-4) and upper == pytest.approx(0.9448, abs=1e-4)
    assert claims.wilson(0, 10)[0] == 0.0 and claims.wilson(10, 10)[1] == 1.0


def _results(seeds: int = 3) -> dict:
    """Notebook 04's recorded results, as much of them as the ledger reads, with known answers."""
    def compare(mean, lower, upper, n, verdict):
        return {"per seed": "; ".join(["0.3"] * n), "mean": mean, "lower": lower, "upper": upper, "seeds": n,
                "training sd": 0.01, "verdict": verdict}
    key = "resnet56 / {} − unconditional / {}"
    return {
        "extractors": ["pixels", "resnet56"], "n_train": 20000, "gap_n": 10000, "sim_reps": 1000, "alpha_e": 0.05,
        "sim_coverage": {"s0.3/n0.05": 0.905, "s0.9/n1": 0.895},
        "sim_bias": {"s0.3/n0.05": 0.02, "s0.3/n1": 0.001},
        "imagenet_scale": [0.699, 0.731, 0.764, 0.1],
        "gap_irs_inf_real": {"pixels": [0.22, 0.23, 0.24], "resnet56": [0.72, 0.74, 0.76]},
        "e2_fit": {"pixels/b/irs_adj": [0.36, 0.65, 0.43], "resnet56/b/irs_adj": [0.94, 0.08, 0.98]},
        "seed_compare": {key.format("diadm", "log IRS_inf ratio"): compare(0.35, 0.27, 0.42, seeds, HOLDS),
                         key.format("diadm", "FID gain"): compare(0.7, -0.2, 1.6, seeds, UNDECIDED),
                         key.format("class", "log IRS_inf ratio"): compare(0.15, 0.03, 0.26, 1, UNDECIDED)},
        "gen_compare": {key.format("diadm", "log IRS_inf ratio"): compare(0.25, 0.18, 0.33, 1, UNDECIDED),
                        key.format("diadm", "FID gain"): compare(0.6, 0.4, 0.8, 1, UNDECIDED),
                        key.format("class", "log IRS_inf ratio"): compare(0.06, -0.04, 0.16, 1, UNDECIDED)},
    }


def _verdicts(results: dict) -> dict[str, Verdict]:
    return {c.id: v for c, v in claims.judge(irs_claims.CLAIMS, results)}


def test_notebook_04s_claims_are_decided_by_their_rules():
    v = _verdicts(_results())
    assert v["04.intervals"].verdict == HOLDS  # pooled 0.900 of 2,000: its interval lies above 0.88
    assert v["04.imagenet-noise"].verdict == HOLDS and "misses the truth" in v["04.imagenet-noise"].why
    assert v["04.gap"].verdict == HOLDS
    assert v["04.linear"].verdict == UNDECIDED and "resnet56" in v["04.linear"].why
    assert v["04.diadm-irs"].verdict == HOLDS and "1.42 [1.31, 1.52] over 3 seeds" in v["04.diadm-irs"].ours
    assert v["04.diadm-fid"].verdict == UNDECIDED
    assert v["04.conditional"].verdict == UNDECIDED and "one training seed" in v["04.conditional"].why
    assert v["04.small-n"].verdict == HOLDS
    assert {v[c].verdict for c in ("04.best-77", "04.xs-xl", "04.deepfloyd", "04.swav")} == {OFFLINE}


def test_the_verdicts_turn_with_the_evidence():
    r = _results()
    r["sim_coverage"] = {"a": 0.80, "b": 0.82}  # 2,000 draws at 0.81: the interval lies below 0.90
    r["gap_irs_inf_real"]["pixels"] = [0.9, 1.0, 1.1]
    r["e2_fit"]["pixels/b/irs_adj"] = [1.05, 0.0, 0.95]
    r["imagenet_scale"] = [0.70, 0.75, 0.80, 0.1]  # ±5 points
    v = _verdicts(r)
    assert (v["04.intervals"].verdict, v["04.gap"].verdict, v["04.linear"].verdict,
            v["04.imagenet-noise"].verdict) == (FAILS, UNDECIDED, HOLDS, FAILS)
    one_seed = _verdicts(_results(seeds=1))["04.diadm-irs"]
    assert one_seed.verdict == UNDECIDED and "another seed" in one_seed.why


def test_a_preset_that_skips_the_generators_leaves_their_claims_undecided_not_guessed():
    r = copy.deepcopy(_results())
    del r["seed_compare"], r["gen_compare"]
    v = _verdicts(r)
    assert all(v[c].verdict == UNDECIDED and v[c].ours == "not measured by this run"
               for c in ("04.diadm-irs", "04.diadm-fid", "04.conditional"))


def test_the_ledger_table_shows_each_claim_with_its_verdict_and_the_counts_add_up():
    judged = claims.judge(irs_claims.CLAIMS, _results())
    table = claims.ledger_table(judged)
    assert table.count("\n") == len(irs_claims.CLAIMS) + 1
    assert "| **holds** |" in table and "| **not testable offline** |" in table
    assert sum(claims.counts(judged).values()) == len(irs_claims.CLAIMS)
    assert len({c.id for c in irs_claims.CLAIMS}) == len(irs_claims.CLAIMS)
