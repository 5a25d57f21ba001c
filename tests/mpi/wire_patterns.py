"""Known patterns between WireCounter.start() and stop(); rank 0 writes, per pattern, every
rank's wire (sent, received, messages) beside the logical counter's.

Run with Open MPI's monitoring on and, for the collectives, Open MPI's tuned component
forced to schedules that can be written down by hand (tests/test_wire.py sets
coll_tuned_use_dynamic_rules and the algorithm of each collective).
"""

import numpy as np
from _regions import counted_region
from _result import write_result
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.wire import WireCounter

world = MPI.COMM_WORLD
comm = CountedComm(world)
P, r = comm.size, comm.rank
level = MPI.Query_thread()
wire = WireCounter.open(world)
# Open MPI's MPI_T_init_thread sets the process's thread level to the one asked for
results = {"source": wire.source, "thread_level": [level, MPI.Query_thread()]}


def counted(name, pattern, bracket=True):
    results[name] = counted_region(comm, wire, pattern, bracket)


def ring():
    out = np.full(3 * r + 1, float(r))
    into = np.empty(3 * ((r - 1) % P) + 1)
    request = comm.Isend(out, (r + 1) % P, 3)
    comm.Recv(into, (r - 1) % P, 3)
    request.Wait()
    comm.Send(out, MPI.PROC_NULL)
    assert np.all(into == (r - 1) % P)


# made outside any counted region: creating a communicator is itself a collective
half = comm.Split(r % 2, r)
pair = comm.Split(r // 2, r)


def sub_communicators():
    """Rings of rank-dependent sizes inside the halves (and a Sendrecv in the pairs)."""
    h, hs = half.rank, half.size
    out = np.full(100 + 10 * r, float(r), dtype=np.float32)
    into = np.empty(100 + 10 * (((h - 1) % hs) * 2 + r % 2), dtype=np.float32)
    request = half.Isend(out, (h + 1) % hs, 5)
    half.Recv(into, (h - 1) % hs, 5)
    request.Wait()
    if pair.size == 2:
        mine = np.arange(7 + r, dtype=np.int64)
        theirs = np.empty(7 + (r ^ 1), dtype=np.int64)
        pair.Sendrecv(mine, 1 - pair.rank, 0, theirs, 1 - pair.rank, 0)


def one_sided():
    """Passive target: Put 10 doubles to r+1, Accumulate 5 to r-1, Get 7 from r+1."""
    memory = np.zeros(64)
    win = comm.Win_create(memory)
    world.Barrier()
    wire.start()
    win.Lock_all()
    win.Put(np.full(10, 1.0), (r + 1) % P, [0, 10, MPI.DOUBLE])
    win.Accumulate(np.full(5, 1.0), (r - 1) % P, [20, 5, MPI.DOUBLE])
    got = np.empty(7)
    win.Get(got, (r + 1) % P, [40, 7, MPI.DOUBLE])
    win.Unlock_all()
    wire.stop()
    world.Barrier()
    win.Free()


N_DOUBLES = 840   # divisible by 2, 4 and 8: the ring allreduce's blocks are equal


def bcast_linear():
    for root in range(P):
        buf = np.full(N_DOUBLES, float(root)) if r == root else np.empty(N_DOUBLES)
        comm.Bcast(buf, root)
        assert np.all(buf == root)


def reduce_linear():
    total = np.empty(N_DOUBLES)
    comm.Reduce(np.ones(N_DOUBLES), total if r == P - 1 else None, MPI.SUM, P - 1)


def allreduce_ring():
    out = np.empty(N_DOUBLES)
    comm.Allreduce(np.full(N_DOUBLES, float(r)), out)
    assert np.all(out == P * (P - 1) / 2)


def allgather_ring():
    out = np.empty(P * 30)
    comm.Allgather(np.full(30, float(r)), out)


counted("ring", ring)
counted("sub_communicators", sub_communicators)
# one_sided brackets its own epoch: window creation and freeing are collectives
counted("one_sided", one_sided, bracket=False)
counted("bcast_linear", bcast_linear)
counted("reduce_linear", reduce_linear)
counted("allreduce_ring", allreduce_ring)
counted("allgather_ring", allgather_ring)
if r == 0:
    write_result(results)
