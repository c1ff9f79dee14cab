"""Declared stages: every expensive result of a notebook, listed once, in its package's `stages` module.

A `Stage` is one kind of expensive result: the notebook whose cache namespace and stored layer hold its entries
(`namespace`), the pattern its entries' labels match (`pattern`, as `fnmatch` reads it: "curves-*"), how it is
saved (`form`: "npz" arrays or a torch-saved object), what its compute returns (`returns`: a class, or a *record*, a
`TypedDict` that names each field of the dict and its type, so that a reader of the stage's entries knows what
they hold without loading one), and its policy (`lib.run`'s module docstring):

- `STORED`: a result of the notebook's stored layer (results/<NN>/<PRESET>/);
- `CACHED`: a cache entry, recomputed under FORCE_RECOMPUTE;
- `PINNED`: an input later stages build on (data, features, trained generators), kept under FORCE_RECOMPUTE;
- `ON_REQUEST`: cached, and stored where the caller builds a stored result on it (`keep=True`): notebook 02's
  models are stored for the run its figures show and cached for the others (the layer keeps what it shows),
  notebook 03's DDU predictions of the synthetic task are stored because they move with the processor. The
  declaration says why; a stage of another policy refuses `keep`.

A run executes a stage (`Run.stage(STAGE, label, key, compute)`): the namespace, the file form and the policy come
from the declaration, never from the call site, and FORCE_RECOMPUTE, DEVICE and PROGRESS apply the same way to
every stage. A label its stage's pattern does not match, or that a more particular stage claims ("toy-*" and
"toy-coverage-k-*": the longer fixed start wins), is refused, so each entry of a cache or a stored layer belongs
to exactly one declared stage (`stage_of`), which `make status` names.

The registry is by namespace; the packages register on import (`lib.run` imports no paper package, as `lib.store`
and `lib.claims` do not), and `stages_of` imports the notebook's `stages` module (`MODULES`).
"""

from __future__ import annotations

import importlib
import types
import typing
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import numpy as np

from lib.cache import Entry, cache_entry
from lib.paths import PACKAGES

STORED, CACHED, PINNED, ON_REQUEST = "stored", "cached", "pinned", "on request"
POLICIES = (STORED, CACHED, PINNED, ON_REQUEST)
FORMS = {"npz": ".npz", "torch": ".pt"}
# Each notebook's declarations (a registry by name: the core imports no paper package)
MODULES = {number: f"{package}.stages" for number, package in PACKAGES.items()}
_REGISTRY: dict[str, dict[str, Stage]] = {}


@dataclass(frozen=True)
class Stage:
    """One declared expensive result (module docstring). `what`: one line for `make status` and the docs;
    `why`: for an ON_REQUEST stage, which entries are stored and why; `allow`: the classes a torch entry may
    hold beyond plain data (`lib.cache.load_torch`)."""

    namespace: str
    pattern: str
    form: str
    policy: str
    returns: type | tuple[type, ...]
    what: str
    why: str = ""
    allow: tuple = ()

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ValueError(f"stage {self.pattern!r}: form {self.form!r} is not one of {sorted(FORMS)}")
        if self.policy not in POLICIES:
            raise ValueError(f"stage {self.pattern!r}: policy {self.policy!r} is not one of {list(POLICIES)}")
        if (self.policy == ON_REQUEST) != bool(self.why):
            raise ValueError(f"stage {self.pattern!r}: an ON_REQUEST stage says why (and only it)")
        kinds = self.returns if isinstance(self.returns, tuple) else (self.returns,)
        if self.form == "npz" and not all(kind is dict or typing.is_typeddict(kind) for kind in kinds):
            raise ValueError(f"stage {self.pattern!r}: an npz stage returns a dict of arrays")
        if self.form == "npz" and any(hint is not np.ndarray for kind in kinds if typing.is_typeddict(kind)
                                      for hint in typing.get_type_hints(kind).values()):
            raise ValueError(f"stage {self.pattern!r}: an npz stage's record holds arrays only (np.ndarray fields)")

    def problem(self, value: Any) -> str | None:
        """Why `value` is not what the stage declares it returns (a record: a dict with its required fields, no
        other, each of its declared type), or None when it is."""
        kinds = self.returns if isinstance(self.returns, tuple) else (self.returns,)
        problems = [_record_problem(value, kind) if typing.is_typeddict(kind) else
                    None if isinstance(value, kind) else f"a {type(value).__name__}, not a {kind}" for kind in kinds]
        return None if None in problems else " / ".join(problems)

    def matches(self, label: str) -> bool:
        return fnmatchcase(label, self.pattern)

    @property
    def fixed(self) -> str:
        """The pattern's fixed start (before its first wildcard): the longer claims a label two patterns match."""
        return self.pattern.split("*")[0].split("?")[0].split("[")[0]

    def entry(self, label: str, key: Any) -> Entry:
        """The cache entry of `label` (an entry of this stage: its pattern matches, no more particular one does)
        and `key`."""
        if stage_of(self.namespace, label) is not self:
            raise ValueError(f"label {label!r} is not an entry of stage {self.pattern!r} of notebook "
                             f"{self.namespace}: every entry belongs to the one declared stage whose pattern it "
                             "matches (the longest fixed start wins)")
        return cache_entry(self.namespace, label, key, FORMS[self.form])


def _record_problem(value: Any, record: type) -> str | None:
    """Why `value` is not the record `record` (a TypedDict), or None."""
    if not isinstance(value, dict):
        return f"a {type(value).__name__}, not a dict (the record {record.__name__})"
    hints = typing.get_type_hints(record)
    missing = sorted(record.__required_keys__ - set(value))
    extra = sorted(set(value) - set(hints))
    wrong = [f"{name} is a {type(value[name]).__name__}, not {_shown(hints[name])}" for name in hints
             if name in value and not _is(value[name], hints[name])]
    said = [f"missing {missing}" if missing else "", f"fields it does not declare {extra}" if extra else "",
            "; ".join(wrong)]
    return f"not its record {record.__name__}: " + "; ".join(s for s in said if s) if any(said) else None


def _is(value: Any, hint: Any) -> bool:
    """Whether `value` is of the type `hint` as far as a record's check goes: a class, `X | None`, a generic
    (`list[float]`, `dict[str, ...]`: its container only), `Any`."""
    if hint is Any:
        return True
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(_is(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:  # a float field holds any real number (numpy's too)
        return isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    return isinstance(value, typing.get_origin(hint) or hint)


def _shown(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)


def declare(namespace: str, pattern: str, form: str, policy: str, returns: type | tuple[type, ...], what: str, *,
            why: str = "", allow: tuple = ()) -> Stage:
    """Declare a stage of notebook `namespace` (once: another stage with the same pattern is refused)."""
    stage = Stage(namespace, pattern, form, policy, returns, what, why, allow)
    declared = _REGISTRY.setdefault(namespace, {})
    if pattern in declared and declared[pattern] != stage:
        raise ValueError(f"stage {pattern!r} of notebook {namespace} is declared twice")
    declared[pattern] = stage
    return stage


def stages_of(namespace: str) -> dict[str, Stage]:
    """{pattern: Stage} of notebook `namespace` (its `stages` module imported)."""
    if namespace in MODULES:
        importlib.import_module(MODULES[namespace])
    return dict(_REGISTRY.get(namespace, {}))


def stage_of(namespace: str, label: str) -> Stage | None:
    """The declared stage an entry's label belongs to: of the stages whose pattern matches it, the one whose fixed
    start is the longest ("toy-coverage-k-pixels-n2500" belongs to "toy-coverage-k-*", not "toy-*"); None when no
    stage declares it."""
    found = [s for s in stages_of(namespace).values() if s.matches(label)]
    return max(found, key=lambda s: len(s.fixed), default=None)
