"""Synchronization-free SpTRSV over MPI one-sided communication (Liu et al.; Xie et al.).

Each rank owns a pool of tasks (its segments of rows in dependency order, see
`analysis.task_graph`); a task is ready when its local predecessor tasks are done and
the flags of the incoming batches it reads are set, and the rank always runs the first
ready task. After a task it pushes the solved values other ranks need: one MPI Put per
(destination, level) batch into the destination's ghost window, a flush, then an
Accumulate of 1 into the batch's flag at the destination (put-with-signal), all inside
one passive-target epoch (Lock_all). No barrier and no matching receive: a rank waits
only for the values it needs, polling its own flags with a yielding back-off.
Cost per rank: 8 * nrhs bytes per off-rank value it sends plus 8 bytes of flag per
batch, two one-sided operations (Put + Accumulate) per batch.
"""

from __future__ import annotations

import bisect
import time

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm, CountedWin
from linalg_io.sptrsv.analysis import LocalSystem, task_graph

SPIN_POLLS = 64


def _allocate(comm: CountedComm, count: int, dtype: type) -> tuple[CountedWin, np.ndarray]:
    """Collective: a counted window over `count` new items and a NumPy view of them."""
    itemsize = np.dtype(dtype).itemsize
    window = MPI.Win.Allocate(count * itemsize, itemsize, comm=comm.comm)
    memory = np.frombuffer(window.tomemory(), dtype=dtype, count=count) if count else \
        np.zeros(0, dtype=dtype)
    return CountedWin(window, comm), memory


class SyncFree:
    """Executor of one rank: windows over its ghost buffer and its incoming-batch flags."""

    @staticmethod
    def allocate_host(comm: CountedComm, rows: int, nrhs: int) -> tuple[np.ndarray, CountedWin]:
        """The local solver's host buffer as window memory (MPI.Win.Allocate).

        Allocated windows let Open MPI use its shared-memory one-sided component on a
        node (Puts and Accumulates complete without the target's help); across nodes
        the RDMA component, progressed by the target's polling.
        """
        window, memory = _allocate(comm, rows * nrhs, np.float64)
        return memory.reshape(rows, nrhs), window

    def __init__(self, comm: CountedComm, system: LocalSystem, local,
                 window: CountedWin) -> None:
        self.comm = comm
        self.system = system
        self.local = local
        self.graph = task_graph(system)
        nrhs = local.ghosts.shape[1]
        self.nrhs = nrhs
        self.send_buffers = [np.empty((b.local.size, nrhs)) for b in system.outgoing]
        self.sends_after = [[] for _ in range(system.nsegments)]
        for index, batch in enumerate(system.outgoing):
            self.sends_after[batch.segment].append(index)
        self.flag_win, self.flags = _allocate(comm, len(system.incoming), np.int64)
        self.flags[:] = 0
        self.ghost_range = [(b.target_pos, b.target_pos + b.local.size) for b in system.incoming]
        self.one = np.ones(1, dtype=np.int64)
        self.data_win = window
        # synchronisation moves no payload: it goes to the raw windows directly
        self.raw_data_win, self.raw_flag_win = window.win, self.flag_win.win
        graph = self.graph
        self.needs = [graph.need[graph.need_ptr[t]:graph.need_ptr[t + 1]].tolist()
                      for t in range(graph.ntasks)]
        self.successors = [graph.succ[graph.succ_ptr[t]:graph.succ_ptr[t + 1]].tolist()
                           for t in range(graph.ntasks)]
        self.task_rows = list(zip(graph.rows_ptr[:-1].tolist(), graph.rows_ptr[1:].tolist()))
        self.task_segment = graph.segment.tolist()
        # a rank that neither sends nor receives needs no access epoch
        self.epoch = bool(system.outgoing or system.incoming)
        first_ghost = type(local).ghost_row
        self.target_disp = [(first_ghost(int(system.rows_per_rank[b.peer])) + b.target_pos) * nrhs
                            for b in system.outgoing]

    def reset(self) -> None:
        """Clear the flags (before the barrier that starts a repetition)."""
        self.flags[:] = 0

    def _poll(self, attempt: int) -> None:
        """Let MPI progress and give the core away: other ranks may share it.

        The first SPIN_POLLS empty polls only yield (sleep(0)); then the sleep grows by
        1 us per poll up to 100 us, so a long wait costs little CPU.
        """
        self.comm.comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
        time.sleep(0 if attempt < SPIN_POLLS else min(1e-4, 1e-6 * (attempt - SPIN_POLLS + 1)))

    def _push(self, segment: int) -> None:
        batches = self.sends_after[segment]
        if not batches:
            return
        for index in batches:
            batch = self.system.outgoing[index]
            self.local.pack(batch.local, self.send_buffers[index])
            self.data_win.Put(self.send_buffers[index], batch.peer,
                              target=self.target_disp[index])
        self.raw_data_win.Flush_all()
        for index in batches:
            batch = self.system.outgoing[index]
            self.flag_win.Accumulate(self.one, batch.peer, target=batch.target_slot, op=MPI.SUM)
        self.raw_flag_win.Flush_all()

    def _first_ready(self, ready: list[int]) -> int | None:
        """The first task of the pool whose incoming batches have all arrived."""
        flags = self.flags
        if flags.size:
            self.raw_flag_win.Sync()
        for task in ready:
            if all(flags[slot] for slot in self.needs[task]):
                return task
        return None

    def run(self) -> None:
        local = self.local
        arrived = [False] * self.flags.size
        remaining = self.graph.pred_count.tolist()
        ready = [t for t, count in enumerate(remaining) if count == 0]
        with self.comm.phase("push"):
            if self.epoch:
                self.raw_data_win.Lock_all(MPI.MODE_NOCHECK)
                self.raw_flag_win.Lock_all(MPI.MODE_NOCHECK)
            attempt = 0
            while ready:
                task = self._first_ready(ready)
                if task is None:
                    self._poll(attempt)
                    attempt += 1
                    continue
                attempt = 0
                ready.remove(task)
                fresh = [slot for slot in self.needs[task] if not arrived[slot]]
                if fresh:
                    self.raw_data_win.Sync()
                    for slot in fresh:
                        arrived[slot] = True
                        local.ghosts_arrived(*self.ghost_range[slot])
                local.solve(*self.task_rows[task])
                self._push(self.task_segment[task])
                for follower in self.successors[task]:
                    remaining[follower] -= 1
                    if remaining[follower] == 0:
                        bisect.insort(ready, follower)
            if self.epoch:
                self.raw_flag_win.Unlock_all()
                self.raw_data_win.Unlock_all()

    def close(self) -> None:
        """Free the two windows (collective)."""
        self.flag_win.Free()
        self.data_win.Free()
