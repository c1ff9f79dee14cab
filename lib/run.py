"""A run: the one object that owns where each expensive result of a notebook comes from.

A notebook's configuration cell makes one `Run` from its PRESET, SOURCE, FORCE_RECOMPUTE, DEVICE and PROGRESS
(`Run.for_notebook`); the experiment stages take it instead of force/device/progress/stored arguments. Every
expensive result is a declared stage (`lib.stages`: its namespace, form and policy, listed once in its package's
`stages` module), and `Run.stage` looks its entries up in the one order:

1. the cache (`lib.cache`: the entry's file, checksum verified; a damaged one is logged, deleted and recomputed),
   unless FORCE_RECOMPUTE;
2. for an entry of the notebook's stored layer (a stored stage), the layer (`lib.store`: results/<NN>/<PRESET>/),
   when SOURCE="stored" and not FORCE_RECOMPUTE;
3. compute, save it to the cache and, under `make store` (`lib.store.RECORD_ENV`, read once when the run is made),
   record it for the layer.

Each stage has one of these policies, declared with it and the same for every run:

- *stored*: a result of the notebook's stored layer, in the order above;
- *cached*: a cache entry the run computes where missing, again under FORCE_RECOMPUTE (once: an entry this run
  has computed is read back when a later stage asks for it);
- *pinned*: an input that later stages build on and that takes long to remake: extracted features, the trained
  generators and their samples. It is read from the cache even under FORCE_RECOMPUTE, which recomputes what is
  built on it (deleting the cache remakes it: `make clean-cache`);
- *on request*: cached, and stored where the caller builds a stored result on it (`keep=True`; the declaration
  says which entries and why).

`npz` and `torch` are the lookup itself, with the policy as arguments: this module and its tests call them, the
packages call `stage` (a test counts it). It counts what was read from the layer and what was computed
(`summary`, printed at a notebook's end). The run holds no module state: two runs in one process (a test, a
sweep) do not see each other's counts or layers.

Every stage takes the run of its caller; only this module, the notebooks' configuration cells and the commands'
entry points make one. Method-layer functions (the trainings, the metrics) keep explicit arguments, so that
assignments and benchmarks call them without a run; `Run()` computes on the CPU, silently. `pinned` looks a
pinned stage's entry up for a command that has no run (features of image folders); `pinned_npz` and
`pinned_torch` do so for files no notebook's stage owns (the decoded data, a study command's trainings).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lib import cache, lineage, store
from lib.cache import DamagedCacheEntry, Entry
from lib.params import check_bool
from lib.paths import cache_dir
from lib.stages import ON_REQUEST, PINNED, STORED, Stage

VERIFY_ENV = "WORKBOOK_VERIFY"  # set by `make verify`: the pattern of the stored entries' labels to recompute
VERIFY_OUT_ENV = "WORKBOOK_VERIFY_OUT"  # set by `make verify`: the JSON-lines file the comparisons go to


@dataclass
class Run:
    """How one run finds its expensive results (module docstring). `Run()` computes on the CPU, silently."""

    namespace: str | None = None  # the notebook's cache namespace ("01"): its stored layer is results/<namespace>/
    preset: str | None = None
    source: str = "compute"  # "stored": read the layer where an entry is missing from the cache
    force: bool = False  # recompute every entry (the cache and the layer are ignored, the cache rewritten)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    progress: bool = False  # text progress bars in the long loops
    record_to: Path | None = field(default_factory=lambda: os.environ.get(store.RECORD_ENV) or None)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("loaded", "computed", "stale", "refused", "code_changed"), 0))
    told: set[str] = field(default_factory=set)  # the layers already named stale (once per run)
    fresh: set[Path] = field(default_factory=set)  # the entries this run computed: FORCE_RECOMPUTE remakes each once
    # `make verify`: the stored entries whose label matches this pattern are recomputed and compared with the layer's
    verify: str | None = field(default_factory=lambda: os.environ.get(VERIFY_ENV) or None)
    verified: list[dict] = field(default_factory=list)  # what `verify` compared (`lib.make.verify`)
    _verified_values: dict[Path, Any] = field(default_factory=dict, repr=False)  # each verified entry computed once

    def __post_init__(self) -> None:
        """The settings checked, each named, whenever a run is made or changed (`but`), before any lookup."""
        _check_settings(self.namespace, self.preset, self.source, self.force, self.progress)
        if not isinstance(self.device, torch.device):
            raise ValueError(f"device={self.device!r} is not a torch.device: pass lib.device.pick_device(...)")

    @classmethod
    def for_notebook(cls, namespace: str, preset: str, *, source: str, force: bool, device: str,
                     progress: bool) -> Run:
        """The run of notebook `namespace` under `preset` from its parameters SOURCE, FORCE_RECOMPUTE, DEVICE and
        PROGRESS, each checked and named in the error (before any work: `__post_init__`, and DEVICE here)."""
        from lib.device import pick_device

        _check_settings(namespace, preset, source, force, progress)
        return cls(namespace=namespace, preset=preset, source=source, force=force, device=pick_device(device),
                   progress=progress)

    # --------------------------------------------------------------------------------------------------------
    # The lookup
    # --------------------------------------------------------------------------------------------------------
    def stage(self, stage: Stage, label: str, key: Any, compute: Callable[[], Any], *, keep: bool | None = None) -> Any:
        """The entry `label` of the declared `stage` (`lib.stages`) for `key`: found or computed by `compute()` in the
        order above, with the stage's namespace, form and policy. `keep`: for an ON_REQUEST stage only, whether this
        entry is stored (the stage's declaration says which are). What comes back is checked against the type the
        stage declares it returns."""
        if (keep is None) != (stage.policy != ON_REQUEST):
            raise ValueError(f"stage {stage.pattern!r} is {stage.policy}: "
                             + ("say whether this entry is kept (keep=True or False)" if keep is None else
                                "its policy is declared, and a call cannot change it (no keep=)"))
        entry = stage.entry(label, key)
        stored, pinned = stage.policy == STORED or bool(keep), stage.policy == PINNED
        if stage.form == "npz":
            value = self.npz(entry, compute, stored=stored, pinned=pinned)
        else:
            value = self.torch(entry, compute, allow=stage.allow, stored=stored, pinned=pinned)
        problem = stage.problem(value)
        if problem:
            raise TypeError(f"stage {stage.pattern!r} ({store.shown(entry.path)}) gave {problem}")
        return value

    def npz(self, entry: Entry | Path, compute: Callable[[], Mapping[str, np.ndarray]], *,
            stored: bool = False, pinned: bool = False) -> dict:
        """The arrays of the cache entry, or computed by `compute()`, saved and returned (the module's order).
        `stored`, `pinned`: the entry's policy (module docstring)."""
        return self._fetch(entry, lambda: {k: np.asarray(v) for k, v in compute().items()}, cache.load_npz,
                           lambda arrays, p: cache.atomic_savez(p, arrays), stored, pinned, compute)

    def torch(self, entry: Entry | Path, compute: Callable[[], Any], *, allow: Sequence[type | Callable] = (),
              stored: bool = False, pinned: bool = False) -> Any:
        """The object of the cache entry (torch.save format, loaded by `lib.cache.load_torch` with `allow`), or
        computed, saved and returned. `stored`, `pinned`: the entry's policy (module docstring)."""
        return self._fetch(entry, compute, lambda p: cache.load_torch(p, allow=allow),
                           lambda obj, p: cache.atomic_torch_save(obj, p), stored, pinned, compute)

    def _fetch(self, entry: Entry | Path, compute: Callable[[], Any], load: Callable[[Path], Any],
               save: Callable[[Any, Path], Any], stored: bool, pinned: bool, origin: Callable) -> Any:
        if stored and not isinstance(entry, Entry):
            raise TypeError(f"a stored entry needs its configuration: pass lib.cache.cache_entry(...), not {entry}")
        if stored and pinned:
            raise ValueError("an entry is stored or pinned, not both: a pinned entry is the cache's alone")
        path, config = (entry.path, entry.config) if isinstance(entry, Entry) else (Path(entry), None)
        force = self.force and not pinned and path not in self.fresh  # each entry once per run
        if stored and self.verify and self.source == "stored" and fnmatch(_label(path), self.verify):
            return self._verified(path, config, compute, load)
        if path.exists() and not force:
            kept = cache.read_lineage(path)  # the code it was computed with: changed since? (from its own roots)
            moved = lineage.changes(kept) if kept else {}
            if moved:
                self._tell_code_changed(store.shown(path), moved)
            else:
                try:
                    value = load(path)
                    if stored:
                        self._record(path, config, code=kept)
                    return value
                except DamagedCacheEntry as err:
                    cache.discard_damaged(err)
        if stored and not force and self.source == "stored":
            found, value = self._from_layer(path, config, load, origin)
            if found:
                return value
        start = time.perf_counter()
        value = compute()
        save(value, path)
        self.fresh.add(path)
        code = lineage.record(origin)  # the code it was computed with (`origin`: the stage's compute)
        cache.write_lineage(path, code)
        if stored:
            self.counts["computed"] += 1
            self._record(path, config, time.perf_counter() - start, code=code)
        return value

    def _verified(self, path: Path, config: Any, compute: Callable[[], Any], load: Callable[[Path], Any]) -> Any:
        """`make verify`: the stage computed afresh (its inputs as this run finds them: the stored layer's), compared
        with the layer's entry whatever code it was computed with (`lib.verify.compare`), the comparison appended to
        `verified` and to the file VERIFY_OUT_ENV names. The layer's value is returned where it loads, so that the
        rest of the run is the stored run's; nothing is written to the cache."""
        from lib.verify import compare

        if path in self._verified_values:  # asked again by a later stage: computed and compared once per run
            return self._verified_values[path]
        layer = store.layer_dir(self.namespace, self.preset)
        located = store.namespace_of(path)
        reason, stored = (store.layer_entry(layer, located[1], config, load) if located and located[0] == self.namespace
                          else ("not an entry of this run's layer", None))
        start = time.perf_counter()
        value = compute()
        line = {"entry": path.name, "layer": store.shown(layer), "seconds": time.perf_counter() - start}
        if reason is None:
            line["comparison"] = compare(value, stored)
            c = line["comparison"]
            said = ("equal to the layer's entry, clocks aside" if c["equal"] else
                    f"differs from the layer's entry: largest difference {c['max_abs']:.3g} ({c['max_rel']:.3g} "
                    f"relative) in {c['worst']}")
        else:
            line["refused"] = reason
            said = f"not compared: the layer's entry is {reason}"
        self.verified.append(line)
        if os.environ.get(VERIFY_OUT_ENV):
            with open(os.environ[VERIFY_OUT_ENV], "a") as fh:
                fh.write(json.dumps(line, default=str) + "\n")
        print(f"make verify: {path.name} recomputed in {line['seconds']:.1f} s, {said}.")
        self._verified_values[path] = value if reason is not None else stored
        return self._verified_values[path]

    def _tell_code_changed(self, what: str, moved: Mapping[str, str]) -> None:
        """One line to the reader (once per run) that a result was computed with code that has changed since."""
        self.counts["code_changed"] += 1
        if "code" not in self.told:
            self.told.add("code")
            print(f"{what} (and any later such result) was computed with code that has changed since "
                  f"({lineage.describe(moved)}): it is computed again. `make status` lists every such result.")

    def _from_layer(self, path: Path, config: Any, load: Callable[[Path], Any],
                    origin: Callable) -> tuple[bool, Any]:
        """(True, value) when this run's stored layer holds the entry intact and computed with code unchanged
        since; else (False, None), after one line to the reader when the layer's entry is stale (once per
        layer), computed with code that changed since (once per run) or refused. `origin`: the stage's compute,
        whose code a layer read is recorded with under `python -m lib.make.status record`."""
        located = store.namespace_of(path)
        if located is None or located[0] != self.namespace:
            if "namespace" not in self.told:  # a stage of another notebook: this run has no layer for it
                self.told.add("namespace")
                print(f"{store.shown(path)} (and any later such result) belongs to no stored layer of notebook "
                      f"{self.namespace}'s run: it is computed.")
            return False, None
        layer = store.layer_dir(self.namespace, self.preset)
        found = store.lookup(layer, located[1], config, load)
        if found.status == "loaded":
            self.counts["loaded"] += 1
            if self.record_to:  # read by `python -m lib.make.status record`
                self._record(path, config, code=lineage.record(origin), from_layer=True)
            return True, found.value
        if found.status == "code changed":
            self._tell_code_changed(store.shown(layer / located[1]), found.moved)
        elif found.status == "stale":
            self.counts["stale"] += 1
            if self.namespace not in self.told:
                self.told.add(self.namespace)
                print(f"stored result {found.label} (and any later ones) of {store.shown(found.layer)} is stale: its "
                      f"configuration or the code changed since the layer was written, so it is computed; "
                      f"{self.refresh_command()} refreshes the layer.")
        elif found.status == "refused":
            self.counts["refused"] += 1
            print(f"stored result {store.shown(found.layer / located[1])} refused: {found.reason}; computing it "
                  f"instead ({self.refresh_command()} rewrites the layer).")
        return False, None

    def _record(self, path: Path, config: Any, seconds: float | None = None, *, code: Mapping | None,
                from_layer: bool = False) -> None:
        """Under `make store` (`record_to` set), append the entry to the list of entries the layer keeps, with the
        record of the code it was computed with (None: an entry of the cache from before entries kept one), or,
        `from_layer`, of the code that would compute the layer's entry it read."""
        if not self.record_to:
            return
        line = {"path": str(path), "config": config, "compute_seconds": seconds, "code": code,
                **({"from_layer": True} if from_layer else {})}
        with open(self.record_to, "a") as fh:
            fh.write(json.dumps(line, default=str) + "\n")

    # --------------------------------------------------------------------------------------------------------
    # What the notebook prints
    # --------------------------------------------------------------------------------------------------------
    def refresh_command(self) -> str:
        return f"`make store NB={self.namespace} PRESET={self.preset or 'cpu'}`"

    def describe(self) -> str:
        """One line on where the long stages' results come from (the configuration cell prints it)."""
        if self.source == "compute" or self.namespace is None:
            return f"SOURCE='compute': the long stages are computed (or read from the cache {cache_dir()})."
        if self.force:
            return ("FORCE_RECOMPUTE=True: every long stage is recomputed; neither the cache nor the stored layer "
                    f"{store.shown(store.layer_dir(self.namespace, self.preset))} is read.")
        layer = store.layer_dir(self.namespace, self.preset)
        manifest = store.read_manifest(layer)
        if manifest is None:
            return (f"SOURCE='stored': there is no stored layer for PRESET={self.preset!r} ({store.shown(layer)}): "
                    "computing.")
        return (f"SOURCE='stored': results of the long stages are read from {store.shown(layer)} where their "
                f"configuration matches ({len(manifest['entries'])} stored, commit {manifest['commit'][:10]}, "
                f"{manifest['date']}); SOURCE='compute' recomputes them.")

    def source_facts(self) -> dict:
        """Where this run's long stages came from, as `lib.provenance.run_facts` gives them for an executed
        notebook: {"source", "layer" (the stored layer, as shown), "read", "computed" (entries so far)}."""
        layer = store.shown(store.layer_dir(self.namespace, self.preset)) if self.namespace else None
        return {"source": self.source, "force": self.force, "layer": layer, "read": self.counts["loaded"],
                "computed": self.counts["computed"]}

    def summary(self) -> str:
        """One line on where this run's stored-layer entries came from (printed at a notebook's end; the
        provenance line of the book reads it: `lib.provenance.STORE_SUMMARY`)."""
        if self.source != "stored" or self.namespace is None:
            return "SOURCE='compute': nothing was read from a stored layer."
        c = self.counts
        return (f"stored layer {store.shown(store.layer_dir(self.namespace, self.preset))}: {c['loaded']} results "
                f"read, {c['computed']} computed" + (f", {c['stale']} stale" if c["stale"] else "")
                + (f", {c['refused']} refused" if c["refused"] else "")
                + (f", {c['code_changed']} computed with code changed since" if c["code_changed"] else "")
                + (" (recomputed: FORCE_RECOMPUTE; the layer was not read)" if self.force else "") + ".")


def _check_settings(namespace: str | None, preset: str | None, source: Any, force: Any, progress: Any) -> None:
    """SOURCE, FORCE_RECOMPUTE and PROGRESS of a run, and its layer's folder, each checked and named in the error."""
    if source not in store.SOURCES:
        raise ValueError(f"SOURCE={source!r} is not one of {store.SOURCES}: 'stored' reads the committed results "
                         "of the long stages where their configuration matches, 'compute' recomputes them.")
    check_bool("FORCE_RECOMPUTE", force)
    check_bool("PROGRESS", progress)
    if namespace is not None and preset is not None:
        store.layer_dir(namespace, preset)  # a namespace or preset that would leave results/ is refused here


def pinned(stage: Stage, label: str, key: Any, compute: Callable[[], Any]) -> Any:
    """A pinned stage's entry for a command that has no run (`lib.irs.folders`' features of image folders): the
    cache's, else computed on the CPU and saved."""
    if stage.policy != PINNED:
        raise ValueError(f"stage {stage.pattern!r} is {stage.policy}, not pinned: it needs the run of a notebook")
    return Run().stage(stage, label, key, compute)


def pinned_npz(entry: Entry | Path, compute: Callable[[], Mapping[str, np.ndarray]]) -> dict:
    """A pinned file's arrays (module docstring) for the data layer, which no notebook's stage owns (the decoded
    CIFAR-10, whose file may sit outside the cache: `lib.data.cifar10.decoded_path`): the cache's, else computed on
    the CPU and saved."""
    return Run().npz(entry, compute, pinned=True)


def pinned_torch(entry: Entry | Path, compute: Callable[[], Any]) -> Any:
    """A pinned file's object (module docstring) for a study command's own intermediate results, which no
    notebook's stage owns (the CPU-only trainings of notebook 01's budget study, under data/cache/01/budget/): the
    cache's, else computed and saved."""
    return Run().torch(entry, compute, pinned=True)


def _label(path: Path) -> str:
    """A cache file's label: its name without the key and suffix ("losses-C1-M30-...-8000steps")."""
    match = store.NAME.match(path.name)
    return match["label"] if match else path.stem
