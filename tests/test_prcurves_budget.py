"""The budget study (lib.prcurves.budget): which runs it trains, and a tiny study end to end."""

import csv

import pytest

from lib.prcurves import budget
from lib.run import Run


def test_constant_lr_is_one_run_with_snapshots_and_a_schedule_one_run_per_budget():
    assert budget.schedule_runs("paper", (500, 250, 1000)) == [(1000, (250, 500, 1000))]
    assert budget.schedule_runs("stratified_t+cosine_lr", (1000, 250)) == [(250, (250,)), (1000, (1000,))]
    assert budget.settings_of("stratified_t+cosine_lr+batch128").batch_size == 128
    assert budget.settings_of("paper").ema_decay == budget.EMA_DECAY  # every run tracks an EMA
    with pytest.raises(ValueError, match="variant='fast' must be one of"):
        budget.settings_of("fast")


def test_tiny_study_writes_rows_and_resumes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    spec = budget.StudySpec(complexities=(1,), num_members=2, n_train=300, num_generated=100,
                            runs=(("paper", (3, 6)), ("stratified_t+cosine_lr", (4,))))
    rows = budget.run_study(spec, tmp_path / "study.csv", log=lambda s: None)
    assert [(r["variant"], r["steps"], r["ema"]) for r in rows] == [
        ("paper", 3, False), ("paper", 3, True), ("paper", 6, False), ("paper", 6, True),
        ("stratified_t+cosine_lr", 4, False), ("stratified_t+cosine_lr", 4, True)]
    for r in rows:
        assert 0 <= r["auc_min"] <= r["auc_mean"] <= 1 and r["members"] == 2 and r["point_steps"] == 500 * r["steps"]
    with open(tmp_path / "study.csv") as fh:
        written = list(csv.DictReader(fh))
    assert len(written) == 6 and list(written[0]) == budget.CSV_FIELDS
    again = budget.run_study(spec, None, log=lambda s: None, cached_only=True)  # everything comes from the cache
    assert [r["aucs"] for r in again] == [r["aucs"] for r in rows]
    partial = budget.StudySpec(**{**spec.__dict__, "runs": (("paper", (3, 6)), ("stratified_t", (5,)))})
    assert len(budget.run_study(partial, None, log=lambda s: None, cached_only=True)) == 4


def _study_rows(aucs_by_steps: dict[int, list[float]], complexity: int = 1) -> list[dict]:
    """Rows as write_csv writes them, for the authors' settings without the EMA (and a decoy with it)."""
    rows = []
    for steps, aucs in aucs_by_steps.items():
        for ema in (False, True):
            rows.append({"variant": "paper", "ema": ema, "C": complexity, "steps": steps, "batch_size": 500,
                         "point_steps": 500 * steps, "members": len(aucs), "num_generated": 100,
                         "auc_mean": sum(aucs) / len(aucs), "auc_sd": 0.0, "auc_min": min(aucs), "width": 0.1,
                         "train_seconds": float(steps), "settings": "{}",
                         "aucs": ";".join(f"{a if not ema else 0.5:.4f}" for a in aucs)})
    return rows


def test_the_frontier_summary_counts_failures_per_budget_and_tells_collapses_from_non_convergence(tmp_path):
    # member 0 converges at 2,000 steps and stays; member 1 never converges; member 2 converges, then collapses
    aucs = {1000: [0.5, 0.4, 0.95], 2000: [0.92, 0.5, 0.96], 4000: [0.97, 0.6, 0.3]}
    budget.write_csv(_study_rows(aucs), tmp_path / "study.csv")
    rows = budget.read_study(tmp_path / "study.csv")
    trajectory = budget.member_trajectories(rows, complexity=1)
    assert trajectory["steps"].tolist() == [1000, 2000, 4000] and trajectory["aucs"].shape == (3, 3)
    assert trajectory["aucs"][2].tolist() == [0.95, 0.96, 0.3]  # a member's AUC against steps, not the EMA's
    summary = budget.failure_summary(trajectory)
    assert summary["below"] == [2, 1, 2] and summary["final_below"] == 2 and summary["members"] == 3
    assert summary["never_converged"] == 1 and summary["collapsed"] == 1
    assert summary["crossings"] == 2  # member 0 up once, member 2 down once
    assert summary["first_above"] == [2000, None, 1000]
    with pytest.raises(ValueError, match="no rows for C=8"):
        budget.member_trajectories(rows, complexity=8)


def test_a_file_that_is_not_a_study_is_refused_naming_it(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="other.csv is not a study"):
        budget.read_study(path)


def test_the_frontier_table_and_reading_state_the_rows_numbers(tmp_path):
    aucs = {1000: [0.5, 0.4, 0.95], 4000: [0.97, 0.6, 0.3]}
    budget.write_csv(_study_rows(aucs, complexity=8), tmp_path / "authors_recipe-C8.csv")
    rows = budget.read_study(tmp_path / "authors_recipe-C8.csv")
    trajectories = {8: budget.member_trajectories(rows, complexity=8)}
    table = budget.frontier_rows(trajectories, paper_below={8: 5})
    assert [(r["steps"], r["below_0.9"], r["members"]) for r in table] == [(1000, 2, 3), (4000, 2, 3)]
    assert table[1]["auc_median"] == 0.6 and table[1]["train_hours"] == 4000 / 3600
    assert table[0]["paper_below_0.9"] == "5 of 30"
    text = budget.frontier_reading({8: budget.failure_summary(trajectories[8])}, paper_below={8: 5})
    assert "**C = 8**, 3 members" in text and "1,000 / 4,000 steps: 2 / 2" in text
    assert "**2 of 3 (67%)**" in text and "5 of 30, 17%" in text and "1 never passed" in text


def test_the_frontier_study_is_a_stored_entry_computed_once(tmp_path, monkeypatch):
    """frontier_study trains and evaluates a tiny study once, keeps its rows in one cache entry of notebook 01's
    namespace (part of its stored layer), reads them back without training, and gives the rows run_study gives."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(budget, "authors_recipe_spec", lambda complexities, members, budgets: budget.StudySpec(
        complexities=complexities, num_members=members, n_train=300, num_generated=100, runs=(("paper", budgets),)))
    rows = budget.frontier_study(1, (3, 6), 2, run=Run(), log=lambda s: None)
    path = budget.frontier_path(1, (3, 6), 2)
    assert path.exists() and path.parent.name == budget.FRONTIER.namespace == "01"
    assert [(r["steps"], r["ema"], len(r["aucs"])) for r in rows] == [(3, False, 2), (3, True, 2), (6, False, 2),
                                                                        (6, True, 2)]
    monkeypatch.setattr(budget, "run_study", lambda *a, **k: pytest.fail("trained again"))
    assert budget.frontier_study(1, (3, 6), 2, run=Run()) == rows
    assert budget.frontier_path(1, (3, 6, 9), 2) != path  # another budget list is another study


def test_a_frontier_csv_converts_to_the_entry_the_notebook_reads(tmp_path, monkeypatch):
    """The CSV the frontier study was first committed as becomes, value for value, the cache entry that
    frontier_study looks up for the spec the rows were made with (complexity, members, budgets), nothing trained."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    budget.write_csv(_study_rows({1000: [0.95, 0.5], 2000: [0.6, 0.97]}), tmp_path / "authors_recipe-C1.csv")
    path = budget.convert_frontier_csv(tmp_path / "authors_recipe-C1.csv", {"command": "test"})
    assert path == budget.frontier_path(1, (1000, 2000), 2)
    monkeypatch.setattr(budget, "run_study", lambda *a, **k: pytest.fail("trained"))
    rows = budget.frontier_study(1, (1000, 2000), 2, run=Run())
    written = budget.read_study(tmp_path / "authors_recipe-C1.csv")
    for mine, theirs in zip(rows, written, strict=True):
        assert {k: mine[k] for k in ("C", "steps", "ema", "aucs", "width", "train_seconds")} == \
               {k: theirs[k] for k in ("C", "steps", "ema", "aucs", "width", "train_seconds")}
    budget.write_csv(_study_rows({1000: [0.9, 0.9]}, complexity=8) + _study_rows({1000: [0.9, 0.9]}),
                     tmp_path / "mixed.csv")
    with pytest.raises(ValueError, match="not one complexity's frontier study"):
        budget.convert_frontier_csv(tmp_path / "mixed.csv", {})


def test_the_stored_frontier_holds_the_finding_the_notebook_reads(monkeypatch, tmp_path):
    """The cpu layer's frontier entries (results/01/cpu/), read as a default run reads them: C = 1 to 60,000 and
    C = 8 to 10,000 steps with 8 members each, the glued counts equal a count made here from the per-member AUCs,
    and the reading's claim holds for C = 1: members cross 0.9 both ways between budgets."""
    from lib import store
    from lib.cache import load_npz
    from lib.prcurves import experiment as ex
    from lib.run import Run

    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    run = Run(namespace="01", preset="cpu", source="stored")
    config = ex.resolve_config("cpu")
    for complexity, budgets in config.frontier:
        # the layer serves the entry (else the study would be computed: an hour), with its code unchanged since;
        # checked before, not by replacing `run_study`, which would change the code the entry's lineage reaches
        entry = budget.frontier_entry(complexity, budgets, config.frontier_members)
        found = store.lookup(store.layer_dir("01", "cpu"), entry.path.name, entry.config, load_npz)
        assert found.status == "loaded", (found.status, found.reason, found.moved)
        rows = budget.frontier_study(complexity, budgets, config.frontier_members, run=run)
        assert run.counts["computed"] == 0
        plain = sorted((r for r in rows if not r["ema"]), key=lambda r: r["steps"])
        assert [r["steps"] for r in plain] == list(budgets) and {len(r["aucs"]) for r in rows} == {8}
        summary = budget.failure_summary(budget.member_trajectories(rows, complexity))
        assert summary["below"] == [sum(a < budget.FAILED_AUC for a in r["aucs"]) for r in plain]
        if complexity == 1:
            assert summary["collapsed"] >= 1 and summary["crossings"] >= 2
    assert run.counts["loaded"] == len(config.frontier) and run.counts["computed"] == 0
