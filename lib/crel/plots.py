"""Notebook 02's figures that take more than a few lines: a condition's latent region and decoded set."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy.spatial import ConvexHull

from lib.crel import method as crel
from lib.crel.evaluation import DecodedSet
from lib.data.banana import sample_y
from lib.data.cifar10 import CLASSES
from lib.plotting import PALETTE
from lib.tables import set_names

DECODED_LABEL = r"Dec($S^\gamma$ grid points)"  # the legend entry of the decoded grid points of the set


def plot_condition(run: dict, x_value: float, ax_z: plt.Axes, ax_y: plt.Axes, max_points: int = 20_000) -> None:
    """At condition x: the latent region R(x), the calibrated set S^gamma(x) and fresh codes (left, `ax_z`),
    fresh outputs Y | x and the decoded grid points of S^gamma(x), at most `max_points` of them (right, `ax_y`).

    `run` holds the fitted "model" (a calibrated `CReL`) and its latent "z_grid". The artists are labelled; the
    caller places the legend, off the axes (the point clouds fill them), e.g. with `lib.plotting.legend_beside`.
    """
    m, x = run["model"], np.array([[x_value]])
    q = m.quantiles(x)[0]
    V = crel.polygon(m.U, q)
    t = np.linspace(0, 2 * np.pi, 400)
    ax_z.fill(*np.vstack([V, V[:1]]).T, color=PALETTE[0], alpha=0.4, label="R(x)")
    ring = np.concatenate([V[i] + m.gamma * np.stack([np.cos(t), np.sin(t)], 1) for i in range(len(V))])
    hull = ring[ConvexHull(ring).vertices]
    ax_z.plot(*np.vstack([hull, hull[:1]]).T, color=PALETTE[1], label=rf"$S^\gamma$, γ = {m.gamma:.3f}")
    rng = np.random.default_rng(0)
    ys = sample_y(np.full(2000, x_value), rng)
    zs = m.latent(np.full((2000, 1), x_value), ys)
    ax_z.scatter(*zs.T, s=2, color="0.3", alpha=0.4, label="codes of fresh Y | x")
    decoded = DecodedSet(m, x[0], m.U, q, m.gamma, m.inflation, run["z_grid"])
    ax_y.scatter(*ys.T, s=2, color="0.3", alpha=0.4, label="fresh Y | x")
    if not decoded.empty:
        pts = decoded.points
        pts = pts[rng.choice(len(pts), max_points, replace=False)] if len(pts) > max_points else pts
        ax_y.scatter(*pts.T, s=3, color=PALETTE[1], alpha=0.5, label=DECODED_LABEL)
    ax_z.set(title=f"latent space, x = {x_value}", xlabel="z1", ylabel="z2")
    ax_y.set(title=f"output space, x = {x_value}", xlabel="y1", ylabel="y2")


def negative_distance(y: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:
    """The explorer's metric rho(y) = -||y - gt||: its minimum over the set is the point farthest from gt."""
    return -torch.linalg.vector_norm(y - gt, dim=1)


def mark_worst(ax_z: plt.Axes, ax_y: plt.Axes, rel: dict) -> None:
    """The worst-case code z* and its decoded output (a `CReL.reliability` result) as red stars (labelled, for the
    caller's legend)."""
    ax_z.scatter(*rel["z"].T, marker="*", s=200, color="red", label="worst z*")
    ax_y.scatter(*rel["y"].T, marker="*", s=200, color="red", label=f"Dec(z*), ρ = {rel['score'][0]:.3f}")



def plot_worst_cases(results: dict[str, dict], classes: tuple[int, ...] = tuple(range(10)),
                     per_row: int = 5) -> plt.Figure:
    """One row per set (`lib.crel.images.generator_crel` results by label) and block of `per_row` classes (the blocks
    stacked, so that the figure stays narrow enough to read at the page's width): for each class, a typical sample
    beside the decoded worst case of S^gamma(x) (framed), with CReL(x) under it."""
    blocks = [classes[i:i + per_row] for i in range(0, len(classes), per_row)]
    width = max(len(b) for b in blocks)
    fig, axes = plt.subplots(len(results) * len(blocks), 2 * width, squeeze=False,
                             figsize=(0.95 * 2 * width + 1.8, 1.2 * len(results) * len(blocks) + 0.6))
    for b, block in enumerate(blocks):
        for i, (label, r) in enumerate(results.items()):
            row = axes[b * len(results) + i]
            for k in range(width):
                if k >= len(block):
                    row[2 * k].axis("off"), row[2 * k + 1].axis("off")
                    continue
                c = block[k]
                typical = r["typical_images"][np.flatnonzero(r["typical_labels"] == c)[0]]
                for ax, image in ((row[2 * k], typical), (row[2 * k + 1], r["worst_images"][c])):
                    ax.imshow(image, interpolation="nearest")
                    ax.set_xticks([]), ax.set_yticks([])
                row[2 * k + 1].set_xlabel(f"{r['crel_per_class'][c]:.2f}", fontsize=10, labelpad=1)
                for side in row[2 * k + 1].spines.values():
                    side.set(color="red", linewidth=1.5)
                if i == 0:
                    row[2 * k].set_title(CLASSES[c], fontsize=10, loc="left")
            row[0].set_ylabel(set_names(label).replace(", ", ",\n"), rotation=0, ha="right", va="center",
                              fontsize=10)
    fig.subplots_adjust(wspace=0.05, hspace=0.5, left=0.15, right=0.99, top=0.95, bottom=0.03)
    return fig
