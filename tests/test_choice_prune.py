"""The 2.5D candidate search's branch and bound (`linalg_io.lu.choice.pruned_rows`): the
rows it evaluates give the table's first rows and the choice of every row (that its
bound, `linalg_io.models.lu_bounds`, never exceeds the model's time: tests/test_lu_bounds.py)."""

import math
import re
from dataclasses import replace

import pytest
from bound_machines import machine_profile
from linalg_io.models import conflux, lu_bounds
from linalg_io.models.lu_bounds import time_seconds, update_work
from linalg_io.models.profile import load_profile
from linalg_io.models.rates import LocalRates, gemm_efficiency

from linalg_io.cli import main as cli_main
from linalg_io.lu.choice import (
    UntilSettled,
    candidates,
    choose_lu,
    fastest_2d,
    pruned_rows,
    pruned_table,
    ranked,
)
from linalg_io.model_command.lu_verdict import TOP

pytestmark = pytest.mark.usefixtures("one_core")


def _profile(name: str):
    """A shipped machine, or "rates" (`bound_machines`: local rates of its own)."""
    return machine_profile(name) if name == "rates" else load_profile(
        None if name == "default" else name)


@pytest.mark.parametrize("k_half", [None, 14.0])
def test_update_work_is_the_sum_of_the_updates(k_half):
    """N = 1000, v = 256, c = 3: widths 256, 256, 256, 232; slices 86/85/85 and 78/77/77;
    the dgemm's curve the default or a machine's (`LocalRates.k_half`)."""
    local = LocalRates() if k_half is None else LocalRates(k_half, 0.27)
    expected = 0.0
    left = 1000
    for w in (256, 256, 256, 232):
        left -= w
        slices = [w // 3 + (layer < w % 3) for layer in range(3)]
        expected += sum(2.0 * left * left * s / float(gemm_efficiency(s, local.k_half))
                        for s in slices)
    assert update_work(1000, 256, 3, local) == pytest.approx(expected, rel=1e-12)
    assert update_work(1000, 256, 3, local) > update_work(1000, 256, 1, local) > 2 * 744**2 * 256
    if k_half is not None:      # a flatter loss at thin slices: less work at gamma
        assert update_work(1000, 256, 3, local) < update_work(1000, 256, 3)


@pytest.mark.parametrize("machine,n,p", [
    ("example_cpu", 8192, 64), ("default", 4096, 64), ("example_gpu", 16384, 256),
    ("example_cpu", 65536, 64), ("example_cpu", 32768, 256), ("example_cpu", 16384, 256),
    ("rates", 16384, 256), ("rates", 8192, 64)])
def test_pruned_table_is_the_unpruned_one(machine, n, p):
    """The first TOP rows of the pruned candidates, and the choice, are those of every
    candidate; the rows not evaluated come last, without costs. (N = 16384, P = 256 on
    example_cpu is communication-bound: only the bound with the messages skips any, 24 of
    51.)"""
    profile = _profile(machine)
    placement = profile.placement(p)
    ask = {"n": n, "p": p, "memory": placement.memory_per_rank, "profile": profile,
           "placement": placement}
    full = candidates("conflux", **ask)
    pruned = candidates("conflux", **ask, keep=TOP)
    assert len(pruned) == len(full)
    evaluated = [c for c in pruned if c.costs is not None]
    assert [c.costs for c in evaluated[:TOP]] == [c.costs for c in full[:TOP]]
    assert [c.choice for c in evaluated[:TOP]] == [c.choice for c in full[:TOP]]
    assert all(c.costs is None for c in pruned[len(evaluated):])
    assert ({c.choice for c in pruned} == {c.choice for c in full})
    assert choose_lu("conflux", **ask) == choose_lu("conflux", **ask, table=full)


@pytest.mark.parametrize("fitting", [0, 3])
def test_pruned_table_is_the_unpruned_one_where_few_fit(fitting):
    """N = 16384, P = 256 on example_cpu with a memory per rank that none or three of the
    candidates fit: the first TOP rows (those that fit, then the fastest of the others)
    are those of every candidate, yet some are not evaluated."""
    profile = _profile("example_cpu")
    placement = profile.placement(256)
    ask = {"n": 16384, "p": 256, "profile": profile, "placement": placement}
    needs = sorted(c.costs["mem_bytes"] for c in candidates("conflux", **ask, memory=1e30))
    memory = needs[fitting - 1] if fitting else needs[0] / 2
    full = candidates("conflux", **ask, memory=memory)
    pruned = candidates("conflux", **ask, memory=memory, keep=TOP)
    evaluated = [c for c in pruned if c.costs is not None]
    assert sum(c.costs["fits"] for c in full) == fitting
    assert [c.costs for c in evaluated[:TOP]] == [c.costs for c in full[:TOP]]
    assert TOP <= len(evaluated) < len(full)
    assert all(c.costs is None for c in pruned[len(evaluated):])


def test_pruning_skips_and_stops_at_the_bound():
    """At P = 256, N = 131072 on example_cpu (compute-bound) most candidates are never
    evaluated, and every one left out has a bound above the keep-th row's time."""
    profile = _profile("example_cpu")
    placement = profile.placement(256)
    rows, skipped = pruned_table(131072, 256, placement.memory_per_rank, profile,
                                 placement=placement, keep=TOP)
    assert len(skipped) > len(rows) >= TOP
    kth = ranked(rows, "time")[TOP - 1]["time_s"]
    mem = placement.memory_per_rank
    over = [(px, py, c, v) for px, py, c, v in skipped
            if conflux.memory_words(131072, v, px, py, c) * 8 > mem]
    assert all(time_seconds(131072, v, px, py, c, profile, placement) > kth
               for px, py, c, v in skipped if (px, py, c, v) not in over)
    assert len(over) < len(skipped)


def test_model_lu_prints_what_every_row_gives(capsys):
    """`model lu` at N = 65536, P = 64 on example_cpu skips candidates: its verdict and
    its 2.5D rows are those of `--all` (which evaluates every one), and it says how many
    it did not evaluate."""
    ask = ["model", "lu", "--n", "65536", "--p", "64", "--machine", "example_cpu"]
    assert cli_main(ask + ["--all"]) == 0
    every = capsys.readouterr().out.splitlines()
    assert cli_main(ask) == 0
    pruned = capsys.readouterr().out.splitlines()
    table = pruned.index(next(line for line in pruned if line.startswith("2.5D LU")))
    assert pruned[:table + 2 + TOP] == every[:table + 2 + TOP]
    more = pruned[table + 2 + TOP]
    assert re.fullmatch(r"  \.\.\. \d+ more \(--all shows every candidate\); \d+ more not "
                        r"evaluated \(a lower bound on their time ranks them after these\)", more)
    shown, unevaluated = (int(x) for x in re.findall(r"\d+", more))
    rows = [line for line in every[table + 2:] if re.match(r"[*! ] +\d+x\d+x\d+ ", line)]
    assert unevaluated > 0 and TOP + shown + unevaluated == len(rows)


def test_until_settled_hands_out_no_item_the_results_rule_out():
    """The branch and bound's items as workers ask for them: each while the results in
    hand leave its bound open, none from the first one they settle (bounds ascending)."""
    results: list[str] = []
    wanted = UntilSettled(list("abcdef"), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                           lambda bound: len(results) >= 2 and bound > 3.0)
    handed = []
    for item in wanted:
        handed.append(item)
        results.append(item)
    assert handed == ["a", "b", "c"]


def test_rows_far_slower_than_the_fastest_are_not_evaluated():
    """A prime P (4093 on example_cpu with 8192 nodes, N = 30000): six candidates, all
    within memory, fewer than the rows shown. The three 4093x1x1 ones, 20-31 times
    slower than 1x4093x1 v=128, have lower bounds (fact 11) over FAR_SLOWER times it:
    not evaluated, last; the others' costs are those of every candidate's."""

    from linalg_io.lu.choice import FAR_SLOWER

    n, p = 30000, 4093
    profile = replace(_profile("example_cpu"), nodes=8192)
    placement = profile.placement(p)
    ask = {"n": n, "p": p, "memory": placement.memory_per_rank, "profile": profile,
           "placement": placement}
    full = candidates("conflux", **ask)
    pruned = candidates("conflux", **ask, keep=TOP)
    best = full[0].costs["time_s"]
    near = [c for c in full if c.costs["time_s"] <= FAR_SLOWER * best]
    assert len(full) == len(pruned) == 6 and all(c.costs["fits"] for c in full)
    assert [c.choice.grid for c in near] == [(1, p, 1)] * 3
    assert [(c.choice, c.costs) for c in pruned[:3]] == [(c.choice, c.costs) for c in near]
    left = pruned[3:]
    assert all(c.costs is None and c.choice.grid == (p, 1, 1) for c in left)
    assert all(time_seconds(n, c.choice.nb, p, 1, 1, profile, placement) > FAR_SLOWER * best
               for c in left)
    assert min(c.costs["time_s"] for c in full[3:]) > 19 * best


@pytest.mark.parametrize("n, p, far", [(30000, 4093, [(1, 4093)]),
                                        (100000, 16384, [(16, 1024)])])
def test_2d_rows_far_slower_than_the_fastest_are_not_evaluated(n, p, far):
    """The 2D search (`bounded_2d`, keep = the rows shown) leaves out the grids whose
    lower bound is over FAR_SLOWER times the fastest time (example_cpu with 8192 nodes:
    1x4093, 22 times slower than 4093x1; 16x1024, 13.6 times 128x128), fewer rows than
    shown though they are; every grid within FAR_SLOWER times the fastest is evaluated,
    its time that of every grid's search, and `lu --algo 2d` takes the same grid."""
    from dataclasses import replace
    from functools import partial

    from linalg_io.models import lu2d_bounds

    from linalg_io.lu.choice import FAR_SLOWER, bounded_2d, lu2d_seconds

    profile = replace(_profile("example_cpu"), nodes=8192)
    placement = profile.placement(p)
    ask = {"n": n, "p": p, "memory": placement.memory_per_rank, "profile": profile,
           "placement": placement}
    choices = [candidate.choice for candidate in candidates("2d", **ask)]
    seconds = partial(lu2d_seconds, profile)
    every, none_left = bounded_2d(seconds, float, profile, choices, None)
    kept, left = bounded_2d(seconds, float, profile, choices, TOP)
    best = min(time for _, time in every)
    assert none_left == [] and len(choices) < TOP
    assert [choice.grid for choice in left] == far
    assert sorted(kept, key=lambda pair: pair[1]) == sorted(
        [(choice, time) for choice, time in every if time <= FAR_SLOWER * best],
        key=lambda pair: pair[1])
    assert all(lu2d_bounds.time_seconds(n, choice.nb, *choice.grid, profile, placement)
               > FAR_SLOWER * best for choice in left)
    assert all(time > FAR_SLOWER * best for choice, time in every if choice in left)
    assert choose_lu("2d", **ask) == fastest_2d([(time, choice) for choice, time in every])


@pytest.mark.parametrize("eager", [False, True])
def test_a_tighter_bound_leaves_its_row_out_however_the_rows_are_handed_out(monkeypatch,
                                                                           eager):
    """A configuration whose tighter bound (`lu_bounds.tighter_seconds`, here stubbed)
    exceeds the threshold of the rows before it in the bounds' order is left out though
    its first bound is under it; the others as before. keep = 3: a, b, c give the
    threshold 5 (the third time); x (bound 4, tighter 6) left out; d (4.5, time 4.6)
    evaluated, the threshold 4.6; e (4.8) not. The three fastest of the rows are those
    of every configuration. Handed out one at a time, x goes out with the threshold 5
    and its row is never made; handed out all at once (workers that run ahead, no result
    in hand: threshold inf), it is made and left out all the same."""
    from linalg_io.lu import choice

    a, b, c, x, d, e = [(i, 1, 1, 64) for i in range(1, 7)]
    bound = {a: 1.0, b: 2.0, c: 3.0, x: 4.0, d: 4.5, e: 4.8}
    time = {a: 1.0, b: 2.0, c: 5.0, x: 7.0, d: 4.6, e: 5.5}
    monkeypatch.setattr(choice, "_bound", lambda n, profile, placement, config: bound[config])
    monkeypatch.setattr(choice, "_tighter",
                        lambda n, profile, placement, config: 6.0 if config == x else -math.inf)
    made = []

    def row(config):
        made.append(config)
        return {"config": config, "time_s": time[config], "fits": True, "wire_max": 1.0}

    class Window:
        """A mapper's window handing the items out one at a time, or all first."""

        def __call__(self, function, items):
            return [function(item) for item in items]

        def window(self, function, items):
            if eager:
                yield from [function(item) for item in list(items)]
            else:
                yield from (function(item) for item in items)

    profile = _profile("example_cpu")
    rows, left = pruned_rows(row, 1000, 1e30, profile, profile.placement(6),
                             [e, d, c, x, b, a], 3, Window())
    assert [r["config"] for r in rows] == [a, b, c, d] and left == [x, e]
    assert made == ([a, b, c, x, d, e] if eager else [a, b, c, d])
    every = sorted(time, key=time.get)
    assert [r["config"] for r in ranked(rows, "time")[:3]] == every[:3] == [a, b, d]


def test_tighter_bound_leaves_out_a_row_the_first_bound_lets_through(monkeypatch):
    """N = 300000 on P = 2039 x 128 ranks (example_cpu with 8192 nodes): 2039x128x1 v=256,
    2039 process rows on nodes of their own and 1172 tiles (fact 9's 2.4 M cells, over
    BRUCK_CELLS), has a first bound under the threshold of the rows before it but its
    tighter bound (`tighter_seconds`, fact 9) above: the search leaves it out. The
    first TOP rows and their costs are those of the search on the first bounds alone
    (TIGHT_CELLS 0, as before it), which evaluates it: its time is above the
    threshold too."""
    from dataclasses import replace

    n, p, left_out = 300000, 2039 * 128, (2039, 128, 1, 256)
    profile = replace(_profile("example_cpu"), nodes=8192)
    placement = profile.placement(p)
    ask = (n, p, placement.memory_per_rank, profile)
    rows, left = pruned_table(*ask, placement=placement, keep=TOP)
    px, py, c, v = left_out
    first = time_seconds(n, v, px, py, c, profile, placement)
    tighter = lu_bounds.tighter_seconds(n, v, px, py, c, profile, placement)
    monkeypatch.setattr(lu_bounds, "TIGHT_CELLS", 0)
    before, _ = pruned_table(*ask, placement=placement, keep=TOP)

    def key(row: dict) -> tuple:
        return row["px"], row["py"], row["c"], row["v"]

    assert [key(r) for r in before if key(r) not in map(key, rows)] == [left_out]
    assert left_out in left and len(rows) == len(before) - 1
    assert ranked(rows, "time")[:TOP] == ranked(before, "time")[:TOP]
    threshold = ranked(rows, "time")[TOP - 1]["time_s"]
    assert first < threshold < tighter < next(r["time_s"] for r in before
                                              if key(r) == left_out)


def test_model_lu_says_which_rows_are_far_slower(tmp_path, capsys):
    """`model lu` on that prime P prints the three rows evaluated and says why the other
    three were not: their lower bound is over FAR_SLOWER times the fastest's; its 2D
    table the same of 1x4093."""
    import json

    from linalg_io.models.profile import DEFAULT_PROFILE_PATH

    machine = json.loads(DEFAULT_PROFILE_PATH.with_name("machine_example_cpu.json").read_text())
    machine["nodes"] = 8192
    (tmp_path / "big.json").write_text(json.dumps(machine))
    assert cli_main(["model", "lu", "--n", "30000", "--p", "4093", "--algo", "conflux",
                     "--machine", str(tmp_path / "big.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    table = out.index(next(line for line in out if line.startswith("2.5D LU")))
    rows = out[table + 2:table + 5]
    assert all(re.match(r"[* ] +1x4093x1 +(128|256|512) ", row) for row in rows)
    assert out[table + 5] == ("  ... 3 more not evaluated (a lower bound on their time is "
                              "over 10 times the fastest's or ranks them after these)")
    assert cli_main(["model", "lu", "--n", "30000", "--p", "4093", "--algo", "2d",
                     "--machine", str(tmp_path / "big.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    table = out.index(next(line for line in out if line.startswith("2D LU")))
    assert re.match(r"\* +4093x1 ", out[table + 2])
    assert out[table + 3] == ("  ... 1 more not evaluated (a lower bound on their time is "
                              "over 10 times the fastest's or ranks them after these)")
