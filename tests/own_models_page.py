"""docs/own-models.md's commands as the tests run them: each ```bash block that runs `python -m lib.<paper>.<module>`,
its arguments split as a shell splits them, with `--out` sent to a temporary folder."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "own-models.md"
BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
PYTHON = re.compile(r"```python\n(.*?)```", re.S)


def page_commands() -> list[str]:
    """The command lines of the page's bash blocks (continuation lines joined), in page order."""
    lines = []
    for block in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        lines += [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return lines


def page_argv(module: str, out: Path) -> list[str]:
    """The arguments of the page's one command of `module`, its paths made absolute (the page runs from the
    repository root) and its `--out` replaced by `out`."""
    found = [shlex.split(c) for c in page_commands() if f"-m {module} " in f"{c} "]
    assert len(found) == 1, f"docs/own-models.md should run {module} once; found {len(found)}"
    argv = found[0][found[0].index(module) + 1:]
    fixed = []
    for i, arg in enumerate(argv):
        if i > 0 and argv[i - 1] == "--out":
            fixed.append(str(out))
        elif arg.startswith("docs/"):
            fixed.append(str(ROOT / arg))
        else:
            fixed.append(arg)
    return fixed


def page_python() -> list[str]:
    """The page's ```python blocks, in page order."""
    return PYTHON.findall(PAGE.read_text(encoding="utf-8"))
