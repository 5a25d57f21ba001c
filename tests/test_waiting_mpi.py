"""The wait policy on a crowded node, with real mpiexec: 3 ranks confined to two cores
(taskset), so the node is crowded on any machine with two. While rank 0 computes, the
ranks waiting for its bcast must hold almost no core time (polite waits sleep), the data
must arrive whole and the counts stay exact. (MPI's own blocking wait is not compared
here: whether Open MPI's waiting ranks spin depended on how the job was launched, from
0.5 s of a core between them to 0.002 s, so such a check could not be trusted.)"""

import os
import shutil

import pytest
from mpi_harness import MPI_SCRIPTS, run_job

from linalg_io.launch.relaunch import (
    find_mpiexec,
    mpi_environment,
    mpiexec_command,
    mpiexec_flavour,
)

CORES = sorted(os.sched_getaffinity(0))[:2] if hasattr(os, "sched_getaffinity") else []
pytestmark = [pytest.mark.mpi, pytest.mark.alone,   # alone: the waiting ranks' core time
              pytest.mark.skipif(shutil.which("taskset") is None or len(CORES) < 2,
                                 reason="needs taskset (util-linux) and two cores")]


def run_on_two_cores() -> list[dict]:
    import json
    import tempfile
    from pathlib import Path

    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    command = ["taskset", "-c", ",".join(map(str, CORES))] + mpiexec_command(
        3, [str(MPI_SCRIPTS / "waiting_patterns.py")], flavour, mpiexec)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        env = dict(mpi_environment(1, flavour), LINALG_IO_TEST_OUT=str(out))
        run_job(command, env, timeout=60)
        return json.loads(out.read_text())


def test_polite_waits_hold_no_core_and_count_exactly():
    ranks = run_on_two_cores()
    assert [r["polite"] for r in ranks] == [True] * 3      # 3 ranks on 2 cores: crowded
    for waiting in ranks[1:]:
        assert waiting["bcast_ok"]
        assert waiting["bcast_recv"] == 5000 * 8
        # waiting in the bcast about as long as rank 0 computed, on a sliver of a core
        assert waiting["wall_s"] >= 0.4
        assert waiting["cpu_s"] < 0.1 * waiting["wall_s"], waiting
    root, first, second = ranks
    assert (root["sent"], root["recv"], root["msgs"]) == (40, 0, 1)
    assert first["recv_ok"]
    assert (first["sent"], first["recv"], first["msgs"]) == (24, 40 + 32, 1)
    assert (second["sent"], second["recv"], second["msgs"]) == (32, 24, 1)
    assert first["sendrecv_in"] == [2.0] * 4 and second["sendrecv_in"] == [1.0] * 3 + [0.0]

