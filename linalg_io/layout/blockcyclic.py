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


def numroc(n: int, nb: int, iproc: int, nprocs: int, src: int = 0) -> int:
    """How many of the indices 0..n-1 process `iproc` owns (ScaLAPACK NUMROC)."""
    mydist = (nprocs + iproc - src) % nprocs
    nblocks = n // nb
    count = (nblocks // nprocs) * nb
    extra = nblocks % nprocs
    if mydist < extra:
        count += nb
    elif mydist == extra:
        count += n % nb
    return count


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


def counts_from(g0: int, n: int, nb: int, nprocs: int) -> np.ndarray:
    """Per process: how many owned indices lie in g0..n-1 (all processes, src 0)."""
    return np.array([numroc(n, nb, p, nprocs) - numroc(g0, nb, p, nprocs)
                     for p in range(nprocs)], dtype=np.int64)


def default_nb(n: int, pr: int, pc: int) -> int:
    """NB for `lu --algo 2d --nb auto`: 128 when every rank keeps at least 2048 columns
    and rows of its own (dgemm efficiency), else 64; never above N."""
    local = n // max(pr, pc)
    return max(1, min(n, 128 if local >= 2048 else 64))
