"""Cost of counting: time per call of CountedComm vs the raw mpi4py communicator.

Run: .venv/bin/linalg-io ... is not needed; use
  .venv/bin/mpiexec --oversubscribe -n 2 .venv/bin/python bench/bench_counting_overhead.py
Each operation is timed raw and counted alternately (best of 5 blocks of CALLS
calls); the overhead per call is the difference. Target: < 10 us per call.
"""

import time

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm

CALLS = 2000
world = MPI.COMM_WORLD
counted = CountedComm(world)
rank = world.Get_rank()
small = np.ones(1)
vector = np.ones(8)
counts = np.ones(world.Get_size(), dtype=np.int64)
gathered = np.empty(world.Get_size())


def per_call(comm, operation: str) -> float:
    def once():
        if operation == "Allreduce":
            comm.Allreduce(MPI.IN_PLACE, small)
        elif operation == "Bcast":
            comm.Bcast(vector, 0)
        elif operation == "Allgatherv":
            comm.Allgatherv(small, [gathered, counts])
        elif operation == "Sendrecv":
            peer = (rank + 1) % world.Get_size()
            comm.Sendrecv(vector, peer, 0, vector, (rank - 1) % world.Get_size(), 0)
    best = float("inf")
    for _ in range(5):
        world.Barrier()
        start = time.perf_counter()
        for _ in range(CALLS):
            once()
        best = min(best, (time.perf_counter() - start) / CALLS)
    return best


rows = []
for op in ("Allreduce", "Bcast", "Allgatherv", "Sendrecv"):
    raw = per_call(world, op)
    wrapped = per_call(counted, op)
    rows.append((op, raw, wrapped))
if rank == 0:
    print(f"{'operation':<12} {'raw us':>8} {'counted us':>11} {'overhead us':>12}")
    for op, raw, wrapped in rows:
        print(f"{op:<12} {raw * 1e6:>8.2f} {wrapped * 1e6:>11.2f} {(wrapped - raw) * 1e6:>12.2f}")
