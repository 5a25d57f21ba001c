"""Run under mpiexec: rank 0 times a fixed dgemm workload while every other rank waits
in a Barrier; prints rank 0's seconds. Used by bench_oversubscription.py."""

import sys
import time

import numpy as np
from mpi4py import MPI

ORDER, REPEATS = int(sys.argv[1]), int(sys.argv[2])
world = MPI.COMM_WORLD
world.Barrier()
if world.Get_rank() == 0:
    a = np.random.default_rng(0).random((ORDER, ORDER))
    c = np.empty_like(a)
    np.matmul(a, a, out=c)
    start = time.perf_counter()
    for _ in range(REPEATS):
        np.matmul(a, a, out=c)
    print(f"{time.perf_counter() - start:.6f}", flush=True)
world.Barrier()
