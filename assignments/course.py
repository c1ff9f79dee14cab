"""Build and grade the course assignments (otter-grader), without Docker.

    python assignments/course.py build [NAME ...] [--out runs/assignments] [--no-html]
    python assignments/course.py grade NAME SUBMISSION [--out runs/assignments] [--json FILE]
    python assignments/course.py list

`build` runs `otter assign` on each master notebook `assignments/NAME/NAME.ipynb` into `OUT/NAME/`:
`student/NAME.ipynb` (hand this out), `autograder/` (the solutions notebook and otter's own zip),
`NAME-autograder.zip` (a stable copy of that zip) and `NAME-solutions.html` (the executed solutions).
otter assign grades the solutions with the autograder and fails if they miss a single point.

`grade` checks that SUBMISSION (a notebook, or a zip holding one) is a submission of assignment NAME
before it hands it to `otter run` (which executes it locally, with this environment's packages), then
prints the score of each autograded question. Written questions are graded by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_OUT = REPO / "runs" / "assignments"


class CourseError(Exception):
    """A problem the instructor can fix (unknown assignment, wrong or unreadable submission, no build)."""


def assignments() -> list[str]:
    """Names of the assignments: folders of assignments/ holding a master notebook of the same name."""
    return sorted(p.name for p in HERE.iterdir() if p.is_dir() and (p / f"{p.name}.ipynb").is_file())


def master_path(name: str) -> Path:
    if name not in assignments():
        raise CourseError(f"unknown assignment {name!r}; the assignments are: {', '.join(assignments())}.")
    return HERE / name / f"{name}.ipynb"


def manual_questions(name: str) -> list[str]:
    """Names of the written (manually graded) questions of an assignment, read from its master notebook."""
    nb = json.loads(master_path(name).read_text())
    names = []
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "raw" and text.lstrip().startswith("# BEGIN QUESTION") and "manual: true" in text:
            names += [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("name:")]
    return names


@contextlib.contextmanager
def _lib_importable():
    """Put the repository first on PYTHONPATH, so the kernels otter starts import this checkout's `lib`."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([old] if old else []))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def autograder_zip(name: str, out: Path = DEFAULT_OUT) -> Path:
    return Path(out) / name / f"{name}-autograder.zip"


def build(name: str, out: Path = DEFAULT_OUT, *, html: bool = True, run_tests: bool = True,
          quiet: bool = False) -> Path:
    """otter assign NAME into OUT/NAME (replacing it); returns that folder. RuntimeError from otter when
    the solutions do not pass their own tests (run_tests=True)."""
    master = master_path(name)
    import otter.assign  # imported late: otter takes seconds to import, and `grade` checks its input first

    dest = Path(out) / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sink = io.StringIO()
    with _lib_importable(), contextlib.redirect_stdout(sink if quiet else sys.stdout):
        otter.assign.main(str(master), str(dest), no_pdfs=True, no_run_tests=not run_tests)
    zips = sorted((dest / "autograder").glob(f"{name}-autograder_*.zip"))
    if len(zips) != 1:
        raise CourseError(f"otter assign left {len(zips)} autograder zips in {dest / 'autograder'}; expected 1.")
    shutil.copy(zips[0], autograder_zip(name, out))
    if html:
        with _lib_importable():
            subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute",
                            "--ExecutePreprocessor.timeout=600", str(dest / "autograder" / f"{name}.ipynb"),
                            "--output-dir", str(dest), "--output", f"{name}-solutions"], check=True,
                           capture_output=quiet)
    return dest


def read_submission(name: str, submission: str | Path) -> dict:
    """The submission's notebook (JSON), after checking that it is a notebook of assignment NAME.

    Raises CourseError with a message for the instructor otherwise; reads no more than the file itself.
    """
    master_path(name)
    path = Path(submission)
    if not path.is_file():
        raise CourseError(f"submission {path} does not exist.")
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                notebooks = [n for n in archive.namelist() if n.endswith(".ipynb") and "/." not in f"/{n}"]
                if len(notebooks) != 1:
                    raise CourseError(f"submission {path} must hold exactly one notebook; it holds {len(notebooks)}.")
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
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise CourseError(f"submission {path} is not a Jupyter notebook (no list of cells).")
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


def grade(name: str, submission: str | Path, out: Path = DEFAULT_OUT, *, quiet: bool = True) -> dict:
    """Grade one submission with `otter run`. Returns {"questions": {q: {"score", "possible"}}, "total",
    "possible", "manual": [written questions, graded by hand]}. CourseError on a bad submission."""
    read_submission(name, submission)
    ag_zip = autograder_zip(name, out)
    if not ag_zip.is_file():
        raise CourseError(f"no autograder for {name} at {ag_zip}: run `make assignments` first.")
    import otter.run

    sink = io.StringIO()
    with _lib_importable(), contextlib.redirect_stdout(sink if quiet else sys.stdout):
        results = otter.run.main(str(Path(submission).resolve()), autograder=str(ag_zip), output_dir=None,
                                 no_logo=True)
    if results.catastrophic_error is not None:
        raise CourseError(f"otter could not grade {submission}: {results.catastrophic_error}")
    questions = {q: {"score": float(results.get_result(q).score), "possible": float(results.get_result(q).possible)}
                 for q in results.test_files}
    return {"assignment": name, "submission": str(submission), "questions": questions,
            "total": float(results.total), "possible": float(results.possible), "manual": manual_questions(name)}


def _report(result: dict) -> str:
    lines = [f"{result['assignment']}: {result['submission']}"]
    lines += [f"  {q:<6} {r['score']:g} / {r['possible']:g}" for q, r in sorted(result["questions"].items())]
    lines.append(f"  autograded total: {result['total']:g} / {result['possible']:g}")
    if result["manual"]:
        lines.append(f"  written questions, to grade by hand: {', '.join(result['manual'])}")
    return "\n".join(lines)


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
    p_grade.add_argument("--json", type=Path, help="also write the scores to this JSON file")
    sub.add_parser("list", help="list the assignments")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            print("\n".join(assignments()))
        elif args.command == "build":
            for name in args.names or assignments():
                master_path(name)
            for name in args.names or assignments():
                print(f"== {name}", flush=True)
                print(f"   -> {build(name, args.out, html=not args.no_html)}", flush=True)
        else:
            result = grade(args.name, args.submission, args.out)
            print(_report(result))
            if args.json:
                args.json.write_text(json.dumps(result, indent=2))
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
