"""One-dimensional index maps: which process owns global index g, and where it sits.

Pure integer math, no MPI; every method is vectorized over NumPy arrays. A 2D layout
(`linalg_io.layout.layouts`) is a row map times a column map. In every map here a
process's local indices increase with the global index (local order = global order),
which the redistribution relies on: the entries two processes exchange are sent and
unpacked in global order, so neither side needs the other's index lists.

``BlockCyclicAxis``  blocks of nb, block b on process (b + src) mod nprocs (ScaLAPACK);
``BlockAxis``        contiguous blocks of given lengths (1D row blocks);
``ExplicitAxis``     any owner per index, from an array (the 2.5D LU's factors, whose
                     L rows stay with the rank that held the original row).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from linalg_io.errors import InputError
from linalg_io.layout import blockcyclic


@dataclass(frozen=True)
class BlockCyclicAxis:
    """n indices in blocks of nb over nprocs processes, the first block on `src`."""

    n: int
    nb: int
    nprocs: int
    src: int = 0

    def __post_init__(self) -> None:
        if self.n < 0 or self.nb < 1 or self.nprocs < 1 or not 0 <= self.src < self.nprocs:
            raise InputError(f"block-cyclic axis: need n >= 0, nb >= 1 and 0 <= src < nprocs, "
                             f"got n={self.n} nb={self.nb} nprocs={self.nprocs} src={self.src}")

    def owner(self, g) -> np.ndarray:
        return np.asarray(blockcyclic.owner(np.asarray(g, dtype=np.int64), self.nb, self.nprocs,
                                            self.src))

    def local(self, g) -> np.ndarray:
        return np.asarray(blockcyclic.global_to_local(np.asarray(g, dtype=np.int64), self.nb,
                                                      self.nprocs))

    def global_index(self, proc: int, loc) -> np.ndarray:
        return np.asarray(blockcyclic.local_to_global(np.asarray(loc, dtype=np.int64), self.nb,
                                                      proc, self.nprocs, self.src))

    def count(self, proc: int) -> int:
        return blockcyclic.numroc(self.n, self.nb, proc, self.nprocs, self.src)


@dataclass(frozen=True)
class BlockAxis:
    """Contiguous blocks: process p owns [offsets[p], offsets[p + 1])."""

    offsets: tuple[int, ...]

    @classmethod
    def balanced(cls, n: int, nprocs: int) -> BlockAxis:
        """n indices in nprocs blocks whose lengths differ by at most one (longer first)."""
        if n < 0 or nprocs < 1:
            raise InputError(f"row blocks: need n >= 0 and nprocs >= 1, got {n}, {nprocs}")
        lengths = [n // nprocs + (p < n % nprocs) for p in range(nprocs)]
        return cls.from_lengths(lengths)

    @classmethod
    def from_lengths(cls, lengths) -> BlockAxis:
        lengths = [int(x) for x in lengths]
        if not lengths or min(lengths) < 0:
            raise InputError(f"row blocks: lengths must be >= 0, got {lengths}")
        return cls(tuple(int(x) for x in np.concatenate(([0], np.cumsum(lengths)))))

    @property
    def n(self) -> int:
        return self.offsets[-1]

    @property
    def nprocs(self) -> int:
        return len(self.offsets) - 1

    def owner(self, g) -> np.ndarray:
        return np.searchsorted(np.asarray(self.offsets), np.asarray(g, dtype=np.int64),
                               side="right") - 1

    def local(self, g) -> np.ndarray:
        g = np.asarray(g, dtype=np.int64)
        return g - np.asarray(self.offsets)[self.owner(g)]

    def global_index(self, proc: int, loc) -> np.ndarray:
        return np.asarray(loc, dtype=np.int64) + self.offsets[proc]

    def count(self, proc: int) -> int:
        return self.offsets[proc + 1] - self.offsets[proc]


@dataclass(frozen=True, eq=False)
class ExplicitAxis:
    """Index g on process owners[g]; a process's indices in increasing order."""

    owners: np.ndarray
    nprocs: int

    @property
    def n(self) -> int:
        return len(self.owners)

    @cached_property
    def _local(self) -> np.ndarray:
        local = np.empty(self.n, dtype=np.int64)
        for proc in range(self.nprocs):
            owned = np.flatnonzero(self.owners == proc)
            local[owned] = np.arange(len(owned))
        return local

    @cached_property
    def _counts(self) -> np.ndarray:
        return np.bincount(self.owners, minlength=self.nprocs)

    def owner(self, g) -> np.ndarray:
        return self.owners[np.asarray(g, dtype=np.int64)]

    def local(self, g) -> np.ndarray:
        return self._local[np.asarray(g, dtype=np.int64)]

    def global_index(self, proc: int, loc) -> np.ndarray:
        return np.flatnonzero(self.owners == proc)[np.asarray(loc, dtype=np.int64)]

    def count(self, proc: int) -> int:
        return int(self._counts[proc])


def indices(axis, proc: int) -> np.ndarray:
    """The global indices `proc` owns on `axis`, in local order (int64)."""
    return axis.global_index(proc, np.arange(axis.count(proc), dtype=np.int64)).astype(np.int64)
