"""lib.regret.own: notebook 03's regret evaluation of your own uncertainty method, as a function and as a command, end
to end on the example files of docs/own-models.md, checked against the notebook's own `evaluate`; AuReC's interval
checked against `aurec_ranking`'s bootstrap; bad input refused by name."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from own_models_page import ROOT, page_argv

from lib import regret
from lib.regret import experiment as ex
from lib.regret import own

EXAMPLES = ROOT / "docs" / "examples" / "03"


def example() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    members = np.stack([np.load(EXAMPLES / f"member_{i}.npy") for i in range(3)]).astype(np.float64)
    return members, np.load(EXAMPLES / "soft_labels.npy"), np.load(EXAMPLES / "score.npy").astype(np.float64)


def test_the_pages_command_matches_the_notebooks_evaluate_on_the_example_files(tmp_path, capsys):
    assert own.main(page_argv("lib.regret.own", tmp_path)) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "figure.png").stat().st_size > 10_000
    report = json.loads((tmp_path / "results.json").read_text())
    members, soft, _ = example()
    assert report["members"] == 3 and report["n"] == 400 and set(report["losses"]) == {"ce", "zero_one"}
    for loss, got in report["losses"].items():
        notebook = ex.evaluate(ex.PRESETS["cpu"], "ensemble", {"samples": members}, soft, loss)
        for name, value in notebook["metrics"].items():
            assert got["metrics"][name] == pytest.approx(value, rel=1e-12, abs=1e-15), (loss, name)
        assert got["mean_E*"] == pytest.approx(float(notebook["oracle"]["E"].mean()), rel=1e-12)
        assert got["AuReC"]["estimate"] == pytest.approx(notebook["metrics"]["AuReC"], rel=1e-12)
        assert got["AuReC"]["lower"] <= got["AuReC"]["estimate"] <= got["AuReC"]["upper"]
        np.testing.assert_array_equal(got["E*"], notebook["oracle"]["E"])


def test_one_prediction_with_a_score_is_scored_as_notebook_03_scores_ddu():
    members, soft, score = example()
    q = members[0]
    report = regret.regret_report(probs=q, soft_labels=soft, scores=score, reps=100, show_progress=False)
    for loss in ("ce", "zero_one"):  # the notebook decomposes against its normalised q (lib.regret.uq.estimates)
        oracle = regret.decompose(soft, regret.normalise_rows(q), loss)
        expected = regret.regret_metrics(regret.ddu_aleatoric(q, loss), score, oracle["A"], oracle["E"])
        got = report["losses"][loss]["metrics"]
        assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_aurec_interval_is_aurec_rankings_bootstrap_for_one_method():
    """Against a method with zero regret (AuReC 0 in every draw), aurec_ranking's difference of a method to the best
    is that method's AuReC, draw by draw, with the same resampling: its interval must be aurec_interval's."""
    members, soft, score = example()
    e_star = regret.decompose(soft, members.mean(0), "ce")["E"]
    ranking = regret.aurec_ranking({"yours": score, "zero": score}, {"yours": e_star, "zero": np.zeros_like(e_star)},
                                   reps=200, seed=3)
    interval = regret.aurec_interval(score, e_star, reps=200, seed=3)
    assert ranking["best"] == "zero"
    assert ranking["difference"]["yours"] == pytest.approx([interval["estimate"], interval["lower"],
                                                            interval["upper"]], rel=1e-12)


def _save(tmp_path, name, arr):
    np.save(tmp_path / name, arr)
    return str(tmp_path / name)


@pytest.mark.parametrize("case, message", [
    ("soft sum", r"soft_labels: 1 row\(s\) do not sum to 1 \(first at index \(5,\): sum 2\)"),
    ("negative", r"probs holds negative values \(first at index \(1, 0, 2\)\); give probabilities, not logits"),
    ("nan", r"--soft-labels \(.*soft\.npy\) holds 1 non-finite value\(s\) \(first at row 9, column 0"),
    ("rows", r"soft_labels must be \(N, K\) with the N and K of probs \(3, 400, 10\); got \(399, 10\)"),
    ("no score", r"scores are needed with one \(N, K\) prediction"),
    ("score shape", r"scores must be \(N,\) = \(400,\), one per point; got shape \(399,\)"),
    ("members", r"--probs: one \(N, K\) array per member, all of one shape"),
])
def test_bad_input_is_refused_before_any_work_naming_the_file_and_the_problem(tmp_path, capsys, case, message):
    members, soft, score = example()
    files = [_save(tmp_path, f"m{i}.npy", m) for i, m in enumerate(members)]
    extra = []
    if case == "soft sum":
        soft[5] *= 2
    elif case == "negative":
        files[1] = _save(tmp_path, "m1.npy", np.where(np.arange(10) == 2, -0.1, members[1]))
    elif case == "nan":
        soft[9, 0] = np.nan
    elif case == "rows":
        soft = soft[:-1]
    elif case == "no score":
        files = files[:1]
    elif case == "score shape":
        extra = ["--score", _save(tmp_path, "score.npy", score[:-1])]
    elif case == "members":
        files[2] = _save(tmp_path, "m2.npy", members[2][:-1])
    argv = ["--probs", *files, "--soft-labels", _save(tmp_path, "soft.npy", soft), *extra, "--out",
            str(tmp_path / "out")]
    with pytest.raises(SystemExit) as stop:
        own.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and re.search(message, err), err
    assert not (tmp_path / "out").exists()
