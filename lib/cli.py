"""The one style of the workbook's commands, `python -m lib.<paper>.<module> ...`.

Each command module has `main(argv: list[str] | None = None) -> int` (None: the process's arguments; the exit
status is returned, so tests call it with a list), builds its parser with `command_parser` (usage shows the
command as it is typed, the description is the module docstring with its example commands) and ends with
`if __name__ == "__main__": raise SystemExit(main())`. A command that stores results records `command_line`.

The commands that run a paper's evaluation on a user's own models (`lib.prcurves.own`, `lib.crel.own`,
`lib.regret.own`, `lib.irs.folders`) read plain arrays with `read_arrays` / `read_array` (every problem named with
its file) and write `results.json` and `figure.png` with `write_outputs`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

import numpy as np

from lib.glue import to_jsonable
from lib.params import check_finite


def command_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of `python -m <module>`, described by `doc` (the module docstring, layout kept)."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def command_line(module: str, argv: list[str] | None = None) -> str:
    """The command as typed: `python -m <module>` and its arguments (the process's when argv is None), quoted."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


# ----------------------------------------------------------------------------------------------------
# What the "own models" commands read and write: plain arrays in, results.json and figure.png out
# ----------------------------------------------------------------------------------------------------
ARRAY_SUFFIXES = (".npy", ".npz")


def read_arrays(path: str | Path, *, name: str) -> list[np.ndarray]:
    """The arrays of one file: a .npy holds one, a .npz one per member (in the order of its names, sorted).

    Refused with a ValueError that names `name` and the file: a missing file, another suffix, a pickled
    (object) array, a non-numeric dtype, an empty archive, and any NaN or inf (with the first entry's index).
    """
    path = Path(path)
    if path.suffix not in ARRAY_SUFFIXES:
        raise ValueError(f"{name}: {str(path)!r} is not a .npy or .npz file.")
    if not path.is_file():
        raise ValueError(f"{name}: {str(path)!r} does not exist (or is not a file).")
    try:
        loaded = np.load(path, allow_pickle=False)
    except ValueError as err:  # an object array needs pickle, which a data file must not
        raise ValueError(f"{name}: {str(path)!r} could not be read as a plain numeric array ({err}).") from None
    if isinstance(loaded, np.ndarray):
        arrays = {"": loaded}
    else:
        with loaded:
            arrays = {key: loaded[key] for key in sorted(loaded.files)}
        if not arrays:
            raise ValueError(f"{name}: {str(path)!r} holds no array.")
    out = []
    for key, arr in arrays.items():
        where = f"{name} ({path}{'[' + repr(key) + ']' if key else ''})"
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{where} must hold numbers; its dtype is {arr.dtype}.")
        out.append(check_finite(where, arr))
    return out


def read_array(path: str | Path, *, name: str) -> np.ndarray:
    """The one array of a .npy file (or of a .npz with exactly one), checked as `read_arrays` checks it."""
    arrays = read_arrays(path, name=name)
    if len(arrays) != 1:
        raise ValueError(f"{name}: {str(path)!r} holds {len(arrays)} arrays; give one.")
    return arrays[0]


def check_out_folder(name: str, out: str | Path) -> Path:
    """The output folder `out` of a command, checked before any work without creating it: not an existing file,
    and its nearest existing parent a folder this process can write into. A ValueError names `name`."""
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name}={str(out)!r} is a file, not a folder for results.json and figure.png.")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name}={str(out)!r} cannot be written: {str(parent)!r} is not a writable folder.")
    return path


def write_outputs(out: str | Path, results: dict, fig=None) -> dict[str, Path]:
    """`results` as `<out>/results.json` and `fig` (a matplotlib figure) as `<out>/figure.png`, each written
    atomically; `out` is created. Returns {"json": path, "figure": path or None}."""
    import matplotlib.pyplot as plt

    from lib.cache import atomic_write

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(to_jsonable(results), indent=1, allow_nan=False)  # lib.glue's: NaN as null, inf as "inf"
    written = {"json": atomic_write(folder / "results.json", lambda tmp: tmp.write_text(text + "\n")), "figure": None}
    if fig is not None:
        written["figure"] = atomic_write(folder / "figure.png", lambda tmp: fig.savefig(tmp, format="png", dpi=110,
                                                                                      bbox_inches="tight"))
        plt.close(fig)
    return written
