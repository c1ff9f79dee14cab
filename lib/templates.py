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

`Readings` is the notebooks' end of it: every sentence a reading cell says (`lib.reading.say`) is a section of
`readings-NN.md`, rendered from the facts its package computes (`lib.<package>.readings`), so that the English of a
paper lives in one folder, under the same check on typed numbers as the results pages. A number the paper reports
is named once, in the paper's module (`lib.<package>.paper`, `paper_module`), and every template states it as
`{{ paper.NAME }}` (`{{ paper01.NAME }}` ... in the headline template); `lib.reading.typed_twice` finds a number
that prose and code both type.
"""

from __future__ import annotations

import importlib
import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lib.paths import PACKAGES, PROJECT_ROOT
from lib.provenance import minutes
from lib.reading import compare, md_table, num, pct, seq, sig, skipped, span
from lib.tables import in_readers_words

TEMPLATES = PROJECT_ROOT / "docs" / "results" / "templates"

PLACEHOLDER = re.compile(r"\{\{\s*(.+?)(?:\s+:([^{}]*?))?\s*\}\}", re.S)
FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


class TemplateError(KeyError):
    """A placeholder that the run's results cannot fill."""


FINDINGS_CLASS = "workbook-findings"
PAPER_MODULES = {number: f"{package}.paper" for number, package in PACKAGES.items()}


def paper_module(number: str) -> Any:
    """Notebook `number`'s paper module (`PAPER_MODULES`): the numbers its paper reports, each named once, which the
    package's code and every template of the notebook read (`{{ paper.NAME }}`)."""
    if number not in PAPER_MODULES:
        raise KeyError(f"notebook {number!r} has no paper module (notebooks: {', '.join(PAPER_MODULES)})")
    return importlib.import_module(PAPER_MODULES[number])


def paper_names(number: str, name: str = "paper") -> dict[str, Any]:
    """{name: notebook `number`'s paper module} for a template's namespace; {} for a notebook without one."""
    return {name: paper_module(number)} if number in PAPER_MODULES else {}


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


HELPERS = {  # what every template may call besides its namespace
    "mean": statistics.fmean, "minutes": minutes, "wall_time": wall_time, "round": round, "abs": abs, "len": len,
    "max": max, "min": min, "sorted": sorted, "dict": dict, "zip": zip, "sum": sum, "any": any, "all": all,
    "int": int, "float": float, "str": str, "list": list, "enumerate": enumerate, "format": format,
    "mean_sd": mean_sd, "rows_table": rows_table, "csv_rows": csv_rows,
    "num": num, "pct": pct, "seq": seq, "sig": sig, "span": span, "compare": compare, "skipped": skipped,
    "md_table": md_table}


def render(template: str, namespace: Mapping[str, Any], *, source: str | Path | None = None) -> str:
    """Fill every `{{ expression[ :format] }}` of `template` from `namespace` (see the module docstring). A
    placeholder that cannot be filled, or whose value its format cannot show (a non-finite number, glued as 'inf',
    '-inf' or None, under `:.3f`), raises TemplateError naming it and the template's file `source`."""
    where = f"{source}: " if source else ""
    env = {**HELPERS, **namespace}
    if "r" in namespace and "claim" not in namespace:  # claim("04.conditional"): "[04.conditional] **holds**"
        from lib.claims import stated

        env["claim"] = lambda claim_id: stated(claim_id, namespace["r"])

    def fill(match: re.Match) -> str:
        expression, spec = match.group(1), match.group(2)
        try:
            value = eval(f"({expression}\n)", {"__builtins__": {}, **env})  # trusted; (): may span lines
        except TemplateError:  # a section it renders (`Readings`) names its own problem
            raise
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
    namespace = {"r": results, **paper_names(number)}
    sentences = []
    for line in split_template(template.read_text(encoding="utf-8"))[1].strip().splitlines():
        try:
            sentences.append(render(line, namespace))
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


class Readings:
    """The sentences of notebook `number`'s reading cells: the sections of `templates/readings-NN.md`, each opened
    by a line `<!-- reading: name -->` and rendered by `readings(name, **facts)`; with `kind="claims"`, the
    sentences of its claims ledger (`lib.<package>.claims`): `templates/claims-NN.md`, sections opened by
    `<!-- claim: name -->`, each rendered as one line (a field of the ledger: line breaks, the file's or a value's,
    become spaces).

    A section sees the facts it is given, the template helpers (`HELPERS`: `pct`, `num`, `span`, ...), the
    UPPER_CASE names of the Python module `module` (its thresholds: a sentence states `{{ LINEAR_MIN_R2 }}`, never
    the number) and `also` (other modules' constants its sentences state), the paper's numbers as `paper`
    (`paper_module`), and `part(name, **more)`, which renders another section of the same file with the same names
    and `more` (a phrase repeated for each item of a list). The file is read on every call, so that an edited
    sentence shows at the next run of its cell."""

    KINDS = {"readings": "reading", "claims": "claim"}  # the file's name -> the word of its section lines

    def __init__(self, number: str, module: str, templates: Path = TEMPLATES, kind: str = "readings",
                 also: Mapping[str, Any] | None = None):
        if kind not in self.KINDS:
            raise ValueError(f"kind {kind!r}: one of {sorted(self.KINDS)}")
        self.number, self.module, self.word, self.also = number, module, self.KINDS[kind], dict(also or {})
        self.path = Path(templates) / f"{kind}-{number}.md"

    def sections(self) -> dict[str, str]:
        """{name: its template}, in the file's order; an error names text outside a section or a name twice."""
        body = split_template(self.path.read_text(encoding="utf-8"))[1]
        parts = re.compile(rf"^<!-- {self.word}: ([\w.-]+) -->[ \t]*\n", re.M).split(body)
        if parts[0].strip():
            raise TemplateError(f"{self.path}: text before the first '<!-- {self.word}: name -->' line: "
                                f"{parts[0].strip()[:60]!r}")
        names = parts[1::2]
        if len(set(names)) < len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise TemplateError(f"{self.path}: sections named twice: {twice}")
        return {name: text.strip("\n") for name, text in zip(names, parts[2::2])}

    def constants(self) -> dict[str, Any]:
        """The UPPER_CASE names of the module the sentences belong to, and `also`."""
        return {**{k: v for k, v in vars(importlib.import_module(self.module)).items() if k.isupper()}, **self.also}

    def __call__(self, name: str, **facts: Any) -> str:
        sections = self.sections()
        namespace = {**self.constants(), "paper": paper_module(self.number), **facts}

        def section(name: str, names: Mapping[str, Any]) -> str:
            if name not in sections:
                raise TemplateError(f"{self.path}: no section {name!r} (sections: {', '.join(sections)})")
            return render(sections[name], {**names, "part": lambda other, **more: section(other, {**names, **more})},
                          source=f"{self.path.name}#{name}")

        text = section(name, namespace)
        return " ".join(text.split("\n")) if self.word == "claim" else text
