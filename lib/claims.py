"""The claims ledger: each paper's claims, what we measure for each, and the verdict the run computes.

Each paper's package declares its claims once (`lib.<paper>.claims.CLAIMS`): an id, the paper's words and where they
are, the paper's number, the quantity we measure, and a `decide` function that reads the run's recorded results (the
glued values of the executed notebook, `lib.glue.read_results`) and returns a `Verdict`: our value with its
interval, the verdict, and why. The verdicts are four, and a sentence anywhere states no more than its claim's:

- **holds**: the rule the claim names decides for it at our scale (an interval on the claimed side, ...);
- **fails**: the rule decides against it; `why` gives the measured cause where one is known;
- **undecided**: neither, at our scale; `why` says what would decide it (more seeds, a larger sample, ...);
- **not testable offline**: what the claim needs is not on this machine (a model, a dataset, a GPU); `why` names it.

A claim whose stage the run skipped (a preset that does not compute it) is *undecided* with "not measured by this
run", never a guess; so is a claim whose value no notebook records yet (`need_record`), and its `why` names the
record that would decide it. `ledger_list` renders a ledger for a notebook's last section and for the cross-paper page
(`lib.make.results` writes docs/results/claims.md from the executed notebooks).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lib.paths import PACKAGES

HOLDS, FAILS, UNDECIDED, OFFLINE = "holds", "fails", "undecided", "not testable offline"
VERDICTS = (HOLDS, FAILS, UNDECIDED, OFFLINE)


@dataclass(frozen=True)
class Verdict:
    """What the run decides about one claim: `verdict` (one of VERDICTS), `ours` (our value with its interval, as
    a reader sees it) and `why` (the rule that decided; for fails and undecided, the measured cause or what would
    decide it; for not testable offline, what is missing)."""

    verdict: str
    ours: str
    why: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if not self.why:
            raise ValueError("a verdict says why")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (module docstring). `decide` is None for a claim not testable offline: `missing` then
    says what it would need."""

    id: str
    where: str
    words: str
    paper: str
    measure: str
    decide: Callable[[Mapping[str, Any]], Verdict] | None = None
    missing: str = ""

    def __post_init__(self) -> None:
        if (self.decide is None) == (not self.missing):
            raise ValueError(f"claim {self.id}: give either `decide` or, for a claim not testable offline, `missing`")


# Each paper's ledger, by notebook (a registry by name: the core imports no paper package, `lib.store` does the same)
MODULES = {number: f"{package}.claims" for number, package in PACKAGES.items()}


def claims_of(number: str) -> tuple[Claim, ...]:
    """Notebook `number`'s claims (its package's CLAIMS)."""
    import importlib

    if number not in MODULES:
        raise KeyError(f"notebook {number!r} has no claims ledger (ledgers: {', '.join(MODULES)})")
    return importlib.import_module(MODULES[number]).CLAIMS


def stated(claim_id: str, results: Mapping[str, Any]) -> str:
    """"[04.conditional] **holds**": a claim and the verdict its notebook's `results` decide, as a page's sentence
    names it (a template's `claim("04.conditional")`; `stated_verdicts` reads it back)."""
    found = {c.id: v for c, v in judge(claims_of(claim_id[:2]), results)}
    if claim_id not in found:
        raise KeyError(f"no claim {claim_id!r} in notebook {claim_id[:2]}'s ledger")
    return f"[{claim_id}] **{found[claim_id].verdict}**"


class NotMeasured(KeyError):
    """A result the claim reads is absent from the run (its preset skipped the stage)."""


class NotRecorded(NotMeasured):
    """A result no notebook records yet, though its run could measure it: `record` says what a notebook would
    have to record for the claim to be decided."""

    def __init__(self, path: str, record: str) -> None:
        super().__init__(path)
        self.record = record


def need_record(results: Mapping[str, Any], *keys: str, record: str) -> Any:
    """`need`, for a result no notebook records yet: NotRecorded naming `record` (what a notebook would record)."""
    try:
        return need(results, *keys)
    except NotRecorded:
        raise
    except NotMeasured as err:
        raise NotRecorded(err.args[0], record) from None


def need(results: Mapping[str, Any], *keys: str) -> Any:
    """results[k1][k2]...; NotMeasured naming the path when the run did not record it (absent, None or empty)."""
    value: Any = results
    for i, key in enumerate(keys):
        if not isinstance(value, Mapping) or key not in value or value[key] is None:
            raise NotMeasured("/".join(keys[:i + 1]))
        value = value[key]
    if isinstance(value, (Mapping, list, tuple)) and not value:  # an empty record: its stage was skipped
        raise NotMeasured("/".join(keys))
    return value


def judge(claims: Iterable[Claim], results: Mapping[str, Any]) -> list[tuple[Claim, Verdict]]:
    """Each claim with its verdict on the run's `results` (module docstring)."""
    out = []
    for claim in claims:
        if claim.decide is None:
            out.append((claim, Verdict(OFFLINE, "—", claim.missing)))
            continue
        try:
            verdict = claim.decide(results)
        except NotRecorded as err:
            verdict = Verdict(UNDECIDED, "not measured by this run", f"the notebook does not record {err.args[0]}; "
                                                                    f"to decide it, it would record {err.record}")
        except NotMeasured as err:
            verdict = Verdict(UNDECIDED, "not measured by this run", f"this run did not record {err.args[0]} "
                                                                    "(its preset skips the stage)")
        out.append((claim, verdict))
    return out


# ------------------------------------------------------------------------------------------------------------
# Rules shared by the papers' ledgers
# ------------------------------------------------------------------------------------------------------------
def side_of(lower: float, upper: float, *, above: float = 0.0) -> str:
    """HOLDS when the interval [lower, upper] lies above `above`, FAILS when it lies below, else UNDECIDED."""
    if lower > above:
        return HOLDS
    if upper < above:
        return FAILS
    return UNDECIDED


def t_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lower, upper): Student's t interval of the mean of replicates (seeds, re-splits), at `level`."""
    from scipy.stats import t as student

    x = [float(v) for v in values]
    if len(x) < 2:
        raise ValueError(f"a t interval needs at least 2 replicates, got {len(x)}")
    mean = sum(x) / len(x)
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1))
    half = float(student.ppf(0.5 + level / 2, len(x) - 1)) * sd / math.sqrt(len(x))
    return mean, mean - half, mean + half


def interval(value: float, lower: float, upper: float, digits: int = 3) -> str:
    """'0.347 [0.274, 0.419]'."""
    return f"{value:.{digits}f} [{lower:.{digits}f}, {upper:.{digits}f}]"


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % at z = 1.96)."""
    if trials <= 0:
        raise ValueError("trials must be positive")
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


# ------------------------------------------------------------------------------------------------------------
# The ledger as a reader sees it
# ------------------------------------------------------------------------------------------------------------
def ledger_list(judged: Iterable[tuple[Claim, Verdict]]) -> str:
    """The ledger as Markdown a page of any width reads: one item per claim, its id and verdict first, then the
    paper's words and number, ours with its interval, and why, code names said as the reader's names
    (`lib.tables.in_readers_words`)."""
    from lib.tables import in_readers_words

    items = []
    for claim, v in judged:
        items.append(f"- **{claim.id} · {v.verdict}.** {claim.words} ({claim.where}; paper: {claim.paper}).  \n"
                     f"  *Measured:* {claim.measure}. *Ours:* {v.ours}.  \n  *Why:* {v.why}.")
    return in_readers_words("\n".join(items))


VERDICT_MARK = re.compile(r"\[(?P<id>\d\d\.[a-z0-9-]+)\] \*{0,2}"
                          r"(?P<verdict>holds|fails|undecided|not testable offline)")
ITEM = re.compile(r"^- \*\*(?P<id>\d\d\.[a-z0-9-]+) · (?P<verdict>[a-z ]+)\.\*\*", re.M)


def bullet(judged: Iterable[tuple[Claim, Verdict]], ids: Iterable[str]) -> str:
    """The claims `ids` of a ledger as a reader's sentences: "[id] verdict: the claim (ours; why)", joined."""
    from lib.tables import in_readers_words

    by_id = {c.id: (c, v) for c, v in judged}
    return in_readers_words(" ".join(
        f"[{i}] **{by_id[i][1].verdict}**: {by_id[i][0].words.rstrip('.')} ({by_id[i][1].ours})." for i in ids))


def stated_verdicts(text: str) -> list[tuple[str, str]]:
    """(claim id, verdict) of each "[04.diadm-irs] holds" a text states (README, a page)."""
    return [(m["id"], m["verdict"]) for m in VERDICT_MARK.finditer(text)]


def page_verdicts(page: str) -> dict[str, str]:
    """{claim id: verdict} of a ledger as `ledger_list` writes it (docs/results/claims.md, a notebook's ledger)."""
    return {m["id"]: m["verdict"] for m in ITEM.finditer(page)}


def counts(judged: Iterable[tuple[Claim, Verdict]]) -> dict[str, int]:
    """{verdict: how many claims have it}, in VERDICTS' order."""
    found = [v.verdict for _, v in judged]
    return {verdict: found.count(verdict) for verdict in VERDICTS}
