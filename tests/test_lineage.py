"""The code a result depends on (`lib.lineage`): what counts as a change, what a stage reaches, and that the run,
the stored layers and `make status` act on it."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from pathlib import Path

import pytest

from lib import lineage, store
from lib.cache import cache_entry, read_lineage
from lib.make import status
from lib.run import Run

MATHS = '''
"""A probe package's mathematics."""
SCALE = {scale}


def helper(x):
    """Scaled."""
    # a comment
    return x * SCALE{extra}


def unused(x):
    return x - 1
'''
STAGE = '''
from lib.cache import cache_entry
from probe import maths


def stage(run, x):
    """The probe's expensive result."""
    def compute():
        return {{"y": np.asarray(maths.helper(x))}}
    return run.npz(cache_entry("pp", "probe", {{"x": x}}, ".npz"), compute, stored=True)["y"]
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A package `probe` that lineage follows as it follows `lib` (PACKAGE patched), with a stage that caches its
    result through a real Run; `edit(**fields)` rewrites probe/maths.py and reloads it, as an edit and a new
    process would."""
    root = tmp_path / "src"
    (root / "probe").mkdir(parents=True)
    (root / "probe" / "__init__.py").write_text("")
    (root / "probe" / "stage.py").write_text("import numpy as np\n" + STAGE.format())
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(lineage, "PACKAGE", "probe")
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path / "results"))
    for name in [m for m in sys.modules if m == "probe" or m.startswith("probe.")]:
        monkeypatch.delitem(sys.modules, name)
    clock = [0]

    def edit(scale: int = 2, extra: str = "", comment: str = "") -> None:
        path = root / "probe" / "maths.py"
        path.write_text(MATHS.format(scale=scale, extra=extra).replace("# a comment", f"# a comment{comment}"))
        clock[0] += 10  # a later modification time, whatever the file system's resolution
        os.utime(path, (1_000_000 + clock[0], 1_000_000 + clock[0]))
        if "probe.maths" in sys.modules:
            importlib.reload(sys.modules["probe.maths"])

    edit()
    importlib.import_module("probe.stage")
    yield edit
    for name in [m for m in sys.modules if m == "probe" or m.startswith("probe.")]:
        sys.modules.pop(name, None)


def test_comments_docstrings_blank_lines_and_indentation_do_not_count_code_does():
    base = "def f(x):\n    '''Doc.'''\n    y = x + 1  # why\n\n    return y\n"
    same = ("    def f(x):\n        '''Another doc,\n        two lines.'''\n        # a new comment\n"
            "        y = x + 1\n        return y\n")
    assert lineage.normalised_source(base) == lineage.normalised_source(same) == "def f(x):\n    y = x + 1\n" \
                                                                                  "    return y\n"
    assert lineage.normalised_source(base.replace("x + 1", "x + 2")) != lineage.normalised_source(base)
    assert "#" in lineage.normalised_source("def f():\n    return '# not a comment'\n")


def test_a_stage_reaches_its_callees_in_other_modules_and_the_constants_they_read(probe):
    stage = sys.modules["probe.stage"]
    record = lineage.record(_compute_of(stage))
    assert record["roots"] == ["probe.stage:stage"]
    assert {"probe.stage:stage", "probe.maths:helper", "probe.maths:SCALE"} <= set(record["parts"])
    assert "probe.maths:unused" not in record["parts"]  # a function nobody calls is not a dependency
    assert all(p.startswith("probe.") for p in record["parts"])  # lib.cache, numpy: not the probe's code


def test_an_edit_of_a_comment_changes_nothing_an_edit_of_the_code_or_a_constant_is_named(probe):
    stage = sys.modules["probe.stage"]
    record = lineage.record(_compute_of(stage))
    probe(comment=" reworded")
    assert lineage.changes(record) == {}
    probe(extra=" + 0")
    assert lineage.changes(record) == {"probe.maths:helper": "changed"}
    probe(scale=3)
    assert lineage.changes(record) == {"probe.maths:SCALE": "changed"}
    probe()
    assert lineage.changes(record) == {}


def test_a_cached_result_whose_code_changed_is_computed_again_and_named(probe, capsys):
    stage = sys.modules["probe.stage"]
    run = Run()
    assert float(stage.stage(run, 3.0)) == 6.0 and run.counts["computed"] == 1
    assert read_lineage(cache_entry("pp", "probe", {"x": 3.0}, ".npz").path)["roots"] == ["probe.stage:stage"]
    assert float(stage.stage(run, 3.0)) == 6.0 and run.counts["computed"] == 1  # read from the cache
    probe(scale=5)
    assert float(stage.stage(run, 3.0)) == 15.0 and run.counts["computed"] == 2
    assert run.counts["code_changed"] == 1
    assert "probe.maths.SCALE changed" in capsys.readouterr().out
    found = status.cache_status()
    assert found == {"pp": {cache_entry("pp", "probe", {"x": 3.0}, ".npz").path.name: {}}}  # current again


def test_a_stored_entry_whose_code_changed_is_not_served_and_make_status_names_it(probe, tmp_path, monkeypatch,
                                                                                   capsys):
    stage = sys.modules["probe.stage"]
    monkeypatch.setenv(store.RECORD_ENV, str(tmp_path / "records.jsonl"))
    stage.stage(Run(), 2.0)
    store.write_layer("pp", "test", store.read_records(tmp_path / "records.jsonl"),
                      {"command": "test", "commit": "abc", "date": "today"})
    layer = store.layer_dir("pp", "test")
    assert store.entry_code(store.read_manifest(layer), _name(stage, 2.0))["roots"] == ["probe.stage:stage"]
    monkeypatch.setitem(store.PRESET_MODULES, "pp", "probe.stage")
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "empty"))
    reader = Run(namespace="pp", preset="test", source="stored")
    assert float(stage.stage(reader, 2.0)) == 4.0 and reader.counts == {**reader.counts, "loaded": 1, "computed": 0}
    assert status.layer_status(layer) == {_name(stage, 2.0): {}}

    probe(extra=" + 1")
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "empty2"))
    reader = Run(namespace="pp", preset="test", source="stored")
    assert float(stage.stage(reader, 2.0)) == 5.0  # computed with today's code, not the layer's 4.0
    assert reader.counts["loaded"] == 0 and reader.counts["code_changed"] == 1
    assert status.layer_status(layer) == {_name(stage, 2.0): {"probe.maths:helper": "changed"}}
    assert status.main(["--check", "--no-cache"]) == 1
    assert "probe.maths.helper changed" in capsys.readouterr().out

    with pytest.raises(SystemExit):
        status.main(["accept", "pp", "--preset", "test"])  # no reason given: refused
    assert status.main(["accept", "pp", "--preset", "test", "--why", "checked by hand in a test"]) == 0
    manifest = store.read_manifest(layer)
    assert manifest["lineage"][-1]["why"] == "checked by hand in a test"
    assert manifest["lineage"][-1]["changed"] == ["probe.maths:helper"]
    assert status.main(["--check", "--no-cache"]) == 0


def test_every_committed_stored_entry_records_its_code_and_that_code_is_unchanged():
    """A committed result computed with code that has changed since fails here: refresh its layer (`make store`),
    or, once a recomputation showed the change does not move it, `python -m lib.make.status accept NN --why`."""
    layers = status.committed_layers()
    assert layers
    problems = []
    for layer in layers:
        for name, moved in status.layer_status(layer).items():
            if moved is None:
                problems.append(f"{store.shown(layer)}/{name}: no record of its code")
            elif moved:
                problems.append(f"{store.shown(layer)}/{name}: {lineage.describe(moved, limit=8)}")
    assert not problems, "\n".join(problems[:20]) + f"\n({len(problems)} in all; `make status` lists them)"


def test_the_commands_and_the_lookup_are_not_what_a_result_depends_on():
    from lib.irs import generators

    parts = lineage.parts_of([lineage.part_name(generators.generator_study)])
    assert any(p.startswith("lib.irs.method:") for p in parts) and any(p.startswith("lib.knn:") for p in parts)
    assert not [p for p in parts if not lineage.followed(p.split(":")[0])]
    assert not any(p.split(":")[0] in ("lib.run", "lib.store", "lib.cache", "lib.progress") for p in parts)


def _compute_of(stage_module):
    """The `compute` the probe's stage hands to its run."""
    captured = {}

    class Spy:
        def npz(self, entry, compute, stored=False):
            captured["compute"] = compute
            return {"y": compute()["y"]}

    stage_module.stage(Spy(), 1.0)
    return captured["compute"]


def _name(stage_module, x: float) -> str:
    return Path(cache_entry("pp", "probe", {"x": x}, ".npz").path).name


def test_a_lambda_at_a_modules_top_level_is_followed_through_what_it_names(tmp_path):
    code = textwrap.dedent("""
        from lib import manifold
        compute = lambda: manifold.knn_radii
    """)
    namespace: dict = {"__name__": "notebook_cell"}
    exec(compile(code, "<cell>", "exec"), namespace)
    assert lineage.roots_of(namespace["compute"]) == ["lib.manifold:knn_radii"]


def test_a_layers_records_are_packed_into_one_table_and_read_back_whole():
    a = {"roots": ["m:f"], "parts": {"m:f": "1", "m:g": "2"}}
    b = {"roots": ["m:h"], "parts": {"m:f": "1", "m:g": "2"}}
    odd = {"roots": ["m:f"], "parts": {"m:f": "9"}}  # computed with other code than the rest: kept whole
    packed, table = lineage.pack({"a": a, "b": b, "odd": odd})
    assert table["digests"] == {"m:f": "1", "m:g": "2"} and len(table["groups"]) == 1
    assert packed["a"]["parts"] == packed["b"]["parts"] and packed["odd"]["parts"] == {"m:f": "9"}
    assert {n: lineage.unpack(c, table) for n, c in packed.items()} == {"a": a, "b": b, "odd": odd}
    assert lineage.unpack({"roots": ["m:f"], "parts": "g7"}, table) is None  # a group the table lacks
