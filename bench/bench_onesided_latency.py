"""One SpTRSV batch's latency between two ranks: a two-sided message (the level-set
solve's) against a one-sided put-with-signal (the sync-free solve's), on a node and
across nodes.

    sudo bench/emulated_cluster.sh run 4 -- .venv/bin/python bench/bench_onesided_latency.py
    .venv/bin/mpiexec -n 4 --oversubscribe .venv/bin/python bench/bench_onesided_latency.py
    ... bench_onesided_latency.py --busy

With `--busy` the ranks outside the pair compute (64 x 64 dgemms) during its two-sided
ping-pong instead of sleeping, as the other ranks of a solve do: where ranks outnumber
cores, each message then also waits for its receiver to be scheduled again.

Pairs: ranks 0 and 1 (one node when the job has 2 per node) and ranks 1 and 2 (the two
nodes' neighbours, the pair a row partition's boundary puts across the link); the other
ranks sleep in a barrier. Each pair plays ITERATIONS ping-pongs of VALUES float64 and
the pair's first rank prints the seconds per one-way trip:

* two-sided: Isend and Irecv, completed by the job's wait policy (polite where ranks
  outnumber cores), as `linalg_io.sptrsv.levelset` sends a batch;
* put-with-signal: `calibrate`'s own trip (`linalg_io.tools.calibrate_trips.put_signal_trip`),
  as `linalg_io.sptrsv.syncfree` pushes a batch: Put into the partner's window,
  Flush_all, Accumulate of 1 into its flag, Flush_all, inside a Lock_all epoch; the
  partner polls its flag and answers the same way.

Over TCP a one-sided operation moves only while its target is inside an MPI call, and
each Flush_all waits for the target's acknowledgement: a batch costs two round trips
where the two-sided message costs one trip.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm, TrafficCounter
from linalg_io.comm.waiting import IDLE, wait_policy
from linalg_io.launch.node import kernel_crowded
from linalg_io.tools.calibrate_trips import put_signal_trip

ITERATIONS = 200
ROUNDS = 3          # put-with-signal: the median of ROUNDS rounds of calibrate's trips
VALUES = 24   # about one level's boundary values of lap3d:48 between two row blocks


def two_sided(comm: CountedComm, me: int) -> float:
    """Seconds per one-way trip of an Isend/Irecv ping-pong."""
    out, into = np.ones(VALUES), np.empty(VALUES)
    peer = 1 - me
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        if me == 0:
            comm.Waitall([comm.Isend(out, peer, tag=1)])
            comm.Waitall([comm.Irecv(into, peer, tag=2)])
        else:
            comm.Waitall([comm.Irecv(into, peer, tag=1)])
            comm.Waitall([comm.Isend(out, peer, tag=2)])
    return (time.perf_counter() - start) / (2 * ITERATIONS)


def busy_until(request: MPI.Request) -> None:
    """Small dgemms until `request` completes (a rank of a solve at work)."""
    a = np.ones((64, 64))
    while not request.Test():
        a = a @ a * (1.0 / 64)


def report(first: int, second: int, where: str, name: str, seconds: float) -> None:
    print(f"ranks {first},{second} ({where:<9}) {name:<16} {seconds * 1e6:9.1f} us one way",
          flush=True)


def main() -> None:
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    policy = wait_policy(kernel_crowded(world, 1))
    hosts = world.allgather(MPI.Get_processor_name())
    for first, second in ((0, 1), (size // 2 - 1, size // 2)):
        in_pair = rank in (first, second)
        pair = world.Split(0 if in_pair else 1, rank)
        where = "one node" if hosts[first] == hosts[second] else "two nodes"
        world.Barrier()
        if in_pair:
            me = pair.Get_rank()
            seconds = two_sided(CountedComm(pair, TrafficCounter(2), waits=policy), me)
            done = world.Ibarrier()
            policy.wait(done)
            if me == 0:
                label = "two-sided busy" if "--busy" in sys.argv else "two-sided"
                report(first, second, where, label, seconds)
        elif "--busy" in sys.argv:
            busy_until(world.Ibarrier())
        else:
            IDLE.wait(world.Ibarrier())
        # calibrate's own measurement, a collective over the whole job
        seconds = put_signal_trip(first, second, ROUNDS, world)
        if rank == first:
            report(first, second, where, "put-with-signal", seconds)
        pair.Free()


if __name__ == "__main__":
    main()
