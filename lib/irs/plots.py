"""Notebook 04's figures that take more than a few lines."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from lib.plotting import PALETTE, legend_below
from lib.tables import set_names

MARKERS = "os^vDP*Xhp<>"


def simulation_figure(sim: pd.DataFrame, sim_reps: int, sim_n_train: int, nominal: float) -> plt.Figure:
    """Section 1: bias (+- sd) of IRS_inf and the coverage of its interval (`nominal`: 1 - 2 alpha_e) against
    n / N, one line per true s / N. The x ticks are the simulated ratios only (no minor-tick labels to collide)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")  # room for the figure title
    for i, (truth, grp) in enumerate(sim.groupby("truth")):
        axes[0].errorbar(grp["ratio"], grp["bias"], yerr=grp["sd"], marker="o", capsize=3, color=PALETTE[i],
                         label=f"s / N = {truth:g}")
        axes[1].plot(grp["ratio"], grp["coverage"], marker="o", color=PALETTE[i], label=f"s / N = {truth:g}")
    se = np.sqrt(nominal * (1 - nominal) / sim_reps)
    axes[1].axhspan(nominal - 2 * se, nominal + 2 * se, color="0.85", label=f"{nominal:.2f} ± 2 binomial se")
    axes[0].axhline(0, color="k", lw=0.8)
    ratios = sorted(sim["ratio"].unique())
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
        ax.xaxis.set_minor_formatter(NullFormatter())
    axes[0].set(xlabel="n / N", ylabel="bias of IRS_∞ (± sd)", title="MLE on simulated truth")
    axes[1].set(xlabel="n / N", ylabel=f"coverage of the {nominal:.0%} interval", ylim=(0.5, 1.02),
                title=f"interval coverage, N = {sim_n_train:,}")
    axes[1].legend(fontsize="small")
    return fig


def toy_generators_figure(table: pd.DataFrame, extractor: str) -> plt.Figure:
    """Section 4: IRS_inf,a of every toy generator against FID, recall and coverage on one extractor's
    features; one marker per generator, named in a single legend under the panels (the set labels said in words by
    `lib.plotting.show`; no labels piled on the points;
    the figure narrow enough for its text to stay readable at the page's width)."""
    fig, axes = plt.subplots(1, 3, figsize=(11, 4.6), sharey=True, layout="constrained")  # room for the title
    for k, (label, row) in enumerate(table.iterrows()):
        style = dict(color=PALETTE[k % len(PALETTE)], marker=MARKERS[k % len(MARKERS)], s=60, label=label)
        for ax, x in zip(axes, ("fid", "recall", "coverage")):
            ax.scatter(row[x], row["irs_adj"], **style)
    for ax, x in zip(axes, ("FID (on these features)", "recall", "coverage")):
        ax.set_xlabel(x)
    axes[0].set_ylabel("IRS_∞,a")
    axes[1].set_title(f"toy generators on {extractor} features")
    legend_below(fig, ncol=4, title="generator")
    return fig


def explorer_figure(results: tuple[dict, dict, dict], f: float, title: str) -> plt.Figure:
    """The explorer's view: IRS_inf of the synthetic draw, of the real reference and IRS_inf,a, each with
    its interval, against the true class fraction f (dashed)."""
    fig, ax = plt.subplots(figsize=(5.5, 2.6))
    for i, r in enumerate(results):
        ax.errorbar([r["estimate"]], [i], xerr=[[r["estimate"] - r["lower"]], [r["upper"] - r["estimate"]]],
                    marker="o", capsize=4, color=PALETTE[i])
    ax.axvline(f, color="k", ls="--", lw=0.8)
    ax.set(yticks=[0, 1, 2], yticklabels=["IRS_∞ synth", "IRS_∞ real", "IRS_∞,a"], xlim=(0, 1.5), title=title)
    return fig


def generator_grid_figure(grids: dict[str, dict], train: np.ndarray, labels: list[str], count: int = 8) -> plt.Figure:
    """Section 5's image grids: per set in `labels`, a row of `count` samples (spread over the stored grid) and
    below it each sample's nearest training image under the first evaluation extractor (`train`: the
    generators' database at their resolution, (N, r, r, 3) uint8)."""
    fig, axes = plt.subplots(2 * len(labels), 1, figsize=(count * 0.75 + 2.2, 1.55 * len(labels)))
    for i, label in enumerate(labels):
        g = grids[label]
        pick = np.linspace(0, len(g["grid"]) - 1, count).round().astype(int)
        named = set_names(label).replace(", ", ",\n", 1)  # the arm, then what sets it apart, on two lines
        for j, (images, title) in enumerate(((g["grid"][pick], named), (train[g["idx"][pick]], "nearest training"))):
            ax = axes[2 * i + j]
            ax.imshow(np.concatenate(list(images), axis=1), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_ylabel(title, rotation=0, ha="right", va="center", fontsize=9)
    fig.subplots_adjust(left=0.3, right=0.99, top=0.99, bottom=0.01, hspace=0.08)
    return fig


def generator_trend_figure(trends: dict, extractor: str) -> plt.Figure:
    """Section 5: IRS_inf,a (left) and FID (right) of each arm against the fraction of the training budget."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")  # room for the figure title
    for i, (arm, points) in enumerate(sorted(trends["fractions"].items())):
        fractions = sorted(points)
        for ax, k in zip(axes, (0, 1)):
            ax.plot(fractions, [points[f][k] for f in fractions], marker=MARKERS[i], color=PALETTE[i], label=arm)
    axes[0].set_ylabel(r"IRS$_{\infty,a}$")
    axes[1].set_ylabel("FID (test reference)")
    for ax in axes:
        ax.set_xlabel("fraction of the training budget")
    axes[1].legend(title=f"{extractor} features")
    return fig
