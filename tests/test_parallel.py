"""core_map: the same results, in order, as a plain map (forked workers where there are
two or more cores); `model lu` prints the same table either way."""

import io
import os
import signal
import subprocess
import sys
import time
from contextlib import redirect_stdout
from functools import partial
from pathlib import Path

import numpy  # noqa: F401 - its BLAS pool loaded: the pools' test reads it
import pytest

from linalg_io import parallel
from linalg_io.cli import main as cli_main


def scaled(factor: int, x: int) -> int:
    return factor * x


def test_core_map_keeps_order_and_values():
    with parallel.core_map() as mapper:
        assert mapper(partial(scaled, 3), range(40)) == [3 * x for x in range(40)]
        assert mapper(partial(scaled, 2), [5]) == [10]


def pools(_: int) -> dict:
    from linalg_io.threads import pool_threads
    return pool_threads()


def test_workers_pools_run_one_thread_and_the_callers_come_back(two_workers):
    """Each worker's BLAS (and OpenMP) pools hold one thread, whatever this process's
    hold (a pool of a thread per core in each worker spins on the others' cores); the
    caller's own pools are as they were after the block."""
    from threadpoolctl import threadpool_limits

    from linalg_io.threads import pool_threads
    with threadpool_limits(limits=2):
        before = pool_threads()
        assert before and set(before.values()) == {2}
        with parallel.core_map() as mapper:
            seen = mapper(pools, range(4))
        assert pool_threads() == before
    assert all(seen_pools.keys() == before.keys() and set(seen_pools.values()) == {1}
               for seen_pools in seen)


def test_model_lu_table_is_the_same_on_one_core(monkeypatch):
    args = ["model", "lu", "--n", "8192", "--p", "16", "--mem", "2G"]
    tables = []
    for one_core in (False, True):
        if one_core:
            monkeypatch.setattr(parallel, "usable_cores", lambda: 1)
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli_main(args) == 0
        tables.append(out.getvalue())
    assert tables[0] == tables[1] and tables[0].count("\n") > 20


# the longest a test waits for a worker to start an item: a failure, not a hang
START_S = 60.0


def napping(folder: str, seconds: float, item: int) -> int:
    """Marks that this worker started `item`, sleeps, returns the worker's pid."""
    Path(folder, f"{item}.{os.getpid()}").touch()
    time.sleep(seconds if item else 0.0)
    return os.getpid()


def napping_after_one(folder: str, seconds: float, item: int) -> int:
    """`napping`, item 0 returning only once item 1 has started: a window's second
    worker is given item 1 while item 0 runs, however the two workers are scheduled."""
    Path(folder, f"{item}.{os.getpid()}").touch()
    if item == 0:
        started(Path(folder), 2, named="1.")
    else:
        time.sleep(seconds)
    return os.getpid()


def failing(item: int) -> int:
    raise ValueError(f"item {item}")


def alive(pid: int) -> bool:
    """Whether `pid` is a process (a zombie is not: reaped children are gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def started(folder: Path, count: int, named: str = "") -> list[int]:
    """The pids of the workers that started `count` items (waits until they have, and
    one of them named `named`..., START_S at most)."""
    def ready() -> bool:
        names = [path.name for path in folder.iterdir() if path.is_file()]
        return len(names) >= count and any(name.startswith(named) for name in names)

    waited = time.monotonic()
    while not ready():
        assert time.monotonic() - waited < START_S, f"{count} items not started in {folder}"
        time.sleep(0.01)
    return sorted({int(path.suffix[1:]) for path in folder.iterdir() if path.is_file()})


@pytest.fixture
def two_workers(monkeypatch):
    """core_map with two worker processes, however many cores this machine has."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)


def test_window_left_early_drops_what_has_not_started(tmp_path, two_workers):
    """A window left after its first result (a branch and bound's stop): the items it
    queued beside it never start; the one running (sleeping a minute) finishes unread
    on its worker, the other worker takes the next map; the block's end kills it."""
    with parallel.core_map() as mapper:
        results = mapper.window(partial(napping_after_one, str(tmp_path), 60.0), range(6))
        first = next(results)
        results.close()
        sleeper = [pid for pid in started(tmp_path, 2) if pid != first]
        (tmp_path / "again").mkdir()
        pids = mapper(partial(napping, str(tmp_path / "again"), 0.0), [0] * 4)
        assert set(pids) == {first} and all(alive(pid) for pid in sleeper)
        assert len(list(tmp_path.glob("*.*"))) == 2       # items 0 and 1 alone started
    assert not any(alive(pid) for pid in sleeper + [first])


def test_a_tallied_search_starts_no_item_its_results_rule_out(tmp_path, two_workers):
    """`model lu`'s branch and bound through its tally (`lu_table._Tallied` over
    `CoreMap.window`, items from `UntilSettled`): while item 1 runs (a second), the idle
    worker asks for item 2, which the result of item 0 in hand rules out: it never
    starts (counting the items drew none ahead of the results)."""
    from linalg_io.lu.choice import UntilSettled
    from linalg_io.model_command.lu_table import _Tallied
    from linalg_io.progress import Tally

    results: list[int] = []
    tally = Tally("search", "items done", ("a",), False)
    wanted = UntilSettled(list(range(6)), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                          lambda bound: len(results) >= 1 and bound > 2.5)
    with parallel.core_map() as mapper:
        window = _Tallied(mapper, tally, "a").window(
            partial(napping_after_one, str(tmp_path), 1.0), wanted)
        for result in window:
            results.append(result)
            if len(results) == 2:
                break
        window.close()
    assert tally.totals == {"a": 6} and tally.counts == {"a": 2}
    assert sorted(int(path.stem) for path in tmp_path.glob("*.*")) == [0, 1]


def test_block_left_by_an_error_kills_its_workers(tmp_path, two_workers):
    """An error inside the block while an evaluation runs (sleeping a minute): the block
    ends at once, every worker killed and reaped; an error inside an evaluation reaches
    the caller as itself."""
    with pytest.raises(KeyError), parallel.core_map() as mapper:
        with pytest.raises(ValueError, match="item 1"):
            mapper(failing, [1, 2])
        mapper._workers.submit(partial(napping, str(tmp_path), 60.0), 1)
        with mapper._workers.lock:     # one view of them: the dispatcher moves a worker
            workers = [pid for pid, _ in mapper._workers.idle] + [
                pid for pid, _ in mapper._workers.busy.values()]
        assert started(tmp_path, 1)[0] in workers
        raise KeyError("the caller's error")
    assert len(workers) == 2 and not any(alive(pid) for pid in workers)


def waiting_for_go(folder: str, item: int) -> int:
    """Marks that this worker started `item`, returns once the file "go" is in `folder`."""
    Path(folder, f"{item}.{os.getpid()}").touch()
    deadline = time.monotonic() + START_S
    while not Path(folder, "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return item


def test_a_result_in_as_the_block_ends_leaves_no_worker(tmp_path, two_workers):
    """A worker whose result comes in once the block's end has begun (the dispatcher has
    read it and waits for the lock the close holds) is killed and reaped with the others,
    not dropped from the pool: left alive until its pipe is collected, then a zombie."""
    with parallel.core_map() as mapper:
        workers = mapper._workers
        workers.submit(partial(waiting_for_go, str(tmp_path)), 1)
        pid = started(tmp_path, 1)[0]
        with workers.lock:          # the close's first step, the result then sent
            Path(tmp_path, "go").touch()
            time.sleep(1.0)
            workers.closed = True
            everyone = [pid for pid, _ in workers.idle] + [
                pid for pid, _ in workers.busy.values()]
    assert pid in everyone and len(everyone) == 2
    assert not any(Path(f"/proc/{worker}").exists() for worker in everyone)   # reaped


def test_together_shares_the_workers(two_workers):
    """Two windows run at once by `together` (or one after the other): each its own
    results, in order."""
    with parallel.core_map() as mapper:
        def listed(factor: int) -> list[int]:
            return list(mapper.window(partial(scaled, factor), range(20)))

        for at_once in (None, 1):
            assert list(mapper.together([partial(listed, 2), partial(listed, 3)],
                                        at_once)) == [[2 * x for x in range(20)],
                                                      [3 * x for x in range(20)]]


def stamped(folder: str, seconds: dict, prefix: str, item: int) -> int:
    """Sleeps seconds[item] (default the "rest"), the monotonic clock's start and end
    and the worker's pid written to folder/PREFIXITEM (one clock for every process of
    this machine)."""
    begun = time.monotonic()
    time.sleep(seconds.get(item, seconds["rest"]))
    Path(folder, f"{prefix}{item}").write_text(f"{begun} {time.monotonic()} {os.getpid()}")
    return item


def stamps(folder: Path) -> dict:
    """{name: [start, end, pid]} of the items `stamped` into `folder`."""
    return {path.name: [float(t) for t in path.read_text().split()]
            for path in folder.iterdir()}


def test_a_searchs_next_item_takes_the_worker_its_last_freed(tmp_path, two_workers):
    """A search's window (not eager) beside an eager one that keeps items queued: the
    worker that finishes the search's last unfinished item is kept while the search
    takes the result, and starts none of the other's queued items before the search's
    next item has started (its chain of results is not held up behind the other's
    queue); its other items' workers are not kept. Both lists whole and in order, the
    workers shared. The search's items end apart (0.05, 0.4 and 0.07 s each): which
    ended last is plain from their stamps."""
    with parallel.core_map() as mapper:
        chain = partial(stamped, str(tmp_path), {0: 0.05, 1: 0.4, "rest": 0.07}, "c")
        filler = partial(stamped, str(tmp_path), {"rest": 0.3}, "f")
        searches = [lambda: list(mapper.window(chain, range(5))),
                    lambda: list(mapper.window(filler, range(8), eager=True))]
        assert list(mapper.together(searches)) == [list(range(5)), list(range(8))]
    times = stamps(tmp_path)
    links = [times[f"c{i}"] for i in range(5)]
    fills = [times[f"f{i}"] for i in range(8)]
    checked = 0
    for begun, _, _ in links:
        before = [link for link in links if link[1] <= begun]
        if before:          # not one started beside the first
            _, ended, pid = max(before, key=lambda link: link[1])
            assert not [f for f in fills if f[2] == pid and ended <= f[0] < begun]
            checked += 1
    assert checked >= 3
    assert len({f[2] for f in fills}) == 2


def test_model_lu_2d_search_fills_what_the_2d5_search_leaves(tmp_path, two_workers):
    """`model lu`'s two searches (`lu_table._filling`) on two workers: the 2D rows run
    beside the 2.5D search's last item (a second long), not after that search; each
    search its own results in order, every item counted."""
    from linalg_io.model_command.lu_table import _ending, _filling
    from linalg_io.progress import Tally

    tally = Tally("search", "items done", ("2.5D", "2D"), False)
    with parallel.core_map() as mapper:
        views = _filling(mapper, tally, {"conflux": "2.5D", "2d": "2D"}, ("conflux", "2d"), 3)
        slow = partial(stamped, str(tmp_path), {5: 1.0, "rest": 0.2}, "c")
        quick = partial(stamped, str(tmp_path), {"rest": 0.05}, "d")
        searches = [partial(_ending, views["conflux"],
                            lambda: list(views["conflux"].window(slow, range(6)))),
                    lambda: list(views["2d"].window(quick, range(5)))]
        assert list(mapper.together(searches)) == [list(range(6)), list(range(5))]
    times = stamps(tmp_path)
    assert max(times[f"d{i}"][1] for i in range(5)) < times["c5"][1]
    assert tally.counts == {"2.5D": 6, "2D": 5}


def _extended(rows: list, view) -> None:
    """rows + the 2D view's window over two items (a thread's target)."""
    rows.extend(view.window(partial(_tagged, "2D"), range(2)))


def _tagged(kind: str, item: int) -> tuple:
    return kind, item


def test_model_lu_2d_search_waits_for_the_sure_2d5_items():
    """`lu_table._filling`'s gate: the 2D search takes no item until the 2.5D search
    hands out its third (keep = 3: those its branch and bound evaluates whatever their
    results), then its window is eager (queued ahead of the other's run-ahead); the
    2.5D window is not. A search that ends without using its window (`_ending`) opens
    the gate too."""
    import threading

    from linalg_io.model_command.lu_table import _ending, _filling
    from linalg_io.progress import Tally

    taken: list[tuple] = []

    class Recording:
        """A CoreMap's window, lazy: each item recorded (its search, item, eager) as it
        is asked for."""

        def window(self, function, items, eager=False):
            for item in items:
                taken.append((function(item)[0], item, eager))
                yield function(item)

    for ended in (False, True):
        taken.clear()
        tally = Tally("search", "items done", ("2.5D", "2D"), False)
        views = _filling(Recording(), tally, {"conflux": "2.5D", "2d": "2D"},
                         ("conflux", "2d"), 3)
        rows: list = []
        waiting = threading.Thread(target=partial(_extended, rows, views["2d"]))
        waiting.start()
        if ended:
            _ending(views["conflux"], lambda: None)
        else:
            search = views["conflux"].window(partial(_tagged, "2.5D"), range(5))
            assert [next(search), next(search)] == [("2.5D", 0), ("2.5D", 1)]
            time.sleep(0.2)
            assert waiting.is_alive() and len(taken) == 2
            assert next(search) == ("2.5D", 2)
        waiting.join(START_S)
        assert not waiting.is_alive() and rows == [("2D", 0), ("2D", 1)]
        assert {(kind, eager) for kind, _, eager in taken} == (
            {("2D", True)} if ended else {("2.5D", False), ("2D", True)})


def test_workers_end_with_their_parent(tmp_path):
    """A `model` process killed by SIGTERM while its workers evaluate (sleeping a
    minute): its workers end too (none left orphaned)."""
    code = ("import sys, time; from functools import partial; "
            "from linalg_io import parallel; import test_parallel as t; "
            "parallel.usable_cores = lambda: 2\n"
            "with parallel.core_map() as m:\n"
            f"    m(partial(t.napping, {str(tmp_path)!r}, 60.0), [1, 2])\n")
    job = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parent)
    workers = started(tmp_path, 2)
    assert all(alive(pid) for pid in workers)
    job.send_signal(signal.SIGTERM)
    assert job.wait(timeout=30) == -signal.SIGTERM
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers)
