"""Level-set SpTRSV (Anderson and Saad) over MPI point-to-point messages.

Each rank walks the levels in order and solves its rows of each level; after a level
whose values another rank needs, it sends exactly those values (one message per
(destination, level)), and before the next level it waits for the values of that level
it needs itself. Levels with nothing to exchange are solved back to back (one segment).
Cost per rank: 8 * nrhs bytes per off-rank value it sends, one message per (destination,
level) that carries values; critical path: the number of levels.
"""

from __future__ import annotations

import numpy as np

from linalg_io.comm.counting import CountedComm
from linalg_io.sptrsv.analysis import LocalSystem


class LevelSet:
    """Executor of the level-set schedule of one rank (buffers made once)."""

    @staticmethod
    def allocate_host(comm: CountedComm, rows: int, nrhs: int) -> tuple[np.ndarray, None]:
        """The local solver's host buffer: plain memory (messages land in it)."""
        return np.zeros((rows, nrhs)), None

    def __init__(self, comm: CountedComm, system: LocalSystem, local, window: None) -> None:
        self.comm = comm
        self.system = system
        self.local = local
        nrhs = local.ghosts.shape[1]
        self.send_buffers = [np.empty((b.local.size, nrhs)) for b in system.outgoing]
        self.sends_after = [[] for _ in range(system.nsegments)]
        for index, batch in enumerate(system.outgoing):
            self.sends_after[batch.segment].append(index)
        self.recvs_after = [[] for _ in range(system.nsegments)]
        for batch in system.incoming:
            self.recvs_after[batch.segment].append(batch)

    def reset(self) -> None:
        """Nothing to reset between repetitions."""

    def run(self) -> None:
        system, local, comm = self.system, self.local, self.comm
        ghosts = local.ghosts
        with comm.phase("exchange"):
            pending = [[(comm.Irecv(ghosts[b.target_pos:b.target_pos + b.local.size], b.peer,
                                    tag=b.level), b) for b in batches]
                       for batches in self.recvs_after]
            sends = []
            ptr = system.segment_ptr
            for segment in range(system.nsegments):
                local.solve(ptr[segment], ptr[segment + 1])
                for index in self.sends_after[segment]:
                    batch = system.outgoing[index]
                    local.pack(batch.local, self.send_buffers[index])
                    sends.append(comm.Isend(self.send_buffers[index], batch.peer, tag=batch.level))
                if pending[segment]:
                    comm.Waitall([request for request, _ in pending[segment]])
                    for _, batch in pending[segment]:
                        local.ghosts_arrived(batch.target_pos, batch.target_pos + batch.local.size)
            comm.Waitall(sends)

    def close(self) -> None:
        """No MPI objects to free."""
