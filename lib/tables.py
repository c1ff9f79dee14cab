"""Tables as the reader sees them: numbers rounded to what they mean, counts as whole numbers, blanks for
missing values, and the papers' names in the headers instead of the code's. The notebooks display
`formatted(...)` instead of `table.round(n)`, whose float columns print counts as `877.0` and whose fixed decimals
print a runtime of 0.000181 s as `0.0002`. `use_reader_names()`, in each notebook's imports cell, makes every table
the notebook displays show `READER_NAMES` in its headers and row labels (`readable`); the tables themselves, and
what the notebook records, keep the code's names."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from lib.params import resolved_parameters


def _whole(values: pd.Series) -> bool:
    """True when every present value is a whole number (a count), bools excluded."""
    present = [v for v in values if not _missing(v)]
    return bool(present) and all(isinstance(v, Real) and not isinstance(v, bool) and float(v).is_integer()
                                 for v in present)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(value: object, digits: int, significant: bool, whole: bool) -> str:
    if _missing(value):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if not isinstance(value, Real):
        return str(value)
    if whole or isinstance(value, Integral):
        return f"{int(value)}"
    return f"{value:.{digits}g}" if significant else f"{value:.{digits}f}"


def formatted(table: pd.DataFrame, digits: int = 3, *, significant: bool = False, axis: int = 0) -> pd.DataFrame:
    """`table` with every cell a string: floats to `digits` decimals (`significant`: significant digits), booleans as
    "yes"/"no", a column whose present values are all whole numbers as integers (`axis=1`: judged per row, for a
    transposed table whose rows are the quantities), missing values blank. Index and columns are kept."""
    if axis == 1:
        return formatted(table.T, digits, significant=significant).T
    out = pd.DataFrame(index=table.index, columns=table.columns, dtype=object)
    for i in range(table.shape[1]):
        values = table.iloc[:, i]
        whole = _whole(values)
        out.iloc[:, i] = [_cell(v, digits, significant, whole) for v in values]
    return out


def grouped(table: pd.DataFrame, groups: dict[str, dict[str, str]]) -> pd.DataFrame:
    """`table`'s columns under two-level headers, so that a table of ours-beside-the-paper's values fits the page:
    the quantity's name is written once above its short sub-columns instead of in every column's header.

    groups: {top header: {sub-header: a column of `table`}}, in display order; a column of `table` named nowhere
    is left out, and a name that `table` lacks is an error (a renamed column would otherwise vanish silently).
    """
    missing = [column for subs in groups.values() for column in subs.values() if column not in table.columns]
    if missing:
        raise KeyError(f"grouped: columns not in the table: {missing}")
    pairs = [(top, sub, column) for top, subs in groups.items() for sub, column in subs.items()]
    out = table[[column for _, _, column in pairs]].copy()
    out.columns = pd.MultiIndex.from_tuples([(top, sub) for top, sub, _ in pairs])
    return out


def resolved_table(config: Any, presets: Mapping[str, Any], namespace: Mapping[str, Any]) -> Styler:
    """The table after a notebook's configuration cell: the value this run uses for each parameter that sets its
    config (a parameter left None shows the preset's), and the preset's value where the run's differs
    (`lib.params.resolved_parameters`). Names and values are code, as a reader passes them to papermill
    (`-p N_TRAIN 10000`), so they show in code type, not as sentences' words."""
    from html import escape

    rows = resolved_parameters(config, presets, namespace)
    table = pd.DataFrame(rows, columns=["parameter", "value", "preset"]).set_index("parameter")
    table.columns = pd.Index(["this run", f"preset {config.preset} where it differs"], name="parameter")
    table.index.name = None

    def code(value: object) -> str:
        return f"<code>{escape(str(value))}</code>" if value != "" else ""

    return table.style.format(code).format_index(code, axis=0)


def labelled(table: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    """`table` with its columns `by` as the row labels, named so that no label column is left unnamed: one column's
    name goes to the header's corner cell, drawn without a header row of its own (pandas gives index names one,
    empty but for them); several keep that row, each name above its own labels (pandas would put a corner name
    above the last of them only)."""
    out = table.set_index(by)
    if isinstance(by, str):
        out.columns.name, out.index.name = by, None
    return out


# The reader's name of each code name that the library's tables carry in their headers or row labels, in the papers'
# notation (docs/glossary.md defines the terms). A label is read word by word (words split at spaces, "/", "+" and
# parentheses); a word not listed whose parts are joined by "_" shows them apart ("sampling_share": "sampling share"),
# unless it begins with one letter, an index in the papers' notation (r_s, p_ood).
# Only code names belong here, never an English word, so that a word is replaced wherever it stands.
READER_NAMES: dict[str, str] = {
    # 01: PR curves, ensembles, tests
    "auc_mean": "mean AUC", "auc_median": "median AUC", "auc_min": "min AUC", "auc_sd": "AUC sd",
    "auc_grid_mean": "mean AUC (grid)", "auc_welch_p": "Welch p of AUC", "band_width": "band width",
    "below_0.9": "AUC < 0.9", "paper_below_0.9": "paper: AUC < 0.9", "train_hours": "train hours", "ema": "EMA",
    "min_p": "min p", "paired_t": "paired t", "bh": "BH", "student": "Student t", "welch": "Welch t",
    "wilcoxon": "Wilcoxon", "permutation_maxT": "permutation max-T", "fraction": "share better",
    "fraction_bh": "share better (BH)", "fraction_maxT": "share better (max-T)", "fourier": "Fourier", "mlp": "MLP",
    "n_train": "n train", "stratified_t": "stratified t", "cosine_lr": "cosine LR", "batch128": "batch 128",
    # 02: CReL
    "coverage_z": "Coverage-Z", "coverage_y": "Coverage-Y", "area": "Area", "crel": "CReL", "cvae": "CVAE",
    "crel_s": "CReL (s)", "feldman_s": "Feldman (s)", "feldman_inside": "Feldman inside",
    "feldman_in_s": "Feldman inside (s)", "feldman_out_s": "Feldman outside (s)", "y_grid": "Y grid",
    "z_grid": "Z grid", "q_alpha": "q_α", "median_std": "median sd", "max_std": "max sd",
    "median_basin_std": "median sd in the best basin", "median_best_share": "median share in the best basin",
    "per_image": "per image", "lgm": "LGM",
    # 03: epistemic uncertainty and regret
    "P_rho": "P_ρ", "P_Ri/rho": "P_Ri/ρ", "P_Re/rho": "P_Re/ρ",
    "ce": "CE", "zero_one": "0/1", "mc_dropout": "MC-Dropout", "ensemble": "Deep Ensemble",
    "evidential": "Evidential", "ddu": "DDU", "AuReC_joint": "AuReC (joint)", "oracle_AuReC": "oracle AuReC",
    "mean_E*": "mean E*", "P-gap_ref_range": "P-gap (ref range)", "ties_A*": "ties of A*", "median_tau": "median τ",
    "share_same": "same ranking", "mnist": "MNIST", "gaussian_noise": "Gaussian noise",
    "uniform_noise": "uniform noise", "n_test": "n test",
    # 04: IRS
    "irs_alpha": "IRS_α", "irs_inf": "IRS_∞", "irs_adj": "IRS_∞,a", "irs_inf_real": "IRS_∞ of real", "fid": "FID",
    "r2": "R²", "source_hit": "source hit", "covers_g": "covers g", "miss_low": "missed low",
    "miss_high": "missed high", "s_true": "s (true)", "resnet20": "ResNet-20", "resnet56": "ResNet-56",
    "efficientnet_lite0": "EfficientNet-Lite0", "randproj": "random projection", "randcnn": "random CNN",
    "diadm": "DiADM",
}
_WORD = re.compile(r"[^\s/()+]+")
_SNAKE = re.compile(r"[a-z][a-z0-9]+(?:_[A-Za-z0-9.*]+)+")  # not r_s or p_ood: one letter, then an index


# A generated set's label (`lib.diffusion.family.GeneratedSet.label`: "class c32 48% w2", "diadm c32 100% held-out
# cond.") and what it says: the arm, its width (channels), the share of the training budget, the guidance scale
SET_LABEL = re.compile(r"\b(?P<arm>class|diadm|unconditional) c(?P<width>\d+) (?P<budget>[\d.]+)%"
                       r"(?: w(?P<guidance>[\d.]+))?(?P<heldout> held-out cond\.)?")
SET_ARMS = {"class": "class-conditional", "diadm": "DiADM", "unconditional": "unconditional"}


def set_name(match: re.Match) -> str:
    """A set label's reader name: "class-conditional, width 32, 48 % of the budget, guidance 2" (the full budget
    unsaid), for prose and figures (`set_names`); tables keep the short label, which the notebooks explain."""
    text = f"{SET_ARMS[match['arm']]}, width {match['width']}"
    if float(match["budget"]) != 100:
        text += f", {match['budget']} % of the budget"
    if match["guidance"] is not None:
        text += f", guidance {match['guidance']}"
    return text + (", held-out conditions" if match["heldout"] else "")


def set_names(text: str) -> str:
    """`text` with every generated set's label in it said in words (`set_name`)."""
    return SET_LABEL.sub(set_name, text)


# Code names that are also English words a sentence may use ("an ensemble of DDPMs", "the area of a set"): prose
# keeps them; every other READER_NAMES entry is a code name wherever it stands as a word of its own.
ENGLISH_WORDS = frozenset({"ensemble", "area", "student", "fraction", "evidential"})


def code_name_pattern() -> str:
    """A regular expression (JavaScript's and Python's alike) of the code names a reader should not read in prose or
    a figure: each READER_NAMES entry (but ENGLISH_WORDS) as a word of its own (not inside a path, a file name or a
    hyphenated word; "efficientnet_lite0/g0.6" is one), and a generated set's short label ("diadm c32 100%"). The
    book's reader test (tests/test_browser.py) looks for it; `in_readers_words` replaces it."""
    names = sorted((k for k, v in READER_NAMES.items() if k != v and k not in ENGLISH_WORDS), key=len,
                   reverse=True)
    words = "|".join(re.escape(k) for k in names)
    return rf"(?<![\w./\-])(?:{words})(?![\w\-])|" + re.sub(r"\(\?P<\w+>", "(?:", SET_LABEL.pattern)


_CODE_NAME = re.compile(code_name_pattern())
# what prose keeps as it is: code spans, math, links' targets, HTML tags and Markdown tables' rows (tables keep the
# short labels that the notebooks explain)
_VERBATIM = re.compile(r"(`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|\]\([^)]*\)|<[^>\n]*>|(?m:^[ \t]*\|[^\n]*$))", re.S)


def in_readers_words(text: str) -> str:
    """Markdown `text` with each code name in its prose said as the reader's name ("resnet20" -> "ResNet-20",
    "P_Ri/rho" -> "P_Ri/ρ", a set label in words), code spans, math, links' targets, HTML and table rows left as they
    are: the
    sentences the library writes from results keyed by code names (reading cells, Findings boxes, ledgers)."""
    def prose(part: str) -> str:
        part = SET_LABEL.sub(set_name, part)
        return _CODE_NAME.sub(lambda m: READER_NAMES.get(m.group(0), m.group(0)), part)

    return "".join(part if i % 2 else prose(part) for i, part in enumerate(_VERBATIM.split(text)))


def reader_name(label: object) -> object:
    """`label` with each code name in it replaced by its READER_NAMES entry (a word not listed whose parts are joined
    by "_" shows them apart); a label that is not a string is returned as it is."""
    if not isinstance(label, str):
        return label
    if label in READER_NAMES:
        return READER_NAMES[label]

    def word(match: re.Match) -> str:
        text = match.group(0)
        if text in READER_NAMES:
            return READER_NAMES[text]
        return text.replace("_", " ") if _SNAKE.fullmatch(text) else text

    return _WORD.sub(word, label)


def _reader_value(value: object) -> object:
    """A cell as a reader reads it: "yes"/"no" for Python's True/False, "–" for None."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    return "–" if value is None else value


def _reader_label(label: object) -> object:
    """A row or column label as a reader reads it: `reader_name`, and yes/no or – for a label that is a boolean or
    None (a pivot on a flag: "EMA" above "no" and "yes", not False and True)."""
    return _reader_value(label) if label is None or isinstance(label, (bool, np.bool_)) else reader_name(label)


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with READER_NAMES in its column and row labels and in their names (every level), "yes"/"no" for
    booleans and "–" for None in any column or label; the table itself is unchanged. The name of one level of row labels
    goes to the header's corner cell ("method") when the columns have one level and no name, instead of a header row
    of its own, empty but for it; several levels keep that row, each name above its own labels."""
    out = table.rename(index=_reader_label, columns=_reader_label)
    flags = [c for c in out.columns if out[c].dtype == bool or out[c].dtype == object]
    if flags:  # a reader's yes/no, not Python's True/False
        out = out.astype({c: object for c in flags})
        for c in flags:
            out[c] = out[c].map(_reader_value)
    out.index.names = [reader_name(name) for name in out.index.names]
    out.columns.names = [reader_name(name) for name in out.columns.names]
    name = out.index.names[0]
    if out.index.nlevels == 1 and name is not None and out.columns.nlevels == 1 and out.columns.name is None:
        out.columns.name, out.index.name = str(name), None
    return out


def readable_html(table: pd.DataFrame) -> str:
    """The HTML a notebook shows for `table` (`use_reader_names`): pandas' own, of the `readable` table, with "–"
    for a missing number, and without the row labels when they are only pandas' default 0, 1, 2, … (no label
    to read)."""
    out = readable(table)
    default = isinstance(table.index, pd.RangeIndex) and table.index.start == 0 and table.index.name is None
    return out.to_html(notebook=True, na_rep="–", index=not default, max_rows=pd.get_option("display.max_rows"),
                       max_cols=pd.get_option("display.max_columns"),
                       show_dimensions=pd.get_option("display.show_dimensions") is True)


def use_reader_names(shell: Any = None) -> None:
    """Every DataFrame the running notebook displays shows its `readable` labels: the HTML that JupyterLab, the
    report and the book draw. Outside IPython (a plain script) there is nothing to display and nothing is done."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, readable_html)
