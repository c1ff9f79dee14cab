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
            "lib.crel.hf_captioners", "lib.irs.train_generators", "lib.irs.seed_study")


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
