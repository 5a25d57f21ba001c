"""The local part of a rank's solve on the CPU: the vector [local rows | ghosts] and its kernel.

The executors (level-set, synchronization-free) talk to a local solver through six
calls, so the GPU solver (`linalg_io.kernels.sptrsv_gpu.GpuLocalSolve`) plugs in the same way:
``host_rows(system)`` (rows of the host buffer it needs: here the whole extended
vector, the ghosts starting at row ``ghost_row(n_local)``), ``load_rhs(b)``,
``solve(start, end)`` (local rows in solve order), ``pack(idx, out)``
(solved values into a host send buffer), ``ghosts_arrived(lo, hi)`` (host ghost rows
lo..hi-1 now hold received values), ``finish()`` (wait until queued work is done: the
run's timer stops after it) and ``solution()``; ``ghosts`` is the part of the
host buffer that messages and one-sided Puts land in. The executor allocates the host
buffer (window memory for the one-sided executor), so it never moves.
"""

from __future__ import annotations

import numpy as np

from linalg_io._kernels.sptrsv import solve_rows
from linalg_io.sptrsv.analysis import LocalSystem


class CpuLocalSolve:
    """Forward substitution of local rows with the Cython kernel (GIL released)."""

    def __init__(self, system: LocalSystem, host: np.ndarray) -> None:
        self.system = system
        self.x = host
        self.ghosts = self.x[system.n_local:]

    @staticmethod
    def host_rows(system: LocalSystem) -> int:
        return system.n_ext

    @staticmethod
    def ghost_row(n_local: int) -> int:
        """First ghost row of the host buffer of a rank with `n_local` rows."""
        return n_local

    def load_rhs(self, b_local: np.ndarray) -> None:
        self.x[:self.system.n_local] = b_local

    def solve(self, start: int, end: int) -> None:
        s = self.system
        solve_rows(s.indptr, s.cols, s.vals, s.inv_diag, self.x, start, end)

    def pack(self, local_idx: np.ndarray, out: np.ndarray) -> None:
        np.take(self.x, local_idx, axis=0, out=out)

    def ghosts_arrived(self, lo: int, hi: int) -> None:
        """Nothing to do: ghosts live in the vector the kernel reads."""

    def finish(self) -> None:
        """Nothing to do: the CPU kernel has returned."""

    def solution(self) -> np.ndarray:
        return self.x[:self.system.n_local]

    def extended(self) -> np.ndarray:
        return self.x
