# cython: language_level=3
"""Local kernels of the sparse triangular solve (GIL released in every loop).

levels_lower(indptr, indices)        level of each row of a lower-triangular CSR:
                                     1 + max level of the rows it depends on (0 if none).
stencil_ic0_pivots(nx, ny, nz, c)    squared diagonal d of the IC(0) factor of the
                                     5-/7-point Laplacian (centre c): d_i = c - sum 1/d_k
                                     over the lower neighbours k of i (natural order).
solve_rows(indptr, cols, vals, inv_diag, x, start, end)
                                     forward substitution of local rows start..end-1:
                                     x[k] = (x[k] - sum_j vals * x[cols]) * inv_diag[k] for every
                                     right-hand side (x is (n_ext, nrhs), C order, and holds b
                                     in its local rows on entry). Reads 12 bytes per nonzero,
                                     2 flops per off-diagonal nonzero and 1 per row per rhs.
                                     The multiply by the stored reciprocal (not a divide)
                                     keeps the row-to-row dependency chain short.
"""
import numpy as np
cimport numpy as cnp

cnp.import_array()


def levels_lower(const cnp.int64_t[::1] indptr not None,
                 const cnp.int32_t[::1] indices not None) -> np.ndarray:
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, k
    cdef cnp.int32_t lev, j
    levels = np.zeros(n, dtype=np.int32)
    cdef cnp.int32_t[::1] out = levels
    with nogil:
        for i in range(n):
            lev = 0
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if j < i and out[j] + 1 > lev:
                    lev = out[j] + 1
            out[i] = lev
    return levels


def stencil_ic0_pivots(Py_ssize_t nx, Py_ssize_t ny, Py_ssize_t nz, double centre) -> np.ndarray:
    cdef Py_ssize_t n = nx * ny * nz, i, x, y, z
    pivots = np.empty(n, dtype=np.float64)
    cdef double[::1] d = pivots
    cdef double value
    with nogil:
        for i in range(n):
            x = i % nx
            y = (i // nx) % ny
            z = i // (nx * ny)
            value = centre
            if x > 0:
                value -= 1.0 / d[i - 1]
            if y > 0:
                value -= 1.0 / d[i - nx]
            if z > 0:
                value -= 1.0 / d[i - nx * ny]
            d[i] = value
    return pivots


def solve_rows(const cnp.int64_t[::1] indptr not None, const cnp.int32_t[::1] cols not None,
               const double[::1] vals not None, const double[::1] inv_diag not None,
               double[:, ::1] x not None, Py_ssize_t start, Py_ssize_t end) -> None:
    cdef Py_ssize_t nrhs = x.shape[1], i, k, r
    cdef double s, v
    cdef double* xp
    cdef double* row
    if end <= start:
        return
    if start < 0 or end > inv_diag.shape[0] or end > x.shape[0] or indptr.shape[0] < end + 1:
        raise ValueError(f"solve_rows: rows {start}..{end} outside the local matrix")
    xp = &x[0, 0]
    with nogil:
        if nrhs == 1:
            for i in range(start, end):
                s = xp[i]
                for k in range(indptr[i], indptr[i + 1]):
                    s -= vals[k] * xp[cols[k]]
                xp[i] = s * inv_diag[i]
        else:
            for i in range(start, end):
                row = xp + i * nrhs
                for k in range(indptr[i], indptr[i + 1]):
                    v = vals[k]
                    for r in range(nrhs):
                        row[r] -= v * xp[cols[k] * nrhs + r]
                for r in range(nrhs):
                    row[r] = row[r] * inv_diag[i]
