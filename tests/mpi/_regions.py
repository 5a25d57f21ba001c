"""For the scripts of tests/mpi: run work as one counted region of both counters, and take
the first ranks of the world apart."""

from mpi4py import MPI

from linalg_io.comm.wire import per_rank_wire


def first_ranks(world: MPI.Comm, p: int) -> MPI.Comm | None:
    """The first `p` ranks of `world` as a communicator of their own (collective over
    `world`); None on the other ranks."""
    sub = world.Split(0 if world.rank < p else MPI.UNDEFINED, world.rank)
    return None if sub == MPI.COMM_NULL else sub


def counted_run(comm, wire, work, *args):
    """`work(*args)` as one counted region of this rank: the logical counter of `comm` and
    the wire counter reset, the wire counter running only around it. Returns what `work`
    returned and the seconds it took on this rank."""
    comm.counter.reset()
    wire.reset()
    wire.start()
    start = MPI.Wtime()
    result = work(*args)
    elapsed = MPI.Wtime() - start
    wire.stop()
    return result, elapsed


def counted_region(comm, wire, pattern, bracket=True) -> list | None:
    """Every rank's wire and logical (sent, received, messages) and bytes by operation
    over `pattern()` (gathered on rank 0, None elsewhere; wire None where `wire` is the
    stand-in of a missing wire counter); with bracket=False the pattern starts and stops
    the wire counter itself."""
    world = comm.comm
    world.Barrier()
    if bracket:
        counted_run(comm, wire, pattern)
    else:
        comm.counter.reset()
        wire.reset()
        pattern()
    comm.counter.settle_one_sided(world)
    counter = comm.counter
    mine = {"wire": per_rank_wire(wire, world),
            "logical": (counter.bytes_sent, counter.bytes_recv, counter.msgs_sent),
            "by_op": dict(counter.sent_by_op)}
    return world.gather(mine, root=0)
