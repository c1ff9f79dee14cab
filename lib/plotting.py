"""Plotting style and figure saving shared by the notebooks."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.legend import Legend
from matplotlib.text import Text

from lib.cache import atomic_write

# Okabe & Ito's colour-blind-safe colours, ordered so that the first five differ in hue and lightness for the
# three common colour-vision deficiencies: seaborn's "colorblind" put orange (1) beside vermilion (3), which read as
# one colour in figures with four series (01's C = 2 / C = 8, 03's Deep Ensemble / DDU, 04's extractors).
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#444444", "#D55E00", "#999999", "#F0E442",
             "#8C564B")
PALETTE = sns.color_palette(list(OKABE_ITO))


# The smallest text a figure may show, in CSS px as the book shows the figure at a 1,400 px window (its image scaled
# down to the text column): a figure whose smallest text falls below it fails the book's reader test
# (tests/test_browser.py). Its size in the image is `figure_texts`'s, carried to the page by `show`'s metadata.
MIN_TEXT_PX = 9.0


def use_style() -> None:
    """One look for every notebook: seaborn's whitegrid, the colour-blind palette above, readable sizes."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 130, "savefig.bbox": "tight",
                         "axes.titlesize": "medium", "legend.fontsize": "small"})


def savefig(fig: plt.Figure, name: str, directory: str | Path | None) -> Path | None:
    """Save `fig` as `<directory>/<name>.png` (atomically); do nothing when `directory` is empty/None.

    Notebooks pass their `FIGURES_DIR` parameter; `make run` sets it to docs/figures.
    """
    if not directory:
        return None
    path = Path(directory) / f"{name}.png"
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))


def alt_text(fig: plt.Figure) -> str:
    """A description of `fig` built from its titles and axis labels (the alt text of HTML reports)."""
    parts = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        parts.append(fig._suptitle.get_text())
    for ax in fig.axes:
        bits = [t for t in (ax.get_title(), ax.get_xlabel() and f"x: {ax.get_xlabel()}",
                            ax.get_ylabel() and f"y: {ax.get_ylabel()}") if t]
        if bits:
            parts.append(", ".join(bits))
    return "Figure. " + "; ".join(parts) if parts else "Figure."


def _draw(fig: plt.Figure) -> None:
    """Draw `fig` once on an Agg canvas (its texts laid out and its tick labels set), its own canvas kept."""
    original = fig.canvas
    try:
        FigureCanvasAgg(fig).draw()
    finally:
        fig.set_canvas(original)


def figure_in_readers_words(fig: plt.Figure) -> bool:
    """Every text of `fig` with its code names said as the reader's names (`lib.tables.in_readers_words`: "resnet20"
    -> "ResNet-20", "paired_t" -> "paired t", a set's short label in words), math left as it is: titles, labels,
    legend entries, annotations, and tick labels given as strings (set again, fixed, where one changes: then True,
    and the figure must be drawn again before its tick labels' texts read the new names)."""
    from lib.tables import in_readers_words as words

    _draw(fig)  # the tick labels are set when the figure is drawn
    ticks_changed = False
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            locations, labels = axis.get_majorticklocs(), [t.get_text() for t in axis.get_majorticklabels()]
            said = [words(label) for label in labels]
            if said != labels and len(labels) == len(locations):
                axis.set_ticks(locations, said)
                ticks_changed = True
    for text in fig.findobj(Text):
        if text.get_text() and words(text.get_text()) != text.get_text():
            text.set_text(words(text.get_text()))
    return ticks_changed


def figure_texts(fig: plt.Figure, *, draw: bool = True) -> list[tuple[str, float]]:
    """(text, font size in px of the displayed image) of every visible, non-empty text of `fig`, as drawn: titles,
    labels, tick labels, legend entries, annotations. The notebook's image is drawn at `fig.dpi` (IPython's inline
    display), so a font of s points is s · dpi / 72 px tall in it. `draw=False`: `fig` was drawn as it is now."""
    if draw:
        _draw(fig)  # the tick labels are set when the figure is drawn
    found = []
    for text in fig.findobj(Text):
        words = text.get_text().strip()
        axes = text.axes
        if words and text.get_visible() and (axes is None or axes.get_visible()):
            found.append((words, text.get_fontsize() * fig.dpi / 72))
    return found


def legend_beside(ax: plt.Axes, **kwargs) -> Legend:
    """`ax`'s legend to the right of the axes, off its data (for an axes with no neighbour on its right)."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)


def legend_below(fig: plt.Figure, axes: list[plt.Axes] | None = None, *, ncol: int = 3, **kwargs) -> Legend:
    """One legend for the entries of `axes` (default: all of `fig`'s), each label once, under the figure and off
    every axes. `fig` must use the constrained layout (`plt.subplots(..., layout="constrained")`), which makes
    room for it."""
    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        raise ValueError("legend_below needs a figure made with layout='constrained'")
    entries: dict[str, object] = {}
    for ax in axes if axes is not None else fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return fig.legend(list(entries.values()), list(entries), loc="outside lower center",
                      ncol=max(1, min(ncol, len(entries))), **kwargs)


def _legends(fig: plt.Figure) -> list[tuple[str, Legend]]:
    found = [(ax.get_title() or "axes", ax.get_legend()) for ax in fig.axes]
    found += [("figure", legend) for legend in fig.legends]
    return [(name, legend) for name, legend in found if legend is not None and legend.get_visible()]


def legends_over_data(fig: plt.Figure, tolerance: float = 0.01) -> list[str]:
    """The legends of `fig` that hide part of the figure: the titles of their axes ('figure' for a figure
    legend). A legend hides something when, drawn without its legends and grid lines, the figure has ink
    (pixels darker than near-white) on more than `tolerance` of the area under the legend's box."""
    legends = _legends(fig)
    if not legends:
        return []
    original = fig.canvas
    canvas = FigureCanvasAgg(fig)
    try:
        canvas.draw()
        boxes = [legend.get_window_extent(canvas.get_renderer()) for _, legend in legends]
        hidden = [legend for _, legend in legends] + [line for ax in fig.axes for line in
                                                     (*ax.get_xgridlines(), *ax.get_ygridlines()) if line.get_visible()]
        for artist in hidden:
            artist.set_visible(False)
        engine = fig.get_layout_engine()
        fig.set_layout_engine("none")  # the axes where they were: a layout engine would give them the legend's room
        canvas.draw()
        ink = np.asarray(canvas.buffer_rgba())[..., :3].min(axis=2) < 235
        for artist in hidden:
            artist.set_visible(True)
    finally:
        fig.set_layout_engine(engine)
        fig.set_canvas(original)
    height, width = ink.shape
    covering = []
    for (name, _), box in zip(legends, boxes):
        x0, x1 = max(int(box.x0) + 2, 0), min(int(box.x1) - 2, width)
        y0, y1 = max(height - int(box.y1) + 2, 0), min(height - int(box.y0) - 2, height)
        if x1 > x0 and y1 > y0 and ink[y0:y1, x0:x1].mean() > tolerance:
            covering.append(name)
    return covering


def numbered(fig: plt.Figure, figure: str, title: str | None = None) -> None:
    """`fig`'s suptitle (else `title`, made its suptitle) preceded by "Figure <figure>: " (see `show`)."""
    text = (fig._suptitle.get_text() if fig._suptitle is not None else "") or title
    if not text:
        raise ValueError(f"show: figure {figure!r} has no suptitle to number; give its title= ")
    if re.match(r"Figure \w+:", text):
        raise ValueError(f"show: the title of figure {figure!r} is numbered already: {text!r}")
    if fig._suptitle is not None and fig._suptitle.get_text():
        fig._suptitle.set_text(f"Figure {figure}: {text}")  # its font and place kept
    else:
        fig.suptitle(f"Figure {figure}: {text}")


def show(fig: plt.Figure, name: str | None = None, directory: str | Path | None = None, *,
         figure: str | None = None, title: str | None = None, alt: str | None = None) -> None:
    """Save `fig` as `<directory>/<name>.png` (see `savefig`), display it with alt text and close it.

    `figure` is the figure's label, written as "Figure <label>: " before its title (its suptitle, else `title`):
    "1", "2", … for a figure that redraws the paper's figure of that number, "A", "B", … in the notebook's order
    for the workbook's own figures (those beyond the paper, and every figure of a paper whose digest numbers none).

    A figure with a suptitle and no layout engine gets `tight_layout`, so the suptitle cannot sit on the
    axes' titles. The alt text (`alt`, else one built from the figure's titles and labels) travels in the output's
    metadata; the workbook's HTML template (`make run`) writes it into the report's <img alt=...>. The metadata also
    holds the figure's texts and its smallest font in the image's px (`figure_texts`), which the book's reader test
    reads (a code name in a label, text under MIN_TEXT_PX at the page's width).
    Every text of the figure says code names in the reader's words (`figure_in_readers_words`).
    Returns nothing, so a cell ending with `show(...)` prints no stray path.
    """
    from IPython.display import display

    if figure is not None:
        numbered(fig, figure, title)
    redraw = figure_in_readers_words(fig)
    if fig._suptitle is not None and fig.get_layout_engine() is None:
        with warnings.catch_warnings():  # a figure tight_layout cannot handle keeps its layout
            warnings.simplefilter("ignore")
            fig.tight_layout()  # room for the suptitle above the axes' own titles
    if name:
        savefig(fig, name, directory)
    texts = figure_texts(fig, draw=redraw)
    metadata = {"alt": alt or alt_text(fig), "texts": sorted({words for words, _ in texts})}
    if texts:
        metadata["min_text_px"] = round(min(px for _, px in texts), 2)
    if covering := legends_over_data(fig):
        metadata["legend_over_data"] = covering
    display(fig, metadata={"image/png": metadata})
    plt.close(fig)

