"""Every process a grading starts ends with it (`contained`), so one submission cannot touch the next grading.

otter's kernel runs in a session of its own (jupyter_client starts it with `start_new_session`), and a
submission can start more: `subprocess.Popen(..., start_new_session=True)` leaves that session, a double fork
leaves the kernel's process tree, `env={}` drops inherited variables. Without cgroups, three marks find them all:

- a token, fresh for each grading, in the environment every process of the grading inherits
  (`/proc/PID/environ` holds a process's environment as it was started, whatever it sets later);
- the grader is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) while it grades, so a process orphaned by a
  double fork is re-parented to it instead of init, and stays in its process tree;
- the process tree: the descendants of every process found, and the grader's children that it did not have
  before the grading.

At the end of the grading they are stopped (SIGSTOP, so none forks while the others are killed), found again
until no new one appears, then killed (SIGKILL). Linux only (`/proc`, `prctl`); elsewhere nothing is tracked.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

TOKEN_ENV = "COURSE_GRADING_TOKEN"
PROC = Path("/proc")
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
MAX_ROUNDS = 50  # rounds of stop-and-search; each finds the processes forked before the previous round's stops


def _subreaper(on: bool | None = None) -> bool:
    """Whether this process is a child subreaper; with `on`, make it one (True) or not (False) first."""
    libc = ctypes.CDLL(None, use_errno=True)
    if on is not None:
        libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
    flag = ctypes.c_int(0)
    libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return bool(flag.value)


def _process_table(token: str) -> dict[int, tuple[int, bool]]:
    """{pid: (parent pid, whether its environment holds TOKEN_ENV=token)} of every process this user can read."""
    mark = f"{TOKEN_ENV}={token}".encode()
    table = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])  # the name in parentheses may hold spaces
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):  # gone meanwhile, or another user's
            continue
        table[int(entry.name)] = (parent, mark in environ)
    return table


def leftovers(token: str, children_before: set[int]) -> set[int]:
    """The processes of the grading marked by `token`: those whose environment holds it, this process's children
    not in `children_before`, and every descendant of either (never this process nor its ancestors)."""
    me, table = os.getpid(), _process_table(token)
    below: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        below.setdefault(parent, []).append(pid)
    spared, pid = {me}, me
    while pid in table and pid > 1:  # this process and its ancestors
        pid = table[pid][0]
        spared.add(pid)
    stack = [pid for pid, (parent, marked) in table.items()
             if marked or (parent == me and pid not in children_before)]
    found: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid not in found and pid not in spared:
            found.add(pid)
            stack.extend(below.get(pid, []))
    return found


def _signal(pids: set[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def end_all(token: str, children_before: set[int]) -> set[int]:
    """Stop every process of the grading, search again until no new one appears, kill them all and reap those
    that were re-parented to this process. Returns their pids."""
    stopped: set[int] = set()
    for _ in range(MAX_ROUNDS):
        new = leftovers(token, children_before) - stopped
        if not new:
            break
        _signal(new, signal.SIGSTOP)
        stopped |= new
    _signal(stopped, signal.SIGKILL)
    for pid in stopped:  # a killed child of this process is a zombie until reaped
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)
    return stopped


def _children() -> set[int]:
    me = os.getpid()
    return {pid for pid, (parent, _) in _process_table("").items() if parent == me}


@contextlib.contextmanager
def contained() -> Iterator[Callable[[], set[int]]]:
    """Within the block, every process started inherits a fresh token (TOKEN_ENV) and orphans are re-parented to
    this process; at its end every process of the block that is still running is killed. Yields a function that
    kills them at once (returns their pids), for a caller that must be sure none runs any more before the end."""
    token = secrets.token_hex(16)
    if not PROC.is_dir():
        yield set
        return
    before, was_subreaper = _children(), _subreaper()
    old = os.environ.get(TOKEN_ENV)
    os.environ[TOKEN_ENV] = token
    _subreaper(True)
    try:
        yield lambda: end_all(token, before)
    finally:
        if old is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = old
        end_all(token, before)
        _subreaper(was_subreaper)
