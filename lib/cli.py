"""The one style of the workbook's commands, `python -m lib.<paper>.<module> ...`.

Each command module has `main(argv: list[str] | None = None) -> int` (None: the process's arguments; the exit
status is returned, so tests call it with a list), builds its parser with `command_parser` (usage shows the
command as it is typed, the description is the module docstring with its example commands) and ends with
`if __name__ == "__main__": raise SystemExit(main())`. A command that stores results records `command_line`.
"""

from __future__ import annotations

import argparse
import shlex
import sys


def command_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of `python -m <module>`, described by `doc` (the module docstring, layout kept)."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def command_line(module: str, argv: list[str] | None = None) -> str:
    """The command as typed: `python -m <module>` and its arguments (the process's when argv is None), quoted."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])
