"""The progress watchdog without MPI (linalg_io.launch.watchdog): its deadline rule, that
it ends a rank whose progress sources stay still and spares one whose sources move,
its one line, the launchers' view of a stalled job (launch.status) and the process
tree that the sweep and the launcher end (session.descendants)."""

import os
import re
import subprocess
import sys
import threading
import time

import pytest

from linalg_io.argtypes import seconds_or_off
from linalg_io.comm.counting import TrafficCounter
from linalg_io.errors import STALLED_EXIT_CODE
from linalg_io.launch.status import stalled_and_all_ended
from linalg_io.launch.watchdog import (
    FACTOR,
    FLOOR_S,
    SETUP_FLOOR_S,
    Deadline,
    Watchdog,
    watch_case,
)
from linalg_io.session import descendants


def test_deadline_rule():
    model = Deadline()
    assert model.seconds(None) == FLOOR_S == 60.0
    assert model.seconds(1.0) == 60.0                  # 20 x 1 s is under the floor
    assert model.seconds(4.0) == FACTOR * 4.0 == 80.0
    assert model.seconds(None, SETUP_FLOOR_S) == 300.0
    assert model.why(4.0) == "deadline 80 s = max(60 s, 20 x 4 s predicted per repetition)"
    fixed = Deadline(7.5)
    assert fixed.seconds(100.0) == fixed.seconds(None, SETUP_FLOOR_S) == 7.5
    assert fixed.why(None) == "deadline 7.5 s, --stall-timeout"


def test_stall_timeout_argument():
    assert seconds_or_off("off") == "off"
    assert seconds_or_off("12.5") == 12.5
    for bad in ("0", "-3", "inf", "soon"):
        with pytest.raises(Exception, match="positive number"):
            seconds_or_off(bad)


def _dog(limit_s: float, lines: list[str]) -> Watchdog:
    return Watchdog(3, "node7", Deadline(limit_s), expire=lines.append, tick_s=0.05)


def test_a_still_rank_is_ended_with_one_line():
    lines: list[str] = []
    dog = _dog(0.5, lines)
    dog.watch(lambda: 42, lambda: "bcast_L")
    dog.stage("rep 2/5")
    start = time.monotonic()
    dog.start()
    dog._thread.join(5)
    assert len(lines) == 1 and 0.5 <= time.monotonic() - start < 1.5
    # the stall it reports: past the deadline, within the time waited (0.5-0.6 s idle; on
    # a loaded machine the watchdog's thread may wake later, the line says so)
    stalled = re.match(r"linalg-io: error: stalled: rank 3 on node7 saw no progress "
                       r"for (\d+\.\d) s in ", lines[0])
    assert stalled and 0.5 <= float(stalled.group(1)) <= 1.5, lines[0]
    assert (" s in rep 2/5, phase bcast_L (deadline 0.5 s, --stall-timeout): a rank, node or "
            f"link of the job stopped answering; ending the job (exit {STALLED_EXIT_CODE}), "
            "no record written") in lines[0]


def test_the_line_names_the_counted_phase_without_a_clock():
    """A case without a phase clock: the line names the traffic counter's phase."""
    counter = TrafficCounter(1)
    dog = _dog(0.5, [])
    watch_case(dog, counter, None)
    dog.stage("rep 1/3")
    assert ", phase" not in dog.line(1.0)                # "other" is not named
    with counter.phase("bcast_U"):
        assert " s in rep 1/3, phase bcast_U (deadline 0.5 s" in dog.line(1.0)


def test_a_moving_rank_is_spared():
    """Sources that change every 0.2 s, and stages every 0.3 s, for 2 s: never ended."""
    lines: list[str] = []
    counter = {"messages": 0}
    dog = _dog(0.5, lines)
    dog.watch(lambda: counter["messages"])
    dog.start()
    for step in range(10):
        counter["messages"] += 1
        if step % 3 == 0:
            dog.stage(f"rep {step}")
        time.sleep(0.2)
    dog.stop()
    assert lines == []
    assert not dog._thread.is_alive()


def test_predicted_time_sets_the_deadline_once():
    dog = Watchdog(0, "h", Deadline(), expire=lambda line: None)
    calls = []
    dog.start()
    dog.predict(lambda: calls.append(1) or {"time_s": 4.0})
    dog.predict(lambda: calls.append(1) or {"time_s": 9.0})
    assert calls == [1] and dog.limit_s() == 80.0
    dog.stage("set-up", SETUP_FLOOR_S)
    assert dog.limit_s() == 300.0
    dog.stop()
    fixed = Watchdog(0, "h", Deadline(9.0), expire=lambda line: None)
    fixed.predict(lambda: calls.append(1) or {"time_s": 4.0})
    assert calls == [1] and fixed.limit_s() == 9.0     # --stall-timeout: no model asked


def test_launcher_status(tmp_path):
    status = tmp_path / "status"
    assert not stalled_and_all_ended(str(status), 2)     # no file yet
    status.write_text("stalled\n")
    assert not stalled_and_all_ended(str(status), 2)     # one of two ranks ended
    status.write_text("stalled\nfinished\n")
    assert stalled_and_all_ended(str(status), 2)
    status.write_text("finished\nfinished\n")
    assert not stalled_and_all_ended(str(status), 2)     # ended, none stalled


def test_descendants_cross_sessions():
    """A grandchild in a session of its own (as prted makes) is still found."""
    leaf = "import time; time.sleep(30)"
    spawn = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {!r}]{}); "
             "time.sleep(30)")
    middle = spawn.format(leaf, ", start_new_session=True")
    parent = subprocess.Popen([sys.executable, "-c", spawn.format(middle, "")])
    try:
        found: list[int] = []
        deadline = time.monotonic() + 10
        while len(found) < 2 and time.monotonic() < deadline:
            found = descendants(parent.pid)
            time.sleep(0.05)
        assert len(found) == 2 and parent.pid not in found
        sessions = {os.getsid(pid) for pid in found}
        assert len(sessions) == 2 and os.getsid(parent.pid) in sessions
    finally:
        for pid in descendants(parent.pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        parent.kill()
        parent.wait()


def test_watchdog_runs_while_the_main_thread_blocks():
    """The thread ends a rank whose main thread sits in a call that releases the GIL."""
    lines: list[str] = []
    dog = _dog(0.3, lines)
    dog.start()
    threading.Event().wait(1.0)     # a blocking wait, as mpi4py's Wait
    assert len(lines) == 1


def test_off_takes_the_calls_and_stops():
    """--stall-timeout off: an unstarted watchdog takes the runner's calls, stops, and
    asks the model nothing."""
    from linalg_io.launch.watchdog import start_watchdog

    dog = start_watchdog("off", 0, "h")
    dog.stage("rep 1/1")
    dog.predict(lambda: pytest.fail("the model was asked"))
    dog.stop()
    assert dog._thread.ident is None
    fixed = start_watchdog(12.0, 0, "h")
    fixed.stop()   # started: it would end this process 12 s later
    assert fixed.limit_s() == 12.0
