"""Tournament pivoting (CALU, Grigori, Demmel and Xiang) among the ranks of one process column.

Each rank factors its candidate rows of the panel (local getrf with partial
pivoting) and keeps the w rows its pivots chose, with their global row ids. Then,
by a butterfly over the largest power of two q <= Px (ranks q..Px-1 first fold
their candidates onto rank r - q and get the result back at the end), pairs swap
their w x w candidate blocks, stack them (2w x w, lower rank first, so both sides
compute the same), factor and keep the w winners. Every message is one w x (w+1)
block (the rows' original values and their ids), whatever the matrix, so the
traffic is fixed: per rank of the column, 8 w (w+1) bytes per butterfly round
(log2 q rounds), plus one such message for each fold and unfold. The caller
rotates the roles (`shift` = the step number) so the folds fall on every rank in turn.

A rank with fewer than w active rows pads its candidates with zero rows of id -1;
a padded row only wins when the panel is singular (the caller checks the ids).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from linalg_io.comm.counting import CountedComm
from linalg_io.layout.conflux_layout import butterfly_size

Getrf = Callable[[np.ndarray, np.ndarray], int]


def permutation(ipiv: np.ndarray, m: int) -> np.ndarray:
    """Row order P (as indices) from LAPACK's 1-based sequential interchanges."""
    perm = np.arange(m)
    for i, p in enumerate(ipiv):
        j = int(p) - 1
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def select_rows(rows: np.ndarray, ids: np.ndarray, w: int, getrf: Getrf,
                scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Factor `rows` (m x w) with partial pivoting; return (packed, factors). `scratch`:
    an m x w Fortran array to factor the copy in (else a new one).

    packed: w x (w+1), the chosen rows' original values in pivot order and their ids
    in the last column (zero rows with id -1 pad when m < w); factors: the w x w
    top of the factored rows (unit L below the diagonal, U on and above it).
    """
    m = rows.shape[0]
    packed = np.zeros((w, w + 1), order="F")
    packed[:, w] = -1.0
    factors = np.zeros((w, w), order="F")
    if m == 0:
        return packed, factors
    if scratch is None:
        work = np.asfortranarray(rows, dtype=np.float64).copy(order="F")
    else:
        work = scratch
        np.copyto(work, rows)
    ipiv = np.zeros(min(m, w), dtype=np.int32)
    getrf(work, ipiv)
    chosen = permutation(ipiv, m)[:min(m, w)]
    packed[:len(chosen), :w] = rows[chosen]
    packed[:len(chosen), w] = ids[chosen]
    top = min(m, w)
    factors[:top] = work[:top]
    return packed, factors


def _merge(first: np.ndarray, second: np.ndarray, w: int,
           getrf: Getrf) -> tuple[np.ndarray, np.ndarray]:
    stacked = np.vstack([first, second])
    return select_rows(stacked[:, :w], stacked[:, w], w, getrf)


def tournament(col_comm: CountedComm, panel: np.ndarray, ids: np.ndarray, w: int,
               getrf: Getrf, shift: int = 0,
               scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Collective over `col_comm`: the w pivot rows of the stacked panels of all ranks.

    panel: this rank's active rows of the panel (m x w, fully summed), ids their
    global rows (`scratch`: an m x w Fortran array for the local getrf). The roles of the
    butterfly go to the ranks relabelled (rank - shift) mod size, so that rotating `shift`
    from step to step spreads the fold/unfold messages of a non-power-of-two column. Returns
    (pivot_ids, factors):
    the winners' global rows in pivot order (-1 where the panel ran out of rows) and
    the w x w LU of the winners (unit L00 below the diagonal, U00 on and above),
    identical on every rank.
    """
    size = col_comm.size
    rank = (col_comm.rank - shift) % size

    def real(virtual: int) -> int:
        return (virtual + shift) % size

    packed, factors = select_rows(panel, ids, w, getrf, scratch)
    q = butterfly_size(size)
    incoming = np.empty((w, w + 1), order="F")
    if rank >= q:
        col_comm.Send(packed, real(rank - q), tag=71)
    else:
        if rank + q < size:
            col_comm.Recv(incoming, real(rank + q), tag=71)
            packed, factors = _merge(packed, incoming, w, getrf)
        bit = 1
        while bit < q:
            partner = rank ^ bit
            col_comm.Sendrecv(packed, real(partner), 72, incoming, real(partner), 72)
            low, high = (packed, incoming) if rank < partner else (incoming, packed)
            packed, factors = _merge(low, high, w, getrf)
            bit *= 2
    result = np.empty((w, w + 1), order="F")
    result[:, :w] = factors
    result[:, w] = packed[:, w]
    if rank >= q:
        col_comm.Recv(result, real(rank - q), tag=73)
    elif rank + q < size:
        col_comm.Send(result, real(rank + q), tag=73)
    return result[:, w].astype(np.int64), np.asfortranarray(result[:, :w])
