"""Execute a redistribution plan (`linalg_io.layout.redist_plan`) with MPI collectives.

`redistribute(comm, plan, local)` returns this rank's local array in `plan.dst`:
the entries that stay on the rank are copied locally; the others travel in the plan's
rounds, one Alltoallv per round (one in all without a memory budget), each entry
exactly once. Per rank (the model, `RedistPlan.costs`): sent = the entries it holds
whose owner changes, received = the entries it needs from others; 8 bytes each for
float64; messages = rounds in which it sends.

Extra memory per rank, besides `local` and the output: the round's send and receive
buffers (at most `budget[rank]` entries with a budget, else the rank's whole sent plus
received volume), plus index lists of O(rows + columns) and a few KiB of bookkeeping,
which the budget reserves room for: with a memory fraction f, all of it stays within
f x the rank's local size on every rank that moves data (a rank that moves nothing
still takes part in each round's Alltoallv, with empty buffers). Packing reads each column
run of a piece with `np.take` straight into the buffer, and unpacking writes from
it, so no temporary copy of a piece is made; local copies go in chunks of at most the
budget (2^20 entries without one) through one buffer.
"""

from __future__ import annotations

import numpy as np

from linalg_io.comm.counting import CountedComm
from linalg_io.errors import InputError
from linalg_io.layout.redist_plan import Piece, RedistPlan, split_rectangle

LOCAL_CHUNK = 1 << 20


def _runs(local_cols: np.ndarray):
    """(a, b, first) for each run of consecutive local columns local_cols[a:b]."""
    breaks = np.flatnonzero(np.diff(local_cols) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(local_cols)]))
    for a, b in zip(starts.tolist(), ends.tolist()):
        yield a, b, int(local_cols[a])


def _pack(local: np.ndarray, rows: np.ndarray, cols: np.ndarray, buffer: np.ndarray) -> None:
    """buffer (1D) <- local[rows][:, cols] in Fortran order."""
    nr = len(rows)
    for a, b, first in _runs(cols):
        np.take(local[:, first:first + b - a].T, rows, axis=1,
                out=buffer[a * nr:b * nr].reshape(b - a, nr), mode="clip")


def _unpack(out: np.ndarray, rows: np.ndarray, cols: np.ndarray, buffer: np.ndarray) -> None:
    """out[rows][:, cols] <- buffer (1D, Fortran order)."""
    nr = len(rows)
    for a, b, first in _runs(cols):
        out[rows, first:first + b - a] = buffer[a * nr:b * nr].reshape(b - a, nr).T


def _segments(plan: RedistPlan, pieces: list[Piece], buffer: np.ndarray):
    """(global rows, global columns, its stretch of `buffer`) of each piece, in turn."""
    offset = 0
    for piece in pieces:
        rows, cols = plan.indices(piece.src, piece.dst, piece.region)
        yield (rows[piece.i0:piece.i1], cols[piece.j0:piece.j1],
               buffer[offset:offset + piece.size])
        offset += piece.size


def _displacements(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


def redistribute(comm: CountedComm, plan: RedistPlan, local: np.ndarray,
                 out: np.ndarray | None = None) -> np.ndarray:
    """This rank's part of `plan.dst`, from its part `local` of `plan.src`.

    `out` (any 2D array of the destination local shape, e.g. a view) receives the
    entries of the plan's regions; by default a new Fortran-ordered array. The plan's
    budget (`RedistPlan.budget`, from its memory fraction) bounds the round buffers;
    without one, one Alltoallv. Collective over `comm` (whose ranks are the layouts').
    """
    me = comm.rank
    if comm.size != plan.src.nprocs:
        raise InputError(f"the plan is for {plan.src.nprocs} ranks, the communicator has "
                         f"{comm.size}")
    if local.shape != plan.src.local_shape(me):
        raise InputError(f"rank {me}: local array {local.shape}, the source layout needs "
                         f"{plan.src.local_shape(me)}")
    if out is None:
        out = np.empty(plan.dst.local_shape(me), dtype=local.dtype, order="F")
    budget = plan.budget
    _copy_own(plan, me, local, out, LOCAL_CHUNK if budget is None else int(budget[me]))
    for pieces in plan.schedule(me):
        _exchange(comm, plan, pieces, local, out)
    return out


def _copy_own(plan: RedistPlan, me: int, local: np.ndarray, out: np.ndarray, cap: int) -> None:
    """The entries that stay on this rank, through one buffer of at most `cap` entries."""
    pairs = [plan.indices(me, me, region) for region in range(len(plan.regions))]
    largest = max((len(rows) * len(cols) for rows, cols in pairs), default=0)
    buffer = np.empty(min(cap, largest), dtype=local.dtype)
    for rows, cols in pairs:
        src_r, dst_r = plan.src.rows.local(rows), plan.dst.rows.local(rows)
        src_c, dst_c = plan.src.cols.local(cols), plan.dst.cols.local(cols)
        for i0, i1, j0, j1 in split_rectangle(len(rows), len(cols), cap):
            chunk = buffer[:(i1 - i0) * (j1 - j0)]
            _pack(local, src_r[i0:i1], src_c[j0:j1], chunk)
            _unpack(out, dst_r[i0:i1], dst_c[j0:j1], chunk)


def _exchange(comm: CountedComm, plan: RedistPlan, pieces: list[Piece], local: np.ndarray,
              out: np.ndarray) -> None:
    """One round: pack what this rank sends, one Alltoallv, unpack what it receives."""
    me, p = comm.rank, comm.size
    sends = sorted((pc for pc in pieces if pc.src == me), key=lambda pc: pc.dst)
    recvs = sorted((pc for pc in pieces if pc.dst == me), key=lambda pc: pc.src)
    send_counts = np.bincount([pc.dst for pc in sends], [pc.size for pc in sends], p)
    recv_counts = np.bincount([pc.src for pc in recvs], [pc.size for pc in recvs], p)
    send_counts, recv_counts = send_counts.astype(np.int64), recv_counts.astype(np.int64)
    send_buffer = np.empty(int(send_counts.sum()), dtype=local.dtype)
    for rows, cols, segment in _segments(plan, sends, send_buffer):
        _pack(local, plan.src.rows.local(rows), plan.src.cols.local(cols), segment)
    recv_buffer = np.empty(int(recv_counts.sum()), dtype=out.dtype)
    comm.Alltoallv([send_buffer, (send_counts, _displacements(send_counts))],
                   [recv_buffer, (recv_counts, _displacements(recv_counts))])
    del send_buffer
    for rows, cols, segment in _segments(plan, recvs, recv_buffer):
        _unpack(out, plan.dst.rows.local(rows), plan.dst.cols.local(cols), segment)
