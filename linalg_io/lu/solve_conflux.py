"""Block forward and backward substitution with the 2.5D LU's factors where they were
computed (`linalg_io.lu.conflux.Factors`: L rows, U rows and diagonal blocks, each kept
once by one rank): the verification's solve of L U x = P b.

Over the N/v steps every rank keeps the partial sums its own L (U) blocks contribute to
later (earlier) blocks; one Allreduce of w values per step completes the block's
right-hand side, and every rank solves the w x w diagonal system (the diagonal blocks
are allgathered once). b and x are replicated (N words per rank: verification only);
on the raw communicator, so nothing here is counted traffic.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI
from scipy.linalg import solve_triangular


def conflux_solve(raw: MPI.Comm, factors, pivots: list[np.ndarray], n: int, v: int,
                  ntiles: int, b: np.ndarray) -> np.ndarray:
    """x with L U x = P b (module doc); `pivots`: each step's pivot rows, in order."""
    diag = {}
    for pieces in raw.allgather({k: lu00 for k, _, lu00 in factors.diag}):
        diag.update(pieces)
    perm = np.concatenate(pivots)
    position = np.empty(n, dtype=np.int64)
    position[perm] = np.arange(n)
    l_by_step = {k: [] for k in range(ntiles)}
    for k, rows, l_block in factors.l_rows:
        l_by_step[k].append((position[rows], l_block))
    u_by_block = {k: [] for k in range(ntiles)}
    for k, cols, u_t in factors.u_rows:
        blocks = cols // v
        for j in np.unique(blocks):
            sel = blocks == j
            u_by_block[int(j)].append((k, cols[sel], u_t[sel]))
    y, x = np.zeros(n), np.zeros(n)
    partial = np.zeros(n)
    total = np.empty(v)
    z = b[perm]
    for k in range(ntiles):
        k0, w = k * v, diag[k].shape[0]
        raw.Allreduce(partial[k0:k0 + w], total[:w])
        y[k0:k0 + w] = solve_triangular(diag[k], z[k0:k0 + w] - total[:w], lower=True,
                                        unit_diagonal=True, check_finite=False)
        for positions, l_block in l_by_step[k]:
            partial[positions] += l_block @ y[k0:k0 + w]
    partial[:] = 0.0
    for k in reversed(range(ntiles)):
        k0, w = k * v, diag[k].shape[0]
        raw.Allreduce(partial[k0:k0 + w], total[:w])
        x[k0:k0 + w] = solve_triangular(diag[k], y[k0:k0 + w] - total[:w], lower=False,
                                        check_finite=False)
        for row_step, cols, u_t in u_by_block[k]:
            r0 = row_step * v
            partial[r0:r0 + u_t.shape[1]] += u_t.T @ x[cols]
    return x
