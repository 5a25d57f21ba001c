"""Progress lines for the silent parts of a run (LU set-up, warm-up)."""

import re
import time

import pytest

from linalg_io import progress


def test_a_long_part_says_so_while_it_runs_and_when_it_ends(monkeypatch, capsys):
    monkeypatch.setattr(progress, "AFTER_S", 0.1)
    with progress.progress("set-up", True):
        time.sleep(0.2)
        assert capsys.readouterr().err == "  set-up ...\n"   # printed during the part
    assert re.fullmatch(r"  set-up: 0\.[2-9] s\n", capsys.readouterr().err)


def test_short_parts_other_ranks_and_errors_print_nothing(monkeypatch, capsys):
    monkeypatch.setattr(progress, "AFTER_S", 0.1)
    with progress.progress("warm-up 1/1", True):
        pass
    with progress.progress("set-up", False):
        time.sleep(0.2)
    with pytest.raises(ValueError), progress.progress("set-up", True):
        raise ValueError
    time.sleep(0.15)
    assert capsys.readouterr().err == ""
