"""Plotting style and figure saving shared by the notebooks."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns

from lib.cache import atomic_write

PALETTE = sns.color_palette("colorblind")


def use_style() -> None:
    """One look for every notebook: seaborn's whitegrid, colour-blind palette, readable sizes."""
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


def show(fig: plt.Figure, name: str | None = None, directory: str | Path | None = None, *,
         alt: str | None = None) -> None:
    """Save `fig` as `<directory>/<name>.png` (see `savefig`), display it with alt text and close it.

    A figure with a suptitle and no layout engine gets `tight_layout`, so the suptitle cannot sit on the
    axes' titles. The alt text (`alt`, else one built from the figure's titles and labels) travels in the output's
    metadata; the workbook's HTML template (`make run`) writes it into the report's <img alt=...>.
    Returns nothing, so a cell ending with `show(...)` prints no stray path.
    """
    from IPython.display import display

    if fig._suptitle is not None and fig.get_layout_engine() is None:
        with warnings.catch_warnings():  # a figure tight_layout cannot handle keeps its layout
            warnings.simplefilter("ignore")
            fig.tight_layout()  # room for the suptitle above the axes' own titles
    if name:
        savefig(fig, name, directory)
    display(fig, metadata={"image/png": {"alt": alt or alt_text(fig)}})
    plt.close(fig)

