"""The package's collectives as its own point-to-point schedules.

Each function runs the schedule of `linalg_io.layout.schedules` with the counting
communicator's Send/Recv, so the traffic counted is the traffic on the wire and
the models predict both exactly (MPI's own collectives forward data through trees
and rings whose shape depends on the library and the message size). Messages are
labelled in `by_op` by the collective ("bcast", "reduce", ...).

Buffers are contiguous NumPy arrays (C or Fortran order; their memory is used as
one flat vector of items). Every rank of the communicator calls the function with
the same root, sizes and counts, in the same order as its other collectives there;
an empty buffer moves nothing (no message).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.layout.schedules import (
    binomial_child_positions,
    binomial_parent,
    bruck_rounds,
    chunk_bounds,
    uses_chain,
)

TAG_BCAST, TAG_REDUCE, TAG_ALLGATHER, TAG_GATHER, TAG_SCATTER = 81, 82, 83, 84, 85


def displacements(counts: np.ndarray) -> np.ndarray:
    """Where each rank's block starts in a buffer of the blocks in rank order."""
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def flat(buf: np.ndarray) -> np.ndarray:
    """The array's memory as a 1-D view (it must be contiguous in C or Fortran order)."""
    view = buf.reshape(-1, order="A")
    if not np.shares_memory(view, buf) and buf.size:
        raise ValueError("collective buffers must be contiguous")
    return view


def bcast(comm: CountedComm, buf: np.ndarray, root: int) -> None:
    """buf from `root` to every rank (binomial tree, or pipelined chain when large)."""
    comm.Waitall(bcast_start(comm, buf, root))


def bcast_start(comm: CountedComm, buf: np.ndarray, root: int) -> list[MPI.Request]:
    """Start a bcast. The root returns at once with its sends in flight (complete them
    with Wait; test them so that they progress); the others return when they have
    received buf, their forwarding sends still in flight."""
    if comm.size == 1 or flat(buf).size == 0:
        return []
    return PostedBcast(comm, buf, root).finish()


class PostedBcast:
    """One rank's part of a bcast (binomial tree, or pipelined chain of CHUNK_BYTES
    pieces when large), its receives posted when it is made (none on the root): a rank
    that posts them before it needs the data (`bcast_post`) lets MPI match the root's
    sends and move them whenever either side tests (`requests`) while it computes;
    across nodes over TCP a message moves only inside MPI calls, and a receive posted
    late leaves it waiting for the root's next one. `finish` waits for the pieces in
    order, forwarding each (the chain's next rank, the tree's children), and returns
    those sends, in flight."""

    def __init__(self, comm: CountedComm, buf: np.ndarray, root: int) -> None:
        p = comm.size
        data = flat(buf)
        self.comm, self.q, self.p, self.root = comm, (comm.rank - root) % p, p, root
        self.chain = uses_chain(data.nbytes)
        self.pieces = ([data[start:stop] for start, stop in chunk_bounds(data.size, data.itemsize)]
                       if self.chain else [data])
        self.requests = []
        if self.q:
            source = (comm.rank - 1) % p if self.chain else (binomial_parent(self.q, p) + root) % p
            self.requests = [comm.Irecv(piece, source, TAG_BCAST, op="bcast")
                             for piece in self.pieces]

    def finish(self) -> list[MPI.Request]:
        sends = []
        for index, piece in enumerate(self.pieces):
            if self.requests:
                self.comm.Wait(self.requests[index])
            sends += self._forward(piece)
        return sends

    def _forward(self, piece: np.ndarray) -> list[MPI.Request]:
        comm, q, p = self.comm, self.q, self.p
        if self.chain:
            return [comm.Isend(piece, (comm.rank + 1) % p, TAG_BCAST, op="bcast")] \
                if q < p - 1 else []
        return [comm.Isend(piece, (child + self.root) % p, TAG_BCAST, op="bcast")
                for child in binomial_child_positions(q, p)]


def bcast_post(comm: CountedComm, buf: np.ndarray, root: int) -> PostedBcast | None:
    """A non-root rank's receives of a bcast of `buf` from `root`, posted now
    (`PostedBcast`); None where it receives nothing (one rank, an empty buffer, the
    root). The messages and bytes are bcast_start's."""
    if comm.size == 1 or flat(buf).size == 0 or comm.rank == root:
        return None
    return PostedBcast(comm, buf, root)


def reduce_sum(comm: CountedComm, buf: np.ndarray, root: int) -> None:
    """Sum buf over the ranks into the root's buf (binomial tree, or pipelined chain
    ending at the root when large). The other ranks' buf is left holding partial sums."""
    p = comm.size
    data = flat(buf)
    if p == 1 or data.size == 0:
        return
    q = (comm.rank - root) % p
    if not uses_chain(data.nbytes):
        incoming = np.empty_like(data)
        for child in reversed(binomial_child_positions(q, p)):
            comm.Recv(incoming, (child + root) % p, TAG_REDUCE, op="reduce")
            data += incoming
        if q:
            comm.Send(data, (binomial_parent(q, p) + root) % p, TAG_REDUCE, op="reduce")
        return
    after, before = (comm.rank + 1) % p, (comm.rank - 1) % p
    bounds = chunk_bounds(data.size, data.itemsize)
    incoming = np.empty(bounds[0][1] - bounds[0][0], dtype=data.dtype)
    requests = []
    for start, stop in bounds:
        piece = data[start:stop]
        if q != 1:
            comm.Recv(incoming[:stop - start], before, TAG_REDUCE, op="reduce")
            piece += incoming[:stop - start]
        if q:
            requests.append(comm.Isend(piece, after, TAG_REDUCE, op="reduce"))
    comm.Waitall(requests)


def allreduce_sum(comm: CountedComm, buf: np.ndarray) -> None:
    """Sum buf over the ranks, in place on every rank: reduce onto rank 0, then bcast."""
    reduce_sum(comm, buf, 0)
    bcast(comm, buf, 0)


def allgatherv(comm: CountedComm, mine: np.ndarray, out: np.ndarray, counts: np.ndarray) -> None:
    """Every rank's block into `out`, rank j's counts[j] items at sum(counts[:j]) (Bruck).

    `mine` holds this rank's counts[rank] items."""
    Allgatherv(comm, counts, flat(out).dtype).run(out, mine)


class Allgatherv:
    """`allgatherv`'s Bruck schedule for fixed counts, worked out once, for a caller that
    repeats the same exchange (the 2D LU's pivot search, once per panel column): the
    same messages in the same order, without recomputing the offsets per call.

    `send` is the start of the work buffer, counts[rank] items: a caller may write its
    block there and call `run` without `mine`, and read the blocks from `blocks` (no
    copies). `work` (at least sum(counts) items) is used instead of a fresh buffer."""

    def __init__(self, comm: CountedComm, counts: np.ndarray, dtype=np.float64,
                 work: np.ndarray | None = None) -> None:
        p, r = comm.size, comm.rank
        self.comm = comm
        counts = np.asarray(counts, dtype=np.int64)
        self.displs = displacements(counts)
        order = (r + np.arange(p)) % p                 # work holds blocks r, r+1, ...
        offsets = np.concatenate([[0], np.cumsum(counts[order])])
        self.work = np.empty(int(offsets[-1]), dtype=dtype) if work is None \
            else work[:int(offsets[-1])]
        self.send = self.work[:counts[r]]
        self.rounds = [(self.work[:offsets[m]], (r - h) % p,
                        self.work[offsets[h]:offsets[h + m]], (r + h) % p)
                       for h, m in bruck_rounds(p)]
        self.blocks = [None] * p                        # rank j's block, in work after run
        self.pending: list[MPI.Request] = []            # the first round, once started
        for position, j in enumerate(order):
            self.blocks[j] = self.work[offsets[position]:offsets[position + 1]]

    def run(self, out: np.ndarray | None, mine: np.ndarray | None = None) -> None:
        """Exchange: this rank's block (`mine`, counts[rank] items, or what `send` holds
        when None) in, every block into `out` (or left in `blocks` when None)."""
        self.start(mine)
        self.complete(out)

    def start(self, mine: np.ndarray | None = None) -> None:
        """Post the first round, its send and its receive (`pending`), and return (`mine`
        as `run`'s): a caller that computes before `complete` lets them move meanwhile
        (`linalg_io.comm.progress`)."""
        comm = self.comm
        if mine is not None:
            self.send[:] = flat(mine)
        self.pending = []
        if self.rounds:
            outgoing, dest, incoming, source = self.rounds[0]
            if outgoing.size:
                self.pending.append(comm.Isend(outgoing, dest, TAG_ALLGATHER, op="allgather"))
            if incoming.size:
                self.pending.append(comm.Irecv(incoming, source, TAG_ALLGATHER, op="allgather"))

    def complete(self, out: np.ndarray | None) -> None:
        """Finish what `start` posted, then the other rounds; every block into `out` (or
        left in `blocks` when None). The messages, in order, are those of one `run`."""
        comm = self.comm
        comm.Waitall(self.pending)
        self.pending = []
        for outgoing, dest, incoming, source in self.rounds[1:]:
            request = comm.Isend(outgoing, dest, TAG_ALLGATHER, op="allgather") \
                if outgoing.size else None
            if incoming.size:
                comm.Recv(incoming, source, TAG_ALLGATHER, op="allgather")
            if request is not None:
                comm.Wait(request)
        if out is None:
            return
        result = flat(out)
        for j, block in enumerate(self.blocks):
            result[self.displs[j]:self.displs[j] + block.size] = block


def gatherv(comm: CountedComm, mine: np.ndarray, out: np.ndarray | None, counts: np.ndarray,
            root: int) -> None:
    """Every rank's block onto the root's `out` (rank j's counts[j] items at
    sum(counts[:j])), each sent directly to the root."""
    _linear(comm, flat(mine), out, counts, root, TAG_GATHER, "gather")


def scatterv(comm: CountedComm, blocks: np.ndarray | None, mine: np.ndarray, counts: np.ndarray,
             root: int) -> None:
    """Rank j receives the root's counts[j] items at sum(counts[:j]) of `blocks` in
    `mine`, each sent directly by the root."""
    _linear(comm, flat(mine), blocks, counts, root, TAG_SCATTER, "scatter")


def _linear(comm: CountedComm, mine: np.ndarray, blocks: np.ndarray | None, counts: np.ndarray,
            root: int, tag: int, op: str) -> None:
    """The root exchanges each rank's block of `blocks` (its counts[j] items) with that
    rank's `mine` directly: received (gather) or sent (scatter)."""
    counts = np.asarray(counts, dtype=np.int64)
    gather = op == "gather"
    if comm.rank != root:
        if counts[comm.rank]:
            (comm.Send if gather else comm.Recv)(mine, root, tag, op=op)
        return
    whole = flat(blocks)
    start = displacements(counts)
    post = comm.Irecv if gather else comm.Isend
    requests = [post(whole[start[j]:start[j] + counts[j]], j, tag, op=op)
                for j in range(comm.size) if j != root and counts[j]]
    own = slice(start[root], start[root] + counts[root])
    if gather:
        whole[own] = mine
    else:
        mine[:] = whole[own]
    comm.Waitall(requests)
