"""The package's own collectives (linalg_io/comm/collectives.py) on 2, 4, 8 and 5 ranks:
results against NumPy (asserted inside tests/mpi/collective_patterns.py), and every
rank's bytes and messages three ways: the schedule's cost functions
(linalg_io/layout/schedules.py, what the models use), the logical counter, and what
Open MPI's monitoring saw on the wire (under another MPI: the first two). All must be
equal."""

import numpy as np
import pytest
from mpi_harness import open_mpi, run_mpi_json

from linalg_io.layout import schedules

D = 8




@pytest.fixture(scope="module", params=[2, 4, 5, 8])
def measured(request):
    return request.param, run_mpi_json(request.param, "collective_patterns.py", timeout=180)


def predicted(P, counts, sizes):
    ranks = np.arange(P)
    out = {}
    for n in sizes:
        for name, costs in (("bcast", schedules.bcast_costs), ("reduce", schedules.reduce_costs)):
            total = np.zeros((3, P))
            for root in range(P):
                total += np.array(costs(schedules.positions(ranks, root, P), P, n * D))
            out[f"{name}_{n}"] = total
    out["allreduce"] = np.array(schedules.allreduce_costs(ranks, P, sizes[0] * D))
    blocks = np.asarray(counts) * D
    out["allgatherv"] = np.array(schedules.allgatherv_costs(blocks))
    out["gatherv_scatterv"] = (np.array(schedules.gatherv_costs(blocks, P - 1))
                               + np.array(schedules.scatterv_costs(blocks, 0)))
    half = np.zeros((3, P))
    for parity in (0, 1):
        members = ranks[ranks % 2 == parity]
        part = schedules.bcast_costs(np.arange(len(members)), len(members), sizes[1] * D)
        half[:, members] = np.array(part)
    out["sub_communicator"] = half
    return out


CASES = ["bcast_300", "reduce_300", "allreduce", "allgatherv", "gatherv_scatterv",
         "sub_communicator"]


@pytest.mark.parametrize("case", CASES + ["bcast_large", "reduce_large"])
def test_model_logical_and_wire_agree(measured, case):
    P, results = measured
    small, large = results["sizes"]
    case = case.replace("large", str(large))
    expected = predicted(P, results["counts"], (small, large))[case].T
    logical = np.array([rank["logical"] for rank in results[case]], dtype=float)
    assert logical.tolist() == expected.tolist()
    if open_mpi():   # under MPICH there is no wire counter (its null path: test_wire.py)
        wire = np.array([rank["wire"] for rank in results[case]], dtype=float)
        assert wire.tolist() == expected.tolist()


def test_large_bcast_is_a_pipelined_chain(measured):
    """Every rank but the root receives n once, every rank but the last sends n once, in
    3 pieces: the chain, by hand, for root 0 (rank P-1 is its last)."""
    P, results = measured
    large = results["sizes"][1]
    n = large * D
    assert schedules.chunk_count(n) == 3
    per_root = [(n * (q < P - 1), n * (q > 0), 3 * (q < P - 1)) for q in range(P)]
    summed = [tuple(sum(per_root[(r - root) % P][i] for root in range(P)) for i in range(3))
              for r in range(P)]
    key = "wire" if open_mpi() else "logical"
    assert [tuple(rank[key]) for rank in results[f"bcast_{large}"]] == summed
    assert all(set(rank["by_op"]) == {"bcast"} for rank in results[f"bcast_{large}"])
