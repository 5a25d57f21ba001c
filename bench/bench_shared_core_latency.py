"""The time of a small exchange between two ranks while the job's other ranks are idle or
computing: what the 2D LU's panel (one exchange per pivot column) and COnfLUX's
tournament meet where ranks share cores.

    sudo bench/emulated_cluster.sh run 4 -- .venv/bin/python bench/bench_shared_core_latency.py
    .venv/bin/mpiexec -n 4 --oversubscribe .venv/bin/python bench/bench_shared_core_latency.py

Ranks 0 and P/2 (on two nodes when the job spans two) run the package's Allgatherv of
the 2D panel's candidate blocks (kb + 2 and 2 kb + 2 values, kb = 128) ITERATIONS times,
under MPI's blocking waits and under the polite ones (`linalg_io.comm.waiting`); the
other ranks sleep in a barrier, or run dgemm until the pair is done. Rank 0 prints the
seconds per exchange of each case. With a core per rank the four are close; where the
computing ranks share the pair's cores, an exchange waits for its partner's turn on a
core, a scheduler time slice rather than the network's latency.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from linalg_io.comm import collectives
from linalg_io.comm.counting import CountedComm, TrafficCounter
from linalg_io.comm.waiting import BLOCKING, IDLE, POLITE

ITERATIONS = 300
KB = 128


def exchange_seconds(comm: CountedComm) -> float:
    """Seconds per Allgatherv of the 2D panel's candidates between the pair."""
    exchange = collectives.Allgatherv(comm, np.array([KB + 2, 2 * KB + 2]))
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        exchange.run(None)
    return (time.perf_counter() - start) / ITERATIONS


def main() -> None:
    world = MPI.COMM_WORLD
    rank, partner = world.Get_rank(), world.Get_size() // 2
    in_pair = rank in (0, partner)
    pair = world.Split(0 if in_pair else 1, rank)
    work = np.random.default_rng(0).random((1024, 1024))
    for name, policy in (("MPI's wait", BLOCKING), ("polite wait", POLITE)):
        for busy in (False, True):
            world.Barrier()
            if in_pair:
                seconds = exchange_seconds(CountedComm(pair, TrafficCounter(2), waits=policy))
                done = world.Ibarrier()
                done.Wait()
                if rank == 0:
                    others = "computing" if busy else "idle"
                    print(f"{name:<12} others {others:<9} {seconds * 1e6:9.1f} us per exchange",
                          flush=True)
            elif busy:
                done = world.Ibarrier()
                while not done.Test():
                    work @ work[:, :64]
            else:
                IDLE.wait(world.Ibarrier())
    pair.Free()


if __name__ == "__main__":
    main()
