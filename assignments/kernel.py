"""What runs inside the submission's kernel while `assignments/course.py grade` grades it.

- `install_time_limits`: the time limit of each cell and of each test case (a cell inserted first by course.py
  calls it);
- `record_hidden`: the body of every hidden test. It calls the student's function on the hidden inputs that
  course.py staged for this grading and writes what the function returns to a file. It decides nothing:
  lib's answers to those inputs were computed when the assignment was built and stay with course.py, which
  compares outside this kernel (`assignments/hidden.py`). So the kernel holds no expected value that the
  submission could read (from a caller's frame, say), and a submission that replaces a `lib` function
  changes nothing the grade depends on (and is caught doing it).
- `encode` / `decode`: the JSON form of those inputs and outputs (plain numbers, nested lists, arrays with
  their dtype); nothing is unpickled on either side.

Imported in the kernel as `assignments.kernel` (course.py puts the repository on PYTHONPATH). Light on
purpose: NumPy and the standard library only.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HIDDEN_DIR_ENV = "COURSE_HIDDEN_DIR"
LIB_DIR = Path(__file__).resolve().parents[1] / "lib"


class TimeLimitExceeded(BaseException):
    """A cell or a test case of the submission ran over the time limit. A BaseException (as KeyboardInterrupt),
    so that an `except Exception` in the submission does not swallow it."""


def install_time_limits(seconds: float) -> None:
    """Stop each cell of the submission and each test case after `seconds` (SIGALRM raises TimeLimitExceeded
    in the running code). A test case that runs over fails, and the later cases of its question are not run;
    the cell that runs the tests goes on with the next question. Time spent in tests does not count against
    the cell that runs them."""
    import otter.test_files.ok_test as ok_test
    from IPython import get_ipython

    def alarm(signum, frame):
        raise TimeLimitExceeded(f"ran over the time limit of {seconds:g} s")

    signal.signal(signal.SIGALRM, alarm)
    events = get_ipython().events
    events.register("pre_run_cell", lambda info: signal.setitimer(signal.ITIMER_REAL, seconds))
    events.register("post_run_cell", lambda result: signal.setitimer(signal.ITIMER_REAL, 0))
    ok_test.run_doctest = _time_limited(ok_test.run_doctest, seconds)


def _time_limited(run_doctest: Callable, seconds: float) -> Callable:
    """otter's runner of one test case (name "q1 0", doctest text, globals) -> (passed, message), with a limit."""
    timed_out: set[str] = set()

    def run(name: str, doctest_string: str, global_environment: dict) -> tuple[bool, str]:
        question = name.rsplit(" ", 1)[0]
        if question in timed_out:
            return False, f"not run: an earlier test of {question} ran over the time limit"
        cell_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            passed, message = run_doctest(name, doctest_string, global_environment)
        except TimeLimitExceeded as err:  # the alarm went off in doctest's own code, not in the example
            passed, message = False, f"{TimeLimitExceeded.__name__}: {err}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, *cell_timer)  # what the cell had left
        if not passed and TimeLimitExceeded.__name__ in message:
            timed_out.add(question)
        return passed, message

    return run


def record_hidden(assignment: str, question: str, function: Callable) -> None:
    """The hidden test of `question`: call `function` on each staged hidden input and write its outputs (and
    which of the question's `lib` functions the submission replaced) to QUESTION-outputs.json beside the
    inputs. Stops at the first input on which `function` raises, and records the error.

    Raises RuntimeError outside `course.py grade` (no staged inputs): the hidden tests are graded there only.
    """
    folder = os.environ.get(HIDDEN_DIR_ENV)
    if not folder:
        raise RuntimeError("hidden tests are graded by `python assignments/course.py grade` only: it stages "
                           "their inputs and compares the outputs with lib's answers outside this kernel.")
    staged = json.loads((Path(folder) / f"{question}-inputs.json").read_text())
    if staged["assignment"] != assignment or staged["question"] != question:
        raise RuntimeError(f"the hidden inputs staged for {question} belong to {staged['assignment']} "
                           f"{staged['question']}, not to {assignment} {question}.")
    record = {"assignment": assignment, "question": question, "lib_replaced": replaced_lib(staged["lib"]),
              "outputs": [], "error": None}
    for index, args in enumerate(staged["cases"]):
        try:
            record["outputs"].append(encode(function(*decode(args))))
        except Exception as err:  # noqa: BLE001 (any error of the student's function is a result)
            record["error"] = f"hidden input {index + 1}: {type(err).__name__}: {err}"
            break
    (Path(folder) / f"{question}-outputs.json").write_text(json.dumps(record))


def replaced_lib(names: list[str]) -> list[str]:
    """Those of the dotted `lib` function names (e.g. "lib.crel.conformal_radius") that no longer name a function
    defined in lib's source, here or in the module that defines it."""
    return [name for name in names if not _genuine_lib_function(name)]


def _genuine_lib_function(name: str) -> bool:
    module_name, attr = name.rsplit(".", 1)
    try:
        found = getattr(importlib.import_module(module_name), attr)
        home = getattr(sys.modules[found.__module__], attr)
        source = Path(found.__code__.co_filename).resolve()
    except (ImportError, AttributeError, KeyError, TypeError):
        return False
    return home is found and found.__name__ == attr and LIB_DIR in source.parents


def encode(value: Any) -> Any:
    """`value` as JSON data: numbers stay numbers, lists and tuples become lists, a dict {"dict": {...}}, a
    NumPy array {"ndarray": nested list, "dtype", "shape"}. TypeError for anything else (None, strings, objects)."""
    if isinstance(value, dict):
        return {"dict": {str(key): encode(item) for key, item in value.items()}}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"returned an array of {value.dtype}, not of numbers")
        return {"ndarray": value.tolist(), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise TypeError(f"returned {type(value).__name__}, not a number or an array")


def decode(data: Any) -> Any:
    """The inverse of `encode` (lists stay lists)."""
    if isinstance(data, list):
        return [decode(item) for item in data]
    if isinstance(data, dict) and "ndarray" in data:
        return np.asarray(data["ndarray"], dtype=np.dtype(data["dtype"])).reshape(data["shape"])
    if isinstance(data, dict):
        return {key: decode(item) for key, item in data["dict"].items()}
    return data
