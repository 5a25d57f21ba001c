"""The sweep under signals while a real MPI point runs: no rank and no record outlive it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_sweep import write

pytestmark = pytest.mark.mpi   # its sweep's point runs under mpiexec


def _processes_naming(text: str) -> list[int]:
    """Live processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(
                    errors="replace") and "Z" not in (entry / "stat").read_text().split()[2]:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_a_real_mpi_point_leaves_no_rank_and_no_record(tmp_path, signum, code):
    """A 2-rank LU point that runs for minutes: the sweep, signalled while the ranks run,
    exits 128 + signal with its summary only after every rank is gone, and the records
    file holds no record of the cut point."""
    out = tmp_path / "r.jsonl"
    sweep = write(tmp_path, f"""\
        out: {out}
        runs:
          - {{command: lu, np: 2, reps: 500, args: {{n: 1024}}}}
          - {{command: lu, np: 2, args: {{n: 64}}}}
        """)
    process = subprocess.Popen([sys.executable, "-m", "linalg_io", "sweep", str(sweep)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while len([pid for pid in _processes_naming(str(tmp_path)) if pid != process.pid]) < 4:
        assert time.monotonic() < deadline and process.poll() is None, "the point never started"
        time.sleep(0.1)   # the point's CLI, mpiexec and its 2 ranks name the point file
    time.sleep(0.5)
    process.send_signal(signum)
    output, _ = process.communicate(timeout=60)
    assert _processes_naming(str(tmp_path)) == []
    assert process.returncode == code, output
    assert "[1/2] lu n=1024 P=2 ... interrupted" in output and "[2/2]" not in output
    assert "2 points: 0 passed, 0 failed, 0 skipped" in output
    assert not out.exists() and list(tmp_path.glob(".r.jsonl.*")) == []
