"""lib.prcurves.plots: an ensemble's band with its mean and members, and shading where a mask holds."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lib.prcurves.plots import plot_band, shade_mask  # noqa: E402


def test_plot_band_draws_the_mean_over_the_band_and_each_member_underneath():
    recall = np.linspace(0, 1, 11)
    members = np.stack([1 - recall * s for s in (0.2, 0.4, 0.6)])
    band = {"recall": recall, "members": members, "mean": members.mean(0), "lo": members.min(0),
            "hi": members.max(0)}
    fig, ax = plt.subplots()
    plot_band(ax, band, label="C = 2", color="C0", members=True)
    *faint, mean = ax.get_lines()
    assert len(faint) == 3 and all(line.get_alpha() == 0.25 for line in faint)
    assert mean.get_label() == "C = 2" and np.allclose(mean.get_ydata(), band["mean"])
    band_y = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert np.isclose(band_y.min(), members.min()) and np.isclose(band_y.max(), 1.0)
    assert ax.get_xlim() == (0, 1) and ax.get_xlabel() == "recall"
    plt.close(fig)


def test_shade_mask_shades_exactly_the_runs_where_the_mask_holds():
    x = np.arange(10.0)
    mask = np.zeros(10, bool)
    mask[3:6] = mask[8] = True
    fig, ax = plt.subplots()
    shade_mask(ax, x, mask, color="green", label="significant")
    shaded = ax.collections[0]
    runs = sorted((p.vertices[:, 0].min(), p.vertices[:, 0].max()) for p in shaded.get_paths())
    assert runs == [(3.0, 5.0), (8.0, 8.0)] and shaded.get_label() == "significant"
    plt.close(fig)


def test_an_empty_mask_adds_no_legend_entry():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="curve")
    shade_mask(ax, np.arange(10.0), np.zeros(10, bool), color="green", label="significant")
    assert [t.get_text() for t in ax.legend().get_texts()] == ["curve"]
    plt.close(fig)
