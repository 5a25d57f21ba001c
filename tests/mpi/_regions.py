"""For the wire tests' scripts: run a pattern as one counted region of both counters."""

from linalg_io.comm.wire import WireCounter, per_rank_wire


def counted_region(comm, wire, pattern, bracket=True) -> list | None:
    """Every rank's wire and logical (sent, received, messages) and bytes by operation
    over `pattern()` (gathered on rank 0, None elsewhere; wire None where `wire` is the
    reason there is no wire counter); with bracket=False the pattern starts and stops
    the wire counter itself."""
    world = comm.comm
    world.Barrier()
    comm.counter.reset()
    measured = isinstance(wire, WireCounter)
    if measured:
        wire.reset()
    if bracket and measured:
        wire.start()
    pattern()
    if bracket and measured:
        wire.stop()
    comm.counter.settle_one_sided(world)
    counter = comm.counter
    mine = {"wire": per_rank_wire(wire, world) if measured else None,
            "logical": (counter.bytes_sent, counter.bytes_recv, counter.msgs_sent),
            "by_op": dict(counter.sent_by_op)}
    return world.gather(mine, root=0)
