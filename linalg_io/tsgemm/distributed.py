"""Distributed tall-and-skinny products: a local kernel plus at most one collective.

Each function is (comm or grid, local data, threads) -> (local result, kernel name);
every message goes through the CountedComm, and the traffic per rank is what
`linalg_io.models.tsgemm.rank_costs` states (the tests compare the two exactly):

tsm2l     C_r = A_r B, B already on every rank: no traffic.
ab        Bcast of B (k n s) from rank 0, then C_r = A_r B.
atb       partial A_r^T B_r, Allreduce of the k x n sum (k n s sent and received).
tsm2r_1d  A by rows, B by rows: Allgatherv of B (k_r n s sent, (k - k_r) n s received),
          then C_r = A_r B.
tsm2r_2d  Pr x Pc grid: Bcast of the B piece B_j (k_j x n) down process column j,
          C_i = sum_j A_ij B_j reduced along process row i onto rank (i, 0) (m_i n s).
`out` (optional) is a buffer for the local m_r x n product, reused across repetitions.
Host buffers carry the messages; with the GPU backend the local product runs on the
device and the (small) operands are staged through the host.
"""

from __future__ import annotations

import numpy as np

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid2D
from linalg_io.tsgemm.kernels import matmul, matmul_tn


def _host(x) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else x.get()


def _like(x, host: np.ndarray):
    """`host` moved to x's device (NumPy stays NumPy)."""
    if isinstance(x, np.ndarray):
        return host
    import cupy

    return cupy.asarray(host)


def _flat(x: np.ndarray) -> np.ndarray:
    """A 1-D view of a C- or Fortran-contiguous array (the message buffer)."""
    return x.reshape(-1, order="F" if x.flags.f_contiguous and not x.flags.c_contiguous else "C")


def tsm2l(a_local, b, threads: int, out=None):
    """C_r = A_r B with B replicated beforehand (no traffic)."""
    return matmul(a_local, b, threads, out)


def ab(comm: CountedComm, a_local, b_host: np.ndarray, threads: int, out=None):
    """B (k x n, C-ordered host buffer, filled on rank 0) broadcast, then C_r = A_r B."""
    with comm.phase("bcast B"):
        comm.Bcast(b_host, root=0)
    return matmul(a_local, _like(a_local, b_host), threads, out)


def atb(comm: CountedComm, a_local, b_local, threads: int):
    """C = sum_r A_r^T B_r on every rank (Allreduce of k x n)."""
    partial, kernel = matmul_tn(a_local, b_local, threads)
    partial = np.ascontiguousarray(_host(partial))
    total = np.empty_like(partial)
    with comm.phase("allreduce C"):
        comm.Allreduce(partial, total)
    return total, kernel


def tsm2r_1d(comm: CountedComm, a_local, b_piece: np.ndarray, b_full: np.ndarray,
             piece_rows: np.ndarray, threads: int, out=None):
    """B rows gathered on every rank (Allgatherv), then C_r = A_r B.

    b_piece: this rank's piece_rows[rank] rows of B (C-ordered); b_full: k x n buffer."""
    n = b_full.shape[1]
    counts = piece_rows * n
    displs = np.concatenate(([0], np.cumsum(counts)[:-1]))
    with comm.phase("allgather B"):
        comm.Allgatherv(_flat(b_piece), [_flat(b_full), (counts, displs)])
    return matmul(a_local, _like(a_local, b_full), threads, out)


def tsm2r_2d(grid: Grid2D, a_block, b_piece: np.ndarray, threads: int, out=None):
    """B_j broadcast from rank (0, j) down column j; partial A_ij B_j reduced onto (i, 0).

    Returns (C_i on column 0, None elsewhere; kernel)."""
    with grid.comm.phase("bcast B piece"):
        grid.col_comm.Bcast(b_piece, root=0)
    partial, kernel = matmul(a_block, _like(a_block, b_piece), threads, out)
    partial = _host(partial)
    if grid.pc == 1:
        return partial, kernel
    result = np.empty_like(partial) if grid.mycol == 0 else None
    with grid.comm.phase("reduce C"):
        grid.row_comm.Reduce(_flat(partial), None if result is None else _flat(result), root=0)
    return result, kernel
