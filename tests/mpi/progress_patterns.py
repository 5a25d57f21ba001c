"""An allgather started, then a block that makes no MPI call (a sleep): with
`progressed` the thread completes it inside the block (the blocks arrived before
`complete`); the bytes counted are those of a plain `run`. Rank 0 writes every rank's."""

import time

import numpy as np
from _result import write_result
from mpi4py import MPI

from linalg_io.comm import collectives
from linalg_io.comm.counting import CountedComm
from linalg_io.comm.progress import progressed

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
comm = CountedComm(world)
ITEMS = 1 << 19                       # 4 MiB per rank: past every eager limit (rendezvous)
counts = np.full(size, ITEMS) + np.arange(size)


def block(j: int) -> np.ndarray:
    return np.arange(counts[j], dtype=np.float64) + 1000.0 * j


mine = {"thread_level": MPI.Query_thread()}
for case in ("progressed", "run"):
    comm.counter.reset()
    gather = collectives.Allgatherv(comm, counts)
    out = np.zeros(int(counts.sum()))
    world.Barrier()
    if case == "run":
        gather.run(out, block(rank))
    else:
        gather.start(block(rank))
        requests = list(gather.pending)
        with progressed(requests):
            time.sleep(1.0)
        mine["null_after_block"] = all(r == MPI.REQUEST_NULL for r in requests)
        # Px = 2: one round, so the other's block is in place before complete
        other = (rank + 1) % size
        mine["arrived_in_block"] = bool(np.array_equal(gather.blocks[other], block(other)))
        gather.complete(out)
    mine[case] = {"ok": bool(np.array_equal(out, np.concatenate([block(j)
                                                                  for j in range(size)]))),
                  "sent": comm.counter.bytes_sent, "recv": comm.counter.bytes_recv,
                  "msgs": comm.counter.msgs_sent}
everyone = world.gather(mine, root=0)
if rank == 0:
    write_result(everyone)
