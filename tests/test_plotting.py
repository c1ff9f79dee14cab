"""lib.plotting: figures are saved, described (alt text) and laid out without colliding titles or legends on data."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from lib.plotting import alt_text, legend_below, legend_beside, legends_over_data, show  # noqa: E402


def test_show_saves_describes_and_keeps_the_suptitle_off_the_axes_titles(tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, metadata: shown.append(metadata))
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.8))
    for ax in axes:
        ax.set(title="C = 4, median member\nAUC 0.500", xlabel="recall")
    fig.suptitle("Figure 2: real and generated samples")
    show(fig, "f", tmp_path)
    assert (tmp_path / "f.png").is_file()
    assert shown[0]["image/png"]["alt"].startswith("Figure. Figure 2: real and generated samples; C = 4")
    canvas = FigureCanvasAgg(fig)  # show() closed the figure: draw it again as saved
    canvas.draw()
    renderer = canvas.get_renderer()
    top = fig._suptitle.get_window_extent(renderer)
    for ax in axes:
        assert not top.overlaps(ax.title.get_window_extent(renderer))


def test_show_numbers_a_figure_before_its_title_or_refuses_one_without_a_title(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, metadata: shown.append(metadata))
    fig, ax = plt.subplots()
    fig.suptitle("runtime against dimension", fontsize=9)
    show(fig, figure="C")
    assert fig._suptitle.get_text() == "Figure C: runtime against dimension" and fig._suptitle.get_fontsize() == 9
    fig, ax = plt.subplots()
    show(fig, figure="D", title="the p_fail sweep")  # no suptitle: `title` becomes it
    assert [m["image/png"]["alt"] for m in shown] == ["Figure. Figure C: runtime against dimension",
                                                      "Figure. Figure D: the p_fail sweep"]
    for bad, message in (({}, "no suptitle to number"), ({"title": "Figure 2: twice"}, "numbered already")):
        fig, ax = plt.subplots()
        with pytest.raises(ValueError, match=message):
            show(fig, figure="E", **bad)
        plt.close(fig)
    assert len(shown) == 2  # nothing shown for the refused ones


def test_alt_text_of_a_bare_figure():
    fig, _ = plt.subplots()
    assert alt_text(fig) == "Figure."
    plt.close(fig)


def _band_figure(**subplots):
    """A PR band near the bottom of its axes, like notebook 01's smoke run: a lower-left legend sits on it."""
    fig, ax = plt.subplots(figsize=(6.5, 4.3), **subplots)
    recall = np.linspace(0, 1, 50)
    ax.fill_between(recall, 0.0, 0.3 * (1 - recall), alpha=0.25, lw=0)
    ax.plot(recall, 0.15 * (1 - recall), lw=2, label="C = 4")
    ax.set(xlim=(0, 1), ylim=(0, 1.02), title="Figure 3", xlabel="recall")
    return fig, ax


def test_a_legend_on_the_data_is_found_and_one_beside_or_below_it_is_not():
    fig, ax = _band_figure()
    ax.legend(loc="lower left")
    assert legends_over_data(fig) == ["Figure 3"]
    ax.legend(loc="upper right")  # the empty corner
    assert legends_over_data(fig) == []
    legend_beside(ax)
    assert legends_over_data(fig) == []
    plt.close(fig)
    fig, ax = _band_figure(layout="constrained")
    legend_below(fig)
    assert legends_over_data(fig) == [] and [t.get_text() for t in fig.legends[0].get_texts()] == ["C = 4"]
    plt.close(fig)


def test_a_legend_beside_a_full_axes_of_a_constrained_figure_hides_nothing():
    fig, axes = plt.subplots(1, 2, figsize=(9, 3), layout="constrained")
    for ax in axes:  # ink everywhere in the axes: had the check let the layout give them the legend's room, it
        ax.imshow(np.arange(100).reshape(10, 10), aspect="auto")  # would find the image under the legend
        ax.plot([0, 9], [0, 9], color="red", label="diagonal")
    legend_beside(axes[1])
    assert legends_over_data(fig) == []
    axes[0].legend(loc="upper left")
    assert legends_over_data(fig) == ["axes"]  # the legend on the image, named "axes" (no title)
    assert fig.get_layout_engine() is not None  # the layout is the figure's again
    plt.close(fig)


def test_legend_below_needs_the_constrained_layout():
    fig, _ = _band_figure()
    with pytest.raises(ValueError, match="layout='constrained'"):
        legend_below(fig)
    plt.close(fig)


def test_show_names_a_legend_over_the_data_in_the_figure_metadata(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, metadata: shown.append(metadata))
    for loc in ("lower left", "upper right"):
        fig, ax = _band_figure()
        ax.legend(loc=loc)
        show(fig)
    assert shown[0]["image/png"]["legend_over_data"] == ["Figure 3"]
    assert "legend_over_data" not in shown[1]["image/png"]


# Machado, Oliveira & Fernandes (2009), severity 1: dichromat vision as a matrix on linear RGB
CVD = {"protan": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
       "deutan": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
       "tritan": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]}


def _cie_lab(srgb: np.ndarray) -> np.ndarray:
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    f = np.cbrt(np.maximum(xyz / np.array([0.9505, 1.0, 1.089]), 0.008856))
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _closest_pair_as_seen(colors, matrix) -> float:
    """The smallest CIE76 colour difference between two of `colors` (sRGB in [0, 1]) as a dichromat sees them."""
    def seen(c):
        linear = np.where(np.asarray(c) <= 0.04045, np.asarray(c) / 12.92, ((np.asarray(c) + 0.055) / 1.055) ** 2.4)
        out = np.clip(np.asarray(matrix) @ linear, 0, 1)
        return _cie_lab(np.where(out <= 0.0031308, 12.92 * out, 1.055 * out ** (1 / 2.4) - 0.055))
    labs = [seen(c) for c in colors]
    return min(np.linalg.norm(a - b) for i, a in enumerate(labs) for b in labs[i + 1:])


def test_the_first_five_colours_stay_apart_for_colour_blind_readers():
    """Figures with up to five series (01's four complexities, 03's four methods, 04's extractors) keep their series
    apart under protanopia, deuteranopia and tritanopia: seaborn's "colorblind" put orange beside vermilion
    (a difference of 12.6 for a deuteranope), which read as one colour."""
    import seaborn as sns

    from lib.plotting import PALETTE

    assert min(_closest_pair_as_seen(sns.color_palette("colorblind")[:5], m) for m in CVD.values()) < 13
    for kind, matrix in CVD.items():
        assert _closest_pair_as_seen(PALETTE[:5], matrix) > 15, kind
    assert len(PALETTE) == 10  # cells index it modulo 10


def test_show_records_the_figures_texts_and_its_smallest_font_in_the_images_pixels(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, metadata: shown.append(metadata["image/png"]))
    fig, (left, right) = plt.subplots(1, 2, dpi=100)
    left.plot([0, 1], label="pixels")
    left.legend(fontsize=7)
    left.text(0.5, 0.5, "0.91", fontsize=6)
    right.set_visible(False)
    right.set_title("hidden title", fontsize=3)  # on an invisible axes: not shown, so not counted
    fig.suptitle("sizes", fontsize=14)
    show(fig, figure="A")
    meta = shown[0]
    assert {"pixels", "0.91", "Figure A: sizes"} <= set(meta["texts"]) and "hidden title" not in meta["texts"]
    assert meta["min_text_px"] == pytest.approx(6 * 100 / 72, abs=0.01)  # 6 pt at 100 dpi


def test_show_says_code_names_in_the_readers_words_in_every_text_of_the_figure(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, metadata: shown.append(metadata["image/png"]))
    fig, ax = plt.subplots()
    ax.bar(range(3), [1, 2, 3], label="paired_t (35.8%)")
    ax.set_xticks(range(3), ["resnet20", "efficientnet_lite0", "pixels"])
    ax.set_title("diadm c32 100% against $P_{rho}$")
    ax.legend()
    show(fig, figure="A", title="irs_adj by extractor")
    texts = set(shown[0]["texts"])
    assert {"ResNet-20", "EfficientNet-Lite0", "pixels", "paired t (35.8%)"} <= texts
    assert "DiADM, width 32 against $P_{rho}$" in texts and "Figure A: IRS_∞,a by extractor" in texts
    assert not {"resnet20", "paired_t (35.8%)", "irs_adj"} & texts
