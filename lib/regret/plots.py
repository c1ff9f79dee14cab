"""Notebook 03's figures that take more than a few lines."""

from __future__ import annotations

import matplotlib.pyplot as plt

from lib.plotting import PALETTE, legend_below
from lib.regret.paper import METHOD_NAMES
from lib.regret.uq import METHODS

# one colour per method, the same in every figure of notebook 03 (its cells use PALETTE in METHODS' order)
METHOD_COLORS = {METHOD_NAMES[m]: PALETTE[i] for i, m in enumerate(METHODS)}
WIDTH_PANELS = (("accuracy", "test accuracy (CIFAR-10 labels)"), ("ECE", "ECE (15 bins)"),
                ("CE AuReC", "CE AuReC"), ("0/1 AuReC", "0/1 AuReC"), ("CE r_s(A*,E*)", "CE r_s(A*, E*)"),
                ("CE r_s(Â,Ê)", "CE r_s(Â, Ê)"))


def width_figure(rows: list[dict]) -> plt.Figure:
    """The width study (`lib.regret.experiment.width_rows`): one panel per metric against the whole networks'
    conv-group widths (in the order measured), a line per method; dashed, the paper's value of the method where
    the paper gives one. Panels whose metric the rows lack (a loss not evaluated) are left out."""
    widths = list(dict.fromkeys(r["widths"] for r in rows))
    panels = [(key, label) for key, label in WIDTH_PANELS if any(key in r for r in rows)]
    ncols = 3
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(11, 3.1 * nrows + 0.6), layout="constrained", squeeze=False)
    for ax, (key, label) in zip(axes.flat, panels):
        for method in dict.fromkeys(r["method"] for r in rows):
            mine = [r for r in rows if r["method"] == method and key in r]
            color = METHOD_COLORS.get(method, "0.3")
            ax.plot([widths.index(r["widths"]) for r in mine], [r[key] for r in mine], marker="o", color=color,
                    label=method)
            paper = mine[0].get(f"paper {key}") if mine else None
            if paper is not None:
                ax.axhline(paper, color=color, ls="--", lw=1, label=f"{method}, paper")
        ax.set_xticks(range(len(widths)), widths)
        ax.set_xlim(-0.3, len(widths) - 0.7)
        ax.set_title(label)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("conv-group widths")
    legend_below(fig, ncol=4)
    fig.suptitle("Whole networks at several widths (solid), the paper's values (dashed)")
    return fig
