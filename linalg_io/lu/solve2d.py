"""Distributed forward/back substitution with the 2D LU's factors, and HPL's residual check.

b and x are replicated (N words per rank: verification only). Per block column k:
forward  apply step k's interchanges to y, the diagonal rank solves y_k = L_kk^-1 y_k,
         broadcasts it down its process column, whose ranks subtract L21 y_k from
         their rows; one Allreduce (length N - j0) of y_k itself and the change of the
         rows below updates y everywhere;
backward the diagonal rank solves x_k = U_kk^-1 y_k, broadcasts it down its process
         column, whose ranks subtract U[:j0, k] x_k; one Allreduce (length j0 + kb) of
         the change above and x_k itself.
Residual: ||b - A x||_inf from the untouched local blocks of A (one Allreduce of A x
and the row sums of |A|), scaled as HPL does.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io._kernels import dense_local
from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid2D
from linalg_io.layout.blockcyclic import owned_indices
from linalg_io.lu.hpl import hpl_scaled_residual
from linalg_io.lu.lu2d import LU2DParams, steps


def _diagonal_solve(grid: Grid2D, a: np.ndarray, step, y: np.ndarray, solve,
                    change: np.ndarray, at: int) -> tuple[slice, np.ndarray]:
    """On the panel's process column: the diagonal rank solves block k of y with its
    triangle (`solve`), puts the solved block itself in change[at:at + kb] (the only
    rank that writes there, so the Allreduce delivers it exactly; a difference to y
    would lose x wherever |x| << |y|, as for a matrix with large entries), and
    broadcasts it down the process column. Returns (local columns, solved block)."""
    j0, kb = step.j0, step.kb
    cols = slice(step.panel_col, step.panel_col + kb)
    solved = y[j0:j0 + kb].copy()
    if grid.myrow == step.prow:
        solve(a[step.top_row:step.top_row + kb, cols], solved.reshape(kb, 1))
        change[at:at + kb] = solved
    if grid.pr > 1:
        grid.col_comm.Bcast(solved, root=step.prow)
    return cols, solved


def lu2d_solve(grid: Grid2D, a: np.ndarray, pivots: np.ndarray, params: LU2DParams,
               b: np.ndarray) -> np.ndarray:
    """x with A x = b from lu2d's factors `a` (local) and `pivots`; b replicated, x replicated."""
    n = params.n
    rows = owned_indices(n, params.nb, grid.myrow, grid.pr)
    y = np.array(b, dtype=np.float64)
    block_steps = list(steps(grid, params))
    with grid.comm.phase("verify"):
        for step in block_steps:
            j0 = step.j0
            for i in range(step.kb):
                p = int(pivots[j0 + i])
                y[j0 + i], y[p] = y[p], y[j0 + i]
            change = np.zeros(n - j0)
            if grid.mycol == step.pcol:
                cols, yk = _diagonal_solve(grid, a, step, y, dense_local.trsm_lower_unit,
                                           change, 0)
                below = np.zeros(len(rows) - step.below_row)
                dense_local.gemv_minus(below, a[step.below_row:, cols], yk)
                change[rows[step.below_row:] - j0] = below
            grid.comm.Allreduce(MPI.IN_PLACE, change)
            y[j0:j0 + step.kb] = change[:step.kb]
            y[j0 + step.kb:] += change[step.kb:]
        for step in reversed(block_steps):
            change = np.zeros(step.j1)
            if grid.mycol == step.pcol:
                cols, xk = _diagonal_solve(grid, a, step, y, dense_local.trsm_upper,
                                           change, step.j0)
                above = np.zeros(step.top_row)
                dense_local.gemv_minus(above, a[:step.top_row, cols], xk)
                change[rows[:step.top_row]] += above
            grid.comm.Allreduce(MPI.IN_PLACE, change)
            y[:step.j0] += change[:step.j0]
            y[step.j0:step.j1] = change[step.j0:]
    return y


def hpl_residual(grid: Grid2D, a_orig: np.ndarray, x: np.ndarray, b: np.ndarray,
                 params: LU2DParams) -> dict:
    """HPL's scaled residual of x against the original local blocks `a_orig`.

    Returns {scaled_residual, residual_inf, a_inf, x_inf, b_inf} (same on every rank).
    """
    n, nb = params.n, params.nb
    rows = owned_indices(n, nb, grid.myrow, grid.pr)
    cols = owned_indices(n, nb, grid.mycol, grid.pc)
    return local_blocks_residual(grid.comm, rows, cols, a_orig, x, b)


def local_blocks_residual(comm: CountedComm, rows: np.ndarray, cols: np.ndarray,
                          a_orig: np.ndarray, x: np.ndarray, b: np.ndarray) -> dict:
    """`hpl_residual` for any layout in which each entry of A lives on one rank of `comm`,
    this rank's being a_orig = A[rows][:, cols] (one Allreduce of 2N words)."""
    n = len(b)
    sums = np.zeros(2 * n)
    sums[rows] = a_orig @ x[cols]
    sums[n + rows] = np.abs(a_orig).sum(axis=1)
    with comm.phase("verify"):
        comm.Allreduce(MPI.IN_PLACE, sums)
    residual_inf = float(np.abs(b - sums[:n]).max())
    a_inf = float(sums[n:].max())
    x_inf = float(np.abs(x).max())
    b_inf = float(np.abs(b).max())
    return {"scaled_residual": hpl_scaled_residual(residual_inf, a_inf, x_inf, b_inf, n),
            "residual_inf": residual_inf, "a_inf": a_inf, "x_inf": x_inf, "b_inf": b_inf}


def upper_stats(a: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                chunk: int = 512) -> tuple[float, float]:
    """(min |U_ii|, max |U_ij|) over the entries of the local block `a` (global rows
    `rows`, columns `cols`) on and above the diagonal (inf, 0 where there are none),
    a few columns at a time."""
    min_diag, u_max = np.inf, 0.0
    for first in range(0, len(cols), chunk):
        block_cols = cols[first:first + chunk]
        block = np.abs(a[:, first:first + chunk])
        upper = rows[:, None] <= block_cols[None, :]
        u_max = max(u_max, float(block[upper].max(initial=0.0)))
        on_diag = rows[:, None] == block_cols[None, :]
        min_diag = min(min_diag, float(block[on_diag].min(initial=np.inf)))
    return min_diag, u_max
