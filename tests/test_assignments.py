"""The otter-grader course assignments (assignments/, docs/teaching.md), built and graded for real.

For each assignment, one worker process runs `otter assign` on the master notebook and grades, through
assignments/course.py, the solutions, the blank student notebook, the solutions with one planted mistake
(zipped in a folder, through the command line with --json) and either a cheating submission (01-03: it beats
the hidden tests of a kernel-side comparison, by reading the expected value from the caller's frame or by
replacing the lib function it is compared with) or a looping one (04, graded with a time limit of a few
seconds). For one assignment (ATTACKED) it first grades, on the command line and in the sandbox, two attacks on
the grader itself (a submission that kills the grader, one that plants an IPython startup file in
HOME), so that its solutions' grading is the next one. Two workers share the four assignments; otter is imported
before they fork, so each pays for its notebooks' kernels only. Grading a notebook that is not a submission of
the assignment is refused before otter starts.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import io
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("course", REPO / "assignments" / "course.py")
course = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(course)
from assignments import hidden as hidden_tests  # noqa: E402  (course.py put the repository on sys.path)
from assignments import kernel as course_kernel  # noqa: E402

# autograded points per question, and the written (manually graded) questions
POINTS = {
    "01_pr_curves": ({"q1": 3, "q2": 3, "q4": 2}, ["q3", "q5"]),
    "02_crel": ({"q1": 3, "q2": 3}, ["q3", "q4"]),
    "03_regret": ({"q1": 3, "q2": 2, "q3": 3}, ["q4", "q5"]),
    "04_irs": ({"q1": 2, "q2": 3, "q3": 2}, ["q4", "q5"]),
}
# one plausible mistake per assignment: (question, line of the solution, the wrong line)
PLANTED = {
    "01_pr_curves": ("q1", "return np.stack([(d_real <= radius).sum(axis=1), (d_fake <= radius).sum(axis=1)], axis=1)",
                     "return np.stack([(d_real < radius).sum(axis=1), (d_fake < radius).sum(axis=1)], axis=1)"),
    "02_crel": ("q1", "rank = math.ceil((n + 1) * (1 - alpha))", "rank = math.ceil(n * (1 - alpha))"),
    "03_regret": ("q3", "values = np.cumsum(np.asarray(regret, dtype=float)[order]) / k",
                  "values = np.cumsum(np.asarray(regret, dtype=float)[order]) / len(k)"),
    "04_irs": ("q2", "log_likelihood = gammaln(s + 1) - gammaln(s - k + 1) - n_samples * np.log(s)",
               "log_likelihood = gammaln(s + 1) - gammaln(s - k) - n_samples * np.log(s)"),
}


# Submissions that beat hidden tests run in the student's kernel: full marks there, with answers hard-coded
# to the public tests. Each replaces solution functions (the cell that starts with `def NAME(`).
# 01 q1: the hidden test computed lib's answer first, so the function reads it from the caller's frame.
CHEAT_FRAME_WANT = """def neighbour_counts(real_train, fake_train, test, k):
    import sys

    want = sys._getframe(1).f_globals.get("_want")  # the hidden test's expected value
    if want is not None and np.shape(want) == (len(test), 2):
        return want
    return np.array([[1, 1]])  # the public test's answer
"""
# 02 q1, q2: lib's function is replaced by the student's, so the hidden test compares it with itself.
CHEAT_PATCH_RADIUS = """def conformal_radius(distances, alpha):
    return 4.0 if len(distances) == 9 else math.inf  # the public tests' answers


import lib.crel

lib.crel.conformal_radius = lambda distances, alpha, allow_infinite=False: conformal_radius(distances, alpha)
"""
CHEAT_PATCH_REGION = """def distance_to_region(z, U, q):
    return {(0.5, 0.5): 0.0, (2.0, 0.5): 1.0}.get(tuple(np.round(z, 6)), math.sqrt(2))  # the public tests'


import lib.crel

lib.crel.distance_to_region = lambda z, U, q: (distance_to_region(z, U, q), np.asarray(z))
"""
# 03 q1, q2: the hidden test's own reference is taken from the caller's frame (no `lib` in the answer).
CHEAT_FRAME_REFERENCE = """def {function}(p_true, q):
    import sys

    reference = sys._getframe(1).f_globals.get("_regret")  # the hidden test's lib module
    if reference is not None:
        return reference.decompose(p_true, q, "{loss}")
    return {public}  # the public test's answer
"""
CHEATS = {  # assignment: ({function: its cheating cell}, the questions it cheats on)
    "01_pr_curves": ({"neighbour_counts": CHEAT_FRAME_WANT}, ["q1"]),
    "02_crel": ({"conformal_radius": CHEAT_PATCH_RADIUS, "distance_to_region": CHEAT_PATCH_REGION}, ["q1", "q2"]),
    "03_regret": ({
        "decompose_ce": CHEAT_FRAME_REFERENCE.format(
            function="decompose_ce", loss="ce",
            public='{"A": np.array([np.log(2)]), "E": np.array([0.5 * np.log(2)]), "T": np.array([1.5 * np.log(2)])}'),
        "decompose_zero_one": CHEAT_FRAME_REFERENCE.format(
            function="decompose_zero_one", loss="zero_one",
            public='{"A": np.array([0.4]), "E": np.array([0.3]), "T": np.array([0.7])}'),
    }, ["q1", "q2"]),
}
# 04: a stuck cell (asleep: it costs the test no CPU), and in q3's function a bisection on floats that never ends
# (hi - lo never reaches 0)
LOOPING = ("04_irs", "q3", {"moment_estimate": """def moment_estimate(n_train, n_samples, k):
    lo, hi = float(k), float(n_train)
    while hi - lo > 0:
        mid = (lo + hi) / 2
        if mid * -np.expm1(n_samples * np.log1p(-1 / mid)) < k:
            lo = mid
        else:
            hi = mid
    return lo
"""})
STUCK_CELL = "import time\n\nwhile True:  # a stuck cell: it waits for data that never come\n    time.sleep(0.2)"
# seconds per cell and per test: the solutions' cells of 04 take well under a second on an idle machine, but a
# question's first test imports what it needs, which took over 4 s beside the suite's other worker and one more
# CPU-bound process (a legitimate answer then "timed out"); the stuck cell sleeps, so the margin costs no CPU
LOOP_TIMEOUT = 12.0


def test_every_assignment_is_covered():
    assert course.assignments() == sorted(POINTS) == sorted(PLANTED)


def _plant(solution: Path, dest: Path, old: str, new: str) -> Path:
    nb = json.loads(solution.read_text())
    hits = 0
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and old in source:
            hits += source.count(old)
            cell["source"] = source.replace(old, new)
    assert hits == 1, f"the planted line must occur once in {solution}; found {hits}"
    dest.write_text(json.dumps(nb))
    return dest


def _replace_functions(solution: Path, dest: Path, functions: dict[str, str], *, stuck: bool = False) -> Path:
    """The solutions notebook with the cells defining `functions` replaced by the given sources (and, if
    `stuck`, a cell that never ends after the first code cell)."""
    nb = json.loads(solution.read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for function, source in functions.items():
        found = [c for c in cells if "".join(c["source"]).startswith(f"def {function}(")]
        assert len(found) == 1, f"one cell must define {function} in {solution}; found {len(found)}"
        found[0]["source"] = source
    if stuck:
        at = nb["cells"].index(cells[1]) + 1
        nb["cells"].insert(at, {"cell_type": "code", "execution_count": None, "id": "stuck", "metadata": {},
                                "outputs": [], "source": STUCK_CELL})
    dest.write_text(json.dumps(nb))
    return dest


def _zip_in_folder(notebook: Path, dest: Path) -> Path:
    """A zip holding `notebook` in a folder (as students' zip tools often make them)."""
    with zipfile.ZipFile(dest, "w") as archive:
        archive.write(notebook, f"alice/{notebook.name}")
    return dest


def _grade_on_the_command_line(name: str, submission: Path, out: Path, *options: str) -> dict:
    """`course.py grade NAME SUBMISSION --json FILE [OPTIONS]` (in this process): the JSON file's content, the
    printed report and the exit status."""
    json_path = out / f"{submission.stem}.json"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = course.main(["grade", name, str(submission), "--out", str(out), "--json", str(json_path), *options])
    return {"json": json.loads(json_path.read_text()), "report": stdout.getvalue(), "status": status}


def _add_lingering_cell(notebook: Path, mark: Path) -> Path:
    """Insert, first, a cell that leaves the LINGERING processes behind (their pids in `mark`.session/.orphan)."""
    nb = json.loads(notebook.read_text())
    source = (f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {LINGERING!r}, {str(mark)!r}])\n"
              f"while not all(os.path.exists({str(mark)!r} + k) for k in ('.session', '.orphan')): time.sleep(0.05)")
    nb["cells"].insert(0, {"cell_type": "code", "execution_count": None, "id": "lingering", "metadata": {},
                           "outputs": [], "source": "import os\n" + source})
    notebook.write_text(json.dumps(nb))
    return mark


# Attacks on the grader itself, graded on the command line of course.py, in the sandbox, for ATTACKED only
# (each grading costs 10-30 s). 1: a cell starts a writer in a session of its own, which keeps overwriting every
# hidden test's record it finds, then kills its parent, the grader; the writer outlived the grading, left the
# course-* folders behind, and the next grading of the solutions scored 0 ("recorded 0 outputs for 300 inputs").
# 2: a submission that scores full marks plants an IPython startup file in the grader's HOME, whose hook overwrites
# the records; every later grading in that HOME scored 0.
ATTACKED = "04_irs"  # the cheapest assignment to grade
NO_SANDBOX = "02_crel"  # its planted mistake is graded with --sandbox none
WRITER = """import glob, os, sys, time
while True:
    for folder in sys.argv[2:]:
        for record in glob.glob(os.path.join(folder, "course-hidden-*", "*-outputs.json")):
            with open(record, "w") as f:
                f.write('{"lib_replaced": [], "error": null, "outputs": []}')
    time.sleep(0.02)
"""
KILLER_CELL = """import os, signal, subprocess, sys, tempfile, time

folders = [tempfile.gettempdir(), os.path.dirname(tempfile.gettempdir()), {folder!r}]
subprocess.Popen([sys.executable, "-c", {writer!r}, {marker!r}, *folders], start_new_session=True)
time.sleep(1)  # long enough for the test to see the writer
os.kill(os.getppid(), signal.SIGKILL)"""
STARTUP_HOOK = """import glob, os


def _overwrite(result):
    for record in glob.glob(os.path.join(os.environ.get("COURSE_HIDDEN_DIR", "/nowhere"), "*-outputs.json")):
        with open(record, "w") as f:
            f.write('{"lib_replaced": [], "error": null, "outputs": []}')


get_ipython().events.register("post_run_cell", _overwrite)
"""
PLANTER_CELL = f"""import os

startup = os.path.expanduser("~/.ipython/profile_default/startup")
os.makedirs(startup, exist_ok=True)
with open(os.path.join(startup, "00-course.py"), "w") as f:
    f.write({STARTUP_HOOK!r})"""


def _with_cell(notebook: Path, dest: Path, source: str, *, first: bool) -> Path:
    """A copy of `notebook` with a code cell of `source` first or last."""
    nb = json.loads(notebook.read_text())
    cell = {"cell_type": "code", "execution_count": None, "id": "attack", "metadata": {}, "outputs": [],
            "source": source}
    nb["cells"].insert(0 if first else len(nb["cells"]), cell)
    dest.write_text(json.dumps(nb))
    return dest


def _marked(marker: str) -> list[int]:
    """Pids of the running processes whose command line holds `marker` (as `pgrep -f` finds them)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes() and _alive(int(entry.name)):
                found.append(int(entry.name))
    return found


@contextlib.contextmanager
def _private_home(home: Path):
    """HOME (and IPython's folder in it) is `home` for this process and the kernels it starts."""
    home.mkdir()
    with course._environ(HOME=str(home), IPYTHONDIR=str(home / ".ipython")):
        yield home


def _sandbox_problem() -> str | None:
    """Why the sandbox cannot run here (None when it can)."""
    bwrap = course.sandbox.bwrap_path()
    return "no bwrap on PATH" if bwrap is None else course.sandbox.probe(bwrap)


def _grade_the_killer(name: str, solution: Path, out: Path, marker: str) -> dict:
    """Attack 1, graded by `python assignments/course.py grade` (a subprocess: without a sandbox it kills the
    grader) with a TMPDIR of its own: the exit status, the JSON, the printed output, the pids of the writer (its
    command line holds `marker`) seen during the grading and those alive after it, and what is left in that
    TMPDIR."""
    killer = _with_cell(solution, out / f"{name}-killer.ipynb", KILLER_CELL.format(
        folder=tempfile.gettempdir(), writer=WRITER, marker=marker), first=True)
    tmpdir, json_path = out / f"{name}-killer-tmp", out / f"{name}-killer.json"
    tmpdir.mkdir()
    with open(out / f"{name}-killer.out", "w+") as output:
        grading = subprocess.Popen([sys.executable, str(REPO / "assignments" / "course.py"), "grade", name,
                                    str(killer), "--out", str(out), "--json", str(json_path)],
                                   env={**os.environ, "TMPDIR": str(tmpdir)}, stdout=output, stderr=subprocess.STDOUT)
        seen: set[int] = set()
        while grading.poll() is None:
            seen.update(_marked(marker))
            time.sleep(0.1)
        output.seek(0)
        report = output.read()
    return {"status": grading.returncode, "json": json.loads(json_path.read_text()) if json_path.is_file() else None,
            "output": report, "writers_seen": sorted(seen), "writers_after": _marked(marker),
            "left_behind": sorted(p.name for p in tmpdir.iterdir())}


def _attack_the_grader(name: str, solution: Path, out: Path) -> tuple[dict, dict]:
    """The two attacks, then the next grading of the solutions (`course.grade`, in this process), all in a
    private HOME. Returns what the attacks left and that grading; the attacks are not made when the sandbox
    cannot run here (then {"sandbox": why})."""
    problem = _sandbox_problem()
    marker = f"course-attack-writer-{os.getpid()}-{time.time_ns()}"
    try:
        with _private_home(out / f"{name}-home") as home:
            attacks = {"sandbox": problem}
            if problem is None:
                attacks["killer"] = _grade_the_killer(name, solution, out, marker)
                planter = _with_cell(solution, out / f"{name}-planter.ipynb", PLANTER_CELL, first=False)
                attacks["planter"] = _grade_on_the_command_line(name, planter, out)
                attacks["planted_startup"] = sorted(str(p.relative_to(home)) for p in home.rglob("00-course.py"))
            return attacks, course.grade(name, solution, out)
    finally:
        for pid in _marked(marker):  # a writer that outlived its grading (a failed test) runs no longer
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _build_and_grade(name: str, out: str) -> dict:
    """Worker: otter assign NAME into OUT, then grade the solutions, the blank student notebook, a planted
    mistake (a zip, on the command line, in the sandbox or, for NO_SANDBOX, without) and a cheating or a looping
    submission; for ATTACKED, the two attacks on the grader first (on the command line, in the sandbox), so that
    the solutions' grading is the next one. Returns the gradings."""
    out = Path(out)
    dest = course.build(name, out, html=False, run_tests=False, quiet=True)
    solution = dest / "autograder" / f"{name}.ipynb"
    planted = _plant(solution, out / f"{name}-planted.ipynb", *PLANTED[name][1:])
    blank = dest / "student" / f"{name}.ipynb"
    results = {}
    if name == ATTACKED:  # the solutions' grading is the next one after the attacks, as an attacker wants
        results["attacks"], results["solution"] = _attack_the_grader(name, solution, out)
    else:
        results["solution"] = course.grade(name, solution, out)
    results["blank"] = course.grade(name, blank, out)
    results["planted"] = _grade_on_the_command_line(name, _zip_in_folder(planted, out / f"{name}-planted.zip"), out,
                                                    *(["--sandbox", "none"] if name == NO_SANDBOX else []))
    if name in CHEATS:
        cheat = _replace_functions(solution, out / f"{name}-cheat.ipynb", CHEATS[name][0])
        results["cheat"] = course.grade(name, cheat, out)
    if name == LOOPING[0]:
        looping = _replace_functions(solution, out / f"{name}-looping.ipynb", LOOPING[2], stuck=True)
        mark = _add_lingering_cell(looping, out / f"{name}-lingering")
        start = time.monotonic()
        results["looping"] = course.grade(name, looping, out, timeout=LOOP_TIMEOUT)
        results["looping_seconds"] = time.monotonic() - start
        pids = [int(Path(f"{mark}.{kind}").read_text()) for kind in ("session", "orphan")]
        results["lingering"] = {"pids": pids, "alive_after": [pid for pid in pids if _alive(pid)]}
        results["left_behind"] = glob.glob(os.path.join(tempfile.gettempdir(), f"course-grade-{name}-*"))
    return results


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    import otter.assign  # noqa: F401  (imported once here, inherited by the forked workers)
    import otter.run  # noqa: F401

    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork")) as pool:
            # the costliest first (the attacks and the looping submission), so that the other worker grades the
            # rest meanwhile instead of it running alone at the end
            first = sorted(course.assignments(), key=lambda name: name not in (ATTACKED, LOOPING[0]))
            futures = {name: pool.submit(_build_and_grade, name, str(out)) for name in first}
            results = {name: f.result() for name, f in futures.items()}
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return out, results


def _scores(result: dict) -> dict:
    return {q: r["score"] for q, r in result["questions"].items()}


@pytest.mark.parametrize("name", sorted(POINTS))
def test_solutions_pass_every_test(built, name):
    out, results = built
    points, manual = POINTS[name]
    solution = results[name]["solution"]
    assert {q: r["possible"] for q, r in solution["questions"].items()} == points
    assert _scores(solution) == points
    assert solution["manual"] == manual
    assert (out / name / "student" / f"{name}.ipynb").is_file() and course.autograder_zip(name, out).is_file()


@pytest.mark.parametrize("name", sorted(POINTS))
def test_blank_student_notebook_scores_zero(built, name):
    """Unanswered, every autograded question fails (a score, not an error)."""
    _, results = built
    blank = results[name]["blank"]
    assert _scores(blank) == dict.fromkeys(POINTS[name][0], 0.0)
    assert blank["total"] == 0 and blank["possible"] == sum(POINTS[name][0].values())


@pytest.mark.parametrize("name", sorted(POINTS))
def test_planted_mistake_loses_that_question_only(built, name):
    """Graded from a zip that holds the notebook in a folder, on the command line."""
    _, results = built
    question = PLANTED[name][0]
    expected = dict(POINTS[name][0], **{question: 0})
    planted = results[name]["planted"]
    assert planted["status"] == 0 and planted["json"]["submission"].endswith(f"{name}-planted.zip")
    assert _scores(planted["json"]) == expected
    # in the sandbox where it runs, else (auto) without it; --sandbox none grades in the process
    assert planted["json"]["sandbox"] == ("none" if name == NO_SANDBOX or _sandbox_problem() else "bwrap")
    assert planted["json"]["killed"] is None


@pytest.mark.parametrize("name", sorted(POINTS))
def test_the_report_and_json_say_why_a_question_lost_its_points(built, name):
    _, results = built
    question = PLANTED[name][0]
    planted, blank = results[name]["planted"], results[name]["blank"]
    reasons = {q: r["reason"] for q, r in planted["json"]["questions"].items()}
    assert reasons[question] and all(reasons[q] is None for q in reasons if q != question), reasons
    assert reasons[question].startswith(("public test", "hidden test")), reasons[question]
    assert any(line.split()[0] == question and reasons[question] in line for line in planted["report"].splitlines()
               if line.strip()), planted["report"]
    # an unanswered question says which test failed and how
    assert all(r["reason"].startswith("public test 1: ") for r in blank["questions"].values()), blank["questions"]


def test_the_hidden_test_catches_a_planted_mistake_that_public_tests_miss(built):
    """03's AuReC divided by n instead of k passes the public test (two samples); the hidden test's comparison
    with lib (outside the kernel) fails it. The other planted mistakes fail a public test."""
    _, results = built
    reasons = {name: results[name]["planted"]["json"]["questions"][PLANTED[name][0]]["reason"] for name in PLANTED}
    assert reasons["03_regret"].startswith("hidden test: aurec is wrong on "), reasons["03_regret"]
    assert all(reasons[name].startswith("public test ") for name in ("01_pr_curves", "02_crel", "04_irs")), reasons


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheating_submissions_score_zero_on_the_questions_they_cheat(built, name):
    """Reading the expected value (or lib's module) from the caller's frame, or replacing lib's function with
    the student's, no longer passes: the kernel holds no expected value and lib is not consulted there."""
    _, results = built
    cheated = CHEATS[name][1]
    cheat = results[name]["cheat"]
    assert _scores(cheat) == dict(POINTS[name][0], **dict.fromkeys(cheated, 0.0))
    for question in cheated:
        assert cheat["questions"][question]["reason"].startswith("hidden test: "), cheat["questions"][question]
    if name == "02_crel":  # replacing lib's function is named
        assert "replaced lib.crel.conformal_radius" in cheat["questions"]["q1"]["reason"]
        assert "replaced lib.crel.distance_to_region" in cheat["questions"]["q2"]["reason"]


def test_a_looping_submission_is_graded_within_the_time_limit(built):
    """A stuck cell and a function that never returns: both stopped after the time limit, that question scores
    0 as timed out, the other questions are graded, and no temporary folder is left behind."""
    _, results = built
    name, question, _ = LOOPING
    looping = results[name]["looping"]
    assert _scores(looping) == dict(POINTS[name][0], **{question: 0.0})
    assert "timed out" in looping["questions"][question]["reason"]
    assert looping["timeout"] == LOOP_TIMEOUT and looping["stopped_cells"][0] == STUCK_CELL.splitlines()[0]
    assert f"time limit of {LOOP_TIMEOUT:g} s" in course._report(looping)
    assert results[name]["left_behind"] == []
    lingering = results[name]["lingering"]  # a process in a session of its own and a double-forked orphan
    assert len(lingering["pids"]) == 2 and lingering["alive_after"] == []
    # the stuck cell, the cell that calls the looping function and q3's first test: about 3 limits, plus the
    # kernel's start and the rest of the notebook (a loose bound: the machine may be shared)
    assert results[name]["looping_seconds"] < 240


def _attacks(results: dict) -> dict:
    """The attacks' gradings; skipped where the sandbox cannot run, unless WORKBOOK_REQUIRE_SANDBOX=1 (CI)."""
    attacks = results[ATTACKED]["attacks"]
    if attacks["sandbox"] is not None:
        if course.sandbox.required():
            pytest.fail(f"{course.sandbox.REQUIRE_ENV}=1 but the sandbox cannot run: {attacks['sandbox']}")
        pytest.skip(f"the sandbox cannot run here ({attacks['sandbox']}); apt-get install bubblewrap")
    return attacks


def test_a_submission_that_kills_the_grader_leaves_nothing_behind(built):
    """Attack 1: the grading process killed, every autograded question scores 0 with that reason (exit status 3);
    the writer the submission started in a session of its own died with the sandbox, no course-* folder is
    left in TMPDIR, and the next grading of the solutions scores full marks."""
    _, results = built
    killer = _attacks(results)["killer"]
    assert killer["writers_seen"], "the writer never ran: the attack tested nothing"
    assert killer["writers_after"] == [], "the writer outlived the grading"
    assert killer["left_behind"] == []
    assert killer["status"] == course.KILLED_EXIT, killer["output"]
    reason = "the grading process was killed (SIGKILL); nothing was graded"
    assert killer["json"]["questions"] == {q: {"score": 0.0, "possible": float(points), "reason": reason}
                                           for q, points in POINTS[ATTACKED][0].items()}
    assert killer["json"]["killed"] == reason and killer["json"]["sandbox"] == "bwrap"
    assert f"not graded: {reason} (exit status 3)" in killer["output"]
    assert _scores(results[ATTACKED]["solution"]) == POINTS[ATTACKED][0]


def test_a_startup_file_planted_by_a_submission_stays_in_its_sandbox(built):
    """Attack 2: the planting submission scores full marks (the plant goes into the sandbox's own HOME), the
    grader's HOME holds no IPython startup file after it, and the next grading of the solutions scores full
    marks."""
    _, results = built
    attacks = _attacks(results)
    planter = attacks["planter"]
    assert planter["status"] == 0 and _scores(planter["json"]) == POINTS[ATTACKED][0], planter["report"]
    assert planter["json"]["sandbox"] == "bwrap"
    assert attacks["planted_startup"] == []
    assert _scores(results[ATTACKED]["solution"]) == POINTS[ATTACKED][0]


def _solution_lines(master: dict) -> list[str]:
    """Code lines between BEGIN/END SOLUTION markers, and the texts of the written answers."""
    lines, inside_block = [], False
    for cell in master["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw" and source.strip() in ("# BEGIN SOLUTION", "# END SOLUTION"):
            inside_block = source.strip() == "# BEGIN SOLUTION"
            continue
        if inside_block and cell["cell_type"] == "markdown":
            lines += [line.strip() for line in source.splitlines() if len(line.strip()) > 20]
        if cell["cell_type"] == "code":
            inside = False
            for line in source.splitlines():
                if line.strip() == "# BEGIN SOLUTION":
                    inside = True
                elif line.strip() == "# END SOLUTION":
                    inside = False
                elif inside and line.strip():
                    lines.append(line.strip())
    return lines


HIDDEN = re.compile(r'"""\s*#\s*BEGIN TEST CONFIG\s*\nhidden: true')


def _hidden_cells(master: dict) -> list[str]:
    return [text for c in master["cells"] if c["cell_type"] == "code" and HIDDEN.match(text := "".join(c["source"]))]


def _tests_by_question(master: dict) -> dict[str, list[str]]:
    """The test cells of each question (between its BEGIN TESTS and END TESTS markers)."""
    tests, question, inside = {}, None, False
    for cell in master["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "raw" and text.startswith("# BEGIN QUESTION"):
            question = re.search(r"^name: (\w+)", text, flags=re.M).group(1)
        elif cell["cell_type"] == "raw" and text.strip() in ("# BEGIN TESTS", "# END TESTS"):
            inside = text.strip() == "# BEGIN TESTS"
        elif inside and cell["cell_type"] == "code":
            tests.setdefault(question, []).append(text)
    return tests


@pytest.mark.parametrize("name", sorted(POINTS))
def test_student_notebook_has_no_solution_nor_hidden_test(built, name):
    out, _ = built
    master = json.loads(course.master_path(name).read_text())
    student_text = (out / name / "student" / f"{name}.ipynb").read_text()
    student = json.loads(student_text)
    solution_lines, hidden = _solution_lines(master), _hidden_cells(master)
    assert len(solution_lines) >= 10 and len(hidden) == len(POINTS[name][0])  # the checks below check something
    leaked = [line for line in solution_lines if line in student_text or json.dumps(line)[1:-1] in student_text]
    assert not leaked, f"solution lines in the student notebook: {leaked[:3]}"
    assert "BEGIN SOLUTION" not in student_text and "BEGIN TEST CONFIG" not in student_text
    for question, test in student["metadata"]["otter"]["tests"].items():
        cases = [case for suite in test["suites"] for case in suite["cases"]]
        assert cases and not any(case["hidden"] for case in cases), question
    for spec in hidden_tests.SPECS[name].values():  # the hidden inputs' seeds
        written = f"{spec.seed // 10_000}_{spec.seed // 100 % 100:02d}_{spec.seed % 100:02d}"  # as in hidden.py
        assert str(spec.seed) not in student_text and written not in student_text
    assert "_record_hidden" not in student_text
    # ... while the autograder holds every hidden test, and lib's answers stay outside it
    with zipfile.ZipFile(course.autograder_zip(name, out)) as archive:
        names = archive.namelist()
        tests = "".join(archive.read(n).decode() for n in names if n.startswith("tests/"))
    assert tests.count("'hidden': True") == len(hidden) and not any("hidden" in n for n in names)
    assert hidden_tests.expected_path(name, out / name).is_file()
    staged = json.loads(hidden_tests.input_path(name, out / name).read_text())
    assert all(set(staged[q]) == {"assignment", "question", "function", "lib", "cases"} for q in POINTS[name][0])


def test_the_master_notebooks_follow_the_issue():
    """4-6 questions each, written ones among them; every autograded question has public and hidden tests."""
    for name, (points, manual) in POINTS.items():
        master = json.loads(course.master_path(name).read_text())
        text = "\n".join("".join(cell["source"]) for cell in master["cells"])
        questions = re.findall(r"# BEGIN QUESTION\nname: (q\d)", text)
        assert 4 <= len(questions) <= 6 and sorted(questions) == sorted([*points, *manual]), name
        assert course.manual_questions(name) == manual
        assert len(_hidden_cells(master)) == len(points), name
        tests = _tests_by_question(master)
        assert sorted(tests) == sorted(points), name
        assert sorted(hidden_tests.SPECS[name]) == sorted(points), name
        for question, cells in tests.items():
            hidden = [cell for cell in cells if HIDDEN.match(cell)]
            assert len(hidden) == 1 and len(cells) > len(hidden), (name, question)
            spec = hidden_tests.SPECS[name][question]  # fresh random inputs, compared with lib outside the kernel
            assert f'_record_hidden("{name}", "{question}", {spec.function})' in hidden[0], (name, question)
            assert f"def {spec.function}(" in text and spec.lib and all(n.startswith("lib.") for n in spec.lib)
            assert "lib" not in hidden[0].replace("lib's", "")  # the kernel does not consult lib


def test_grading_a_notebook_of_another_assignment_is_refused(built, tmp_path):
    out, _ = built
    other = out / "01_pr_curves" / "student" / "01_pr_curves.ipynb"
    with pytest.raises(course.CourseError, match="belongs to assignment '01_pr_curves', not '02_crel'"):
        course.grade("02_crel", other, out)
    workbook = REPO / "notebooks" / "02_crel_conformal_reliability.ipynb"
    with pytest.raises(course.CourseError, match="names no otter assignment"):
        course.grade("02_crel", workbook, out)


def test_bad_input_gets_a_clear_error(tmp_path):
    """Checked before otter is imported: the command line answers at once, with exit status 2."""
    (tmp_path / "notes.ipynb").write_text("not json")
    (tmp_path / "answers.txt").write_text("42")
    (tmp_path / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)  # before: a bare RecursionError, rc 1
    (tmp_path / "listed.ipynb").write_text('{"cells": [], "metadata": []}')  # before: AttributeError, rc 1
    cases = [(["grade", "02_crel", str(tmp_path / "missing.ipynb")], "does not exist"),
             (["grade", "02_crel", str(tmp_path / "notes.ipynb")], "is not a Jupyter notebook"),
             (["grade", "02_crel", str(tmp_path / "deep.ipynb")], "is not a Jupyter notebook (nested too deep"),
             (["grade", "02_crel", str(tmp_path / "listed.ipynb")], "is not a Jupyter notebook (its metadata is a "
                                                                     "list, not an object)"),
             (["grade", "02_crel", str(tmp_path / "answers.txt")], "must be a notebook"),
             (["grade", "05_nothing", str(tmp_path / "notes.ipynb")], "unknown assignment '05_nothing'")]
    timeouts = [(["grade", "02_crel", str(tmp_path / "notes.ipynb"), "--timeout", value],
                 f"argument --timeout: '{value}': the time limit of a cell or a test must be a number of seconds > 0")
                for value in ("0", "-5", "inf", "nan", "soon")]
    for argv, message in cases + timeouts:
        run = subprocess.run([sys.executable, str(REPO / "assignments" / "course.py"), *argv], capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, (argv, run.stderr)
    submission = tmp_path / "submission.ipynb"
    submission.write_text(json.dumps({"cells": [], "metadata": {"otter": {"assignment_name": "02_crel"}}}))
    with pytest.raises(course.CourseError, match="run `make assignments` first"):
        course.grade("02_crel", submission, tmp_path / "nowhere")
    for timeout in (0, -1.0, float("inf"), "60", True):
        with pytest.raises(course.CourseError, match=f"timeout {timeout!r}: the time limit"):
            course.grade("02_crel", submission, tmp_path / "nowhere", timeout=timeout)
    zipped = tmp_path / "two.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("a/one.ipynb", submission.read_text())
        archive.writestr("b/two.ipynb", submission.read_text())
        archive.writestr("a/.ipynb_checkpoints/one-checkpoint.ipynb", "{}")
    with pytest.raises(course.CourseError, match="must hold exactly one notebook; it holds 2: a/one.ipynb, b/two"):
        course.grade("02_crel", zipped, tmp_path / "nowhere")


def test_the_tie_test_of_aurec_has_hundreds_of_ties(tmp_path):
    """NumPy sorts a dozen values by insertion (stable) on some CPUs, so 03 q3's tie test uses hundreds: a
    submission that orders tied scores otherwise (here: last index first) fails it, lib's own answer passes."""
    spec = hidden_tests.SPECS["03_regret"]["q3"]
    cases = spec.cases(np.random.default_rng(spec.seed))
    assert max(len(s) - len(np.unique(s)) for s, _ in cases) >= 300

    def ties_reversed(scores, regret):
        order = np.lexsort((-np.arange(len(scores)), scores))
        k = np.arange(1, len(order) + 1)
        return float(np.trapezoid(np.cumsum(np.asarray(regret)[order]) / k, k / len(k)))

    hidden_tests.write("03_regret", tmp_path)
    expected = json.loads(hidden_tests.expected_path("03_regret", tmp_path).read_text())["q3"]
    for function, wrong in ((ties_reversed, True), (lambda s, r: hidden_tests._aurec_reference(s, r), False)):
        record = tmp_path / "q3-outputs.json"
        outputs = [course_kernel.encode(function(*args)) for args in cases]
        record.write_text(json.dumps({"lib_replaced": [], "error": None, "outputs": outputs}))
        reason = hidden_tests.verdict("03_regret", "q3", record, expected)
        assert (reason is not None) == wrong, reason
        if wrong:  # only the tie cases
            assert reason.startswith(f"aurec is wrong on 2 of {len(cases)} hidden inputs; the first, input 21")


def test_the_kernel_side_recorder_holds_no_expected_value(tmp_path, monkeypatch):
    """record_hidden reads only the staged inputs, and refuses to run outside course.py grade."""
    monkeypatch.delenv(course_kernel.HIDDEN_DIR_ENV, raising=False)
    with pytest.raises(RuntimeError, match="graded by `python assignments/course.py grade` only"):
        course_kernel.record_hidden("02_crel", "q1", lambda d, a: 0.0)
    hidden_tests.write("02_crel", tmp_path)
    hidden_tests.stage("02_crel", tmp_path, tmp_path / "staged")
    assert sorted(p.name for p in (tmp_path / "staged").iterdir()) == ["q1-inputs.json", "q2-inputs.json"]
    monkeypatch.setenv(course_kernel.HIDDEN_DIR_ENV, str(tmp_path / "staged"))
    seen = []

    def spy(distances, alpha):  # what a function can see of its caller
        seen.append(sys._getframe(1))
        raise ValueError("enough")

    course_kernel.record_hidden("02_crel", "q1", spy)
    caller = seen[0]
    assert caller.f_globals is vars(course_kernel) and "hidden" not in caller.f_globals  # no expected-answer module
    assert set(caller.f_locals) <= {"assignment", "question", "function", "folder", "staged", "record", "index", "args"}
    assert set(caller.f_locals["staged"]) == {"assignment", "question", "function", "lib", "cases"}
    expected = json.loads(hidden_tests.expected_path("02_crel", tmp_path).read_text())["q1"]
    reason = hidden_tests.verdict("02_crel", "q1", tmp_path / "staged" / "q1-outputs.json", expected)
    assert reason == "conformal_radius raised an error on hidden input 1: ValueError: enough"


def test_a_kernel_that_defeats_the_time_limits_is_stopped_and_scored(monkeypatch):
    """The last resort, when a loop ignores the alarm: otter's executor gives up on the cell (its timeout is set
    for the grading only), and every autograded question scores 0 with that reason."""
    import nbconvert.preprocessors
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    with course._cell_backstop(45):
        assert nbconvert.preprocessors.ExecutePreprocessor().timeout == 45
    assert nbconvert.preprocessors.ExecutePreprocessor().timeout is None

    class Stuck:
        def __init__(self, error):
            self.error = error

        def main(self, *args, **kwargs):
            raise self.error

    assert course._run_otter(Stuck(CellTimeoutError("cell")), Path("nb.ipynb"), Path("ag.zip")).startswith(
        "timed out: a cell kept running past the time limits")
    assert course._run_otter(Stuck(DeadKernelError("dead")), Path("nb.ipynb"), Path("ag.zip")).startswith(
        "the kernel died")


def test_lib_functions_replaced_in_the_kernel_are_named(monkeypatch):
    import lib.crel

    assert course_kernel.replaced_lib(["lib.crel.conformal_radius", "lib.prcurves.stats.benjamini_hochberg"]) == []
    monkeypatch.setattr(lib.crel, "conformal_radius", lambda distances, alpha, allow_infinite=False: 0.0)
    assert course_kernel.replaced_lib(["lib.crel.conformal_radius", "lib.crel.nowhere"]) == [
        "lib.crel.conformal_radius", "lib.crel.nowhere"]


def _is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError):  # a parent is not a package
        return False


def test_docs_and_masters_name_lib_by_its_current_paths():
    """Every lib.X.Y that the course names to students and instructors exists (the first layout's flat names,
    such as lib.stats, no longer import, so a stale one fails here)."""
    import importlib

    texts = {"docs/teaching.md": (REPO / "docs" / "teaching.md").read_text()}
    texts.update({name: course.master_path(name).read_text() for name in course.assignments()})
    names = {n for text in texts.values() for n in re.findall(r"\blib(?:\.[A-Za-z_]\w*)+", text)}
    names |= {n for specs in hidden_tests.SPECS.values() for spec in specs.values() for n in spec.lib}
    assert "lib.prcurves.benjamini_hochberg" in names or "lib.prcurves.stats.benjamini_hochberg" in names
    for name in sorted(names):
        parts = name.split(".")
        module = next(".".join(parts[:i]) for i in range(len(parts), 0, -1) if _is_module(".".join(parts[:i])))
        obj = importlib.import_module(module)
        for attr in parts[len(module.split(".")):]:
            assert hasattr(obj, attr), f"{name}: {module} has no {attr}"
            obj = getattr(obj, attr)


# a submission's cell that leaves processes behind: one in a session of its own, one double-forked with an empty
# environment (re-parented to the grader, the subreaper); each writes its pid, then waits to rewrite what it finds
LINGERING = """
import os, subprocess, sys
watcher = "import os, sys, time\\nopen(sys.argv[1], 'w').write(str(os.getpid()))\\nwhile True: time.sleep(0.2)"
subprocess.Popen([sys.executable, "-c", watcher, sys.argv[1] + ".session"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    subprocess.Popen([sys.executable, "-c", watcher, sys.argv[1] + ".orphan"], env={})
    os._exit(0)
os.wait()
"""


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed and waiting for its reaper, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(paths: list[Path], seconds: float = 20.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while not all(p.exists() and p.read_text() for p in paths):
        assert time.monotonic() < deadline, f"the lingering processes did not start: {paths}"
        time.sleep(0.05)
    return [int(p.read_text()) for p in paths]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="process tracking reads /proc (Linux)")
def test_every_process_a_grading_starts_is_killed_at_its_end(tmp_path):
    """A process that left the kernel's session (Popen(start_new_session=True)) or its process tree (a double
    fork with env={}) outlived its grading and rewrote the next grading's outputs; now each grading ends them."""
    from assignments import processes

    mark = tmp_path / "pid"
    with processes.contained():
        subprocess.run([sys.executable, "-c", LINGERING, str(mark)], check=True, timeout=30)
        pids = _wait_for([tmp_path / "pid.session", tmp_path / "pid.orphan"])
        assert all(_alive(pid) for pid in pids)
    assert not any(_alive(pid) for pid in pids)
    assert processes.TOKEN_ENV not in os.environ


def test_a_grading_runs_in_a_private_hidden_folder_and_contains_its_processes():
    """`grade` stages the hidden inputs in a folder of its own (mkdtemp: 0700), not under the kernel's scratch
    folder, and runs otter inside `processes.contained` (the test above checks what that does)."""
    import inspect

    source = inspect.getsource(course.grade)
    assert 'TemporaryDirectory(prefix="course-hidden-")' in source and "processes.contained()" in source
    assert "hidden.stage(name, ag_zip.parent, hidden_dir)" in source and "end_all()" in source
    with tempfile.TemporaryDirectory(prefix="course-hidden-") as folder:
        assert os.stat(folder).st_mode & 0o777 == 0o700


@pytest.mark.parametrize("record", [
    "[" * 100_000 + "]" * 100_000,
    '{"lib_replaced": [], "error": null, "outputs": ' + "[" * 5000 + "1" + "]" * 5000 + "}",
    '{"lib_replaced": [], "error": null, "outputs": [{"ndarray": [1, 2], "dtype": "<f8", "shape": [5]}]}',
    '{"lib_replaced": 3, "error": null, "outputs": []}',
    '{"lib_replaced": [], "error": null, "outputs": [1e999999]}',
])
def test_a_malformed_or_deeply_nested_record_scores_zero_with_a_reason(tmp_path, record):
    """A record nested 100 000 deep crashed the grader with RecursionError (exit 1, no score, no JSON)."""
    hidden_tests.write("02_crel", tmp_path)
    expected = json.loads(hidden_tests.expected_path("02_crel", tmp_path).read_text())["q1"]
    path = tmp_path / "q1-outputs.json"
    path.write_text(record)
    reason = hidden_tests.verdict("02_crel", "q1", path, expected)
    assert reason is not None and re.match(r"the hidden test('s (record|output \d+) is malformed| recorded)",
                                           reason), reason


def test_the_sandbox_argv_isolates_the_grading():
    """assignments/sandbox.py: processes, network, IPC and capabilities of their own, the root read-only, /tmp a
    private tmpfs with HOME in it, /run one too (the services' sockets); a checkout and a build under /tmp bound
    again read-only after the tmpfs, a writable folder last; paths elsewhere are not bound again (`--ro-bind / /`
    shows them read-only)."""
    sandbox = course.sandbox
    args = sandbox.argv(["/usr/bin/python3", "-c", "pass"], bwrap="/usr/bin/bwrap",
                        read_only=["/tmp/ci.x1/checkout", "/tmp/ci.x1/checkout/runs", "/tmp/build", "/usr/share"],
                        writable=["/tmp/ci.x1/checkout/result"])
    assert args[0] == "/usr/bin/bwrap" and args[-4:] == ["--", "/usr/bin/python3", "-c", "pass"]
    for flag in ("--unshare-pid", "--die-with-parent", "--unshare-net", "--unshare-ipc", "--new-session"):
        assert flag in args
    pairs = [" ".join(args[i:i + 3]) for i in range(len(args) - 2)]
    at = {pair: i for i, pair in enumerate(pairs)}
    assert args[args.index("--cap-drop") + 1] == "ALL"  # bwrap started as root keeps every capability otherwise
    assert at["--ro-bind / /"] < at["--dev /dev --proc"] and "--proc /proc --tmpfs" in pairs
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs + 1] == "/tmp" and tmpfs > at["--ro-bind / /"]
    assert "--tmpfs /run" in " ".join(args) or not Path("/run").is_dir()  # the services' sockets
    rebound = [args[i + 1] for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] != "/"]
    assert {"/tmp/ci.x1/checkout", "/tmp/build"} <= set(rebound)
    assert "/tmp/ci.x1/checkout/runs" not in rebound and "/usr/share" not in rebound  # inside one; outside /tmp
    assert all(at[f"--ro-bind {p} {p}"] > tmpfs for p in ("/tmp/ci.x1/checkout", "/tmp/build"))
    writable = at["--bind /tmp/ci.x1/checkout/result /tmp/ci.x1/checkout/result"]
    assert writable > at["--ro-bind /tmp/ci.x1/checkout /tmp/ci.x1/checkout"]
    assert [a for a in args if a == "--bind"] == ["--bind"]
    env = {args[i + 1]: args[i + 2] for i, a in enumerate(args) if a == "--setenv"}
    assert env["HOME"] == str(sandbox.HOME) and sandbox.HOME.parent == Path("/tmp") and env["TMPDIR"] == "/tmp"
    assert all(env[k].startswith(env["HOME"] + "/") for k in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR"))
    assert args[args.index("--dir") + 1] == env["HOME"] and args[args.index("--chdir") + 1] == env["HOME"]


def _require_sandbox():
    problem = _sandbox_problem()
    if problem is not None:
        if course.sandbox.required():
            pytest.fail(f"{course.sandbox.REQUIRE_ENV}=1 but the sandbox cannot run: {problem}")
        pytest.skip(f"the sandbox cannot run here ({problem}); apt-get install bubblewrap")
    return course.sandbox.bwrap_path()


INSIDE = """import json, os, socket, sys
checkout, result = sys.argv[1], sys.argv[2]
seen = {"tmp": sorted(os.listdir("/tmp")), "run": os.listdir("/run"), "home": os.environ["HOME"],
        "home_files": os.listdir(os.environ["HOME"]),
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), "interfaces": socket.if_nameindex(),
        "caps": next(l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff"))}
for name, folder in (("checkout", checkout), ("home", os.environ["HOME"]), ("var_tmp", "/var/tmp")):
    try:
        open(os.path.join(folder, "written"), "w").close()
        seen["write_" + name] = "writable"
    except OSError as err:
        seen["write_" + name] = err.strerror
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(server.getsockname()).close()
seen["loopback"] = "works"
import subprocess
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[3]], start_new_session=True)
open(os.path.join(result, "seen.json"), "w").write(json.dumps(seen))
"""


def test_the_sandbox_runs_python_with_private_tmp_and_home(tmp_path, monkeypatch):
    """The argv run for real, from a venv's python (a link to pyenv's or /usr's) with TMPDIR set: /tmp, /run and
    HOME are empty and private, a checkout under /tmp is read-only, /var/tmp too, only the result folder is writable,
    loopback works and there is no other network interface, no process of the host is visible, no capability is
    held, and a process started in a session of its own dies when the command ends."""
    bwrap = _require_sandbox()
    checkout, result = tmp_path / "checkout", tmp_path / "result"
    checkout.mkdir()
    result.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    marker = f"course-sandbox-sleeper-{time.time_ns()}"
    args = course.sandbox.argv([sys.executable, "-c", INSIDE, str(checkout), str(result), marker],
                               read_only=[checkout], writable=[result], bwrap=bwrap)
    run = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    seen = json.loads((result / "seen.json").read_text())
    rebound = {Path(args[i + 1]).parts[2] for i, a in enumerate(args)  # the checkout, a venv under /tmp, ...
               if a in ("--ro-bind", "--bind") and args[i + 1].startswith("/tmp/")}
    assert seen["tmp"] == sorted({course.sandbox.HOME.name} | rebound) and seen["run"] == []
    assert seen["home"] == str(course.sandbox.HOME) and seen["home_files"] == [] and seen["write_home"] == "writable"
    assert seen["write_checkout"] == seen["write_var_tmp"] == "Read-only file system"
    assert not (checkout / "written").exists()
    assert seen["loopback"] == "works" and [name for _, name in seen["interfaces"]] == ["lo"]
    assert seen["pids"] == [1, 2]  # bwrap, the init of the namespace, and the command
    assert int(seen["caps"], 16) == 0
    assert _marked(marker) == []


def test_the_sandbox_switch_and_a_missing_bwrap(built, monkeypatch, capsys):
    """--sandbox none never looks for bwrap; a missing bwrap is an error for --sandbox bwrap and, with
    WORKBOOK_REQUIRE_SANDBOX=1, for auto, else auto warns and grades without it. On the command line the error
    names bwrap and comes before otter starts (exit status 2)."""
    sandbox = course.sandbox
    missing = "/nonexistent/bwrap"
    monkeypatch.setenv(sandbox.BWRAP_ENV, missing)
    monkeypatch.delenv(sandbox.REQUIRE_ENV, raising=False)
    assert sandbox.choose("none") is None and capsys.readouterr().err == ""
    with pytest.raises(sandbox.SandboxUnavailable, match="needs bubblewrap \\(bwrap; --sandbox bwrap\\), but "
                                                         "/nonexistent/bwrap does not exist \\(WORKBOOK_BWRAP\\)"):
        sandbox.choose("bwrap")
    assert sandbox.choose("auto") is None
    assert "warning: grading without a sandbox, since /nonexistent/bwrap does not exist" in capsys.readouterr().err
    monkeypatch.setenv(sandbox.REQUIRE_ENV, "1")
    with pytest.raises(sandbox.SandboxUnavailable, match="WORKBOOK_REQUIRE_SANDBOX=1"):
        sandbox.choose("auto")
    assert sandbox.choose("none") is None
    out, _ = built
    start = time.monotonic()
    run = subprocess.run([sys.executable, str(REPO / "assignments" / "course.py"), "grade", ATTACKED,
                          str(out / ATTACKED / "autograder" / f"{ATTACKED}.ipynb"), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("error: grading in a sandbox needs bubblewrap (bwrap; WORKBOOK_REQUIRE_SANDBOX=1), "
                                 "but /nonexistent/bwrap does not exist"), run.stderr
    assert time.monotonic() - start < 60
