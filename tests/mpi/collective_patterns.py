"""Run the package's own collectives (linalg_io/comm/collectives.py); check their results
against NumPy on every rank and keep every rank's logical and wire counts per case.

Cases: bcast and reduce from every root, small (binomial) and large (chain, more than
one piece); allreduce; allgatherv, gatherv, scatterv with uneven and empty blocks;
a bcast inside a sub-communicator.
"""

import numpy as np
from _regions import counted_region
from _result import write_result
from mpi4py import MPI

from linalg_io.comm import collectives
from linalg_io.comm.counting import CountedComm
from linalg_io.comm.wire import open_wire
from linalg_io.layout.schedules import CHUNK_BYTES

world = MPI.COMM_WORLD
comm = CountedComm(world)
P, r = comm.size, comm.rank
wire = open_wire(world)   # the reason there is none, under MPICH
SMALL, LARGE = 300, (5 * CHUNK_BYTES) // (2 * 8) + 3      # doubles: binomial / 3 chain pieces
COUNTS = np.array([(3 * j + 1) % 5 * 7 for j in range(P)])  # uneven, some empty
half = comm.Split(r % 2, r)                                 # made outside the counted regions
results = {"counts": COUNTS.tolist(), "sizes": [SMALL, LARGE]}


def counted(name, pattern):
    results[name] = counted_region(comm, wire, pattern)


def values(n, seed):
    return np.random.default_rng(seed).standard_normal(n)


def bcast(n):
    def pattern():
        for root in range(P):
            buf = values(n, root) if r == root else np.empty(n)
            collectives.bcast(comm, buf, root)
            assert np.array_equal(buf, values(n, root))
    return pattern


def reduce(n):
    def pattern():
        for root in range(P):
            buf = values(n, 100 + r)
            collectives.reduce_sum(comm, buf, root)
            if r == root:
                expected = sum(values(n, 100 + j) for j in range(P))
                assert np.allclose(buf, expected, rtol=1e-13, atol=1e-12)
    return pattern


def allreduce():
    buf = np.asfortranarray(values(SMALL, 200 + r).reshape(20, 15))
    collectives.allreduce_sum(comm, buf)
    expected = sum(values(SMALL, 200 + j) for j in range(P)).reshape(20, 15)
    assert np.allclose(buf, expected, rtol=1e-13, atol=1e-12)


def blocks():
    offsets = np.concatenate([[0], np.cumsum(COUNTS)])
    return values(int(offsets[-1]), 300), offsets


def allgatherv():
    everything, offsets = blocks()
    out = np.empty(offsets[-1])
    collectives.allgatherv(comm, everything[offsets[r]:offsets[r + 1]], out, COUNTS)
    assert np.array_equal(out, everything)


def gatherv_scatterv():
    everything, offsets = blocks()
    root = P - 1
    out = np.empty(offsets[-1]) if r == root else None
    collectives.gatherv(comm, everything[offsets[r]:offsets[r + 1]], out, COUNTS, root)
    if r == root:
        assert np.array_equal(out, everything)
    mine = np.empty(COUNTS[r])
    collectives.scatterv(comm, everything if r == 0 else None, mine, COUNTS, 0)
    assert np.array_equal(mine, everything[offsets[r]:offsets[r + 1]])


def sub_communicator():
    buf = values(LARGE, 7) if half.rank == 0 else np.empty(LARGE)
    collectives.bcast(half, buf, 0)
    assert np.array_equal(buf, values(LARGE, 7))


for n in (SMALL, LARGE):
    counted(f"bcast_{n}", bcast(n))
    counted(f"reduce_{n}", reduce(n))
counted("allreduce", allreduce)
counted("allgatherv", allgatherv)
counted("gatherv_scatterv", gatherv_scatterv)
counted("sub_communicator", sub_communicator)
if r == 0:
    write_result(results)
