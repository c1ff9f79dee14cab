"""lib.plotting.show: figures are saved, described (alt text) and laid out without colliding titles."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from lib.plotting import alt_text, show  # noqa: E402


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


def test_alt_text_of_a_bare_figure():
    fig, _ = plt.subplots()
    assert alt_text(fig) == "Figure."
    plt.close(fig)
