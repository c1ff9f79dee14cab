"""The workbook's progress bars: plain text on stdout, silent for short loops and when disabled."""

from __future__ import annotations

import time

from lib.progress import progress


def test_bar_is_plain_text_on_stdout_and_keeps_its_final_state(capsys):
    for _ in progress(range(3), desc="train", delay=0, mininterval=0):
        time.sleep(0.01)
    out, err = capsys.readouterr()
    assert err == "" and "train: 100%" in out and "3/3" in out


def test_short_loops_and_disabled_bars_stay_silent(capsys):
    for _ in progress(range(3), desc="quick"):  # finishes within the default delay
        pass
    for _ in progress(range(3), desc="off", enabled=False, delay=0):
        pass
    assert capsys.readouterr() == ("", "")
