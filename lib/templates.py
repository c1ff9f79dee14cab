"""The template language of the workbook's generated text, and the Findings box each notebook shows at its top.

A template is Markdown with `{{ expression }}` or `{{ expression :format }}` placeholders, evaluated against the
run's results `r` (a dict of glued values) and, on the results pages, `run` (preset, commit, date, duration;
`lib.make.results`). A placeholder whose value the run did not record is a `TemplateError` that names it: a template
never renders a stale number. The templates live in `docs/results/templates/`; their front matter declares the
decimal numbers their text may state (`split_template`; `lib.make.results` checks them).

`FindingsBox` is the notebook's end of it: the imports cell, under the title, shows a placeholder, and the
recording cell replaces it with the sentences of `findings-NN.md` rendered from the run's results (`findings_text`),
each with our number beside the paper's. JupyterLab shows it live; papermill keeps it in the executed notebook;
the book and the HTML report put the same box under the page's title (`lib.make.book.add_provenance`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lib.paths import PROJECT_ROOT
from lib.provenance import minutes
from lib.reading import pct, span
from lib.tables import in_readers_words

TEMPLATES = PROJECT_ROOT / "docs" / "results" / "templates"

PLACEHOLDER = re.compile(r"\{\{\s*(.+?)(?:\s+:([^{}]*?))?\s*\}\}", re.S)
FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


class TemplateError(KeyError):
    """A placeholder that the run's results cannot fill."""


FINDINGS_CLASS = "workbook-findings"


def wall_time(run: Mapping[str, Any]) -> str:
    """The recorded run's wall time and preset, and, when it read a stored layer, what computing it took."""
    text = f"{minutes(run['duration_s'])} (`{run['preset']}`"
    stored = run.get("stored")
    if stored:
        scratch = stored["from_scratch_s"]
        text += (f", stored results; from scratch {minutes(scratch)}" if scratch is not None else
                 f", stored results; from scratch not timed as one run (results/{run['notebook'][:2]}/"
                 f"{run['preset']}/README.md)")
        if stored.get("from_scratch_also"):
            text += f" + {stored['from_scratch_also']}"
    return text + ")"


def mean_sd(row: Mapping[str, Any], name: str, spec: str = ".3f") -> str:
    """'0.905 ± 0.011' from row[name + '_mean'] and row[name + '_std'] ('—' where the run has no value)."""
    mean, sd = row.get(f"{name}_mean"), row.get(f"{name}_std")
    if mean is None:
        return "—"
    return f"{mean:{spec}}" + ("" if sd is None else f" ± {sd:{spec}}")


def rows_table(rows: list[Mapping[str, Any]], columns: tuple[str, ...], spec: str = ".4f") -> str:
    """A Markdown table of `rows` (dicts) with `columns`, sorted by those columns' values in order; floats
    formatted by `spec`, missing values '—'. For per-seed rows, so that a page's spreads can be checked."""
    def key(row):
        return tuple((v is None, str(v) if not isinstance(v, (int, float)) else v)
                     for v in (row.get(c) for c in columns))

    def cell(value: Any) -> str:
        return "—" if value is None else format(value, spec) if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in sorted(rows, key=key)]
    return "\n".join(lines)


def csv_rows(path: str) -> list[dict[str, Any]]:
    """The rows of a committed CSV of the repository (`path` from its root), each a dict with typed values."""
    import pandas as pd

    return pd.read_csv(PROJECT_ROOT / path).to_dict("records")


def split_template(text: str) -> tuple[dict[str, str], str]:
    """(the literals {number: source} the template declares in its front matter, the template without it)."""
    import yaml

    match = FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    literals = (yaml.safe_load(match.group(1)) or {}).get("literals") or {}
    return {str(number): source for number, source in literals.items()}, text[match.end():]


def render(template: str, namespace: Mapping[str, Any], *, source: str | Path | None = None) -> str:
    """Fill every `{{ expression[ :format] }}` of `template` from `namespace` (see the module docstring). A
    placeholder that cannot be filled, or whose value its format cannot show (a non-finite number, glued as 'inf',
    '-inf' or None, under `:.3f`), raises TemplateError naming it and the template's file `source`."""
    where = f"{source}: " if source else ""
    env = {"mean": statistics.fmean, "minutes": minutes, "wall_time": wall_time, "round": round, "abs": abs,
           "len": len, "max": max, "min": min, "sorted": sorted, "dict": dict, "zip": zip, "sum": sum,
           "mean_sd": mean_sd, "rows_table": rows_table, "csv_rows": csv_rows, "span": span, "pct": pct,
           **namespace}
    if "r" in namespace and "claim" not in namespace:  # claim("04.conditional"): "[04.conditional] **holds**"
        from lib.claims import stated

        env["claim"] = lambda claim_id: stated(claim_id, namespace["r"])

    def fill(match: re.Match) -> str:
        expression, spec = match.group(1), match.group(2)
        try:
            value = eval(expression, {"__builtins__": {}, **env})  # trusted templates from this repository
        except (KeyError, IndexError, TypeError, NameError) as err:
            problem = f"{type(err).__name__}: {err}"
            raise TemplateError(f"{where}{{{{ {expression} }}}}: the run did not record it ({problem})") from err
        try:
            return format(value, spec) if spec else str(value)
        except (ValueError, TypeError) as err:
            raise TemplateError(f"{where}{{{{ {expression} :{spec} }}}}: the run recorded {value!r}, which the format "
                                f"{spec!r} cannot show ({err}); a non-finite number is glued as 'inf', '-inf' or "
                                "None (nan)") from err

    return PLACEHOLDER.sub(fill, template)


def findings_template(number: str, templates: Path = TEMPLATES) -> Path | None:
    """Notebook `number`'s findings template, `templates/findings-NN.md`, or None when it has none."""
    template = Path(templates) / f"findings-{number}.md"
    return template if template.is_file() else None


def findings_text(number: str, results: Mapping[str, Any], templates: Path = TEMPLATES) -> str:
    """The Findings box of notebook `number` ("01"): `templates/findings-NN.md`, one sentence a line, each with our
    number beside the paper's, rendered from the run's `results`, in a <div class="workbook-findings">. A sentence
    whose numbers the run did not record (a preset that skips the stage) is left out; "" when no sentence is left
    or the notebook has no findings template."""
    template = findings_template(number, templates)
    if template is None:
        return ""
    sentences = []
    for line in split_template(template.read_text(encoding="utf-8"))[1].strip().splitlines():
        try:
            sentences.append(render(line, {"r": results}))
        except (TemplateError, ValueError, ZeroDivisionError, AttributeError):
            continue
    if not sentences:
        return ""
    title = "**Findings of this run, beside the paper's**"
    return in_readers_words(f'<div class="{FINDINGS_CLASS}">\n\n{title}\n\n' + "\n".join(sentences) + "\n\n</div>")


FINDINGS_MARK = "workbook-findings"  # the metadata key of the box's output, which the book and the report replace
FINDINGS_PENDING = "*Findings of this run: written here when its last cell has run (Run > Run All Cells).*"
NO_FINDINGS = "*Findings of this run: none of the sentences it has a template for was measured by this preset.*"


class FindingsBox:
    """The notebook's Findings box: made at the end of the imports cell, under the title, it shows FINDINGS_PENDING
    there; `update`, in the recording cell, replaces that output with `findings_text` of the run's results (one
    display, updated in place: JupyterLab redraws it, papermill keeps the last version in the executed notebook).
    The output carries the metadata key FINDINGS_MARK, by which the book and the report find it."""

    def __init__(self, number: str, templates: Path = TEMPLATES):
        from IPython.display import Markdown, display

        self.number, self.templates = number, Path(templates)
        self.handle = display(Markdown(FINDINGS_PENDING), metadata={FINDINGS_MARK: True}, display_id=True)

    def update(self, results: Mapping[str, Any], run: Any = None) -> str:
        """Write the findings of `results` (the recorded results: `lib.glue.to_jsonable` of what the notebook
        records, as `lib.glue.read_results` reads them back) into the box, under the line that says which run it is
        when `run` (the notebook's `lib.run.Run`) is given; returns the Markdown it shows."""
        from IPython.display import Markdown

        from lib.glue import to_jsonable
        from lib.provenance import live_facts, provenance_line

        results = to_jsonable(dict(results))
        text = findings_text(self.number, results, self.templates) or NO_FINDINGS
        if run is not None:
            text = provenance_line(live_facts(run, results), lead="This run:") + "\n\n" + text
        if self.handle is not None:  # None outside IPython
            self.handle.update(Markdown(text), metadata={FINDINGS_MARK: True})
        return text
