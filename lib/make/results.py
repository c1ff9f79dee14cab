"""Results pages generated from executed notebooks, so that a number in the docs is the number a run recorded.

`make results` (python -m lib.make.results) reads the glued results of every executed notebook in `runs/` (what
`make run` writes) and renders, for each, `docs/results/templates/NN-*.md` into `docs/results/NN-*.md`, and
the headline table of README.md between its `<!-- headlines:begin -->` / `<!-- headlines:end -->` markers
from `docs/results/templates/headlines.md`.

A template is Markdown with `{{ expression }}` or `{{ expression :format }}` placeholders, evaluated against
the run's results `r` (a dict of glued values; `r01` ... `r04` in the headline template), `run` (preset,
commit, date, duration) and the paper's numbers `paper` (`paper01` ... in the headline template;
`lib.templates.paper_names`). `{{ all_results() }}` renders every glued value as tables. A placeholder whose
value the run did not record is an error that names it: a template never renders a stale number.
`{{ csv_rows("results/01/budget_study.csv") }}` reads a committed study that a notebook reads too.

A number about a run is never typed into a template: its text (outside the placeholders, and the string and
number constants inside them) may state only the decimal numbers and percentages declared, each with its source,
in the template's front matter (the paper's values, the spec's constants, dated records of other runs), as
`lib.reading` asks of the notebooks' text::

    ---
    literals:
      "0.964": "paper, Table 1: mean AUC, C = 2"
    ---

`tests/test_make_results.py` fails on any other (`undeclared_numbers`); the front matter is not rendered.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lib.cache import atomic_write
from lib.claims import MODULES, claims_of, judge
from lib.glue import COLUMNS_KEY, IncompleteRun, read_complete_results, read_results, run_problem
from lib.paths import PROJECT_ROOT
from lib.provenance import git_commit, run_info, run_line  # noqa: F401 (run_info: the tests')
from lib.reading import stated_numbers
from lib.tables import in_readers_words, reader_name
from lib.templates import (
    PLACEHOLDER,
    TemplateError,
    findings_template,
    findings_text,
    paper_names,
    render,
    split_template,
)

HEADLINES = re.compile(r"(<!-- headlines:begin -->\n).*?(\n<!-- headlines:end -->)", re.S)
VOLATILE = ("runtime", "seconds", "device", "per_s")  # glued values that describe the machine, not the result


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):  # a reader's words, not Python's
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and all(v is None or isinstance(v, (int, float)) for v in value):
        return " / ".join(_cell(v) for v in value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if isinstance(value, list):
        return " / ".join(_cell(v) for v in value)
    if isinstance(value, dict):  # a nested record: each entry named, its values rounded as the table's
        return "; ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|")


TABLE_CHARS = 88  # the most characters an appendix table row may hold: the book's 784-px column (1,400-px window)


def column_groups(key_chars: int, widths: Mapping[str, int], budget: int = TABLE_CHARS) -> list[list[str]]:
    """The columns (name -> characters of its widest cell) in order, cut into consecutive groups whose row fits
    `budget` characters beside the `key_chars` of the row names (each cell counts 3 more: bars and spaces);
    a column wider than the budget alone gets a group of its own."""
    groups: list[list[str]] = [[]]
    used = key_chars + 3
    for name, chars in widths.items():
        if groups[-1] and used + chars + 3 > budget:
            groups.append([])
            used = key_chars + 3
        groups[-1].append(name)
        used += chars + 3
    return groups


def _rows_tables(name: str, rows: list[tuple[str, dict]]) -> list[str]:
    """A dict of rows as Markdown tables no wider than TABLE_CHARS: the columns cut into groups (`column_groups`),
    each group a table of every row, its header naming the part ("`name` (1 of 3)")."""
    cols = list(dict.fromkeys(c for _, v in rows for c in v))
    cells = {reader_name(c): [_cell(v.get(c, "")) for _, v in rows] for c in cols}
    cols = list(cells)
    rows = [(reader_name(str(k)), v) for k, v in rows]
    widths = {c: max(len(c), *(len(x) for x in cells[c])) for c in cols}
    groups = column_groups(max(len(f"`{name}` (1 of 9)"), *(len(str(k)) for k, _ in rows)), widths)  # the part label
    tables = []
    for i, group in enumerate(groups):
        part = f" ({i + 1} of {len(groups)})" if len(groups) > 1 else ""
        head = f"| `{name}`{part} | " + " | ".join(group) + " |\n|---|" + "---|" * len(group) + "\n"
        body = "\n".join(f"| {k} | " + " | ".join(cells[c][j] for c in group) + " |" for j, (k, _) in enumerate(rows))
        tables.append(head + body)
    return tables


def value_tables(results: Mapping[str, Any]) -> str:
    """Every glued value as Markdown: scalars in one table, each dict of rows or of scalars in its own (a wide
    dict of rows cut into tables of at most TABLE_CHARS characters a row). A dict of lists that `lib.glue.record`
    named the columns of (`COLUMNS_KEY`) is a table of rows under those names; a missing value shows as "—"."""
    columns = results.get(COLUMNS_KEY) or {}
    results = {k: v for k, v in results.items() if k != COLUMNS_KEY}
    scalars = {k: v for k, v in results.items() if not isinstance(v, dict)}
    parts = ["| result | value |\n|---|---|\n" + "\n".join(f"| `{k}` | {_cell(v)} |" for k, v in scalars.items())]
    for name, value in results.items():
        if not isinstance(value, dict) or not value:
            continue
        names = columns.get(name)
        if names and all(isinstance(v, list) and len(v) == len(names) for v in value.values()):
            value = {k: dict(zip(names, v)) for k, v in value.items()}
        rows = list(value.items())
        if all(isinstance(v, dict) for _, v in rows):
            parts += _rows_tables(name, rows)
        else:
            parts.append(f"| `{name}` | value |\n|---|---|\n"
                         + "\n".join(f"| {reader_name(str(k))} | {_cell(v)} |" for k, v in rows))
    return "\n\n".join(parts)


def expression_constants(expression: str) -> list[str]:
    """The strings and numbers typed into a placeholder's expression, as written ("0.0030"), but not the keys it
    looks values up by (`r["whole_temperature"]["0.25"]`, `.get("0.25")`): what the expression may state."""
    source = f"({expression.strip()}\n)"  # as `render` evaluates it: it may span lines
    tree = ast.parse(source, mode="eval")
    keys = {id(node.slice) for node in ast.walk(tree) if isinstance(node, ast.Subscript)}
    keys |= {id(node.args[0]) for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
             and isinstance(node.func, ast.Attribute) and node.func.attr == "get"}
    return [node.value if isinstance(node.value, str) else ast.get_source_segment(source, node)
            for node in ast.walk(tree) if isinstance(node, ast.Constant) and id(node) not in keys
            and isinstance(node.value, (str, float))]


def template_text(body: str) -> str:
    """The text a template states in its own words: everything outside its placeholders, and the constants typed
    into them (`expression_constants`)."""
    return "\n".join([PLACEHOLDER.sub(" ", body),
                      *(c for match in PLACEHOLDER.finditer(body) for c in expression_constants(match.group(1)))])


def undeclared_numbers(template: Path) -> list[str]:
    """The decimal numbers and percentages a template's text states that its front matter does not declare."""
    literals, body = split_template(template.read_text(encoding="utf-8"))
    return [n for n in stated_numbers(template_text(body)) if n not in literals]


def unused_literals(template: Path) -> list[str]:
    """The literals a template declares that its text no longer states."""
    literals, body = split_template(template.read_text(encoding="utf-8"))
    return sorted(set(literals) - set(stated_numbers(template_text(body))))


def render_page(results: Mapping[str, Any], info: Mapping[str, Any], template: Path, provenance: str = "") -> str:
    """The Markdown page of one run: its glued `results` and `run_info` through `template`, the run's
    `provenance` line (`lib.provenance.run_line`) after its title."""
    stable = {k: v for k, v in results.items() if not any(s in k for s in VOLATILE)}
    header = (f"<!-- generated by `make results` at commit {info['commit']} from runs/{info['notebook']} (preset "
              f"{info['preset']}, run on {info['date']}, fingerprint {info['fingerprint']}); edit "
              f"docs/results/templates/{template.name} instead -->\n")
    body = render(split_template(template.read_text(encoding="utf-8"))[1],
                  {"r": results, "run": info, "all_results": lambda: value_tables(stable),
                   **paper_names(template.name[:2])},
                  source=template)
    body = in_readers_words(body)
    if provenance:
        title, _, rest = body.partition("\n")
        body = f"{title}\n\n{provenance}\n{rest}"
    return header + body


def findings(executed: Path, templates: Path = PROJECT_ROOT / "docs" / "results" / "templates") -> str:
    """The Findings box at the top of a notebook's page (book, HTML report) from the executed notebook's results
    (`lib.templates.findings_text`): what the notebook's own box showed in JupyterLab at the end of the run."""
    number = Path(executed).name[:2]
    return findings_text(number, read_results(executed), templates) if findings_template(number, templates) else ""


def results_page(notebook: Path, template: Path) -> str:
    """The Markdown page of one executed notebook."""
    return render_page(read_complete_results(notebook), run_info(notebook), template, run_line(notebook))


def update_readme(readme: Path, headlines: str) -> bool:
    """Replace the block between the headline markers of README.md; False if the markers are missing."""
    text = readme.read_text(encoding="utf-8")
    if not HEADLINES.search(text):
        return False
    atomic_write(readme, lambda tmp: tmp.write_text(HEADLINES.sub(lambda m: m.group(1) + headlines.strip() +
                                                                  m.group(2), text), encoding="utf-8"))
    return True


def headline_rows(template: str, namespace: Mapping[str, Any], current: str, source: Path | None = None) -> str:
    """The README table: the template's header, then each notebook's row rendered from its run, or kept as it
    stands in `current` (the README's block) when that notebook has no run in `runs/`; `source`: the template's
    file, named in an error."""
    lines = template.strip().splitlines()
    kept = {line[:8]: line for line in current.splitlines() if line.startswith("| [0")}
    out = lines[:2]
    for line in lines[2:]:
        number = line[3:5]
        out.append(render(line, namespace, source=source) if f"r{number}" in namespace else kept.get(line[:8], line))
    return "\n".join(out) + "\n"


# The claims ledgers (`lib.claims`): each paper's module of CLAIMS, and the page of all of them
CLAIMS_MODULES = MODULES  # lib.claims: each notebook's ledger
PAPERS = {"01": "Ensemble precision-recall curves (Morales, Jurie & Fadili 2025)",
          "02": "CReL, conformal reliability (ICML 2026)",
          "03": "Epistemic uncertainty evaluated by regret (NeurIPS 2026)",
          "04": "IRS, the Image Retrieval Score, and DiADM (CVPR 2025)"}
SHORT = {"01": "ensemble PR curves", "02": "CReL", "03": "regret", "04": "IRS, DiADM"}  # the counts table's rows
CLAIMS_PAGE = "claims.md"
# README's "What we found": a paper with a ledger states these claims of it, with their verdicts, between markers
README_CLAIMS = {"01": ("**01 (ensemble PR curves).**", ("01.band-order", "01.failures", "01.model-uncertainty")),
                 "02": ("**02 (CReL).**", ("02.guarantee", "02.area-pcp", "02.reversal")),
                 "03": ("**03 (regret).**", ("03.best-heads", "03.best-whole", "03.scale")),
                 "04": ("**04 (IRS).**", ("04.intervals", "04.diadm-irs", "04.conditional"))}
FINDINGS_BLOCK = re.compile(r"(<!-- findings:begin -->\n).*?(\n<!-- findings:end -->)", re.S)


def update_findings(readme: Path, judged: Mapping[str, list]) -> bool:
    """Rewrite README's "What we found" (the block between its findings markers): one bullet per paper of
    README_CLAIMS, written from its ledger; a paper without a ledger in `judged` keeps its bullet as it stands.
    False when README has no such block."""
    from lib.claims import bullet

    text = readme.read_text(encoding="utf-8")
    block = FINDINGS_BLOCK.search(text)
    if block is None:
        return False
    kept = {line[4:6]: line for line in block[0].splitlines() if line.startswith("- **")}
    lines = [f"- {title} " + bullet(judged[n], ids) if n in judged else kept.get(n, f"- {title}")
             for n, (title, ids) in README_CLAIMS.items()]
    new = text[:block.start()] + block[1] + "\n".join(lines) + block[2] + text[block.end():]
    if new != text:
        atomic_write(readme, lambda tmp: tmp.write_text(new, encoding="utf-8"))
    return True


def ledger(number: str, results: Mapping[str, Any]) -> list:
    """Paper `number`'s claims with the verdicts its run's `results` decide (`lib.claims.judge`)."""
    return judge(claims_of(number), results)


def claims_page(runs: Mapping[str, Path], judged: Mapping[str, list]) -> str:
    """docs/results/claims.md: every paper's ledger (`judged`, from its executed notebook in `runs`), one table of
    the verdicts' counts, then one table per paper; a paper without a ledger says so."""
    from lib.claims import VERDICTS, counts, ledger_list

    commit = git_commit(short=True)
    lines = [f"<!-- generated by `make results` at commit {commit} from the executed notebooks in runs/; the claims "
             "are declared in lib/<paper>/claims.py, their sentences in docs/results/templates/claims-NN.md, the "
             "verdicts computed from each run -->",
             "# Do the papers' findings hold?", "",
             "Each claim of each paper, what this workbook measures for it, our value with its interval, and the "
             "verdict the recorded run computes (`lib.claims`): **holds** (the claim's rule decides for it at our "
             "scale), **fails** (it decides against it, with the measured cause where known), **undecided** (at our "
             "scale; *why* says what would decide it) or **not testable offline** (*why* names what is missing). "
             "No sentence of this workbook states more than its claim's verdict.", "",
             "| paper | " + " | ".join(VERDICTS) + " |", "|---|" + "---|" * len(VERDICTS)]
    for number in PAPERS:
        if number in judged:
            found = counts(judged[number])
            lines.append(f"| {number} · {SHORT[number]} | " + " | ".join(str(found[v]) for v in VERDICTS) + " |")
        else:
            lines.append(f"| {number} · {SHORT[number]} | " + " | ".join("—" for _ in VERDICTS) + " |")
    for number, title in PAPERS.items():
        lines += ["", f"## {number} · {title}", ""]
        if number not in judged:
            lines.append("Its ledger is not built yet: its findings are stated, without computed verdicts, on "
                         f"[its results page]({_page_of(number)}).")
            continue
        lines += [run_line(runs[number]), "", ledger_list(judged[number])]
    return "\n".join(lines) + "\n"


def _page_of(number: str) -> str:
    found = sorted((PROJECT_ROOT / "docs" / "results").glob(f"{number}-*.md"))
    return found[0].name if found else "."


def generate(runs: Path, out: Path, readme: Path | None) -> list[Path]:
    """Render the page of every notebook run found in `runs`, and its row of the README's headline table."""
    templates = sorted((out / "templates").glob("[0-9][0-9]-*.md"))
    found = {t: next(iter(sorted(runs.glob(f"{t.name[:2]}_*.ipynb"))), None) for t in templates}
    problems = [problem for run in found.values() if run is not None and (problem := run_problem(run))]
    if problems:  # before any page is written: pages of one run each, or none
        raise IncompleteRun("; ".join(problems))
    written, namespace = [], {}
    for template, run in found.items():
        number = template.name[:2]
        if run is None:
            print(f"no runs/{number}_*.ipynb: {template.name} not regenerated")
            continue
        page = out / template.name
        atomic_write(page, lambda tmp, t=template, r=run: tmp.write_text(results_page(r, t), encoding="utf-8"))
        namespace[f"r{number}"], namespace[f"run{number}"] = read_complete_results(run), run_info(run)
        namespace.update(paper_names(number, f"paper{number}"))
        written.append(page)
    ledgers = {n: found[t] for t in found if (n := t.name[:2]) in CLAIMS_MODULES and found[t] is not None}
    if ledgers and len(ledgers) == len(CLAIMS_MODULES):
        judged = {n: ledger(n, read_complete_results(run)) for n, run in ledgers.items()}
        page = out / CLAIMS_PAGE
        atomic_write(page, lambda tmp: tmp.write_text(claims_page(ledgers, judged), encoding="utf-8"))
        written.append(page)
        if readme is not None and update_findings(readme, judged) and readme not in written:
            written.append(readme)
    elif CLAIMS_MODULES:
        print(f"{CLAIMS_PAGE} not regenerated: it needs the runs of notebooks {', '.join(CLAIMS_MODULES)}")
    headline_template = out / "templates" / "headlines.md"
    if readme is not None and headline_template.exists() and namespace:
        block = HEADLINES.search(readme.read_text(encoding="utf-8"))
        template = split_template(headline_template.read_text(encoding="utf-8"))[1]
        table = headline_rows(template, namespace, block[0] if block else "", headline_template)
        if update_readme(readme, table) and readme not in written:
            written.append(readme)
    return written


def arguments_problem(runs: Path, out: Path, readme: Path | None) -> str | None:
    """Why `make results` cannot run with these folders, checked before any page is written, or None."""
    if not runs.is_dir():
        return f"--runs {runs} is not a folder (the executed notebooks of `make run`)"
    if not sorted((out / "templates").glob("[0-9][0-9]-*.md")):
        return f"--out {out} holds no templates/[0-9][0-9]-*.md to render"
    if readme is not None and not readme.is_file():
        return f"--readme {readme} does not exist"
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, default=PROJECT_ROOT / "runs")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "results")
    parser.add_argument("--readme", type=Path, default=PROJECT_ROOT / "README.md")
    args = parser.parse_args(argv)
    problem = arguments_problem(args.runs, args.out, args.readme)
    if problem:
        parser.error(problem)
    try:
        written = generate(args.runs, args.out, args.readme)
    except IncompleteRun as err:
        raise SystemExit(f"make results: {err}") from None
    except TemplateError as err:
        raise SystemExit(f"make results: {err.args[0]}") from None
    for path in written:
        print(f"wrote {path} ({dt.datetime.now():%H:%M:%S})")


if __name__ == "__main__":
    main()
