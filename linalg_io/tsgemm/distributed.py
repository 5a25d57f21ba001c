"""Distributed tall-and-skinny products: a local kernel plus at most one collective.

Each function is (comm or grid, local data, threads) -> (local result, kernel name);
every message goes through the CountedComm in the package's own point-to-point
schedules (`linalg_io.comm.collectives`: what is counted is what crosses the wire),
and the traffic per rank is what `linalg_io.models.tsgemm.rank_costs` states (the
tests compare the two exactly):

tsm2l     C_r = A_r B, B already on every rank: no traffic.
ab        bcast of B (k n s) from rank 0, then C_r = A_r B.
atb       partial A_r^T B_r, allreduce of the k x n sum (reduce onto rank 0, then bcast).
tsm2r_1d  A by rows, B by rows: allgatherv of B (every rank receives (k - k_r) n s),
          then C_r = A_r B.
tsm2r_2d  Pr x Pc grid: bcast of the B piece B_j (k_j x n) down process column j,
          C_i = sum_j A_ij B_j reduced along process row i onto rank (i, 0) (m_i n s).
`out` (optional) is a buffer for the local m_r x n product, reused across repetitions.
Host buffers carry the messages; with the GPU backend the local product runs on the
device and the (small) operands are staged through the host.
"""

from __future__ import annotations

import numpy as np

from linalg_io.comm import collectives
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


def tsm2l(a_local, b, threads: int, out=None):
    """C_r = A_r B with B replicated beforehand (no traffic)."""
    return matmul(a_local, b, threads, out)


def ab(comm: CountedComm, a_local, b_host: np.ndarray, threads: int, out=None):
    """B (k x n, C-ordered host buffer, filled on rank 0) broadcast, then C_r = A_r B."""
    with comm.phase("bcast B"):
        collectives.bcast(comm, b_host, 0)
    return matmul(a_local, _like(a_local, b_host), threads, out)


def atb(comm: CountedComm, a_local, b_local, threads: int):
    """C = sum_r A_r^T B_r on every rank (allreduce of k x n)."""
    partial, kernel = matmul_tn(a_local, b_local, threads)
    total = np.array(_host(partial), order="C")
    with comm.phase("allreduce C"):
        collectives.allreduce_sum(comm, total)
    return total, kernel


def tsm2r_1d(comm: CountedComm, a_local, b_piece: np.ndarray, b_full: np.ndarray,
             piece_rows: np.ndarray, threads: int, out=None):
    """B rows gathered on every rank (allgatherv), then C_r = A_r B.

    b_piece: this rank's piece_rows[rank] rows of B (C-ordered); b_full: k x n buffer."""
    with comm.phase("allgather B"):
        collectives.allgatherv(comm, b_piece, b_full, piece_rows * b_full.shape[1])
    return matmul(a_local, _like(a_local, b_full), threads, out)


def tsm2r_2d(grid: Grid2D, a_block, b_piece: np.ndarray, threads: int, out=None):
    """B_j broadcast from rank (0, j) down column j; partial A_ij B_j reduced onto (i, 0).

    Returns (C_i on column 0, None elsewhere; kernel)."""
    with grid.comm.phase("bcast B piece"):
        collectives.bcast(grid.col_comm, b_piece, 0)
    partial, kernel = matmul(a_block, _like(a_block, b_piece), threads, out)
    partial = _host(partial)
    if grid.pc == 1:
        return partial, kernel
    result = np.array(partial, order="K")
    with grid.comm.phase("reduce C"):
        collectives.reduce_sum(grid.row_comm, result, 0)
    return (result if grid.mycol == 0 else None), kernel
