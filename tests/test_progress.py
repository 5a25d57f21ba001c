"""Progress lines for the silent parts of a run (LU set-up, warm-up) and the counts of
`model lu`'s candidate search."""

import json
import re
import time
from pathlib import Path

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


def test_a_tally_tells_its_counts_while_it_runs_and_at_its_end(monkeypatch, capsys):
    monkeypatch.setattr(progress, "EVERY_S", 0.05)
    tally = progress.Tally("search", "items done", ("a", "b"), True)
    with tally.runs():
        items = tally.count("b", range(3))
        tally.done("b")
        time.sleep(0.12)
        assert capsys.readouterr().err.startswith("  search: 0 of 0 a, 1 of 3 b items done, 0 s\n")
        for _ in items[1:]:
            tally.done("b")
    time.sleep(0.1)
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == "  search: 0 of 0 a, 3 of 3 b items done, 0 s"
    quiet = progress.Tally("search", "items done", ("a",), True)
    with quiet.runs():
        pass                                   # shorter than EVERY_S: nothing
    with progress.Tally("search", "items done", ("a",), False).runs():
        time.sleep(0.12)
    time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_model_lu_tallies_the_candidates_it_evaluates(monkeypatch, capsys, tmp_path):
    from linalg_io.commands import build_parser
    from linalg_io.model_command.lu_table import model_table

    machine = json.loads((Path(__file__).parents[1] / "models" / "machine_example_cpu.json"
                          ).read_text())
    (tmp_path / "big.json").write_text(json.dumps({**machine, "nodes": 64}))
    monkeypatch.setattr(progress, "EVERY_S", 0.01)
    args = build_parser().parse_args(["model", "lu", "--n", "8192", "--p", "256",
                                      "--machine", str(tmp_path / "big.json")])
    args.p = args.p[0]
    text = model_table(args)
    last = capsys.readouterr().err.splitlines()[-1]
    found = re.fullmatch(r"  model lu: (\d+) of (\d+) 2\.5D, (\d+) of (\d+) 2D candidates "
                         r"evaluated, \d+ s", last)
    done, total, done_2d, total_2d = map(int, found.groups())
    # each table's "... K more (--all shows every candidate); M more not evaluated ..."
    skipped = [int(m) for m in re.findall(r"(\d+) more not evaluated", text)]
    assert 0 < done < total and 0 < done_2d <= total_2d
    assert skipped == [count for count in (total - done, total_2d - done_2d) if count]
