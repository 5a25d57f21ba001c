"""`calibrate`'s trips of a sparse triangular solve's messages: the one-sided
put-with-signal the sync-free solve pushes a batch with, the wake-up a waiting
rank costs where ranks share cores, and the level-set executor's own calls per batch.

* `put_signal_trip`: one-way seconds of a ping-pong between two ranks in which each
  pushes VALUES float64 as `linalg_io.sptrsv.syncfree` pushes a batch (Put into the
  partner's window, Flush_all, Accumulate of 1 into its flag, Flush_all, inside a
  Lock_all epoch) and the partner polls its flag as the solve does (Win.Sync, Iprobe,
  the yielding back-off of `SyncFree._poll`). On one node Open MPI's shared-memory
  window completes a push at once; across nodes over TCP each flush waits for the
  target's progress engine, which runs only inside its MPI calls.
* `shared_core_trip`: the one-way trip of an 8-byte two-sided ping-pong between two
  ranks of one node pinned to one core, each waiting by testing its request and
  yielding the core between tests (as Open MPI's wait does with `mpi_yield_when_idle`,
  which the launchers set where a node's ranks outnumber its cores): a message where
  ranks share cores, the waiting rank woken by the scheduler. `calibrate` writes what
  it costs over alpha as `wake_s` (0 at least). A yield also hands the core to any
  other process that wants it, so the figure holds the machine's load at the time, as
  a solve meets it.

* `batch_calls`: the CPU seconds the level-set executor (`linalg_io.sptrsv.levelset`)
  spends on a batch at each end, outside the kernel and the wait: the sender packs
  VALUES solved values (`np.take` into the batch's buffer) and Isends them through a
  `CountedComm`; the receiver posts the Irecv through it and completes it with Waitall
  once it has arrived. TRIPS batches a round from one rank to the other, each end's
  calls timed apart (the receives posted before the sends, as the executor posts them
  before its first segment; the Waitalls after every batch has arrived, so no wait is
  timed). `calibrate` writes them as `send_cpu_s` and `recv_cpu_s`.

Each trip is the median over the rounds (after one warm-up round) of a round's mean
of TRIPS round trips: a solve meets the typical trip at every batch and level, not
the best. The ranks not in the pair sleep in the barriers (`calibrate.idle_barrier`).
"""

from __future__ import annotations

import os
import time

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.waiting import IDLE
from linalg_io.sptrsv.syncfree import SPIN_POLLS

VALUES = 24          # about one level's boundary values of lap3d:48 between two row blocks
TRIPS = 100          # round trips per round


def put_signal_trip(a: int, b: int, reps: int, world: MPI.Comm | None = None) -> float:
    """One-way seconds of a put-with-signal between ranks a and b of `world` (module
    doc), the median of `reps` rounds after one warm-up, on every rank (collective)."""
    world = world or MPI.COMM_WORLD
    rank = world.Get_rank()
    # windows over the pair alone: a flush over a window of more ranks would also wait
    # for the progress of those sleeping in the barrier
    in_pair = rank in (a, b)
    pair = world.Split(0 if in_pair else MPI.UNDEFINED, 0 if rank == a else 1)
    if in_pair:
        data = MPI.Win.Allocate(8 * VALUES, 8, comm=pair)
        flag_win = MPI.Win.Allocate(8, 8, comm=pair)
        flag = np.frombuffer(flag_win.tomemory(), dtype=np.int64, count=1)
        flag[:] = 0
        pair.Barrier()
    out, one = np.ones(VALUES), np.ones(1, dtype=np.int64)
    peer = 1 if rank == a else 0     # in the pair

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

    rounds, count = [], 0
    for _ in range(reps + 1):
        IDLE.barrier(world)
        if in_pair:
            data.Lock_all(MPI.MODE_NOCHECK)
            flag_win.Lock_all(MPI.MODE_NOCHECK)
            start = time.perf_counter()
            for _ in range(TRIPS):
                count += 1
                if rank == a:
                    push()
                    await_flag(count)
                else:
                    await_flag(count)
                    push()
            rounds.append((time.perf_counter() - start) / (2 * TRIPS))
            flag_win.Unlock_all()
            data.Unlock_all()
    IDLE.barrier(world)
    if in_pair:
        flag_win.Free()
        data.Free()
        pair.Free()
    return world.bcast(float(np.median(rounds[1:])) if in_pair else None, root=a)


def _pingpong(world: MPI.Comm, a: int, b: int, buf: np.ndarray) -> float:
    """Seconds per one-way trip of TRIPS round trips, each wait a test-and-yield loop."""
    rank = world.Get_rank()
    peer = b if rank == a else a

    def wait(request: MPI.Request) -> None:
        while not request.Test():
            os.sched_yield()

    start = time.perf_counter()
    for _ in range(TRIPS):
        if rank == a:
            wait(world.Isend(buf, peer, 12))
            wait(world.Irecv(buf, peer, 13))
        else:
            wait(world.Irecv(buf, peer, 12))
            wait(world.Isend(buf, peer, 13))
    return (time.perf_counter() - start) / (2 * TRIPS)


def shared_core_trip(a: int, b: int, reps: int, world: MPI.Comm | None = None) -> float:
    """One-way seconds of a message between ranks a and b (one node) pinned to one core,
    waiting by test and yield (module doc), the median of `reps` rounds after one
    warm-up; on every rank (collective)."""
    world = world or MPI.COMM_WORLD
    rank = world.Get_rank()
    buf = np.zeros(1)
    rounds = []
    mask = os.sched_getaffinity(0)
    core = world.bcast(min(mask), root=a)
    if rank in (a, b):
        os.sched_setaffinity(0, {core})
    for _ in range(reps + 1):
        IDLE.barrier(world)
        if rank in (a, b):
            rounds.append(_pingpong(world, a, b, buf))
    os.sched_setaffinity(0, mask)
    IDLE.barrier(world)
    return world.bcast(float(np.median(rounds[1:])) if rank in (a, b) else None, root=a)


def batch_calls(a: int, b: int, reps: int, world: MPI.Comm | None = None
                ) -> tuple[float, float]:
    """(send, receive) CPU seconds per batch of the level-set executor's calls between
    ranks a (sending) and b (module doc), each the median of `reps` rounds after one
    warm-up; on every rank (collective)."""
    world = world or MPI.COMM_WORLD
    rank = world.Get_rank()
    in_pair = rank in (a, b)
    pair = world.Split(0 if in_pair else MPI.UNDEFINED, 0 if rank == a else 1)
    counted = CountedComm(pair) if in_pair else None
    vector = np.arange(4.0 * VALUES).reshape(-1, 1)     # the executor's (rows, nrhs)
    picks = np.arange(0, 4 * VALUES, 4)
    buffers = np.empty((TRIPS, VALUES, 1))
    rounds = []
    for _ in range(reps + 1):
        IDLE.barrier(world)
        if rank == a:
            pair.Barrier()                     # the receives are posted
            start = time.perf_counter()
            sends = []
            for trip in range(TRIPS):
                np.take(vector, picks, axis=0, out=buffers[trip])
                sends.append(counted.Isend(buffers[trip], 1, tag=trip))
            rounds.append((time.perf_counter() - start) / TRIPS)
            counted.Waitall(sends)
            pair.Barrier()
        elif rank == b:
            start = time.perf_counter()
            receives = [counted.Irecv(buffers[trip], 0, tag=trip) for trip in range(TRIPS)]
            posted = time.perf_counter() - start
            pair.Barrier()
            pair.Barrier()                     # every batch sent
            start = time.perf_counter()
            for request in receives:
                counted.Waitall([request])
            rounds.append((posted + time.perf_counter() - start) / TRIPS)
    IDLE.barrier(world)
    if in_pair:
        pair.Free()
    send = world.bcast(float(np.median(rounds[1:])) if rank == a else None, root=a)
    recv = world.bcast(float(np.median(rounds[1:])) if rank == b else None, root=b)
    return send, recv
