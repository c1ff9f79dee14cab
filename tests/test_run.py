"""The run (lib.run): one object owns the lookup order, its counts and the recording setting; no module state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lib import store
from lib.cache import cache_entry
from lib.run import Run


@pytest.fixture
def roots(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv(store.RECORD_ENV, raising=False)
    return tmp_path


def notebook_run(source: str = "stored", **changes) -> Run:
    return Run.for_notebook("xx", "test", source=source, force=False, device="cpu", progress=False).but(**changes)


def test_a_plain_run_computes_on_the_cpu_silently_and_reads_no_layer(roots):
    run = Run()
    assert (run.source, run.force, run.progress, str(run.device), run.namespace) == ("compute", False, False, "cpu",
                                                                                     None)
    calls = []
    entry = cache_entry("xx", "a", {"k": 1}, ".npz")
    for _ in range(2):
        run.npz(entry, lambda: calls.append(1) or {"x": np.ones(2)}, stored=True)
    assert calls == [1] and run.summary() == "SOURCE='compute': nothing was read from a stored layer."


def test_two_runs_in_one_process_keep_their_own_counts_and_a_copy_shares_them(roots):
    first, second = notebook_run(), notebook_run()
    inner = first.but(progress=True)
    inner.npz(cache_entry("xx", "a", {"k": 1}, ".npz"), lambda: {"x": np.ones(2)}, stored=True)
    assert first.counts["computed"] == 1 and second.counts["computed"] == 0
    assert first.summary().endswith("0 results read, 1 computed.") and inner.progress and not first.progress


def test_the_recording_setting_is_read_once_when_the_run_is_made(roots, monkeypatch):
    records = roots / "records.jsonl"
    before = Run()  # made before `make store` would set the variable: records nothing
    monkeypatch.setenv(store.RECORD_ENV, str(records))
    after = Run()
    monkeypatch.delenv(store.RECORD_ENV)  # a later change does not reach a run already made
    entry = cache_entry("xx", "a", {"k": 1}, ".npz")
    before.npz(entry, lambda: {"x": np.ones(2)}, stored=True)
    assert not records.exists()
    after.npz(entry, lambda: {"x": np.ones(2)}, stored=True)  # a cache hit of a stored entry is recorded too
    after.npz(cache_entry("xx", "weights", {"k": 1}, ".npz"), lambda: {"w": np.ones(2)})  # not stored: not recorded
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [(line["path"], line["config"]) for line in lines] == [(str(entry.path), {"k": 1})]


def test_a_stored_entry_needs_its_configuration(roots):
    with pytest.raises(TypeError, match="a stored entry needs its configuration"):
        Run().npz(roots / "cache" / "xx" / "a-0123456789.npz", lambda: {"x": np.ones(1)}, stored=True)


@pytest.mark.parametrize("changes, message", [
    ({"force": "yes"}, r"^FORCE_RECOMPUTE='yes' must be True or False"),
    ({"progress": 1}, r"^PROGRESS=1 must be True or False"),
    ({"device": "gpu"}, r"^DEVICE='gpu' is not a device"),
    ({"preset": "../.."}, r"PRESET=.* is not a plain name"),
])
def test_a_bad_run_parameter_is_refused_naming_it(roots, changes, message):
    settings = {"source": "stored", "force": False, "device": "cpu", "progress": False, "preset": "test", **changes}
    with pytest.raises(ValueError, match=message):
        Run.for_notebook("xx", settings.pop("preset"), **settings)


@pytest.mark.parametrize("changes, message", [
    ({"source": "bogus"}, r"^SOURCE='bogus' is not one of \('stored', 'compute'\)"),
    ({"force": "yes"}, r"^FORCE_RECOMPUTE='yes' must be True or False"),
    ({"progress": None}, r"^PROGRESS=None must be True or False"),
    ({"device": "cuda"}, r"^device='cuda' is not a torch\.device"),
])
def test_a_changed_run_checks_what_it_was_given(roots, changes, message):
    """`run.but(source="bogus")` made a run that read no layer and said nothing."""
    with pytest.raises(ValueError, match=message):
        notebook_run().but(**changes)


def test_a_forced_run_says_it_recomputed_and_did_not_read_the_layer(roots):
    """Under FORCE_RECOMPUTE the layer is never read, yet the page said "none matched in
    `results/...`"; the run's own lines and the page's provenance say that everything was recomputed."""
    from lib import provenance

    run = Run.for_notebook("xx", "test", source="stored", force=True, device="cpu", progress=False)
    run.npz(cache_entry("xx", "a", {"k": 1}, ".npz"), lambda: {"x": np.ones(2)}, stored=True)
    assert "FORCE_RECOMPUTE" in run.describe() and "read from" not in run.describe()
    assert provenance.STORE_SUMMARY.search(run.summary()) and "FORCE_RECOMPUTE" in run.summary()
    words = provenance.source_words({**run.source_facts(), "read": 0})
    assert words.startswith("recomputed: FORCE_RECOMPUTE") and "matched" not in words
