"""For the wire tests' scripts: run a pattern as one counted region of both counters."""

from linalg_io.comm.wire import per_rank_wire


def counted_region(comm, wire, pattern, bracket=True) -> list | None:
    """Every rank's wire and logical (sent, received, messages) and bytes by operation
    over `pattern()` (gathered on rank 0, None elsewhere; wire None where `wire` is the
    stand-in of a missing wire counter); with bracket=False the pattern starts and stops
    the wire counter itself."""
    world = comm.comm
    world.Barrier()
    comm.counter.reset()
    wire.reset()
    if bracket:
        wire.start()
    pattern()
    if bracket:
        wire.stop()
    comm.counter.settle_one_sided(world)
    counter = comm.counter
    mine = {"wire": per_rank_wire(wire, world),
            "logical": (counter.bytes_sent, counter.bytes_recv, counter.msgs_sent),
            "by_op": dict(counter.sent_by_op)}
    return world.gather(mine, root=0)
