"""The hidden tests of the course assignments: their inputs, lib's answers, and the comparison.

Each autograded question has one `Hidden`: a seed and a generator of fresh inputs (none of them in the
student notebook), the `lib` function the student re-implements (the reference), and how close an answer
must be. `course.py build` draws the inputs and computes lib's answers once, outside any kernel, and writes
them beside the autograder: NAME-hidden-inputs.json and NAME-hidden-expected.json. `course.py grade` stages
the inputs (only) for the submission's kernel, where the master's hidden test cell calls
`assignments.kernel.record_hidden(NAME, QUESTION, the student's function)` to record the outputs, and then
compares them here with the expected answers (`verdict`). The student's kernel never holds an expected value,
and patching `lib` there changes nothing the grade depends on.

Change a hidden test here, then rebuild (`make assignments`): the expected answers are part of the build.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:  # imported as `assignments.hidden` (course.py, the tests) ...
    from assignments.kernel import decode, encode
except ImportError:  # ... or as a sibling module
    from kernel import decode, encode


@dataclass(frozen=True)
class Hidden:
    """One question's hidden test.

    function: the student's function, as named in the notebook; seed, cases: cases(np.random.default_rng(seed))
    gives the list of argument tuples; reference(*args): lib's answer (JSON data, as `encode` writes it);
    check(got, expected) -> None when the student's output (decoded) is right, else what is wrong;
    lib: the dotted names of the lib functions the question re-implements, which the submission must leave
    alone.
    """

    function: str
    seed: int
    cases: Callable[[np.random.Generator], list[tuple]]
    reference: Callable[..., Any]
    check: Callable[[Any, Any], str | None]
    lib: tuple[str, ...]


# ---------------------------------------------------------------------------------------------- comparisons


def _array(value: Any, what: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise _Wrong(f"{what} is not an array of numbers ({err})") from None


class _Wrong(Exception):
    """An output that is wrong in kind (not a number, wrong shape, missing key): its message says how."""


def _compare(got: Any, want: Any, close: Callable[[np.ndarray, np.ndarray], bool]) -> bool:
    """True if `got` has `want`'s structure (the keys of a dict, the shape of an array) and `close` holds for
    each array. Raises _Wrong when the structure differs."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            raise _Wrong(f"returned {type(got).__name__}, not a dict with keys {sorted(want)}")
        missing = sorted(set(want) - set(got))
        if missing:
            raise _Wrong(f"the returned dict has no key {missing[0]!r}")
        return all(_compare(got[key], want[key], close) for key in want)
    g, w = _array(got, "the output"), _array(want, "lib's answer")
    if g.shape != w.shape:
        raise _Wrong(f"returned shape {g.shape}, expected {w.shape}")
    return bool(close(g, w))


def equal(got: Any, want: Any) -> bool:
    """Exactly lib's answer (infinities included)."""
    return _compare(got, want, np.array_equal)


def close(rtol: float = 1e-5, atol: float = 1e-8) -> Callable[[Any, Any], bool]:
    """np.allclose(got, want, rtol, atol) with the same shape (no broadcasting)."""
    return lambda got, want: _compare(got, want, lambda g, w: np.allclose(g, w, rtol=rtol, atol=atol))


def within(absolute: float, relative: float) -> Callable[[Any, Any], bool]:
    """|got - want| <= absolute + relative * |want|, elementwise, with the same shape."""
    def near(g: np.ndarray, w: np.ndarray) -> bool:
        return bool(np.all(np.abs(g - w) <= absolute + relative * np.abs(w)))

    return lambda got, want: _compare(got, want, near)


def one_of(got: Any, want: Any) -> bool:
    """`got` is a number among the list `want` (the answers as good as lib's)."""
    return _compare(got, 0.0, lambda g, w: True) and float(got) in [float(x) for x in want]


# ----------------------------------------------------------------------------------------- the questions


def _neighbour_cases(rng: np.random.Generator) -> list[tuple]:
    cases = []
    for _ in range(20):
        d, k = int(rng.integers(1, 5)), int(rng.integers(1, 12))
        real = rng.standard_normal((int(rng.integers(6, 40)), d))
        fake = rng.standard_normal((int(rng.integers(6, 40)), d))
        cases.append((real, fake, rng.standard_normal((25, d)) * 1.5, k))
    return cases


def _neighbour_reference(real, fake, test, k):
    from lib import prcurves

    return encode(prcurves.neighbour_scores(real_train=real, fake_train=fake, test=test, k=k))


def _frontier_cases(rng: np.random.Generator) -> list[tuple]:
    lambdas = np.tan(np.linspace(1e-10, np.pi / 2 - 1e-10, 60))[1:-1]  # strictly inside (0, inf)
    cases = []
    for _ in range(20):
        g = int(rng.integers(1, 30))
        fpr = np.concatenate([rng.uniform(size=g), [0.0, 1.0]])
        fnr = np.concatenate([rng.uniform(size=g), [1.0, 0.0]])
        cases.append((fpr, fnr, lambdas))
    return cases


def _frontier_reference(fpr, fnr, lambdas):
    from lib import prcurves

    curve = prcurves.frontier(fpr=fpr, fnr=fnr, lambdas=lambdas)
    return [encode(curve["precision"]), encode(curve["recall"])]


def _bh_cases(rng: np.random.Generator) -> list[tuple]:
    cases = []
    for _ in range(30):
        m = int(rng.integers(1, 400))
        cases.append((np.where(rng.uniform(size=m) < 0.3, rng.uniform(0, 0.01, m), rng.uniform(size=m)),))
    return cases


def _bh_reference(pvalues):
    from lib.prcurves import stats

    return encode(stats.benjamini_hochberg(pvalues))


def _radius_cases(rng: np.random.Generator) -> list[tuple]:
    cases = []
    for _ in range(300):
        n, alpha = int(rng.integers(1, 80)), float(rng.uniform(0.01, 0.6))
        cases.append((rng.exponential(size=n), alpha))
    return cases


def _radius_reference(distances, alpha):
    from lib import crel

    return encode(crel.conformal_radius(distances, alpha, allow_infinite=True))


def _region_cases(rng: np.random.Generator) -> list[tuple]:
    cases = []
    for _ in range(40):
        r, k = int(rng.integers(2, 4)), int(rng.integers(3, 13))
        U = rng.standard_normal((k, r))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        centre = rng.standard_normal(r)
        q = U @ centre - rng.uniform(0.1, 1.0, k)  # the centre lies inside, so the region is not empty
        cases.append((centre + 3 * rng.standard_normal(r), U, q))
    return cases


def _region_reference(z, U, q):
    from lib import crel

    return encode(crel.distance_to_region(z, U, q)[0])


def _probability_cases(rng: np.random.Generator, ties_in_q: bool) -> list[tuple]:
    cases = []
    for _ in range(10):
        n, k = int(rng.integers(1, 50)), int(rng.integers(2, 12))
        if ties_in_q:
            p, q = rng.dirichlet(np.ones(k), size=n), rng.dirichlet(np.ones(k), size=n)
            q[: n // 3, :2] = 0.5 / k  # ties in q: the first class wins
            q /= q.sum(axis=1, keepdims=True)
        else:
            p = rng.dirichlet(np.full(k, 0.5), size=n) * (rng.uniform(size=(n, k)) > 0.3)  # zeros: 0 log 0
            p[:, 0] += 1e-3
            p /= p.sum(axis=1, keepdims=True)
            q = rng.dirichlet(np.ones(k), size=n)
        cases.append((p, q))
    return cases


def _decompose_reference(loss: str) -> Callable[..., Any]:
    def reference(p, q):
        from lib import regret

        parts = regret.decompose(p, q, loss)
        return encode({key: parts[key] for key in "AET"})

    return reference


def _aurec_cases(rng: np.random.Generator) -> list[tuple]:
    cases = []
    for _ in range(20):
        n = int(rng.integers(2, 300))
        cases.append((rng.standard_normal(n), rng.exponential(size=n)))
    # tied scores: a stable sort keeps index order. Several hundred of them, since NumPy sorts short arrays
    # by insertion (stable) on some CPUs, where an unstable-sort mistake would pass with a dozen ties.
    cases.append((np.repeat([0.3, 0.1, 0.2], 200), rng.exponential(size=600)))
    cases.append((rng.integers(0, 8, size=500) / 8, rng.exponential(size=500)))
    return cases


def _aurec_reference(scores, regret_values):
    from lib import regret

    return encode(regret.aurec(scores, regret_values))


def _retrieval_cases(rng: np.random.Generator) -> list[tuple]:
    cases = []
    for _ in range(5):
        d = int(rng.integers(2, 20))
        cases.append((rng.standard_normal((int(rng.integers(10, 300)), d)), rng.standard_normal((80, d))))
    return cases


def _retrieval_reference(train, queries):
    from lib import irs

    return encode(irs.nearest_train(train, queries))


def _count_cases(rng: np.random.Generator) -> list[tuple]:
    cases = []
    for _ in range(60):
        n_train = int(rng.integers(2, 5000))
        n_samples = int(rng.integers(2, 2 * n_train + 2))
        cases.append((n_train, n_samples, int(rng.integers(1, min(n_samples, n_train) + 1))))
    return cases


def _mle_reference(n_train, n_samples, k):
    """Every s whose likelihood is as high as that of lib's MLE (to 1e-9 relative): each is a right answer."""
    from lib import irs

    s = np.arange(k, n_train + 1)
    log_l = irs.log_likelihood(n_samples, k, s)
    best = irs.log_likelihood(n_samples, k, np.array([irs.mle_reachable(n_train, n_samples, k)]))[0]
    return [int(x) for x in s[log_l >= best - 1e-9 * max(1.0, abs(best))]]


def _moment_reference(n_train, n_samples, k):
    from lib import irs

    return encode(irs.moment_estimate(n_train, n_samples, k))


SPECS: dict[str, dict[str, Hidden]] = {
    "01_pr_curves": {
        "q1": Hidden("neighbour_counts", 2026_01_01, _neighbour_cases, _neighbour_reference, equal,
                     ("lib.prcurves.neighbour_scores",)),
        "q2": Hidden("pr_frontier", 2026_01_02, _frontier_cases, _frontier_reference, close(),
                     ("lib.prcurves.frontier",)),
        "q4": Hidden("bh_adjust", 2026_01_04, _bh_cases, _bh_reference, close(),
                     ("lib.prcurves.benjamini_hochberg", "lib.prcurves.stats.benjamini_hochberg")),
    },
    "02_crel": {
        "q1": Hidden("conformal_radius", 2026_02_01, _radius_cases, _radius_reference, equal,
                     ("lib.crel.conformal_radius",)),
        "q2": Hidden("distance_to_region", 2026_02_02, _region_cases, _region_reference, within(1e-5, 1e-4),
                     ("lib.crel.distance_to_region",)),
    },
    "03_regret": {
        "q1": Hidden("decompose_ce", 2026_03_01, lambda rng: _probability_cases(rng, ties_in_q=False),
                     _decompose_reference("ce"), close(), ("lib.regret.decompose",)),
        "q2": Hidden("decompose_zero_one", 2026_03_02, lambda rng: _probability_cases(rng, ties_in_q=True),
                     _decompose_reference("zero_one"), close(), ("lib.regret.decompose",)),
        "q3": Hidden("aurec", 2026_03_03, _aurec_cases, _aurec_reference, close(), ("lib.regret.aurec",)),
    },
    "04_irs": {
        "q1": Hidden("nearest_train", 2026_04_01, _retrieval_cases, _retrieval_reference, equal,
                     ("lib.irs.nearest_train",)),
        "q2": Hidden("mle_reachable", 2026_04_02, _count_cases, _mle_reference, one_of, ("lib.irs.mle_reachable",)),
        "q3": Hidden("moment_estimate", 2026_04_03, _count_cases, _moment_reference, close(rtol=1e-6),
                     ("lib.irs.moment_estimate",)),
    },
}


# ------------------------------------------------------------------------------------ build and grade


def input_path(name: str, folder: Path) -> Path:
    return Path(folder) / f"{name}-hidden-inputs.json"


def expected_path(name: str, folder: Path) -> Path:
    return Path(folder) / f"{name}-hidden-expected.json"


def write(name: str, folder: Path) -> None:
    """Draw the hidden inputs of assignment `name` and compute lib's answers; write both into `folder`."""
    inputs, expected = {}, {}
    for question, spec in SPECS[name].items():
        cases = spec.cases(np.random.default_rng(spec.seed))
        inputs[question] = {"assignment": name, "question": question, "function": spec.function,
                            "lib": list(spec.lib), "cases": [encode(list(args)) for args in cases]}
        expected[question] = [spec.reference(*args) for args in cases]
    input_path(name, folder).write_text(json.dumps(inputs))
    expected_path(name, folder).write_text(json.dumps(expected))


def stage(name: str, folder: Path, dest: Path) -> None:
    """Copy the built hidden inputs of `name` (from `folder`) into `dest`, one QUESTION-inputs.json each, for
    the kernel. The expected answers are not copied."""
    dest.mkdir(parents=True, exist_ok=True)
    for question, staged in json.loads(input_path(name, folder).read_text()).items():
        (dest / f"{question}-inputs.json").write_text(json.dumps(staged))


# what reading or comparing a record the submission wrote may raise: bad JSON or types, missing keys, nesting
# deeper than the interpreter recurses, numbers too large to convert
MALFORMED = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)


def verdict(name: str, question: str, record_path: Path, expected: list) -> str | None:
    """None when the recorded outputs of the hidden test (`record_path`, written in the kernel) match lib's
    answers `expected`; else the reason, for the report."""
    spec = SPECS[name][question]
    if not record_path.is_file():
        return "the hidden test left no record (the submission stopped it or changed the grader's code)"
    try:
        record = json.loads(record_path.read_text())
        outputs = [decode(item) for item in record["outputs"]]
        replaced, error = list(record["lib_replaced"]), record["error"]
    except MALFORMED as err:  # written by the submission's kernel: anything may be there (nesting 100 000 deep)
        return f"the hidden test's record is malformed ({type(err).__name__}: {str(err)[:200]})"
    if replaced:
        return (f"the submission replaced {', '.join(replaced)}, which the autograder's hidden test uses as the "
                f"reference: not graded (read the submission)")
    if error:
        return f"{spec.function} raised an error on {error}"
    if len(outputs) != len(expected):
        return f"the hidden test recorded {len(outputs)} outputs for {len(expected)} inputs"
    wrong = []
    for index, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        try:
            right = spec.check(got, decode(want))
        except _Wrong as err:
            return f"{spec.function} on hidden input {index + 1}: {err}"
        except MALFORMED as err:
            return f"the hidden test's output {index + 1} is malformed ({type(err).__name__}: {str(err)[:200]})"
        if not right:
            wrong.append(index)
    if not wrong:
        return None
    first = wrong[0]
    return (f"{spec.function} is wrong on {len(wrong)} of {len(expected)} hidden inputs; the first, input "
            f"{first + 1}: got {_short(outputs[first])}, expected {_short(decode(expected[first]))}")


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_short(item)}" for key, item in value.items()) + "}"
    try:
        text = np.array2string(np.asarray(value, dtype=float), precision=6, threshold=6, edgeitems=2)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)[:200]
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."
