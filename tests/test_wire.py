"""The wire counter (linalg_io/comm/wire.py) against hand-computed schedules on 2, 4 and 8 ranks.

Point-to-point and one-sided traffic: what Open MPI's monitoring counts equals the
logical counter exactly. Collectives: Open MPI's tuned component is forced to
schedules that can be written down (linear broadcast and reduction, ring allreduce
and allgather), and every rank's wire bytes and messages are compared with them.
Under another MPI (`make test MPI=mpich`) the record's wire block is null with the
reason, which the last test checks instead.
"""

import json
import sys
from pathlib import Path

import pytest
from mpi_harness import open_mpi, run_cli_records, run_job, run_mpi_json

from linalg_io.comm.wire import MONITORING_VARIABLE
from linalg_io.launch.relaunch import find_mpiexec, mpi_environment

D = 8  # bytes per double
N = 840 * D  # the collectives' buffer
FORCED_SCHEDULES = {
    "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
    "OMPI_MCA_coll_tuned_bcast_algorithm": "1",       # basic linear
    "OMPI_MCA_coll_tuned_reduce_algorithm": "1",      # linear
    "OMPI_MCA_coll_tuned_allreduce_algorithm": "4",   # ring
    "OMPI_MCA_coll_tuned_allgather_algorithm": "4",   # ring
}


def hand_schedules(P):
    """Per pattern, every rank's wire (sent, received, messages)."""
    ranks = range(P)
    ring_block = 2 * (P - 1) * N // P
    return {
        "ring": [((3 * r + 1) * D, (3 * ((r - 1) % P) + 1) * D, 1) for r in ranks],
        # Put, Accumulate, and a Get: its request (origin) and its data (target)
        "one_sided": [((10 + 5 + 7) * D, (10 + 5 + 7) * D, 4) for r in ranks],
        # every rank roots one linear broadcast: n to each other rank
        "bcast_linear": [(N * (P - 1), N * (P - 1), P - 1) for r in ranks],
        # linear reduction onto the last rank: every other rank sends n to it
        "reduce_linear": [(0 if r == P - 1 else N, N * (P - 1) if r == P - 1 else 0,
                           0 if r == P - 1 else 1) for r in ranks],
        # ring: P-1 reduce-scatter and P-1 allgather steps of n/P each
        "allreduce_ring": [(ring_block, ring_block, 2 * (P - 1)) for r in ranks],
        "allgather_ring": [(30 * D * (P - 1), 30 * D * (P - 1), P - 1) for r in ranks],
    }


@pytest.fixture(scope="module", params=[2, 4, 8])
def measured(request):
    if not open_mpi():
        pytest.skip("the per-peer wire counters are Open MPI's (the null path is tested below)")
    return request.param, run_mpi_json(request.param, "wire_patterns.py", env=FORCED_SCHEDULES)


@pytest.mark.parametrize("pattern", ["ring", "one_sided", "bcast_linear", "reduce_linear",
                                     "allreduce_ring", "allgather_ring"])
def test_wire_matches_the_hand_computed_schedule(measured, pattern):
    P, results = measured
    got = [tuple(rank["wire"]) for rank in results[pattern]]
    assert got == hand_schedules(P)[pattern]


@pytest.mark.parametrize("pattern", ["ring", "sub_communicators", "one_sided"])
def test_point_to_point_and_one_sided_wire_equals_logical(measured, pattern):
    _, results = measured
    for rank in results[pattern]:
        assert rank["wire"][:2] == rank["logical"][:2]
        assert rank["wire"][0] > 0 and rank["wire"][1] > 0
        # messages too, but for the Get's request, which the logical rules do not count
        assert rank["wire"][2] == rank["logical"][2] + (pattern == "one_sided")


def test_opening_the_wire_keeps_the_thread_level(measured):
    _, results = measured
    before, after = results["thread_level"]
    assert before == 3 and after == before   # MPI_THREAD_MULTIPLE (mpi4py's), kept


def test_collectives_wire_differs_from_logical_as_spec_says(measured):
    """The logical rules count a linear broadcast's root once; the wire P-1 times."""
    P, results = measured
    for rank in results["bcast_linear"]:
        assert rank["logical"][0] == N and rank["wire"][0] == N * (P - 1)
        assert rank["logical"][1] == rank["wire"][1] == N * (P - 1)


def test_record_carries_wire_or_the_reason():
    """A CLI run's record: wire bytes under Open MPI (p2p-only LU at 1x2: wire == logical),
    null with the reason where monitoring is off or the MPI has no such counters."""
    args = ["lu", "--algo", "2d", "--n", "256", "--nb", "32", "--grid", "1x2", "--reps", "2"]
    record, = run_cli_records(2, args)
    traffic = record["traffic"]
    if open_mpi():
        assert traffic["wire"]["source"].startswith("Open MPI")
        assert traffic["wire"]["bytes_sent"] == traffic["bytes_sent"]
        assert traffic["wire"]["bytes_recv"] == traffic["bytes_recv"]
        off, = run_cli_records(2, args, env={"OMPI_MCA_pml_monitoring_enable": "0"})
        assert off["traffic"]["wire"] is None
        assert "monitoring is off (OMPI_MCA_pml_monitoring_enable=0)" \
            in off["traffic"]["wire_unavailable"]
        assert off["traffic"]["bytes_sent"] == traffic["bytes_sent"]
    else:
        assert traffic["wire"] is None
        assert "no per-peer traffic counters" in traffic["wire_unavailable"]


def test_plain_mpiexec_records_wire_without_the_launchers_setting(tmp_path):
    """Under a user's plain `mpiexec -n 2 linalg-io ...` (no OMPI_MCA_pml_monitoring_enable
    in the environment) the CLI asks for monitoring itself before MPI_Init."""
    if not open_mpi():
        pytest.skip("the per-peer wire counters are Open MPI's (the null path is tested above)")
    env = mpi_environment(1, "openmpi")
    env.pop(MONITORING_VARIABLE)
    out = tmp_path / "plain.jsonl"
    console_script = str(Path(sys.executable).parent / "linalg-io")
    command = [find_mpiexec(), "-n", "2", "--oversubscribe", console_script, "lu", "--algo",
               "2d", "--n", "128", "--nb", "16", "--grid", "1x2", "--reps", "1", "--out", str(out)]
    run_job(command, env, timeout=120)
    record = json.loads(out.read_text())
    assert record["traffic"]["wire"]["bytes_sent"] == record["traffic"]["bytes_sent"]
    assert record["traffic"]["wire"]["bytes_recv"]["max"] > 0
