# cython: language_level=3
"""Local kernels of the 2D LU (linalg_io/lu/lu2d.py) on strided float64 blocks.

Every 2D argument is a column-major view (unit stride down a column, any column
stride: a slice of a rank's local Fortran-ordered matrix), handed to LAPACK/BLAS
from scipy.linalg.cython_lapack / cython_blas with its leading dimension; all
arithmetic runs with the GIL released.

getrf(a, ipiv)                  LU with partial pivoting in place (dgetrf), LAPACK info
laswp(a, ipiv)                  apply the row interchanges ipiv (1-based) to a (dlaswp)
trsm_lower_unit(l, b)           b := L^-1 b, L the unit lower triangle of l (dtrsm)
trsm_upper(u, b)                b := U^-1 b, U the upper triangle of u (dtrsm)
gemm_minus(c, a, b)             c -= a @ b (dgemm)
gemv_minus(y, a, x)             y -= a @ x (dgemv)
panel_candidate(...)            one pivot column of a distributed panel: local candidate
panel_apply(...)                ... and, after the exchange, pivot, swap, scale, rank-1 update
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport fabs
from scipy.linalg.cython_lapack cimport dgetrf, dlaswp
from scipy.linalg.cython_blas cimport dgemm, dgemv, dger, dtrsm

cnp.import_array()


cdef int _ld(double[:, :] a) except -1:
    """Leading dimension of a column-major view (raises on a row-major one)."""
    if a.shape[0] == 0 or a.shape[1] == 0:
        return max(1, a.shape[0])
    if a.shape[0] > 1 and a.strides[0] != sizeof(double):
        raise ValueError("expected unit stride down the columns (a Fortran-ordered view)")
    if a.shape[1] > 1:
        return max(1, a.strides[1] // sizeof(double))
    return max(1, a.shape[0])


def getrf(double[:, :] a not None, int[::1] ipiv not None) -> int:
    cdef int m = a.shape[0], n = a.shape[1], lda = _ld(a), info = 0
    if ipiv.shape[0] < min(m, n):
        raise ValueError("ipiv shorter than min(m, n)")
    if m == 0 or n == 0:
        return 0
    with nogil:
        dgetrf(&m, &n, &a[0, 0], &lda, &ipiv[0], &info)
    return info


def laswp(double[:, :] a not None, int[::1] ipiv not None) -> None:
    cdef int n = a.shape[1], lda = _ld(a), k1 = 1, k2 = ipiv.shape[0], inc = 1
    if n == 0 or k2 == 0:
        return
    with nogil:
        dlaswp(&n, &a[0, 0], &lda, &k1, &k2, &ipiv[0], &inc)


cdef void _trsm(char uplo, char diag, double[:, :] t, double[:, :] b, int ldt, int ldb) noexcept nogil:
    cdef int m = b.shape[0], n = b.shape[1]
    cdef double one = 1.0
    cdef char side = b'L', no = b'N'
    dtrsm(&side, &uplo, &no, &diag, &m, &n, &one, &t[0, 0], &ldt, &b[0, 0], &ldb)


def trsm_lower_unit(double[:, :] l not None, double[:, :] b not None) -> None:
    cdef int ldl = _ld(l), ldb = _ld(b)
    if l.shape[0] != b.shape[0] or l.shape[1] < b.shape[0]:
        raise ValueError("trsm_lower_unit: shapes do not match")
    if b.shape[0] == 0 or b.shape[1] == 0:
        return
    with nogil:
        _trsm(b'L', b'U', l, b, ldl, ldb)


def trsm_upper(double[:, :] u not None, double[:, :] b not None) -> None:
    cdef int ldu = _ld(u), ldb = _ld(b)
    if u.shape[0] != b.shape[0] or u.shape[1] < b.shape[0]:
        raise ValueError("trsm_upper: shapes do not match")
    if b.shape[0] == 0 or b.shape[1] == 0:
        return
    with nogil:
        _trsm(b'U', b'N', u, b, ldu, ldb)


def gemm_minus(double[:, :] c not None, double[:, :] a not None, double[:, :] b not None) -> None:
    cdef int m = c.shape[0], n = c.shape[1], k = a.shape[1]
    cdef int lda = _ld(a), ldb = _ld(b), ldc = _ld(c)
    cdef double minus_one = -1.0, one = 1.0
    cdef char no = b'N'
    if a.shape[0] != m or b.shape[0] != k or b.shape[1] != n:
        raise ValueError(f"gemm_minus: ({m}, {n}) -= ({a.shape[0]}, {k}) @ ({b.shape[0]}, {b.shape[1]})")
    if m == 0 or n == 0 or k == 0:
        return
    with nogil:
        dgemm(&no, &no, &m, &n, &k, &minus_one, &a[0, 0], &lda, &b[0, 0], &ldb, &one,
              &c[0, 0], &ldc)


def gemv_minus(double[::1] y not None, double[:, :] a not None, double[::1] x not None) -> None:
    cdef int m = a.shape[0], n = a.shape[1], lda = _ld(a), inc = 1
    cdef double minus_one = -1.0, one = 1.0
    cdef char no = b'N'
    if y.shape[0] != m or x.shape[0] != n:
        raise ValueError("gemv_minus: shapes do not match")
    if m == 0 or n == 0:
        return
    with nogil:
        dgemv(&no, &m, &n, &minus_one, &a[0, 0], &lda, &x[0], &inc, &one, &y[0], &inc)


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
    cdef int mm, nn, inc = 1, lda = _ld(panel)
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
