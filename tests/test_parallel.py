"""core_map: the same results, in order, as a plain map (forked workers where there are
two or more cores); the branch and bound's sliding window evaluates the same prefix of
its candidates on any number of cores; `model lu` prints the same table either way."""

import io
import multiprocessing
import time
from contextlib import redirect_stdout
from functools import partial
from pathlib import Path

import pytest
from linalg_io.models import lu_bounds
from linalg_io.models.profile import load_profile

from linalg_io import parallel
from linalg_io.cli import main as cli_main
from linalg_io.lu import choice
from linalg_io.lu.choice import bounded_2d, candidates, lu2d_seconds, pruned_table
from linalg_io.model_command.lu_verdict import TOP


def scaled(factor: int, x: int) -> int:
    return factor * x


def logged(folder: str, seconds: float, x: int) -> int:
    """x, after a file named x is written in `folder` (which items ran, and in what
    order by their times) and `seconds` of sleep."""
    Path(folder, str(x)).write_text(repr(time.monotonic()))
    time.sleep(seconds)
    return x


def _ran(folder: Path) -> list[int]:
    """The items `logged` ran, in the order they started."""
    return [int(p.name) for p in sorted(folder.iterdir(), key=lambda p: float(p.read_text()))]


def test_core_map_keeps_order_and_values():
    with parallel.core_map() as mapper:
        assert mapper(partial(scaled, 3), range(40)) == [3 * x for x in range(40)]
        assert mapper(partial(scaled, 2), [5]) == [10]
        assert list(mapper.window(partial(scaled, 3), range(40))) == [3 * x for x in range(40)]
        assert list(mapper.together([partial(scaled, 2, 1), partial(scaled, 3, 1)])) == [2, 3]


def test_window_left_early_cancels_the_items_not_started(tmp_path):
    """Two results taken of 40 items of 0.2 s: the window keeps 2 unfinished, so the
    items that ran are few and a prefix (in order) of the 40; the others never start."""
    pool = multiprocessing.get_context("fork").Pool(2)
    try:
        mapper = parallel.CoreMap(pool, 2)
        results = mapper.window(partial(logged, str(tmp_path), 0.2), range(40))
        assert [next(results), next(results)] == [0, 1]
        results.close()
        time.sleep(0.5)     # any item still running writes its file by then
    finally:
        pool.terminate()
    ran = sorted(_ran(tmp_path))
    assert ran == list(range(len(ran))) and 2 <= len(ran) < 10


def test_the_dispatcher_hands_the_highest_priority_on_first(tmp_path):
    """One worker busy with item 0; then items 1, 2 queued at priority 1 and item 3 at
    priority 5: 3 runs next, then 1 and 2 in the order queued."""
    pool = multiprocessing.get_context("fork").Pool(1)
    try:
        mapper = parallel.CoreMap(pool, 1)
        run = partial(logged, str(tmp_path), 0.3)
        first = mapper.start(run, [0])
        low = mapper.at(1).start(run, [1, 2])
        high = mapper.at(5).start(run, [3])
        assert (first(), low(), high()) == ([0], [1, 2], [3])
    finally:
        pool.terminate()
    assert _ran(tmp_path) == [0, 3, 1, 2]


def _never_settled_before(rows, keep, bounds, settled):
    """Whether no shorter prefix of `rows` settles (`choice._bounded`'s stop)."""
    return not any(settled(rows[:k], keep, bounds[k]) for k in range(1, len(rows)))


@pytest.mark.parametrize("n,p,machine", [(8192, 16, None), (16384, 256, "example_cpu"),
                                         (32768, 256, "example_cpu")])
def test_pruned_rows_are_the_same_prefix_on_one_and_two_workers(n, p, machine):
    """The 2.5D rows the branch and bound evaluates (and those it leaves) are the same
    with the workers' window as one at a time, and the first prefix of the bound order
    that settles: not rounded up to a batch of the workers."""
    profile = load_profile(machine)
    placement = profile.placement(p)
    mem = placement.memory_per_rank
    one = pruned_table(n, p, mem, profile, keep=TOP)
    with parallel.core_map() as mapper:
        assert mapper.workers == 2
        two = pruned_table(n, p, mem, profile, mapper=mapper, keep=TOP)
    assert two == one and one[1]     # some left unevaluated
    rows, left = one
    fitting = [c for c in [(r["px"], r["py"], r["c"], r["v"]) for r in rows] + left
               if choice._fits(n, mem, *c)]
    order = sorted(fitting, key=lambda c: lu_bounds.time_seconds(n, c[3], *c[:3], profile,
                                                                 placement))
    evaluated = {(r["px"], r["py"], r["c"], r["v"]): r for r in rows}
    prefix = [evaluated[c] for c in order[:len(rows)]]
    bounds = [lu_bounds.time_seconds(n, c[3], *c[:3], profile, placement) for c in order]
    assert set(order[:len(rows)]) == set(evaluated)
    assert _never_settled_before(prefix, TOP, bounds, choice._settled)
    assert choice._settled(prefix, TOP, bounds[len(rows)])


@pytest.mark.parametrize("keep", [1, TOP])
def test_bounded_2d_is_the_same_prefix_on_one_and_two_workers(keep):
    """N = 8192, P = 720 on example_cpu: 20 grids, some not evaluated."""
    profile = load_profile("example_cpu")
    placement = profile.placement(720)
    ask = {"n": 8192, "p": 720, "memory": 1e30, "profile": profile, "placement": placement}
    choices = [c.choice for c in candidates("2d", **ask)]
    seconds = partial(lu2d_seconds, profile)
    one = bounded_2d(seconds, float, profile, choices, keep)
    with parallel.core_map() as mapper:
        two = bounded_2d(seconds, float, profile, choices, keep, mapper)
    assert two == one and one[1]


@pytest.mark.parametrize("args", [
    ["--n", "8192", "--p", "16", "--mem", "2G"],
    ["--n", "16384", "--p", "256", "--machine", "example_cpu"],   # batches of 2 differed
    ["--n", "8192", "--p", "720", "--machine", "example_cpu"]])
def test_model_lu_table_is_the_same_on_one_core(monkeypatch, args):
    tables = []
    for one_core in (False, True):
        if one_core:
            monkeypatch.setattr(parallel, "usable_cores", lambda: 1)
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli_main(["model", "lu", *args]) == 0
        tables.append(out.getvalue())
    assert tables[0] == tables[1] and tables[0].count("\n") > 10
    assert "not evaluated" in tables[0]


def test_model_lu_scan_is_the_same_on_one_core(monkeypatch):
    """The scan's points evaluated at once (largest P first) print the lines of one at a
    time, in P order."""
    args = ["model", "lu", "--scan", "strong", "--n", "16384", "--p", "16:1024"]
    outs = []
    for one_core in (False, True):
        if one_core:
            monkeypatch.setattr(parallel, "usable_cores", lambda: 1)
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli_main(args) == 0
        outs.append(out.getvalue())
    assert outs[0] == outs[1] and outs[0].count("\n") == 1 + 2 * 7


def failing(x: int) -> int:
    raise ValueError(x)


def test_an_error_in_one_of_the_calls_together_ends_the_others(tmp_path):
    """The error of one call (its evaluation queued first) is raised at once: the other's
    evaluations not started are cancelled and its thread no longer waits (the items that
    ran are few of the 40)."""
    with pytest.raises(ValueError), parallel.core_map() as mapper:
        slow = partial(mapper, partial(logged, str(tmp_path), 0.2), range(40))
        list(mapper.together([slow, partial(mapper.at(1), failing, [1])]))
    assert len(list(tmp_path.iterdir())) < 10


def test_after_the_workers_end_an_evaluation_fails_at_once():
    with parallel.core_map() as mapper:
        pass
    with pytest.raises(RuntimeError, match="worker processes ended"):
        mapper(partial(scaled, 2), [1, 2])
