"""Notebook 01's figure helpers: an ensemble's PR-curve band, the recall ranges where a test is significant, and
each member's AUC against training steps (the frontier study)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def plot_band(ax: plt.Axes, band: dict, *, label: str, color, members: bool = False) -> None:
    """Mean curve and percentile band of an ensemble (a dict from `lib.prcurves.ensemble_band`).

    With `members`, each member's curve is drawn faintly underneath.
    """
    if members:
        for curve in band["members"]:
            ax.plot(band["recall"], curve, color=color, lw=0.5, alpha=0.25)
    ax.fill_between(band["recall"], band["lo"], band["hi"], color=color, alpha=0.25, lw=0)
    ax.plot(band["recall"], band["mean"], color=color, lw=2, label=label)
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1), ylim=(0, 1.02))


def shade_mask(ax: plt.Axes, x, mask, *, color, label: str | None = None) -> None:
    """Shade the x-ranges where the boolean `mask` holds (e.g. where a test is significant); an empty mask shades
    nothing and adds no legend entry (a legend would otherwise name a region the figure does not show)."""
    ax.fill_between(x, 0, 1, where=mask, transform=ax.get_xaxis_transform(), color=color, alpha=0.15, lw=0,
                    label=label if np.any(mask) else None, step="mid")


def plot_member_trajectories(ax: plt.Axes, trajectory: dict, *, colors, threshold: float) -> None:
    """Each member's AUC against Adam steps (a dict from `lib.prcurves.budget.member_trajectories`), one line
    per member, with the failure threshold dotted."""
    for member, aucs in enumerate(trajectory["aucs"]):
        ax.plot(trajectory["steps"], aucs, marker="o", ms=3, lw=1, color=colors[member % len(colors)])
    ax.axhline(threshold, color="k", ls=":", lw=1)
    ax.set(xscale="log", ylim=(0, 1.02))


def frontier_figure(rows: list[dict], colors: list, threshold: float) -> plt.Figure:
    """The frontier study (`lib.prcurves.budget.frontier_study` rows): each member's AUC against Adam steps, one
    column per complexity, the trained weights (the authors' sampling) on top and their EMA below, the failure
    `threshold` dotted."""
    from lib.prcurves.budget import EMA_DECAY, member_trajectories

    complexities = sorted({r["C"] for r in rows})
    fig, axes = plt.subplots(2, len(complexities), figsize=(5.5 * len(complexities), 6.4), sharex=True, sharey=True,
                             squeeze=False)
    for column, C in enumerate(complexities):
        for row, ema in enumerate((False, True)):  # the authors sample with the trained weights; the EMA is ours
            plot_member_trajectories(axes[row][column], member_trajectories(rows, C, ema=ema), colors=colors,
                                     threshold=threshold)
            weights = f"EMA {EMA_DECAY:g} of the weights" if ema else "trained weights (the authors')"
            axes[row][column].set_title(f"C = {C}, {weights}")
        axes[1][column].set_xlabel("Adam steps (batch 500)")
    for row in axes:
        row[0].set_ylabel("AUC_raw per member")
    fig.suptitle("The authors' recipe: each member's AUC against training steps (one line per member; dotted: "
                 f"{threshold:g})")
    return fig
