# cython: language_level=3
"""Panel kernels of the 2D LU (linalg_io/lu/lu2d.py) on a column-major panel (a slice of
a rank's local Fortran-ordered matrix), with the GIL released; the generic dense
kernels (getrf, laswp, trsm, gemm, gemv) are in dense_local.pyx.

panel_candidate(...)            one pivot column of a distributed panel: local candidate
panel_apply(...)                ... and, after the exchange, pivot, swap, scale, rank-1 update
gather_rows(a, rows, out)       out[i, :] = a[rows[i], :] (row swaps and U rows into buffers)
place_rows(src, rows, a)        a[rows[i], :] = src[i, :] (... and out of them)

The row copies walk the matrix column by column (as LAPACK's dlaswp): the rows of one
column are a few cache lines apart, where a row at a time strides by the leading
dimension on every element. k rows of n columns: k n reads and k n writes.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport fabs
from scipy.linalg.cython_blas cimport dger

cnp.import_array()


cdef inline long _global_row(long loc, long nb, long myrow, long pr) noexcept nogil:
    return ((loc // nb) * pr + myrow) * nb + loc % nb


def panel_candidate(double[:, :] panel not None, int first, int jj, double[::1] out not None,
                    int nb, int myrow, int pr, bint diag) -> None:
    """Write this rank's pivot candidate for panel column jj into `out`.

    out = [|v|, global row, that row (kb values)] over local rows first.. (|v| = -1 and
    row -1 when there are none); the diagonal rank appends its row `first` (the row at
    the pivot position, kb values), which the owner of the pivot row will take over.
    """
    cdef Py_ssize_t m = panel.shape[0], kb = panel.shape[1], i, c, best = -1
    cdef double big = -1.0, v
    if out.shape[0] < 2 + kb * (2 if diag else 1):
        raise ValueError("panel_candidate: out too short")
    with nogil:
        for i in range(first, m):
            v = fabs(panel[i, jj])
            if v > big:
                big = v
                best = i
        out[0] = big
        if best >= 0:
            out[1] = <double>_global_row(best, nb, myrow, pr)
            for c in range(kb):
                out[2 + c] = panel[best, c]
        else:
            out[1] = -1.0
            for c in range(kb):
                out[2 + c] = 0.0
        if diag:
            for c in range(kb):
                out[2 + kb + c] = panel[first, c]


def panel_apply(double[:, :] panel not None, double[:, :] top not None,
                double[::1] gathered not None, int jj, long g, int first, int nb, int myrow,
                int pr, int diag_row) -> long:
    """Pivot column jj of a distributed panel after the candidates were exchanged.

    `gathered` holds every process row's candidate block (panel_candidate's `out`) in
    process-row order. Picks the largest |v| (ties: the smaller global row), stores
    the pivot row in top[jj] and at position g (diagonal rank), moves the displaced
    row g to the pivot row's place (its owner), then scales the column and applies
    the rank-1 update to the local rows below g. Returns the pivot's global row; a
    zero pivot leaves the column unscaled and returns -(row + 1).
    """
    cdef Py_ssize_t m = panel.shape[0], kb = panel.shape[1], c, i
    cdef Py_ssize_t r, off, win_off = -1, diag_off = 0, lp
    cdef double best = -2.0, best_row = -1.0, v, row, pivot, inv
    cdef double minus_one = -1.0
    cdef int mm, nn, inc = 1
    cdef int lda = max(1, panel.strides[1] // sizeof(double))
    if m > 1 and panel.strides[0] != sizeof(double):
        raise ValueError("panel_apply: expected a column-major panel")
    cdef long p
    cdef double *prow
    cdef double *cur
    cdef bint owns_p
    cdef Py_ssize_t start
    with nogil:
        off = 0
        for r in range(pr):
            v = gathered[off]
            row = gathered[off + 1]
            if row >= 0 and (v > best or (v == best and row < best_row)):
                best = v
                best_row = row
                win_off = off
            if r == diag_row:
                diag_off = off
                off += 2 + 2 * kb
            else:
                off += 2 + kb
    if win_off < 0:
        raise ValueError("panel_apply: no pivot candidate")
    p = <long>best_row
    prow = &gathered[win_off + 2]
    cur = &gathered[diag_off + 2 + kb]
    owns_p = (p // nb) % pr == myrow
    start = first + 1 if myrow == diag_row else first
    with nogil:
        for c in range(kb):
            top[jj, c] = prow[c]
        if p != g and owns_p:
            lp = (p // nb) // pr * nb + p % nb
            for c in range(kb):
                panel[lp, c] = cur[c]
        if myrow == diag_row:
            for c in range(kb):
                panel[first, c] = prow[c]
        pivot = prow[jj]
        if pivot != 0.0 and start < m:
            inv = 1.0 / pivot
            for i in range(start, m):
                panel[i, jj] *= inv
            mm = <int>(m - start)
            nn = <int>(kb - jj - 1)
            if nn > 0:
                dger(&mm, &nn, &minus_one, &panel[start, jj], &inc, &prow[jj + 1], &inc,
                     &panel[start, jj + 1], &lda)
    if pivot == 0.0:
        return -(p + 1)
    return p


cdef int _check_rows(str name, double[:, :] a, const long[::1] rows, double[:, :] block) except -1:
    """a column-major, block k x n column-major and contiguous (k = len(rows), n = a's
    columns), every row inside a."""
    cdef Py_ssize_t i, m = a.shape[0]
    if block.shape[0] != rows.shape[0] or block.shape[1] != a.shape[1]:
        raise ValueError(f"{name}: {rows.shape[0]} rows of {a.shape[1]} columns, buffer "
                         f"{block.shape[0]} x {block.shape[1]}")
    if m > 1 and a.strides[0] != sizeof(double):
        raise ValueError(f"{name}: expected a column-major matrix")
    if block.shape[0] == 0 or block.shape[1] == 0:
        return 0
    if block.shape[0] > 1 and block.strides[0] != sizeof(double) or \
            block.shape[1] > 1 and block.strides[1] != block.shape[0] * sizeof(double):
        raise ValueError(f"{name}: expected a contiguous column-major buffer")
    for i in range(rows.shape[0]):
        if not 0 <= rows[i] < m:
            raise IndexError(f"{name}: row {rows[i]} outside 0..{m - 1}")
    return 0


cdef void _copy_rows(double *mat, Py_ssize_t lda, const long *rows, Py_ssize_t k,
                     Py_ssize_t n, double *block, bint into_block) noexcept nogil:
    """block[i, c] = mat[rows[i], c] (into_block) or the reverse, column by column."""
    cdef Py_ssize_t i, c
    for c in range(n):
        if into_block:
            for i in range(k):
                block[i] = mat[rows[i]]
        else:
            for i in range(k):
                mat[rows[i]] = block[i]
        mat += lda
        block += k


cdef int _rows(str name, double[:, :] a, const long[::1] rows, double[:, :] block,
               bint into_block) except -1:
    _check_rows(name, a, rows, block)
    cdef Py_ssize_t k = rows.shape[0], n = a.shape[1]
    if k == 0 or n == 0:
        return 0
    cdef Py_ssize_t lda = a.strides[1] // sizeof(double) if n > 1 else a.shape[0]
    with nogil:
        _copy_rows(&a[0, 0], lda, &rows[0], k, n, &block[0, 0], into_block)
    return 0


def gather_rows(double[:, :] a not None, const long[::1] rows not None,
                double[:, :] out not None) -> None:
    """out[i, :] = a[rows[i], :]; out is k x n, Fortran-ordered."""
    _rows("gather_rows", a, rows, out, True)


def place_rows(double[:, :] src not None, const long[::1] rows not None,
               double[:, :] a not None) -> None:
    """a[rows[i], :] = src[i, :]; src is k x n, Fortran-ordered."""
    _rows("place_rows", a, rows, src, False)
