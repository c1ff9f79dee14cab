"""The otter-grader course assignments (assignments/, docs/teaching.md), built and graded for real.

For each assignment, one worker process runs `otter assign` on the master notebook and grades three
submissions with `otter run` (through assignments/course.py): the solutions, the blank student notebook and
the solutions with one planted mistake. Two workers share the four assignments; otter is imported before
they fork, so each pays for its notebooks' kernels only. Grading a notebook that is not a submission of
the assignment is refused before otter starts.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("course", REPO / "assignments" / "course.py")
course = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(course)

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


def _build_and_grade(name: str, out: str) -> dict:
    """Worker: otter assign NAME into OUT, then grade the solutions, the blank student notebook and a planted
    mistake. Returns the three gradings."""
    out = Path(out)
    dest = course.build(name, out, html=False, run_tests=False, quiet=True)
    solution = dest / "autograder" / f"{name}.ipynb"
    planted = _plant(solution, out / f"{name}-planted.ipynb", *PLANTED[name][1:])
    blank = dest / "student" / f"{name}.ipynb"
    return {"solution": course.grade(name, solution, out), "blank": course.grade(name, blank, out),
            "planted": course.grade(name, planted, out)}


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
            futures = {name: pool.submit(_build_and_grade, name, str(out)) for name in course.assignments()}
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
    _, results = built
    question = PLANTED[name][0]
    expected = dict(POINTS[name][0], **{question: 0})
    assert _scores(results[name]["planted"]) == expected


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
    for cell in hidden:  # e.g. the comparison with lib on fresh random inputs
        seed_line = next(line for line in cell.splitlines() if "default_rng" in line)
        assert seed_line.strip() not in student_text
    # ... while the autograder holds every hidden test
    import zipfile

    with zipfile.ZipFile(course.autograder_zip(name, out)) as archive:
        tests = "".join(archive.read(n).decode() for n in archive.namelist() if n.startswith("tests/"))
    assert tests.count("'hidden': True") == len(hidden)


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
        for question, cells in tests.items():
            hidden = [cell for cell in cells if HIDDEN.match(cell)]
            assert len(hidden) == 1 and len(cells) > len(hidden), (name, question)
            assert "default_rng" in hidden[0] and "lib" in hidden[0], (name, question)  # fresh random inputs vs lib


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
    cases = [(["grade", "02_crel", str(tmp_path / "missing.ipynb")], "does not exist"),
             (["grade", "02_crel", str(tmp_path / "notes.ipynb")], "is not a Jupyter notebook"),
             (["grade", "02_crel", str(tmp_path / "answers.txt")], "must be a notebook"),
             (["grade", "05_nothing", str(tmp_path / "notes.ipynb")], "unknown assignment '05_nothing'")]
    for argv, message in cases:
        run = subprocess.run([sys.executable, str(REPO / "assignments" / "course.py"), *argv], capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, (argv, run.stderr)
    submission = tmp_path / "submission.ipynb"
    submission.write_text(json.dumps({"cells": [], "metadata": {"otter": {"assignment_name": "02_crel"}}}))
    with pytest.raises(course.CourseError, match="run `make assignments` first"):
        course.grade("02_crel", submission, tmp_path / "nowhere")


def _is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError):  # a parent is not a package
        return False


def test_docs_and_masters_name_lib_by_its_current_paths():
    """No flat module name of the first layout (lib.stats, ...: aliases kept for old code) in what the course
    tells students and instructors; every lib.X.Y named there exists."""
    import importlib

    import lib

    texts = {"docs/teaching.md": (REPO / "docs" / "teaching.md").read_text()}
    texts.update({name: course.master_path(name).read_text() for name in course.assignments()})
    names = {n for text in texts.values() for n in re.findall(r"\blib(?:\.[A-Za-z_]\w*)+", text)}
    assert "lib.prcurves.benjamini_hochberg" in names or "lib.prcurves.stats.benjamini_hochberg" in names
    stale = sorted(n for n in names if any(n == old or n.startswith(old + ".") for old in lib.MOVED_MODULES))
    assert not stale, f"old module paths: {stale}"
    for name in sorted(names):
        parts = name.split(".")
        module = next(".".join(parts[:i]) for i in range(len(parts), 0, -1) if _is_module(".".join(parts[:i])))
        obj = importlib.import_module(module)
        for attr in parts[len(module.split(".")):]:
            assert hasattr(obj, attr), f"{name}: {module} has no {attr}"
            obj = getattr(obj, attr)
