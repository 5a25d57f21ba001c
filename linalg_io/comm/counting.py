"""The counting communicator: every byte the package hands to MPI goes through here.

`CountedComm` wraps an mpi4py communicator's buffer (uppercase) API and adds, per
rank, the bytes and messages sent and received to a shared `TrafficCounter`, per
operation and per named phase, by the rules of docs/records.md#counting:

* point-to-point: the sender counts its buffer, the receiver what it received
  (``Recv``/``Sendrecv`` read the byte count from the status; ``Irecv`` counts its
  buffer, so post receives of the exact size); PROC_NULL counts nothing; the
  ``op`` keyword names the operation in ``by_op`` (the package's own collective
  schedules, `linalg_io.comm.collectives`, label their messages so);
* collectives count their logical payload (n = this rank's buffer in bytes):
  Bcast root sends n, others receive n; Reduce non-roots send n, root receives n;
  Allreduce sends and receives n; Gather(v)/Scatter(v) move every block but the
  root's own; Allgather(v) sends its own block once and receives all others;
  Alltoall(v) sends and receives every block but its own; Reduce_scatter sends
  every block but its own and receives its own;
* one message per point-to-point send and per collective call in which the rank
  sends something; on a communicator of size 1 nothing moves;
* waits (``Recv``, ``Sendrecv``, ``Wait``, ``Waitall``, ``Barrier``) go through the
  communicator's `WaitPolicy` (`linalg_io.comm.waiting`): MPI's blocking calls, or
  test-then-sleep on a crowded node; the same messages either way, and ``Recv`` and
  ``Sendrecv`` count what the status says was received;
* one-sided (`CountedWin`): Put and Accumulate count as sent by the origin and
  received by the target, Get as sent by the target and received by the origin.
  The target side is only known to the origin, so origins keep per-peer totals
  that `TrafficCounter.settle_one_sided` exchanges (outside any counted region).

Buffers are NumPy arrays, ``[array, MPI.Datatype]``, ``[array, count, MPI.Datatype]``
or, for v-variants, ``[array, counts]``, ``[array, (counts, displs)]``,
``[array, (counts, displs), MPI.Datatype]`` or ``[array, counts, displs, MPI.Datatype]``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from mpi4py import MPI

from linalg_io.comm.waiting import BLOCKING, WaitPolicy

DEFAULT_PHASE = "other"


class TrafficCounter:
    """Per-rank totals of bytes and messages, by operation and by phase."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self._phases: list[str] = [DEFAULT_PHASE]
        self.reset()

    def reset(self) -> None:
        self.bytes_sent = 0
        self.bytes_recv = 0
        self.msgs_sent = 0
        self.sent_by_op: dict[str, int] = defaultdict(int)
        self.recv_by_op: dict[str, int] = defaultdict(int)
        self.sent_by_phase: dict[str, int] = defaultdict(int)
        self.recv_by_phase: dict[str, int] = defaultdict(int)
        # one-sided, indexed by world rank of the target: [bytes put/accumulated
        # into it, those messages, bytes read from it by Get, those messages]
        self.rma_to_peer = np.zeros((self.world_size, 4), dtype=np.int64)

    @property
    def current_phase(self) -> str:
        """The phase traffic is attributed to now (the watchdog's line names it)."""
        return self._phases[-1]

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Attribute the traffic inside the block to phase `name` (innermost wins)."""
        self._phases.append(name)
        try:
            yield
        finally:
            self._phases.pop()

    def add(self, op: str, sent: int, recv: int, msgs: int) -> None:
        phase = self._phases[-1]
        if sent:
            self.bytes_sent += sent
            self.sent_by_op[op] += sent
            self.sent_by_phase[phase] += sent
        if recv:
            self.bytes_recv += recv
            self.recv_by_op[op] += recv
            self.recv_by_phase[phase] += recv
        self.msgs_sent += msgs

    def settle_one_sided(self, world: MPI.Comm) -> None:
        """Credit targets with the one-sided traffic their origins recorded.

        Collective over `world`; uses the raw communicator, so it counts nothing
        itself. Put/Accumulate bytes become the target's received bytes; Get bytes
        become the target's sent bytes and messages.
        """
        incoming = np.zeros_like(self.rma_to_peer)
        world.Alltoall(self.rma_to_peer, incoming)
        put_bytes, _, get_bytes, get_msgs = (int(v) for v in incoming.sum(axis=0))
        self.add("Put/Accumulate(target)", 0, put_bytes, 0)
        self.add("Get(target)", get_bytes, 0, get_msgs)
        self.rma_to_peer[:] = 0


def _spec_parts(buf: Any) -> tuple[np.ndarray, Any, Any, Any]:
    """Split a buffer spec into (array, counts-or-count, displs, datatype)."""
    if isinstance(buf, np.ndarray):
        return buf, None, None, None
    parts = list(buf)
    array = parts[0]
    datatype = parts[-1] if isinstance(parts[-1], MPI.Datatype) else None
    rest = [p for p in parts[1:] if not isinstance(p, MPI.Datatype)]
    counts = displs = None
    if len(rest) == 1:
        counts = rest[0]
        if isinstance(counts, tuple) and len(counts) == 2 and hasattr(counts[0], "__len__"):
            counts, displs = counts
    elif len(rest) == 2:
        counts, displs = rest
    return array, counts, displs, datatype


def _itemsize(array: np.ndarray, datatype: Any) -> int:
    return datatype.Get_size() if datatype is not None else array.itemsize


def nbytes(buf: Any) -> int:
    """Bytes described by a plain buffer spec (array, [a, type], [a, count, type])."""
    if buf is None or buf is MPI.IN_PLACE:
        return 0
    array, count, _, datatype = _spec_parts(buf)
    if count is None:
        return array.nbytes
    return int(count) * _itemsize(array, datatype)


def vblocks_bytes(buf: Any, nranks: int, index: int) -> tuple[int, int]:
    """(all blocks, block `index`) in bytes of a v-variant spec (or of equal blocks)."""
    array, counts, _, datatype = _spec_parts(buf)
    if counts is None or isinstance(counts, (int, np.integer)):
        block = nbytes(buf) // nranks
        return block * nranks, block
    size = _itemsize(array, datatype)
    if isinstance(counts, np.ndarray):
        return int(counts.sum()) * size, int(counts[index]) * size
    return sum(counts) * size, int(counts[index]) * size


class CountedComm:
    """An mpi4py communicator whose buffer calls count their traffic.

    Attributes ``comm`` (the raw communicator, for uncounted bookkeeping only),
    ``rank``, ``size``, ``counter`` (shared by every communicator split off
    this one, so one rank has one set of totals) and ``waits`` (the rank's
    `WaitPolicy`, shared by the splits too).
    """

    def __init__(self, comm: MPI.Comm, counter: TrafficCounter | None = None,
                 waits: WaitPolicy = BLOCKING) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.counter = counter if counter is not None else TrafficCounter(MPI.COMM_WORLD.Get_size())
        self.waits = waits
        self._count = self.size > 1

    # --- structure -------------------------------------------------------
    def phase(self, name: str):
        """Context manager: attribute traffic inside to phase `name`."""
        return self.counter.phase(name)

    def Split(self, color: int, key: int = 0) -> CountedComm:
        return CountedComm(self.comm.Split(color, key), self.counter, self.waits)

    def Barrier(self) -> None:
        self.waits.barrier(self.comm)

    def Wait(self, request: MPI.Request) -> None:
        """Complete a request of this communicator's (by the wait policy)."""
        self.waits.wait(request)

    def Waitall(self, requests: list[MPI.Request]) -> None:
        """Complete requests of this communicator's (by the wait policy)."""
        self.waits.waitall(requests)

    def Free(self) -> None:
        if self.comm not in (MPI.COMM_WORLD, MPI.COMM_SELF):
            self.comm.Free()

    def _add(self, op: str, sent: int, recv: int, msgs: int) -> None:
        if self._count:
            self.counter.add(op, sent, recv, msgs)

    # --- point to point -----------------------------------------------
    def Send(self, buf: Any, dest: int, tag: int = 0, op: str = "Send") -> None:
        self.comm.Send(buf, dest, tag)
        if dest != MPI.PROC_NULL:
            self._add(op, nbytes(buf), 0, 1)

    def Recv(self, buf: Any, source: int = MPI.ANY_SOURCE, tag: int = MPI.ANY_TAG,
             status: MPI.Status | None = None, op: str = "Recv") -> None:
        status = status if status is not None else MPI.Status()
        if self.waits.polite:
            self.waits.wait(self.comm.Irecv(buf, source, tag), status)
        else:
            self.comm.Recv(buf, source, tag, status)
        if source != MPI.PROC_NULL:
            self._add(op, 0, status.Get_count(MPI.BYTE), 0)

    def Isend(self, buf: Any, dest: int, tag: int = 0, op: str = "Isend") -> MPI.Request:
        request = self.comm.Isend(buf, dest, tag)
        if dest != MPI.PROC_NULL:
            self._add(op, nbytes(buf), 0, 1)
        return request

    def Irecv(self, buf: Any, source: int = MPI.ANY_SOURCE, tag: int = MPI.ANY_TAG,
              op: str = "Irecv") -> MPI.Request:
        request = self.comm.Irecv(buf, source, tag)
        if source != MPI.PROC_NULL:
            self._add(op, 0, nbytes(buf), 0)
        return request

    def Sendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None,
                 source: int = MPI.ANY_SOURCE, recvtag: int = MPI.ANY_TAG) -> None:
        status = MPI.Status()
        if self.waits.polite:
            requests = [self.comm.Irecv(recvbuf, source, recvtag),
                        self.comm.Isend(sendbuf, dest, sendtag)]
            statuses = [status, MPI.Status()]
            self.waits.waitall(requests, statuses)
        else:
            self.comm.Sendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag, status)
        sent = nbytes(sendbuf) if dest != MPI.PROC_NULL else 0
        recv = status.Get_count(MPI.BYTE) if source != MPI.PROC_NULL else 0
        self._add("Sendrecv", sent, recv, 1 if dest != MPI.PROC_NULL else 0)

    # --- collectives ---------------------------------------------------
    def Bcast(self, buf: Any, root: int = 0) -> None:
        self.comm.Bcast(buf, root)
        self._bcast_counts("Bcast", buf, root)

    def Ibcast(self, buf: Any, root: int = 0) -> MPI.Request:
        """Nonblocking Bcast, counted as a Bcast when it starts."""
        request = self.comm.Ibcast(buf, root)
        self._bcast_counts("Ibcast", buf, root)
        return request

    def _bcast_counts(self, op: str, buf: Any, root: int) -> None:
        n = nbytes(buf)
        if self.rank == root:
            self._add(op, n, 0, 1 if n else 0)
        else:
            self._add(op, 0, n, 0)

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM, root: int = 0) -> None:
        self.comm.Reduce(sendbuf, recvbuf, op, root)
        if self.rank == root:
            self._add("Reduce", 0, nbytes(recvbuf), 0)
        else:
            n = nbytes(sendbuf)
            self._add("Reduce", n, 0, 1 if n else 0)

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM) -> None:
        self.comm.Allreduce(sendbuf, recvbuf, op)
        n = nbytes(recvbuf)
        self._add("Allreduce", n, n, 1 if n else 0)

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self.comm.Gather(sendbuf, recvbuf, root)
        self._gather_counts("Gather", sendbuf, recvbuf, root)

    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self.comm.Gatherv(sendbuf, recvbuf, root)
        self._gather_counts("Gatherv", sendbuf, recvbuf, root)

    def _gather_counts(self, op: str, sendbuf: Any, recvbuf: Any, root: int) -> None:
        if self.rank == root:
            total, own = vblocks_bytes(recvbuf, self.size, root)
            self._add(op, 0, total - own, 0)
        else:
            n = nbytes(sendbuf)
            self._add(op, n, 0, 1 if n else 0)

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self.comm.Scatter(sendbuf, recvbuf, root)
        self._scatter_counts("Scatter", sendbuf, recvbuf, root)

    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self.comm.Scatterv(sendbuf, recvbuf, root)
        self._scatter_counts("Scatterv", sendbuf, recvbuf, root)

    def _scatter_counts(self, op: str, sendbuf: Any, recvbuf: Any, root: int) -> None:
        if self.rank == root:
            total, own = vblocks_bytes(sendbuf, self.size, root)
            self._add(op, total - own, 0, 1 if total > own else 0)
        else:
            self._add(op, 0, nbytes(recvbuf), 0)

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        self.comm.Allgather(sendbuf, recvbuf)
        self._allgather_counts("Allgather", recvbuf)

    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        self.comm.Allgatherv(sendbuf, recvbuf)
        self._allgather_counts("Allgatherv", recvbuf)

    def _allgather_counts(self, op: str, recvbuf: Any) -> None:
        total, own = vblocks_bytes(recvbuf, self.size, self.rank)
        self._add(op, own, total - own, 1 if own else 0)

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        self.comm.Alltoall(sendbuf, recvbuf)
        self._alltoall_counts("Alltoall", sendbuf, recvbuf)

    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        self.comm.Alltoallv(sendbuf, recvbuf)
        self._alltoall_counts("Alltoallv", sendbuf, recvbuf)

    def _alltoall_counts(self, op: str, sendbuf: Any, recvbuf: Any) -> None:
        out_total, out_own = vblocks_bytes(sendbuf, self.size, self.rank)
        in_total, in_own = vblocks_bytes(recvbuf, self.size, self.rank)
        sent = out_total - out_own
        self._add(op, sent, in_total - in_own, 1 if sent else 0)

    def Reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Any,
                       op: MPI.Op = MPI.SUM) -> None:
        self.comm.Reduce_scatter(sendbuf, recvbuf, recvcounts, op)
        total, own = vblocks_bytes([_spec_parts(sendbuf)[0], recvcounts], self.size, self.rank)
        self._add("Reduce_scatter", total - own, own, 1 if total > own else 0)

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: MPI.Op = MPI.SUM) -> None:
        self.comm.Reduce_scatter_block(sendbuf, recvbuf, op)
        own = nbytes(recvbuf)
        sent = own * (self.size - 1)
        self._add("Reduce_scatter_block", sent, own, 1 if sent else 0)

    # --- one-sided -------------------------------------------------------
    def Win_create(self, memory: np.ndarray, disp_unit: int | None = None) -> CountedWin:
        """Collective: expose `memory` for one-sided access (disp_unit = itemsize)."""
        unit = memory.itemsize if disp_unit is None else disp_unit
        return CountedWin(MPI.Win.Create(memory, unit, comm=self.comm), self)


class CountedWin:
    """An MPI window whose Put/Get/Accumulate/Fetch_and_op count their traffic."""

    def __init__(self, win: MPI.Win, owner: CountedComm) -> None:
        self.win = win
        self._owner = owner
        group = win.Get_group()
        self._to_world = np.asarray(
            MPI.Group.Translate_ranks(group, list(range(owner.size)), MPI.COMM_WORLD.Get_group()),
            dtype=np.int64,
        )
        group.Free()

    def _origin_sends(self, op: str, nbytes_: int, target_rank: int) -> None:
        if not self._owner._count:
            return
        self._owner.counter.add(op, nbytes_, 0, 1)
        peer = self._owner.counter.rma_to_peer[self._to_world[target_rank]]
        peer[0] += nbytes_
        peer[1] += 1

    def _origin_reads(self, op: str, nbytes_: int, target_rank: int) -> None:
        if not self._owner._count:
            return
        self._owner.counter.add(op, 0, nbytes_, 0)
        peer = self._owner.counter.rma_to_peer[self._to_world[target_rank]]
        peer[2] += nbytes_
        peer[3] += 1

    def Put(self, origin: Any, target_rank: int, target: Any = None) -> None:
        self.win.Put(origin, target_rank, target)
        self._origin_sends("Put", nbytes(origin), target_rank)

    def Accumulate(self, origin: Any, target_rank: int, target: Any = None,
                   op: MPI.Op = MPI.SUM) -> None:
        self.win.Accumulate(origin, target_rank, target, op)
        self._origin_sends("Accumulate", nbytes(origin), target_rank)

    def Get(self, origin: Any, target_rank: int, target: Any = None) -> None:
        self.win.Get(origin, target_rank, target)
        self._origin_reads("Get", nbytes(origin), target_rank)

    def Fetch_and_op(self, origin: Any, result: Any, target_rank: int, target_disp: int = 0,
                     op: MPI.Op = MPI.SUM) -> None:
        self.win.Fetch_and_op(origin, result, target_rank, target_disp, op)
        self._origin_sends("Fetch_and_op", nbytes(origin), target_rank)
        self._origin_reads("Fetch_and_op", nbytes(result), target_rank)

    def __getattr__(self, name: str) -> Any:
        # Synchronisation (Lock, Lock_all, Flush, Fence, Sync, Free...) moves no payload.
        return getattr(self.win, name)
