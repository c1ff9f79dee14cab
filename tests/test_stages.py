"""lib.stages: every expensive result declared once, in its package's `stages` module, with its policy; the run
takes namespace, form and policy from the declaration, and every committed entry belongs to a declared stage."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest

import lib
from lib import stages
from lib.cache import load_npz, load_torch
from lib.run import Run
from lib.stages import CACHED, ON_REQUEST, PINNED, STORED, declare, stage_of, stages_of

ROOT = Path(lib.__file__).resolve().parents[1]


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node, node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def test_no_stage_looks_an_entry_up_around_its_declaration():
    """Outside lib/run.py (the lookup itself) no code calls the run's `npz`/`torch` lookups or names a policy
    (`stored=`, `pinned=`): every expensive result goes through `Run.stage` with a declared Stage, and
    `declare` is called only in a `stages` module or with the diffusion family it belongs to."""
    found = []
    for path in sorted((ROOT / "lib").rglob("*.py")):
        if path == ROOT / "lib" / "run.py":
            continue
        for node, name in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if name in ("npz", "torch") and isinstance(node.func, ast.Attribute) and \
                    ast.unparse(node.func.value) in ("run", "self.run", "Run()"):
                found.append(f"{where} run.{name}(")
            if any(k.arg in ("stored", "pinned") for k in node.keywords):
                found.append(f"{where} {name}(stored=/pinned=)")
            if name == "declare" and path.name != "stages.py" and path != ROOT / "lib" / "diffusion" / "family.py":
                found.append(f"{where} declare( outside a stages module")
    assert not found, found


@pytest.mark.parametrize("namespace", sorted(stages.MODULES))
def test_each_notebook_declares_its_stages_in_its_own_namespace(namespace):
    declared = stages_of(namespace)
    assert declared and all(s.namespace == namespace for s in declared.values())
    assert {s.policy for s in declared.values()} <= {STORED, CACHED, PINNED, ON_REQUEST}
    assert any(s.policy == STORED for s in declared.values()), "a notebook with a stored layer stores something"


@pytest.mark.parametrize("namespace", sorted(stages.MODULES))
def test_every_committed_entry_belongs_to_one_stored_stage(namespace):
    """Each entry of a committed stored layer is an entry of exactly the stage its label's longest declared
    start names, and that stage is stored (or stored on request), in the form the file has."""
    layers = sorted((ROOT / "results" / namespace).glob("*/manifest.json"))
    assert layers, f"notebook {namespace} has no committed stored layer"
    for manifest in layers:
        entries = json.loads(manifest.read_text(encoding="utf-8"))["entries"]
        wrong = []
        for name in entries:
            label, suffix = name.rsplit("-", 1)[0], Path(name).suffix
            stage = stage_of(namespace, label)
            if stage is None or stage.policy not in (STORED, ON_REQUEST) or stages.FORMS[stage.form] != suffix:
                wrong.append((name, stage and (stage.pattern, stage.policy, stage.form)))
        assert not wrong, f"{manifest.relative_to(ROOT)}: entries no stored stage declares: {wrong[:5]}"


def test_the_longest_fixed_start_claims_a_label_and_a_stage_refuses_anothers(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(stages, "_REGISTRY", {})
    rows = declare("zz", "toy-*", "torch", STORED, list, "rows")
    coverage = declare("zz", "toy-coverage-k-*", "torch", CACHED, dict, "coverage")
    assert stage_of("zz", "toy-pixels-n10") is rows and stage_of("zz", "toy-coverage-k-pixels-n10") is coverage
    assert stage_of("zz", "other") is None
    with pytest.raises(ValueError, match="is not an entry of stage 'toy-\\*'"):
        rows.entry("toy-coverage-k-pixels", {"k": 1})
    with pytest.raises(ValueError, match="declared twice"):
        declare("zz", "toy-*", "npz", CACHED, dict, "another")
    with pytest.raises(ValueError, match="an ON_REQUEST stage says why"):
        declare("zz", "kept-*", "npz", ON_REQUEST, dict, "kept")


def test_the_run_applies_the_declared_policy_and_checks_what_comes_back(tmp_path, monkeypatch):
    """A stored stage is recorded for the layer, a pinned one survives FORCE_RECOMPUTE, an ON_REQUEST one needs
    `keep` and no other takes it; a compute that returns another type than declared is refused, naming it."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(stages, "_REGISTRY", {})
    stored = declare("zz", "rows-*", "npz", STORED, dict, "rows")
    pinned = declare("zz", "feats-*", "npz", PINNED, dict, "features")
    kept = declare("zz", "model-*", "torch", ON_REQUEST, dict, "a model", why="the figures' run keeps it")
    typed = declare("zz", "typed-*", "torch", CACHED, list, "rows as a list")
    run, calls = Run(namespace="zz", preset="smoke"), []
    run.stage(stored, "rows-a", {"k": 1}, lambda: {"x": np.ones(2)})
    assert run.counts["computed"] == 1  # a stored stage's computation is counted for the layer
    run.stage(pinned, "feats-a", {"k": 1}, lambda: calls.append(1) or {"f": np.ones(2)})
    Run(force=True).stage(pinned, "feats-a", {"k": 1}, lambda: calls.append(2) or {"f": np.ones(2)})
    assert calls == [1]  # pinned: FORCE_RECOMPUTE keeps it
    with pytest.raises(ValueError, match="say whether this entry is kept"):
        run.stage(kept, "model-a", {"k": 1}, dict)
    with pytest.raises(ValueError, match="a call cannot change it"):
        run.stage(stored, "rows-b", {"k": 1}, dict, keep=True)
    assert run.stage(kept, "model-a", {"k": 1}, lambda: {"w": 1}, keep=True) == {"w": 1}
    assert run.counts["computed"] == 2  # kept: stored
    with pytest.raises(TypeError, match="'typed-\\*'.*gave a dict"):
        run.stage(typed, "typed-a", {"k": 1}, lambda: {"not": "a list"})


def test_make_status_lists_each_notebooks_stages(capsys):
    """`python -m lib.make.status stages`: every declared stage of every notebook, with its policy and form, and
    an ON_REQUEST stage's reason for which entries are kept."""
    from lib.make import status

    assert status.main(["stages"]) == 0
    out = capsys.readouterr().out
    for namespace in stages.MODULES:
        assert f"notebook {namespace}:" in out
        for stage in stages_of(namespace).values():
            assert f"  {stage.pattern:24s} {stage.policy:10s} {stage.form:5s} {stage.what}" in out
    assert out.count("; kept: ") == sum(s.policy == ON_REQUEST for ns in stages.MODULES
                                        for s in stages_of(ns).values()) == 4


class _Made(TypedDict):
    images: np.ndarray
    seconds: float


class _Resumed(_Made, total=False):
    note: str | None


def test_a_record_names_missing_undeclared_and_mistyped_fields():
    made = declare("zz", "made-*", "torch", CACHED, _Resumed, "a record")
    assert made.problem({"images": np.ones(2), "seconds": 1}) is None  # an int is a float's value; note optional
    assert made.problem({"images": np.ones(2), "seconds": np.float32(1.0), "note": None}) is None
    problem = made.problem({"images": [1], "extra": 0})
    assert "missing ['seconds']" in problem and "does not declare ['extra']" in problem
    assert "images is a list, not ndarray" in problem
    assert "not a dict" in made.problem([1])
    either = declare("zz", "either-*", "torch", CACHED, (_Made, list), "a record or a list")
    assert either.problem([1]) is None and either.problem({"images": np.ones(1), "seconds": 2.0}) is None
    assert " / " in either.problem({"x": 1})  # why it is neither
    with pytest.raises(ValueError, match="arrays only"):
        declare("zz", "arrays-*", "npz", CACHED, _Made, "an npz record with a float field")


@pytest.mark.parametrize("namespace", sorted(stages.MODULES))
def test_every_committed_entry_holds_its_stage_s_record(namespace):
    """Each entry of a committed stored layer loads as the record its stage declares (the fields a reader of the
    stage relies on, each of its type, and no other)."""
    wrong = []
    for manifest in sorted((ROOT / "results" / namespace).glob("*/manifest.json")):
        for name in json.loads(manifest.read_text(encoding="utf-8"))["entries"]:
            stage, path = stage_of(namespace, name.rsplit("-", 1)[0]), manifest.parent / name
            value = load_npz(path) if stage.form == "npz" else load_torch(path, allow=stage.allow)
            if stage.problem(value):
                wrong.append(f"{path.relative_to(ROOT)}: {stage.problem(value)}")
    assert not wrong, "\n".join(wrong[:10])
