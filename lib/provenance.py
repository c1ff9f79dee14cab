"""Where a result came from: the commit of the checkout whose code produced it, and which run a page shows.

Stored results (01's member curves, 03's whole-network predictions) and the generated results pages record the
commit. `make run` stamps each executed notebook with the commit it ran at (`stamp`), and every page that shows
a run (the book's notebook and results pages, the HTML report) opens with one line saying which run it is
(`run_line`): preset, date, commit, processor, and whether the long stages were read from the stored layer or
computed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from lib.params import SAFE_NAME
from lib.paths import PROJECT_ROOT

STAMP_KEY = "workbook"  # the executed notebook's metadata key of `stamp`
LINE_CLASS = "workbook-provenance"  # the HTML class of the line (the browser test finds it by this class)
# what `lib.run.Run.summary` prints at a notebook's end
STORE_SUMMARY = re.compile(r"stored layer (?P<layer>\S+): (?P<read>\d+) results read, (?P<computed>\d+) computed")


# What `make run` writes into tracked files as it goes (the README gallery's figures): a change there is the run's
# own output, not a change to what it ran, so it does not make the later notebooks' commit "-dirty".
RUN_OUTPUTS = ("docs/figures",)


def git_commit(*, short: bool = False, mark_dirty: bool = False) -> str:
    """The HEAD commit of the checkout `lib` is imported from (whatever the working directory), abbreviated
    with `short`; with `mark_dirty`, "-dirty" is appended when a tracked file outside RUN_OUTPUTS differs from it.
    "unknown" outside a git checkout or without git."""
    git = ["git", "-C", str(PROJECT_ROOT)]
    try:
        commit = subprocess.run([*git, "rev-parse", *(["--short"] if short else []), "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        outputs = [f":(exclude){path}" for path in RUN_OUTPUTS]
        dirty = mark_dirty and subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", ".",
                                               *outputs], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def stamp(executed: str | Path, commit: str | None = None) -> None:
    """Record in an executed notebook's metadata the commit it ran at (default: this checkout's, "-dirty" when
    a tracked file was changed). Written atomically, as papermill's copy was: a write that fails (a full disk,
    `ulimit -f`) leaves the notebook as it was, no partial file, and an OSError naming the notebook."""
    executed = Path(executed)
    nb = json.loads(executed.read_text(encoding="utf-8"))
    nb.setdefault("metadata", {}).setdefault(STAMP_KEY, {})["commit"] = commit or git_commit(short=True,
                                                                                              mark_dirty=True)
    partial = executed.with_name(f".{executed.name}.stamp-{os.getpid()}")
    try:
        partial.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(partial, executed)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise OSError(err.errno, f"{executed} could not be stamped with its commit ({err.strerror or err}; a full "
                                 "disk or a file-size limit, `ulimit -f`?); it is left as it was") from err


def run_fingerprint(executed: str | Path) -> str:
    """12 hex digits of the SHA-256 of what the run of an executed notebook recorded: its glued results and the
    commit it was stamped with. Two runs that differ in one value or in their commit differ in it, whatever their
    preset and date; the results pages record it (`lib.make.results`) and the book compares it (`lib.make.book`)."""
    from lib.glue import read_results

    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    recorded = {"results": read_results(executed), "commit": nb.get("metadata", {}).get(STAMP_KEY, {}).get("commit")}
    return hashlib.sha256(json.dumps(recorded, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _stream_text(nb: dict) -> str:
    return "".join("".join(o.get("text", "")) for c in nb.get("cells", []) for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def run_facts(executed: str | Path) -> dict[str, Any]:
    """What identifies the run of an executed notebook: {"preset", "date" (YYYY-MM-DD, UTC), "commit" (None when
    the run was not stamped), "processor" (the device the notebook recorded, None when it recorded none),
    "source" ("stored" or "compute"), "force" (FORCE_RECOMPUTE was True), "read"/"computed" (stored-layer entries;
    None when not printed), "layer", "duration_s" (the run's wall time), "from_scratch_s" (what the stored results
    it read took to compute, from the layer's manifest; None when it read none)}."""
    from lib.glue import read_results

    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    papermill = nb.get("metadata", {}).get("papermill", {})
    params = papermill.get("parameters", {})
    try:
        device = read_results(executed).get("device")
    except (ValueError, KeyError):
        device = None
    found = STORE_SUMMARY.search(_stream_text(nb))
    stored = run_info(Path(executed))["stored"] if found and int(found["read"]) else None
    return {"preset": params.get("PRESET", "?"), "date": (papermill.get("end_time") or "")[:10] or None,
            "duration_s": papermill.get("duration"), "from_scratch_s": stored and stored["from_scratch_s"],
            "commit": nb.get("metadata", {}).get(STAMP_KEY, {}).get("commit"), "processor": device,
            "source": params.get("SOURCE", "stored"), "force": params.get("FORCE_RECOMPUTE") is True,
            "layer": found and found["layer"],
            "read": found and int(found["read"]), "computed": found and int(found["computed"])}


def source_words(facts: dict[str, Any]) -> str:
    """How the run's long stages were obtained, in words."""
    if facts["source"] == "compute":
        return "every stage computed (`SOURCE=\"compute\"`)"
    if facts.get("force"):
        return "recomputed: FORCE_RECOMPUTE (every stage computed; the stored layer was not read)"
    if facts["read"] is None:
        return "stored results where they matched"
    if facts["read"] == 0:
        return ("long stages read from this machine's cache" if not facts["computed"]
                else f"{facts['computed']} long stages computed, none matched in `{facts['layer']}`")
    return (f"{facts['read']} long stages read from `{facts['layer']}`"
            + (f", {facts['computed']} computed" if facts["computed"] else ", none computed"))


def run_line(executed: str | Path, *, extra: str = "") -> str:
    """The provenance line of a page that shows the run of `executed` (`provenance_line` of its `run_facts`)."""
    return provenance_line(run_facts(executed), extra=extra)


def live_facts(run: Any, results: dict[str, Any]) -> dict[str, Any]:
    """`run_facts` of the run going on in this kernel, from its `lib.run.Run` and its recorded `results`: today's
    date, this checkout's commit ("-dirty" when it has changes), the processor the results name."""
    import datetime as dt

    return {"preset": results.get("preset", run.preset), "date": dt.datetime.now(dt.UTC).date().isoformat(),
            "commit": git_commit(short=True, mark_dirty=True), "processor": results.get("device"),
            "duration_s": None, "from_scratch_s": None, **run.source_facts()}


def provenance_line(f: dict[str, Any], *, extra: str = "", lead: str = "This page shows the run:") -> str:
    """The line that says which run a page or a box shows, from `run_facts` (or `live_facts`): a Markdown paragraph
    in a <div class="workbook-provenance"> (rendered alike by MyST, nbconvert and JupyterLab), `extra` appended."""
    parts = [f"preset `{f['preset']}`", f"run on {f['date'] or 'an unrecorded date'}",
             f"commit `{f['commit']}`" if f["commit"] else "commit not recorded",
             f"on {f['processor']}" if f["processor"] else "processor not recorded", source_words(f)]
    if f["duration_s"] is not None:
        scratch = f"; its stored results took {minutes(f['from_scratch_s'])} to compute" if f["from_scratch_s"] else ""
        parts.append(f"ran in {minutes(f['duration_s'])}{scratch}")
    return f'<div class="{LINE_CLASS}">\n\n**{lead}** ' + " · ".join(parts) + extra + "\n\n</div>"


def run_info(notebook: Path) -> dict[str, Any]:
    """Preset, parameters, duration and end time that papermill stored in an executed notebook, and the run's
    fingerprint (`run_fingerprint`)."""
    meta = json.loads(Path(notebook).read_text(encoding="utf-8")).get("metadata", {}).get("papermill", {})
    params = meta.get("parameters", {})
    end = meta.get("end_time") or ""
    info = {"notebook": Path(notebook).name, "preset": params.get("PRESET", "?"), "parameters": params,
            "duration_s": meta.get("duration"), "date": end[:10], "commit": git_commit(short=True), "stored": None,
            "fingerprint": run_fingerprint(notebook)}
    if params.get("SOURCE", "stored") == "stored" and SAFE_NAME.match(str(info["preset"])):  # the default
        from lib.store import layer_dir, read_manifest

        manifest = read_manifest(layer_dir(Path(notebook).name[:2], info["preset"]))
        if manifest is not None:
            scratch = manifest.get("from_scratch") or manifest
            info["stored"] = {"commit": manifest["commit"][:7], "date": manifest["date"][:10],
                              "entries": len(manifest["entries"]), "from_scratch_s": scratch["wall_seconds"],
                              "from_scratch_also": scratch.get("also")}  # stages the wall time leaves out
    return info


def minutes(seconds: float | None) -> str:
    """'5 min 12 s' (or '40 s') for a duration in seconds."""
    if seconds is None:
        return "?"
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s" if m else f"{s} s"
