"""One SpTRSV batch's latency between two ranks: a two-sided message (the level-set
solve's) against a one-sided put-with-signal (the sync-free solve's), on a node and
across nodes.

    sudo bench/emulated_cluster.sh run 4 -- .venv/bin/python bench/bench_onesided_latency.py
    .venv/bin/mpiexec -n 4 --oversubscribe .venv/bin/python bench/bench_onesided_latency.py

Pairs: ranks 0 and 1 (one node when the job has 2 per node) and ranks 1 and 2 (the two
nodes' neighbours, the pair a row partition's boundary puts across the link); the other
ranks sleep in a barrier. Each pair plays ITERATIONS ping-pongs of VALUES float64 and
rank 0 prints the seconds per one-way trip:

* two-sided: Isend and Irecv, completed by the job's wait policy (polite where ranks
  outnumber cores), as `linalg_io.sptrsv.levelset` sends a batch;
* put-with-signal: as `linalg_io.sptrsv.syncfree` pushes a batch: Put into the
  partner's window, Flush_all, Accumulate of 1 into its flag, Flush_all, inside a
  Lock_all epoch; the partner polls its flag (Win.Sync, then Iprobe and the solve's
  yielding back-off, `SyncFree._poll`) and answers the same way.

Over TCP a one-sided operation moves only while its target is inside an MPI call, and
each Flush_all waits for the target's acknowledgement: a batch costs two round trips
where the two-sided message costs one trip.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm, TrafficCounter
from linalg_io.comm.waiting import IDLE, wait_policy
from linalg_io.launch.node import kernel_crowded
from linalg_io.sptrsv.syncfree import SPIN_POLLS

ITERATIONS = 200
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


def put_with_signal(pair: MPI.Comm, me: int) -> float:
    """Seconds per one-way trip of a put-with-signal ping-pong (module doc)."""
    data = MPI.Win.Allocate(8 * VALUES, 8, comm=pair)
    flag_win = MPI.Win.Allocate(8, 8, comm=pair)
    flag = np.frombuffer(flag_win.tomemory(), dtype=np.int64, count=1)
    flag[:] = 0
    pair.Barrier()
    out, one = np.ones(VALUES), np.ones(1, dtype=np.int64)
    peer = 1 - me
    data.Lock_all(MPI.MODE_NOCHECK)
    flag_win.Lock_all(MPI.MODE_NOCHECK)

    def push() -> None:
        data.Put(out, peer, target=0)
        data.Flush_all()
        flag_win.Accumulate(one, peer, target=0, op=MPI.SUM)
        flag_win.Flush_all()

    def await_flag(count: int) -> None:
        attempt = 0
        while True:
            flag_win.Sync()
            if flag[0] >= count:
                data.Sync()
                return
            pair.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
            time.sleep(0 if attempt < SPIN_POLLS
                       else min(1e-4, 1e-6 * (attempt - SPIN_POLLS + 1)))
            attempt += 1

    start = time.perf_counter()
    for count in range(1, ITERATIONS + 1):
        if me == 0:
            push()
            await_flag(count)
        else:
            await_flag(count)
            push()
    seconds = (time.perf_counter() - start) / (2 * ITERATIONS)
    flag_win.Unlock_all()
    data.Unlock_all()
    pair.Barrier()
    flag_win.Free()
    data.Free()
    return seconds


def main() -> None:
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    policy = wait_policy(kernel_crowded(world, 1))
    hosts = world.allgather(MPI.Get_processor_name())
    for first, second in ((0, 1), (size // 2 - 1, size // 2)):
        in_pair = rank in (first, second)
        pair = world.Split(0 if in_pair else 1, rank)
        where = "one node" if hosts[first] == hosts[second] else "two nodes"
        for name in ("two-sided", "put-with-signal"):
            world.Barrier()
            if in_pair:
                me = pair.Get_rank()
                if name == "two-sided":
                    seconds = two_sided(CountedComm(pair, TrafficCounter(2), waits=policy), me)
                else:
                    seconds = put_with_signal(pair, me)
                done = world.Ibarrier()
                policy.wait(done)
                if me == 0:
                    print(f"ranks {first},{second} ({where:<9}) {name:<16} "
                          f"{seconds * 1e6:9.1f} us one way", flush=True)
            else:
                IDLE.wait(world.Ibarrier())
        pair.Free()


if __name__ == "__main__":
    main()
