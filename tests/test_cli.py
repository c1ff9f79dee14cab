"""lib.cli: every paper's command is `python -m lib.<paper>.<module>` with one style of `main`."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import lib
from lib.cli import command_line

LIB = Path(lib.__file__).resolve().parent
PAPERS = ("prcurves", "crel", "regret", "irs")
COMMANDS = ("lib.prcurves.budget", "lib.prcurves.stored", "lib.regret.store_whole", "lib.irs.folders",
            "lib.crel.hf_captioners", "lib.irs.train_generators", "lib.irs.seed_study", "lib.prcurves.own",
            "lib.crel.own", "lib.regret.own", "lib.irs.embed", "lib.crel.guidance_seeds")
OWN_MODELS = ("lib.prcurves.own", "lib.crel.own", "lib.regret.own", "lib.irs.folders")  # docs/own-models.md


def test_the_commands_are_every_paper_module_that_runs_as_main():
    runs = {f"lib.{p.parent.name}.{p.stem}" for paper in PAPERS for p in (LIB / paper).glob("*.py")
            if "__main__" in p.read_text()}
    assert runs == set(COMMANDS)


@pytest.mark.parametrize("module", COMMANDS)
def test_a_command_has_main_of_argv_its_usage_names_the_command_and_it_exits_with_mains_status(module, capsys):
    mod = importlib.import_module(module)
    assert list(inspect.signature(mod.main).parameters) == ["argv"]
    with pytest.raises(SystemExit) as stop:
        mod.main(["--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m {module}")
    tail = Path(mod.__file__).read_text().rstrip().splitlines()[-2:]
    assert [line.strip() for line in tail] == ['if __name__ == "__main__":', "raise SystemExit(main())"]


def test_a_bad_argument_exits_with_status_2_naming_it(capsys):
    from lib.irs import folders

    with pytest.raises(SystemExit) as stop:
        folders.main(["--train", "a", "--real", "b", "--fake", "c", "--extractor", "nope"])
    assert stop.value.code == 2 and re.search(r"--extractor: invalid choice: 'nope'", capsys.readouterr().err)


def test_command_line_records_the_command_as_typed():
    assert command_line("lib.regret.store_whole", ["--out", "my results", "--seed", "3"]) == (
        "python -m lib.regret.store_whole --out 'my results' --seed 3")


def test_the_own_models_page_runs_each_papers_command_once_and_nothing_else():
    from own_models_page import page_argv, page_commands

    commands = page_commands()
    assert [c for c in commands if not c.startswith(("python -m lib.", "python docs/examples/make_examples.py"))] == []
    for module in OWN_MODELS:
        assert page_argv(module, Path("out"))  # once each; the paper's test file runs it (tests/test_<paper>_*.py)


def test_the_own_models_pages_python_example_runs_and_prints_what_the_page_says(monkeypatch, capsys):
    import re as re_

    from own_models_page import ROOT, page_python

    [code] = page_python()
    monkeypatch.chdir(ROOT)
    exec(compile(code, "docs/own-models.md", "exec"), {})
    printed = capsys.readouterr().out.strip()
    assert printed == re_.search(r"print\(.*\)  # (\S+)", code).group(1)


def test_the_example_files_are_what_their_script_writes(tmp_path):
    """docs/examples/make_examples.py writes the committed example files byte for byte (PNG and .npy)."""
    import runpy

    root = Path(__file__).resolve().parents[1] / "docs" / "examples"
    runpy.run_path(str(root / "make_examples.py"))["main"](tmp_path)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.suffix in (".npy", ".png"))
    assert written == committed and len(written) > 150
    assert [p for p in written if (tmp_path / p).read_bytes() != (root / p).read_bytes()] == []
    assert sum((root / p).stat().st_size for p in written) < 400_000  # small enough to ship


def test_read_arrays_reads_npy_and_npz_and_names_the_file_of_every_problem(tmp_path):
    import numpy as np

    from lib.cli import read_array, read_arrays

    np.save(tmp_path / "one.npy", np.arange(6.0).reshape(3, 2))
    np.savez(tmp_path / "two.npz", b=np.ones(2), a=np.zeros(2))
    assert read_array(tmp_path / "one.npy", name="--x").shape == (3, 2)
    assert [a.tolist() for a in read_arrays(tmp_path / "two.npz", name="--x")] == [[0, 0], [1, 1]]  # sorted names
    np.savez(tmp_path / "bad.npz", a=np.zeros(2), b=np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match=r"--x \(.*bad\.npz\['b'\]\) holds 1 non-finite value\(s\) \(first at index 1"):
        read_arrays(tmp_path / "bad.npz", name="--x")
    with pytest.raises(ValueError, match=r"--x: '.*two\.npz' holds 2 arrays; give one"):
        read_array(tmp_path / "two.npz", name="--x")
    np.savez(tmp_path / "empty.npz")
    with pytest.raises(ValueError, match=r"--x: '.*empty\.npz' holds no array"):
        read_arrays(tmp_path / "empty.npz", name="--x")


@pytest.mark.parametrize("module, argv", [
    ("lib.prcurves.own", ["--real", "x.npy", "--ensemble", "a", "y.npy"]),
    ("lib.crel.own", ["--conditions", "x.npy", "--samples", "y.npy", "--reference", "z.npy"]),
    ("lib.regret.own", ["--probs", "x.npy", "--soft-labels", "y.npy"]),
    ("lib.irs.folders", ["--train", "a", "--real", "b", "--fake", "c"]),
    ("lib.irs.embed", ["a"]),
])
def test_an_out_that_cannot_hold_the_results_is_refused_first(tmp_path, capsys, module, argv):
    taken = tmp_path / "results"
    taken.write_text("a file")
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(module).main([*argv, "--out", str(taken)])
    assert stop.value.code == 2
    assert re.search(r"--out='.*results' is a file, not a folder", capsys.readouterr().err)
