"""CuPy local kernels of the 2.5D LU (`--backend gpu`, one GPU per rank).

The rank's local block stays on its GPU for the whole factorization; the trailing
update is a cuBLAS dgemm there, the row moves are device copies. What MPI ships
(the active panel rows, the pivot rows) is copied out into host buffers (the
LU's `Workspace`, reused from run to run) that go straight to MPI (host staging: no
CUDA-aware MPI needed); the L and U slices a rank receives are uploaded before its dgemm.
The panel-sized getrf (tournament) and the two triangular solves run on the GPU through
cuSOLVER / cuBLAS (`cupyx.scipy.linalg`), on blocks uploaded for the call.

The traffic is the CPU backend's, byte for byte: the same plan, the same buffers.
Without CuPy or a GPU, `require_cupy` raises EnvironmentProblem (exit 3).
"""

from __future__ import annotations

import numpy as np

from linalg_io.kernels.gpu import require_cupy


class DeviceMatrix:
    """A rank's local block in GPU memory (Fortran order); same interface as HostMatrix."""

    def __init__(self, shape: tuple[int, int]) -> None:
        self.cp = require_cupy()
        self.a = self.cp.zeros(shape, dtype=np.float64, order="F")

    def load(self, original: np.ndarray | None) -> None:
        if original is None:
            self.a.fill(0.0)
        else:
            self.a[...] = self.cp.asarray(np.asfortranarray(original))

    def block(self, r0: int, r1: int | None, c0: int, c1: int | None,
              out: np.ndarray) -> np.ndarray:
        """a[r0:r1, c0:c1] copied into the host array out (Fortran order); returns out."""
        self.cp.asfortranarray(self.a[r0:r1, c0:c1]).get(out=out)
        return out

    rows_in_place = False    # the rows are in device memory: `rows_t` copies them out

    def rows_t(self, r0: int, r1: int, c0: int, out: np.ndarray) -> np.ndarray:
        """a[r0:r1, c0:]^T copied into the host array out (Fortran order); returns out."""
        self.cp.asfortranarray(self.a[r0:r1, c0:].T).get(out=out)
        return out

    def move_rows(self, first: np.ndarray, second: np.ndarray, c0: int) -> None:
        """Swap rows first[i] and second[i], in turn, in columns c0 and right."""
        for i, j in zip(first.tolist(), second.tolist()):
            self.a[[i, j], c0:] = self.a[[j, i], c0:]

    def finish(self) -> None:
        """Wait for the queued kernels and copies (the timer stops after this)."""
        self.cp.cuda.get_current_stream().synchronize()

    def update(self, r0: int, c0: int, l_slice: np.ndarray, u_slice_t: np.ndarray) -> None:
        """a[r0:, c0:c0+t] -= l_slice @ u_slice_t.T, t = len(u_slice_t) (cuBLAS dgemm)."""
        corner = self.a[r0:, c0:c0 + u_slice_t.shape[0]]
        if corner.size == 0 or l_slice.shape[1] == 0:
            return
        corner -= self.cp.asarray(l_slice) @ self.cp.asarray(u_slice_t).T


class DeviceKernels:
    """getrf and the two triangular solves on the GPU, host arrays in and out."""

    def __init__(self) -> None:
        self.cp = require_cupy()
        from cupyx.scipy import linalg

        self.linalg = linalg

    def getrf(self, a: np.ndarray, ipiv: np.ndarray) -> int:
        """LU with partial pivoting of a in place; ipiv 1-based like LAPACK."""
        lu, piv = self.linalg.lu_factor(self.cp.asarray(a), check_finite=False)
        a[...] = self.cp.asnumpy(lu)
        ipiv[:] = self.cp.asnumpy(piv)[:len(ipiv)] + 1
        return 0

    def solve_upper_right(self, lu00: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """rows U00^-1: (U00^-T rows^T)^T."""
        if rows.size == 0:
            return rows
        x_t = self.linalg.solve_triangular(self.cp.asarray(lu00), self.cp.asarray(rows).T,
                                           trans="T", lower=False, check_finite=False)
        return np.asfortranarray(self.cp.asnumpy(x_t.T))

    def solve_unit_lower_transposed(self, lu00: np.ndarray, pivots_t: np.ndarray) -> np.ndarray:
        """A01^T L00^-T = (L00^-1 A01)^T."""
        if pivots_t.size == 0:
            return pivots_t
        u = self.linalg.solve_triangular(self.cp.asarray(lu00), self.cp.asarray(pivots_t).T,
                                         lower=True, unit_diagonal=True, check_finite=False)
        return np.asfortranarray(self.cp.asnumpy(u.T))
