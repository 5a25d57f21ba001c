"""The progress watchdog with real mpiexec (--np 2): a rank that stops answering
(SIGSTOP) is caught by the other rank's watchdog: the job ends within the deadline
plus a few seconds, exit 5, one line naming rank 0 and where it was, no record, no
process left (the rank is stopped once the runner is under way: a rank stopped in
MPI's start-up, before the runner, is outside the watchdog); `--stall-timeout off` runs
as before; a bad value is one usage line."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from linalg_io.errors import STALLED_EXIT_CODE
from linalg_io.session import descendants

pytestmark = pytest.mark.mpi

STALL_S = 8


def _rank_pids(launcher: int) -> dict[int, int]:
    """world rank -> pid of the ranks below the --np launcher."""
    ranks = {}
    for pid in descendants(launcher):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                ranks[int(item.split(b"=")[1])] = pid
    return ranks


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.alone   # ended within the deadline's bounds
def test_a_stopped_rank_ends_the_job(tmp_path):
    out = tmp_path / "r.jsonl"
    job = subprocess.Popen([sys.executable, "-m", "linalg_io", "lu", "--algo", "2d", "--n",
                            "5120", "--grid", "1x2", "--reps", "100000", "--warmup", "0",
                            "--stall-timeout", str(STALL_S), "--np", "2", "--out", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(job.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while (not any(line.startswith("  rep ") for line in lines)
               and time.monotonic() < deadline):   # rank 0's line after a rep of > 1 s
            time.sleep(0.1)
        ranks = _rank_pids(job.pid)
        assert len(ranks) == 2, lines
        os.kill(ranks[1], signal.SIGSTOP)
        stopped = time.monotonic()
        job.wait(timeout=STALL_S + 30)
        ended_s = time.monotonic() - stopped
        reader.join(10)
        err = "".join(lines)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == STALLED_EXIT_CODE, err
    assert STALL_S - 1 < ended_s < STALL_S + 10   # silence counts from the last progress
    stalls = [line for line in err.splitlines() if "stalled" in line]
    assert len(stalls) == 1, err
    assert stalls[0].startswith("linalg-io: error: stalled: rank 0 on ")
    assert " s in rep " in stalls[0]
    assert f"(deadline {STALL_S} s, --stall-timeout)" in stalls[0]
    assert "Traceback" not in err and "Process name" not in err
    assert not out.exists()
    time.sleep(1)
    assert not any(_alive(pid) for pid in ranks.values())


def test_off_runs_as_before(tmp_path):
    out = tmp_path / "r.jsonl"
    done = subprocess.run([sys.executable, "-m", "linalg_io", "lu", "--algo", "2d", "--n",
                           "256", "--reps", "1", "--warmup", "0", "--stall-timeout", "off",
                           "--np", "2", "--quiet", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == 1


def test_bad_value_is_one_usage_line():
    done = subprocess.run([sys.executable, "-m", "linalg_io", "lu", "--n", "64",
                           "--stall-timeout", "soon"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr == ("linalg-io lu: error: argument --stall-timeout: must be a "
                           "positive number, got soon (see linalg-io lu --help)\n")
