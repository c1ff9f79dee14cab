"""Build and grade the course assignments (otter-grader), without Docker.

    python assignments/course.py build [NAME ...] [--out runs/assignments] [--no-html]
    python assignments/course.py grade NAME SUBMISSION [--out runs/assignments] [--json FILE] [--timeout S]
                                       [--sandbox auto|bwrap|none]
    python assignments/course.py list

`build` runs `otter assign` on each master notebook `assignments/NAME/NAME.ipynb` into `OUT/NAME/`:
`student/NAME.ipynb` (hand this out), `autograder/` (the solutions notebook and otter's own zip),
`NAME-autograder.zip` (a stable copy of that zip), `NAME-hidden-inputs.json` and `NAME-hidden-expected.json`
(the hidden tests' fresh inputs and lib's answers to them, `assignments/hidden.py`) and
`NAME-solutions.html` (the executed solutions). It then grades the solutions and fails if they miss a point.

`grade` checks that SUBMISSION (a notebook, or a zip holding one, in a folder or not) is a submission of
assignment NAME before it hands it to `otter run` (which executes it locally, with this environment's
packages), then prints the score of each autograded question and, for a question that lost points, why.
Each cell of the submission and each test may run for --timeout seconds; one that runs over is stopped and
fails ("timed out"), and the rest is graded. Hidden tests only record the student's outputs in the kernel;
they are compared with lib's answers here, outside it. Written questions are graded by hand.

On the command line each grading runs in a sandbox of its own (`assignments/sandbox.py`: bubblewrap; its processes
die with it, HOME and /tmp are private, no network, the course's files read-only): a second `course.py grade`
inside it grades and writes its result to a folder bound for that purpose, read here. If that process is killed
(by the submission), every autograded question scores 0 with that reason, and the exit status is 3.
`--sandbox auto` (default) falls back, with a warning, to no sandbox where bwrap is missing or does not work
(WORKBOOK_REQUIRE_SANDBOX=1 makes that an error); `--sandbox none` grades in this process, as the Python
function `grade` does.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_OUT = REPO / "runs" / "assignments"
DEFAULT_TIMEOUT = 60.0  # seconds for each cell and each test case; a solution's slowest cell takes a few
TIME_LIMIT_ERROR = "TimeLimitExceeded"  # assignments.kernel.TimeLimitExceeded, as tracebacks name it
if str(REPO) not in sys.path:  # this checkout's `lib` and `assignments.hidden`, also when run as a script
    sys.path.insert(0, str(REPO))

from assignments import processes, sandbox  # noqa: E402  (after the path above)

KILLED_EXIT = 3  # exit status of `grade` when the grading process was killed and nothing was graded
OUTCOME = "outcome.json"  # what the grading inside the sandbox writes into its result folder


class CourseError(Exception):
    """A problem the instructor can fix (unknown assignment, wrong or unreadable submission, no build)."""


def assignments() -> list[str]:
    """Names of the assignments: folders of assignments/ holding a master notebook of the same name."""
    return sorted(p.name for p in HERE.iterdir() if p.is_dir() and (p / f"{p.name}.ipynb").is_file())


def master_path(name: str) -> Path:
    if name not in assignments():
        raise CourseError(f"unknown assignment {name!r}; the assignments are: {', '.join(assignments())}.")
    return HERE / name / f"{name}.ipynb"


def questions(name: str) -> dict[str, dict]:
    """The questions of an assignment, read from the `# BEGIN QUESTION` cells of its master notebook:
    {name: {"points": float, "manual": bool}} in notebook order."""
    import yaml

    found = {}
    for cell in json.loads(master_path(name).read_text())["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "raw" and text.lstrip().startswith("# BEGIN QUESTION"):
            config = yaml.safe_load(text.split("\n", 1)[1])
            found[config["name"]] = {"points": float(config["points"]), "manual": bool(config.get("manual"))}
    return found


def manual_questions(name: str) -> list[str]:
    """Names of the written (manually graded) questions of an assignment, read from its master notebook."""
    return [q for q, config in questions(name).items() if config["manual"]]


def _hidden():
    """assignments/hidden.py, imported when needed (it imports NumPy; `grade` checks its input first)."""
    return importlib.import_module("assignments.hidden")


@contextlib.contextmanager
def _environ(**values: str):
    """Set environment variables (inherited by the kernels otter starts) for the duration of the block."""
    old = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _lib_importable():
    """Put the repository first on PYTHONPATH, so the kernels otter starts import this checkout's `lib` (and
    `assignments.kernel`)."""
    old = os.environ.get("PYTHONPATH")
    return _environ(PYTHONPATH=os.pathsep.join([str(REPO)] + ([old] if old else [])))


@contextlib.contextmanager
def _scratch(folder: Path):
    """Temporary files of otter (its grading folder) and of the kernel go under `folder`, which the caller
    removes, however the grading ends."""
    old = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        with _environ(TMPDIR=str(folder)):
            yield
    finally:
        tempfile.tempdir = old


@contextlib.contextmanager
def _cell_backstop(seconds: int):
    """Make otter's notebook executor give up on a cell after `seconds` (CellTimeoutError, the kernel shut down):
    the last resort when a submission defeats the time limits set inside its kernel."""
    import nbconvert.preprocessors
    import traitlets

    original = nbconvert.preprocessors.ExecutePreprocessor  # looked up there by otter at each grading
    nbconvert.preprocessors.ExecutePreprocessor = type(
        "BackstoppedExecutePreprocessor", (original,),
        {"timeout": traitlets.Integer(seconds, allow_none=True).tag(config=True)})
    try:
        yield
    finally:
        nbconvert.preprocessors.ExecutePreprocessor = original


def autograder_zip(name: str, out: Path = DEFAULT_OUT) -> Path:
    return Path(out) / name / f"{name}-autograder.zip"


def build(name: str, out: Path = DEFAULT_OUT, *, html: bool = True, run_tests: bool = True,
          quiet: bool = False) -> Path:
    """otter assign NAME into OUT/NAME (replacing it), with the hidden tests' inputs and lib's answers;
    returns that folder. With run_tests, grades the solutions and raises CourseError if they lose a point."""
    master = master_path(name)
    autograded = sorted(q for q, config in questions(name).items() if not config["manual"])
    if sorted(_hidden().SPECS.get(name, {})) != autograded:
        raise CourseError(f"assignments/hidden.py has hidden tests for {sorted(_hidden().SPECS.get(name, {}))} "
                          f"of {name}; its autograded questions are {autograded}.")
    import otter.assign  # imported late: otter takes seconds to import, and `grade` checks its input first

    dest = Path(out) / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sink = io.StringIO()
    with _lib_importable(), contextlib.redirect_stdout(sink if quiet else sys.stdout):
        # no_run_tests: otter's own check cannot grade the hidden tests (see below)
        otter.assign.main(str(master), str(dest), no_pdfs=True, no_run_tests=True)
    zips = sorted((dest / "autograder").glob(f"{name}-autograder_*.zip"))
    if len(zips) != 1:
        raise CourseError(f"otter assign left {len(zips)} autograder zips in {dest / 'autograder'}; expected 1.")
    shutil.copy(zips[0], autograder_zip(name, out))
    _hidden().write(name, dest)
    if run_tests:
        _check_solutions(name, dest / "autograder" / f"{name}.ipynb", out, quiet)
    if html:
        with _lib_importable():
            subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute",
                            "--ExecutePreprocessor.timeout=600", str(dest / "autograder" / f"{name}.ipynb"),
                            "--output-dir", str(dest), "--output", f"{name}-solutions"], check=True,
                           capture_output=quiet)
    return dest


def _check_solutions(name: str, solutions: Path, out: Path, quiet: bool) -> None:
    """Grade the solutions notebook; CourseError naming each question it loses points on, and why."""
    result = grade(name, solutions, out, quiet=quiet)
    lost = {q: r for q, r in result["questions"].items() if r["score"] < r["possible"]}
    if lost:
        raise CourseError(f"the solutions of {name} lose points on their own tests: "
                          + "; ".join(f"{q}: {r['reason']}" for q, r in lost.items()))


def read_submission(name: str, submission: str | Path) -> dict:
    """The submission's notebook (JSON), after checking that it is a notebook of assignment NAME.

    A zip must hold exactly one notebook, at its top or in a folder (checkpoints and other hidden files
    aside). Raises CourseError with a message for the instructor otherwise; reads no more than the file itself.
    """
    master_path(name)
    path = Path(submission)
    if not path.is_file():
        raise CourseError(f"submission {path} does not exist.")
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                notebooks = [n for n in archive.namelist() if n.endswith(".ipynb") and "/." not in f"/{n}"
                             and not n.startswith("__MACOSX/")]
                if len(notebooks) != 1:
                    raise CourseError(f"submission {path} must hold exactly one notebook; it holds {len(notebooks)}"
                                      + (f": {', '.join(notebooks)}." if notebooks else "."))
                text = archive.read(notebooks[0]).decode("utf-8", errors="replace")
        except zipfile.BadZipFile as err:
            raise CourseError(f"submission {path} is not a valid zip file.") from err
    elif path.suffix == ".ipynb":
        text = path.read_text(encoding="utf-8", errors="replace")
    else:
        raise CourseError(f"submission {path} must be a notebook (.ipynb) or a zip holding one.")
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as err:
        raise CourseError(f"submission {path} is not a Jupyter notebook (not valid JSON: {err}).") from err
    except RecursionError as err:
        raise CourseError(f"submission {path} is not a Jupyter notebook (nested too deep to read).") from err
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise CourseError(f"submission {path} is not a Jupyter notebook (no list of cells).")
    if not isinstance(nb.get("metadata", {}), dict):
        raise CourseError(f"submission {path} is not a Jupyter notebook (its metadata is a "
                          f"{type(nb['metadata']).__name__}, not an object).")
    otter_meta = nb.get("metadata", {}).get("otter", {})
    got = otter_meta.get("assignment_name") if isinstance(otter_meta, dict) else None
    if got is None:
        raise CourseError(f"submission {path} is not a submission of assignment {name!r}: its metadata names no "
                          f"otter assignment. Students must work in the student notebook that `make assignments` "
                          f"writes to runs/assignments/{name}/student/{name}.ipynb.")
    if got != name:
        raise CourseError(f"submission {path} belongs to assignment {got!r}, not {name!r}. Grade it with "
                          f"`python assignments/course.py grade {got} {path}`.")
    return nb


def check_timeout(timeout: float) -> float:
    """The time limit of a cell or a test, in seconds: a finite number > 0 (CourseError otherwise)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise CourseError(f"timeout {timeout!r}: the time limit of a cell or a test must be a number of seconds "
                          f"> 0 (default {DEFAULT_TIMEOUT:g}).")
    return float(timeout)


def grade(name: str, submission: str | Path, out: Path = DEFAULT_OUT, *, timeout: float = DEFAULT_TIMEOUT,
          quiet: bool = True) -> dict:
    """Grade one submission with `otter run`, each cell and each test case limited to `timeout` seconds.

    Returns {"questions": {q: {"score", "possible", "reason"}}, "total", "possible", "manual": [written
    questions, graded by hand], "stopped_cells": [first line of each cell stopped at the time limit]};
    "reason" is None for a question with full marks, else why it lost them. CourseError on a bad submission
    or a missing build.
    """
    nb = read_submission(name, submission)
    timeout = check_timeout(timeout)
    ag_zip = autograder_zip(name, out)
    expected = _expected_answers(name, ag_zip)
    import otter.run

    hidden, kernel = _hidden(), importlib.import_module("assignments.kernel")
    # the hidden folder: a private folder (mkdtemp: mode 0700) of this grading alone, apart from the kernel's
    # scratch folder; every process the grading starts is killed at its end (processes.contained)
    with tempfile.TemporaryDirectory(prefix=f"course-grade-{name}-") as work, \
            tempfile.TemporaryDirectory(prefix="course-hidden-") as hidden_dir, processes.contained() as end_all:
        work, hidden_dir = Path(work), Path(hidden_dir)
        notebook = work / f"{name}.ipynb"
        notebook.write_text(json.dumps(_with_time_limits(nb, timeout)))
        hidden.stage(name, ag_zip.parent, hidden_dir)
        backstop = math.ceil(timeout * (_test_case_count(ag_zip) + 3))  # a cell that runs every test, and more
        sink = io.StringIO()
        with _lib_importable(), _environ(**{kernel.HIDDEN_DIR_ENV: str(hidden_dir)}), _scratch(work), \
                _cell_backstop(backstop), contextlib.redirect_stdout(sink if quiet else sys.stdout):
            results = _run_otter(otter.run, notebook, ag_zip)
        end_all()  # before the outputs are read: nothing of the submission may still write them
        if isinstance(results, str):  # the kernel was stopped or died: nothing was graded
            return _all_zero(name, submission, results, timeout)
        if results.catastrophic_error is not None:
            raise CourseError(f"otter could not grade {submission}: {results.catastrophic_error}")
        graded = {q: _question_result(name, q, results.get_result(q), hidden_dir, expected, timeout)
                  for q in results.test_files}
        return _result(name, submission, graded, timeout, _stopped_cells(results.notebook))


def _result(name: str, submission: str | Path, graded: dict[str, dict], timeout: float, stopped: list[str]) -> dict:
    return {"assignment": name, "submission": str(submission), "questions": graded,
            "total": sum(r["score"] for r in graded.values()), "possible": sum(r["possible"] for r in graded.values()),
            "manual": manual_questions(name), "timeout": timeout, "stopped_cells": stopped}


def _all_zero(name: str, submission: str | Path, reason: str, timeout: float) -> dict:
    """The result when nothing was graded: every autograded question 0, with `reason`."""
    graded = {q: {"score": 0.0, "possible": c["points"], "reason": reason}
              for q, c in questions(name).items() if not c["manual"]}
    return _result(name, submission, graded, timeout, [])


def grade_isolated(name: str, submission: str | Path, out: Path = DEFAULT_OUT, *, timeout: float = DEFAULT_TIMEOUT,
                   mode: str = "auto") -> dict:
    """`grade`, in a bwrap sandbox of its own (`sandbox.choose(mode)`; mode "none", or "auto" without bwrap:
    in this process). What `grade` returns, plus "sandbox" ("bwrap" or "none") and "killed": None, or why
    nothing was graded when the grading process inside the sandbox was killed (every autograded question then
    scores 0 with that reason). CourseError on a bad submission, a missing build or a missing sandbox."""
    read_submission(name, submission)  # refused at once, before bwrap or otter start
    timeout = check_timeout(timeout)
    if not autograder_zip(name, out).is_file():
        raise CourseError(f"no autograder for {name} at {autograder_zip(name, out)}: run `make assignments` first.")
    try:
        bwrap = sandbox.choose(mode)
    except sandbox.SandboxUnavailable as err:
        raise CourseError(str(err)) from None
    if bwrap is None:
        return {**grade(name, submission, out, timeout=timeout), "sandbox": "none", "killed": None}
    with tempfile.TemporaryDirectory(prefix="course-sandbox-") as folder:
        status = _grade_in_sandbox(bwrap, name, Path(submission).resolve(), Path(out).resolve(), timeout,
                                   Path(folder))
        outcome = _read_outcome(Path(folder) / OUTCOME) if status in (0, 2) else None
    if outcome is not None and status == 0 and "result" in outcome:
        return {**outcome["result"], "submission": str(submission), "sandbox": "bwrap", "killed": None}
    if outcome is not None and status == 2 and "error" in outcome:
        raise CourseError(str(outcome["error"]))
    reason = f"the grading process {_how_it_ended(status)}; nothing was graded"
    return {**_all_zero(name, submission, reason, timeout), "sandbox": "bwrap", "killed": reason}


def _how_it_ended(status: int) -> str:
    """"was killed (SIGKILL)" for exit status 128 + 9 (bwrap's, for a command killed by signal 9), else the status."""
    try:
        return f"was killed ({signal.Signals(status - 128).name})" if status > 128 else \
            f"ended with exit status {status} before it recorded a result"
    except ValueError:  # no name for that signal
        return f"was killed (signal {status - 128})"


def _grade_in_sandbox(bwrap: str, name: str, submission: Path, out: Path, timeout: float, folder: Path) -> int:
    """Run `course.py grade --in-sandbox FOLDER` in the sandbox (FOLDER its only writable folder); its exit
    status (128 + N when killed by signal N)."""
    command = [sys.executable, str(HERE / "course.py"), "grade", name, str(submission), "--out", str(out),
               "--timeout", repr(timeout), "--sandbox", "none", "--in-sandbox", str(folder)]
    data = [os.environ["WORKBOOK_DATA"]] if os.environ.get("WORKBOOK_DATA") else []
    args = sandbox.argv(command, read_only=[REPO, out, submission, *data], writable=[folder], bwrap=bwrap)
    return subprocess.run(args, stdin=subprocess.DEVNULL).returncode


def _read_outcome(path: Path) -> dict | None:
    """The JSON object the grading in the sandbox wrote ({"result": ...} or {"error": ...}); None if unreadable."""
    try:
        outcome = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return outcome if isinstance(outcome, dict) else None


def _write_outcome(folder: Path, outcome: dict) -> None:
    """Write the outcome atomically (a temp file, then rename), for the grader outside the sandbox."""
    part = folder / f"{OUTCOME}.part"
    part.write_text(json.dumps(outcome))
    part.replace(folder / OUTCOME)


def _expected_answers(name: str, ag_zip: Path) -> dict[str, list]:
    """lib's answers to the hidden inputs, {question: [answer per input]}, as `build` wrote them beside the
    autograder (CourseError when the build is missing or older than the hidden tests of assignments/hidden.py)."""
    if not ag_zip.is_file():
        raise CourseError(f"no autograder for {name} at {ag_zip}: run `make assignments` first.")
    hidden = _hidden()
    paths = hidden.input_path(name, ag_zip.parent), hidden.expected_path(name, ag_zip.parent)
    expected = json.loads(paths[1].read_text()) if all(p.is_file() for p in paths) else {}
    missing = sorted(set(hidden.SPECS[name]) - set(expected))
    if missing:
        raise CourseError(f"no hidden-test answers for {', '.join(missing)} of {name} beside {ag_zip} (an older "
                          f"build?): run `make assignments` again.")
    return expected


def _with_time_limits(nb: dict, timeout: float) -> dict:
    """A copy of the notebook whose first cell installs the time limits of its cells and tests."""
    source = f"import assignments.kernel\nassignments.kernel.install_time_limits({timeout!r})"
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    if nb.get("nbformat_minor", 0) >= 5:  # cell ids exist from nbformat 4.5 on
        cell["id"] = "course-time-limits"
    return {**nb, "cells": [cell, *nb["cells"]]}


def _test_case_count(ag_zip: Path) -> int:
    """How many test cases the autograder holds (each may take the time limit)."""
    with zipfile.ZipFile(ag_zip) as archive:
        return sum(archive.read(n).decode().count("'code':") for n in archive.namelist() if n.startswith("tests/"))


def _run_otter(otter_run, notebook: Path, ag_zip: Path):
    """otter's GradingResults, or the reason (str) every question gets 0 when the kernel was stopped or died."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    try:
        return otter_run.main(str(notebook), autograder=str(ag_zip), output_dir=None, no_logo=True)
    except CellTimeoutError:
        return ("timed out: a cell kept running past the time limits (a loop that ignores the alarm?), so the "
                "kernel was stopped and nothing was graded")
    except DeadKernelError:
        return "the kernel died while running the submission (out of memory, or the submission exited it)"


def _question_result(name: str, question: str, result, hidden_dir: Path, expected: dict[str, list],
                     timeout: float) -> dict:
    """Score, possible points and reason of one question: otter's verdict on the public tests and on the
    hidden test's run, then the comparison of the hidden test's outputs with lib's answers."""
    score, possible = float(result.score), float(result.possible)
    reason = _failure_reason(result, timeout)
    if reason is None and question in _hidden().SPECS[name]:
        try:
            hidden_reason = _hidden().verdict(name, question, hidden_dir / f"{question}-outputs.json",
                                              expected[question])
        except Exception as err:  # noqa: BLE001 (the record is the submission's: whatever it breaks scores 0)
            hidden_reason = f"its record could not be compared ({type(err).__name__}: {str(err)[:200]})"
        if hidden_reason is not None:
            score, reason = 0.0, f"hidden test: {hidden_reason}"
    if reason is None and score < possible:
        reason = "lost points (otter gave no reason)"
    return {"score": score, "possible": possible, "reason": reason}


def _failure_reason(result, timeout: float) -> str | None:
    """Why the first failing test case of otter's `result` (a TestFile) failed, in one line; None if all pass."""
    public = 0
    for case_result in result.test_case_results:
        hidden = case_result.test_case.hidden
        public += not hidden
        if case_result.passed:
            continue
        which = "hidden test" if hidden else f"public test {public}"
        message = case_result.message or ""
        if TIME_LIMIT_ERROR in message:
            return f"{which}: timed out (ran over the time limit of {timeout:g} s)"
        return f"{which}: {_doctest_failure(message)}"
    return None


def _doctest_failure(message: str) -> str:
    """The first failed statement of a doctest and its exception (or the output it printed), from otter's
    message."""
    lines = message.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Failed example:"), None)
    if start is None:
        error, statement = next((line.strip() for line in reversed(lines) if line.strip()), "failed"), ""
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("Trying:")), len(lines))
        block = [line.strip() for line in lines[start + 2 : end] if line.strip().strip("^~")]
        statement, error = lines[start + 1].strip(), (block[-1] if block else "failed")
        if "Got:" in block:  # a test passes silently; this one printed something
            error = "printed " + " ".join(block[block.index("Got:") + 1 :])
    text = f"{error} in `{statement}`" if statement else error
    return text if len(text) <= 240 else text[:237] + "..."


def _stopped_cells(notebook) -> list[str]:
    """First line of each cell of the executed notebook that the time limit stopped."""
    stopped = []
    for cell in getattr(notebook, "cells", None) or []:
        if any(output.get("ename") == TIME_LIMIT_ERROR for output in cell.get("outputs", [])):
            first = next((line for line in cell["source"].splitlines() if line.strip()), "")
            stopped.append(first if len(first) <= 80 else first[:77] + "...")
    return stopped


def _report(result: dict) -> str:
    lines = [f"{result['assignment']}: {result['submission']}"]
    for q, r in sorted(result["questions"].items()):
        line = f"  {q:<6} {r['score']:g} / {r['possible']:g}"
        lines.append(f"{line:<22}{r['reason']}" if r.get("reason") else line)
    lines.append(f"  autograded total: {result['total']:g} / {result['possible']:g}")
    if result.get("stopped_cells"):
        lines.append(f"  cells stopped at the time limit of {result['timeout']:g} s: "
                     + ", ".join(f"`{first}`" for first in result["stopped_cells"]))
    if result["manual"]:
        lines.append(f"  written questions, to grade by hand: {', '.join(result['manual'])}")
    if result.get("killed"):
        lines.append(f"  not graded: {result['killed']} (exit status {KILLED_EXIT})")
    return "\n".join(lines)


def _timeout_argument(text: str) -> float:
    try:
        return check_timeout(float(text))
    except (ValueError, CourseError):
        raise argparse.ArgumentTypeError(f"{text!r}: the time limit of a cell or a test must be a number of "
                                         f"seconds > 0 (default {DEFAULT_TIMEOUT:g})") from None


def _terminate(signum, frame):
    """SIGTERM (e.g. from `timeout`): exit through the finally blocks, which remove the temporary folders and
    shut the kernel down."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python assignments/course.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="otter assign the masters into OUT (all when no NAME is given)")
    p_build.add_argument("names", nargs="*")
    p_build.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p_build.add_argument("--no-html", action="store_true", help="skip the executed HTML of the solutions")
    p_grade = sub.add_parser("grade", help="grade one submission of assignment NAME with otter run")
    p_grade.add_argument("name")
    p_grade.add_argument("submission")
    p_grade.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where `build` wrote the autograders")
    p_grade.add_argument("--json", type=Path, help="also write the scores and reasons to this JSON file")
    p_grade.add_argument("--timeout", type=_timeout_argument, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                         help=f"time limit of each cell and each test case (default {DEFAULT_TIMEOUT:g})")
    p_grade.add_argument("--sandbox", choices=sandbox.MODES, default="auto",
                         help="grade in a bubblewrap sandbox (bwrap), in none, or (auto, the default) in bwrap where "
                              f"it works, else in none with a warning ({sandbox.REQUIRE_ENV}=1: an error)")
    p_grade.add_argument("--in-sandbox", type=Path, metavar="FOLDER", help=argparse.SUPPRESS)  # the inner grading
    sub.add_parser("list", help="list the assignments")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        if args.command == "list":
            print("\n".join(assignments()))
        elif args.command == "build":
            for name in args.names or assignments():
                master_path(name)
            for name in args.names or assignments():
                print(f"== {name}", flush=True)
                print(f"   -> {build(name, args.out, html=not args.no_html)}", flush=True)
        elif args.in_sandbox:
            return _grade_inside(args)
        else:
            result = grade_isolated(args.name, args.submission, args.out, timeout=args.timeout, mode=args.sandbox)
            print(_report(result))
            if args.json:
                args.json.write_text(json.dumps(result, indent=2))
            return KILLED_EXIT if result["killed"] else 0
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def _grade_inside(args: argparse.Namespace) -> int:
    """The grading inside the sandbox: its result, or its CourseError, goes to the result folder, not stdout."""
    try:
        outcome = {"result": grade(args.name, args.submission, args.out, timeout=args.timeout)}
    except CourseError as err:
        _write_outcome(args.in_sandbox, {"error": str(err)})
        return 2
    _write_outcome(args.in_sandbox, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
