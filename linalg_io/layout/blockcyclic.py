"""Block-cyclic index maps (ScaLAPACK's 1D rule, applied to rows and columns separately).

Pure integer math, no MPI: the algorithms, the solvers and the models share it.
Indices 0..n-1 are cut into blocks of nb (the last one may be shorter); block b lives
on process ``(b + src) mod nprocs`` and is that process's local block ``b // nprocs``.
Local indices are contiguous per process and increase with the global index, so
"the owned indices >= g" are a suffix of the local range: ``numroc(g, ...)`` is
where it starts.
"""

from __future__ import annotations

import numpy as np


def numroc(n, nb: int, iproc, nprocs: int, src: int = 0):
    """How many of the indices 0..n-1 process `iproc` owns (ScaLAPACK NUMROC); n and
    iproc may be arrays (broadcast), an int for numbers."""
    mydist = (nprocs + np.asarray(iproc) - src) % nprocs
    n = np.asarray(n)
    nblocks = n // nb
    extra = nblocks % nprocs
    count = (nblocks // nprocs) * nb + np.where(mydist < extra, nb,
                                                np.where(mydist == extra, n % nb, 0))
    return count if np.ndim(count) else int(count)


def owner(g: int | np.ndarray, nb: int, nprocs: int, src: int = 0):
    """Process owning global index g."""
    return (g // nb + src) % nprocs


def global_to_local(g: int | np.ndarray, nb: int, nprocs: int):
    """Local index of global index g on its owner."""
    return (g // nb) // nprocs * nb + g % nb


def local_to_global(loc: int | np.ndarray, nb: int, iproc: int, nprocs: int, src: int = 0):
    """Global index of local index `loc` on process `iproc`."""
    mydist = (nprocs + iproc - src) % nprocs
    return ((loc // nb) * nprocs + mydist) * nb + loc % nb


def owned_indices(n: int, nb: int, iproc: int, nprocs: int, src: int = 0) -> np.ndarray:
    """The global indices process `iproc` owns, in local order (an int64 array)."""
    local = np.arange(numroc(n, nb, iproc, nprocs, src), dtype=np.int64)
    return local_to_global(local, nb, iproc, nprocs, src)


def counts_from(g0, n: int, nb: int, nprocs: int) -> np.ndarray:
    """Per process: how many owned indices lie in g0..n-1 (all processes, src 0); for an
    array of g0, one row per g0."""
    procs = np.arange(nprocs)
    start = np.asarray(g0)[..., None]
    return (numroc(n, nb, procs, nprocs) - numroc(start, nb, procs, nprocs)).astype(np.int64)


def default_nb(n: int, pr: int, pc: int) -> int:
    """NB for `lu --algo 2d --nb auto`: 128 when every rank keeps at least 2048 columns
    and rows of its own (dgemm efficiency), else 64; never above N."""
    local = n // max(pr, pc)
    return max(1, min(n, 128 if local >= 2048 else 64))


def row_moves(ipiv: np.ndarray, j0: int) -> dict[int, int]:
    """The interchanges ipiv (rows j0 + i <-> ipiv[i], in order) as {position: original row}
    for every position whose row changed."""
    content: dict[int, int] = {}
    for i, p in enumerate(ipiv):
        g, p = j0 + i, int(p)
        if p != g:
            content[g], content[p] = content.get(p, p), content.get(g, g)
    return {q: r for q, r in content.items() if q != r}


def pivot_rows_by_owner(ipiv: np.ndarray, j0: int, nb: int, nprocs: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Per process (row): how many of the block's kb = len(ipiv) pivot rows it owns before
    the interchanges, and how many positions below the block it owns that receive a
    displaced top row."""
    moves = row_moves(ipiv, j0)
    sources = np.array([moves.get(j0 + i, j0 + i) for i in range(len(ipiv))], dtype=np.int64)
    displaced = np.array([q for q in moves if q >= j0 + len(ipiv)], dtype=np.int64)
    return (np.bincount(owner(sources, nb, nprocs), minlength=nprocs),
            np.bincount(owner(displaced, nb, nprocs), minlength=nprocs))
