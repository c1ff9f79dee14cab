"""Each grading on the command line runs in a sandbox of its own: Debian's bubblewrap (`bwrap`), no Docker.

`argv` wraps the grading command in bwrap so that

- it runs in a PID namespace of its own (`--unshare-pid`), whose init is bwrap: when the command ends, however
  it ends (killed by the submission included), the kernel kills every process left in the namespace, those in
  a session of their own (`start_new_session=True`) or double-forked included; `--die-with-parent` does the same
  when the grader outside dies;
- it has no network but a loopback interface (`--unshare-net`; jupyter talks to its kernel over 127.0.0.1), and
  System V IPC of its own (`--unshare-ipc`: a shared-memory segment it leaves dies with it);
- it cannot push input into the terminal (`--new-session`) and holds no capability (`--cap-drop ALL`: bwrap
  started as root keeps them all otherwise, and CAP_SYS_ADMIN remounts the root file system read-write);
- the whole file system is read-only (`--ro-bind / /`, with a `/dev` and the `/proc` of its own), except an
  empty private `/tmp` (a tmpfs: TMPDIR), a fresh HOME in it (IPython's, Jupyter's and matplotlib's folders
  too) and the folders given as writable; a folder it must read that lies under `/tmp` (a checkout or a build
  in a `mktemp -d` folder, as in CI) is bound again, read-only, over the private `/tmp`;
- `/run` is an empty tmpfs too: the Unix sockets of the machine's services (D-Bus, systemd, Docker) live there,
  and a read-only mount does not keep a process from connecting to a socket (through systemd, a root grader's
  submission could start a process outside the sandbox). A socket kept elsewhere stays reachable.

`probe` checks once per process that bwrap works here (a trivial command through the same argv); `choose` turns
`--sandbox auto|bwrap|none` into the bwrap to use, or None, with the environment variables below.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

BWRAP_ENV = "WORKBOOK_BWRAP"  # the bwrap to use (default: `bwrap` on PATH)
REQUIRE_ENV = "WORKBOOK_REQUIRE_SANDBOX"  # "1": a missing or broken bwrap is an error, never a fallback
MODES = ("auto", "bwrap", "none")
TMP = Path("/tmp")
HOME = TMP / "home"  # inside the private /tmp
HIDDEN = (TMP, Path("/run"))  # empty tmpfs folders in the sandbox
PRIVATE_ENV = {  # every per-user folder a kernel may read or write goes to the private HOME
    "HOME": str(HOME), "TMPDIR": str(TMP), "IPYTHONDIR": str(HOME / ".ipython"),
    "JUPYTER_CONFIG_DIR": str(HOME / ".jupyter"), "JUPYTER_DATA_DIR": str(HOME / ".local/share/jupyter"),
    "JUPYTER_RUNTIME_DIR": str(HOME / ".local/share/jupyter/runtime"), "MPLCONFIGDIR": str(HOME / ".config/matplotlib"),
    "XDG_CONFIG_HOME": str(HOME / ".config"), "XDG_CACHE_HOME": str(HOME / ".cache"),
    "XDG_DATA_HOME": str(HOME / ".local/share"),
}
UNSET_ENV = ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "PYTHONSTARTUP", "XDG_RUNTIME_DIR")  # the grader's own folders


class SandboxUnavailable(Exception):
    """bwrap was asked for (`--sandbox bwrap`, or WORKBOOK_REQUIRE_SANDBOX=1) and is missing or does not work."""


def _hidden(path: Path) -> bool:
    """Whether `path` lies under a folder the sandbox replaces by an empty tmpfs."""
    return any(root in path.parents for root in HIDDEN)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths, resolved, without those inside another of them, sorted."""
    resolved = sorted({Path(p).resolve() for p in paths})
    return [p for p in resolved if not any(q in p.parents for q in resolved)]


def python_paths() -> list[Path]:
    """What running `sys.executable` reads: the venv and the interpreter it links to (pyenv's, /usr's, ...)."""
    return [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
            Path(os.path.realpath(sys.executable)).parent]


def argv(command: Sequence[str], *, read_only: Iterable[str | Path] = (), writable: Iterable[str | Path] = (),
         bwrap: str = "bwrap") -> list[str]:
    """The bwrap command line that runs `command` (absolute paths) in the sandbox described above.

    `read_only`: paths the command must read (checkout, build, submission, data); everything is readable
    through `--ro-bind / /`, so only those under `/tmp` (or `/run`), hidden by a private tmpfs, are bound again
    (with the interpreter's own folders, `python_paths`). `writable`: existing folders bound read-write at the
    same path, last, so that one inside a read-only path stays writable. The command starts in HOME.
    """
    args = [bwrap, "--unshare-pid", "--die-with-parent", "--unshare-net", "--unshare-ipc", "--new-session",
            "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *[arg for root in HIDDEN if root.is_dir() for arg in ("--tmpfs", str(root))], "--dir", str(HOME)]
    for path in _outermost([*read_only, *python_paths()]):
        if _hidden(path):
            args += ["--ro-bind", str(path), str(path)]
    for path in _outermost(writable):
        args += ["--bind", str(path), str(path)]
    for name, value in PRIVATE_ENV.items():
        args += ["--setenv", name, value]
    for name in UNSET_ENV:
        args += ["--unsetenv", name]
    return [*args, "--chdir", str(HOME), "--", *command]


def bwrap_path() -> str | None:
    """WORKBOOK_BWRAP if set, else `bwrap` on PATH (None if there is none)."""
    return os.environ.get(BWRAP_ENV) or shutil.which("bwrap")


@functools.cache
def probe(bwrap: str) -> str | None:
    """None if `bwrap` runs this Python in the sandbox, else why not (one line). Checked once per process."""
    if not Path(bwrap).is_file():
        return f"{bwrap} does not exist"
    try:
        run = subprocess.run(argv([sys.executable, "-c", "pass"], bwrap=bwrap), capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{bwrap} could not be run ({err})"
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no message"])[-1]
        return f"{bwrap} failed a trivial command (exit status {run.returncode}: {last})"
    return None


def required() -> bool:
    """Whether WORKBOOK_REQUIRE_SANDBOX asks for bwrap (any value but empty and 0)."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def choose(mode: str) -> str | None:
    """The bwrap to grade with for `--sandbox mode`, or None for none (`processes.contained` only).

    "none": None. "bwrap": bwrap, SandboxUnavailable if it is missing or fails the probe. "auto": bwrap where it
    works; elsewhere a warning on stderr and None, or SandboxUnavailable when WORKBOOK_REQUIRE_SANDBOX=1.
    """
    if mode not in MODES:
        raise ValueError(f"sandbox {mode!r}: one of {', '.join(MODES)}")
    if mode == "none":
        return None
    bwrap = bwrap_path()
    if bwrap is None:
        reason = "there is no `bwrap` on PATH"
    else:
        reason = probe(bwrap)
        if reason is None:
            return bwrap
        if os.environ.get(BWRAP_ENV):
            reason += f" ({BWRAP_ENV})"
    if mode == "bwrap" or required():
        why = "--sandbox bwrap" if mode == "bwrap" else f"{REQUIRE_ENV}=1"
        raise SandboxUnavailable(f"grading in a sandbox needs bubblewrap (bwrap; {why}), but {reason}. Install it "
                                 f"(apt-get install bubblewrap), or grade submissions you trust with --sandbox none.")
    print(f"warning: grading without a sandbox, since {reason}: only the grading's own process tracking protects "
          f"the next grading (docs/teaching.md); install bubblewrap (apt-get install bubblewrap)", file=sys.stderr)
    return None
