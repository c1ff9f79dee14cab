"""Progress bars as plain text: one bar per loop that matters, visible in JupyterLab, in the notebooks
papermill executes and in their HTML reports.

`tqdm.auto` draws a widget whose state is lost outside a live front end (an executed notebook stores only
the widget's id, and an offline HTML report cannot load the widget script). Plain `tqdm` text written to
stdout survives everywhere: JupyterLab redraws it in place, and nbconvert keeps its last state.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from tqdm import tqdm

# a bar appears only once its loop has run this long: short loops stay silent (no wall of one-step bars)
DELAY_S = 3.0


def progress(iterable: Iterable | None = None, *, desc: str, enabled: bool = True, total: int | None = None,
             initial: int = 0, delay: float = DELAY_S, mininterval: float = 5.0) -> tqdm:
    """A text progress bar over `iterable` (or a manual one with `total`), silent when not `enabled` or
    when the loop finishes within `delay` seconds."""
    return tqdm(iterable, desc=desc, total=total, initial=initial, disable=not enabled, delay=delay,
                mininterval=mininterval, file=sys.stdout, ascii=True, dynamic_ncols=False, ncols=100,
                leave=True)
