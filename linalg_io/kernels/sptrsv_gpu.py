"""GPU local solve of the SpTRSV: a sync-free CuPy kernel, host-staged MPI around it.

`GpuLocalSolve` is the GPU twin of `linalg_io.sptrsv.local.CpuLocalSolve` (same calls,
one rank per GPU). The extended vector [local rows | ghosts] lives on the device; the
host buffer holds only the ghosts, where messages and one-sided Puts land, and each
batch is copied up when it has arrived (`ghosts_arrived`); values to send are gathered
on the device and copied down (`pack`). A segment of rows start..end-1 is solved as

    left = b[start:end] - L_outside @ x_ext      (cuSPARSE SpMV/SpMM: values already known)
    sync-free kernel on the block L[start:end, start:end]   (kernels/cuda/sptrsv_syncfree.cu)

`DeviceTriangular` holds a whole lower-triangular matrix on one GPU, prepared once, and
solves with it; `solve_triangular_gpu` prepares and solves in one call.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from linalg_io.kernels.gpu import require_cupy

KERNEL_SOURCE = Path(__file__).with_name("cuda") / "sptrsv_syncfree.cu"
WARPS_PER_BLOCK = 4


@cache
def _kernel():
    cupy = require_cupy()
    module = cupy.RawModule(code=KERNEL_SOURCE.read_text(), options=("--std=c++14",))
    return module.get_function("sptrsv_syncfree_csc")


class BlockArrays(NamedTuple):
    """Host arrays of one diagonal block rows start..end-1 as the kernel takes them."""

    colptr: np.ndarray     # int64, CSC of the strictly lower block
    rowidx: np.ndarray     # int32
    val: np.ndarray
    diag: np.ndarray
    in_degree: np.ndarray  # int32: off-diagonal nonzeros of each row inside the block
    outside: sp.csr_matrix  # the rows' entries in other columns (block rows x n_cols)


def block_arrays(csr: sp.csr_matrix, diag: np.ndarray, start: int, end: int,
                 n_cols: int) -> BlockArrays:
    """Split rows start..end-1 of the strictly lower `csr` (n_rows x n_cols) into the
    diagonal block (CSC, columns start..end-1) and the rest."""
    lo, hi = csr.indptr[start], csr.indptr[end]
    row = np.repeat(np.arange(end - start), np.diff(csr.indptr[start:end + 1]))
    col = csr.indices[lo:hi].astype(np.int64)
    data = csr.data[lo:hi]
    inside = (col >= start) & (col < end)
    size = end - start
    block = sp.csc_matrix((data[inside], (row[inside], col[inside] - start)),
                          shape=(size, size))
    block.sort_indices()
    outside = sp.csr_matrix((data[~inside], (row[~inside], col[~inside])), shape=(size, n_cols))
    # in-degrees from the CSC itself: duplicates of the CSR are summed into one entry there,
    # and the kernel decrements once per CSC entry (a larger count would spin forever)
    return BlockArrays(block.indptr.astype(np.int64), block.indices.astype(np.int32),
                       block.data.astype(np.float64), np.asarray(diag[start:end], np.float64),
                       np.bincount(block.indices, minlength=size).astype(np.int32), outside)


def launch_shape(size: int) -> tuple[int, int]:
    """(blocks, threads per block) of the kernel on a block of `size` columns: a warp per
    column, WARPS_PER_BLOCK warps a block."""
    return (size + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK, 32 * WARPS_PER_BLOCK


class _Block:
    """Device data of one diagonal block: its CSC, in-degrees, diagonal, outside part."""

    def __init__(self, cupy, csr: sp.csr_matrix, diag: np.ndarray, start: int, end: int,
                 n_cols: int) -> None:
        import cupyx.scipy.sparse as csp

        host = block_arrays(csr, diag, start, end, n_cols)
        self.size = end - start
        self.colptr = cupy.asarray(host.colptr)
        self.rowidx = cupy.asarray(host.rowidx)
        self.val = cupy.asarray(host.val)
        self.diag = cupy.asarray(host.diag)
        self.in_degree = cupy.asarray(host.in_degree)
        self.outside = csp.csr_matrix(host.outside) if host.outside.nnz else None


def _run_block(cupy, block: _Block, left, x_out) -> None:
    """Solve block * x_out = left in place (left is consumed)."""
    if block.size == 0:
        return
    in_degree = block.in_degree.copy()
    next_column = cupy.zeros(1, dtype=np.int32)
    grid, threads = launch_shape(block.size)
    _kernel()((grid,), (threads,), (block.colptr, block.rowidx, block.val, block.diag, left,
                                    in_degree, x_out, np.int32(block.size),
                                    np.int32(left.shape[1]), next_column))


class GpuLocalSolve:
    """One rank's local solve on its GPU (see module doc)."""

    def __init__(self, system, host: np.ndarray) -> None:
        cupy = require_cupy()   # the device: chosen by the caller (one rank per GPU)
        self.cupy = cupy
        self.system = system
        self.ghosts = host
        self.x = cupy.zeros((system.n_ext, host.shape[1]))
        self._offdiag = sp.csr_matrix((system.vals, system.cols, system.indptr),
                                      shape=(system.n_local, system.n_ext))
        self._blocks: dict[tuple[int, int], _Block] = {}
        self._device_index: dict[int, object] = {}

    @staticmethod
    def host_rows(system) -> int:
        return system.ghosts.size

    @staticmethod
    def ghost_row(n_local: int) -> int:
        """The host buffer holds only ghosts."""
        return 0

    def load_rhs(self, b_local: np.ndarray) -> None:
        self.x[:self.system.n_local] = self.cupy.asarray(b_local)

    def solve(self, start: int, end: int) -> None:
        if end <= start:
            return
        key = (int(start), int(end))
        block = self._blocks.get(key)
        if block is None:
            block = _Block(self.cupy, self._offdiag, self.system.diag, *key, self.system.n_ext)
            self._blocks[key] = block
        left = self.x[start:end].copy()
        if block.outside is not None:
            left -= block.outside @ self.x
        _run_block(self.cupy, block, left, self.x[start:end])

    def pack(self, local_idx: np.ndarray, out: np.ndarray) -> None:
        index = self._device_index.get(id(local_idx))
        if index is None:
            index = self._device_index[id(local_idx)] = self.cupy.asarray(local_idx)
        out[...] = self.x[index].get()

    def ghosts_arrived(self, lo: int, hi: int) -> None:
        first = self.system.n_local
        self.x[first + lo:first + hi] = self.cupy.asarray(self.ghosts[lo:hi])

    def finish(self) -> None:
        self.cupy.cuda.get_current_stream().synchronize()

    def solution(self) -> np.ndarray:
        return self.x[:self.system.n_local].get()

    def extended(self) -> np.ndarray:
        return self.x.get()


class DeviceTriangular:
    """A lower-triangular CSR matrix on the GPU, split and uploaded once for the kernel."""

    def __init__(self, lower: sp.csr_matrix) -> None:
        self.cupy = require_cupy()
        self.n = lower.shape[0]
        strict = sp.tril(lower, k=-1, format="csr")
        self.block = _Block(self.cupy, strict, lower.diagonal(), 0, self.n, self.n)

    def solve(self, b):
        """x with lower @ x = b (b: (n,) or (n, r), any order; the kernel reads rows)."""
        left = self.cupy.array(b, dtype=np.float64, order="C").reshape(self.n, -1)
        x = self.cupy.empty(left.shape)
        _run_block(self.cupy, self.block, left, x)
        return x.reshape(b.shape)


def solve_triangular_gpu(lower: sp.csr_matrix, b):
    """x with lower @ x = b on the GPU by the sync-free kernel (b: (n,) or (n, r))."""
    return DeviceTriangular(lower).solve(b)
