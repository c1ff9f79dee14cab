"""The run (lib.run): one object owns the lookup order, its counts and the recording setting; no module state."""

from __future__ import annotations

import json
from dataclasses import replace

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
    return replace(Run.for_notebook("xx", "test", source=source, force=False, device="cpu", progress=False), **changes)


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
    inner = replace(first, progress=True)
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
    """A run changed with `dataclasses.replace(run, source="bogus")` is checked as a new one."""
    with pytest.raises(ValueError, match=message):
        replace(notebook_run(), **changes)


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


def test_a_pinned_entry_is_read_under_force_and_a_forced_run_recomputes_each_entry_once(roots):
    """The three policies (`lib.run`): a pinned entry is the cache's even under FORCE_RECOMPUTE; a cached entry is
    recomputed by a forced run once, and read back when a later stage of that run asks for it again."""
    calls = []
    pinned, cached = cache_entry("xx", "features", {"k": 1}, ".npz"), cache_entry("xx", "models", {"k": 1}, ".npz")
    Run().npz(pinned, lambda: calls.append("pinned") or {"x": np.ones(2)}, pinned=True)
    Run().npz(cached, lambda: calls.append("cached") or {"x": np.ones(2)})
    forced = Run(force=True)
    for _ in range(2):
        forced.npz(pinned, lambda: calls.append("pinned") or {"x": np.ones(2)}, pinned=True)
        forced.npz(cached, lambda: calls.append("cached") or {"x": np.ones(2)})
    assert calls == ["pinned", "cached", "cached"]
    Run(force=True).npz(cached, lambda: calls.append("cached") or {"x": np.ones(2)})  # another run: again
    assert calls[-1] == "cached" and len(calls) == 4
    with pytest.raises(ValueError, match="stored or pinned, not both"):
        Run().npz(pinned, lambda: {"x": np.ones(2)}, stored=True, pinned=True)


def test_a_stored_entry_of_another_notebook_is_computed_with_one_line(roots, capsys):
    """An entry whose namespace is not the run's has no layer in this run: computed, and said once."""
    run = notebook_run()
    for k in (1, 2):
        run.npz(cache_entry("yy", "a", {"k": k}, ".npz"), lambda: {"x": np.ones(2)}, stored=True)
    said = capsys.readouterr().out
    assert said.count("belongs to no stored layer of notebook xx's run") == 1


def test_no_stage_makes_or_bends_its_own_run():
    """Only lib/run.py and the commands' entry points (`main`, and the training command's `run_on`) make a run;
    no stage defaults one (`run or Run()`), changes its policy (`.but(`) or reads around it."""
    import ast
    from pathlib import Path

    import lib

    found = []
    for path in sorted(Path(lib.__file__).parent.rglob("*.py")):
        if path.name == "run.py" and path.parent.name == "lib":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(fn):
                if isinstance(node, ast.Call):
                    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                    if name == "Run" and fn.name not in ("main", "run_on"):
                        found.append(f"{path.name}:{node.lineno} Run() in {fn.name}")
                    if name in ("but", "reusing_cache"):
                        found.append(f"{path.name}:{node.lineno} {name}(")
                if isinstance(node, ast.BoolOp) and any(isinstance(v, ast.Call) and getattr(v.func, "id", "") == "Run"
                                                        for v in node.values):
                    found.append(f"{path.name}:{node.lineno} run or Run()")
    assert not found, found
