"""The budget study (lib.prcurves.budget): which runs it trains, and a tiny study end to end."""

import csv

import pytest

from lib.prcurves import budget


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
