# cython: language_level=3
"""Local dense kernels on column-major float64 blocks, through SciPy's LAPACK/BLAS with
the GIL released.

Every 2D argument is a column-major view: unit stride down a column, any column stride
(a whole Fortran-ordered array, or a slice of one such as a rank's trailing submatrix),
handed to LAPACK/BLAS with its leading dimension.

getrf(a, ipiv)                 LU with partial pivoting of a in place (LAPACK dgetrf);
                               returns LAPACK's info (> 0: U[info-1, info-1] == 0).
laswp(a, ipiv)                 apply the row interchanges ipiv (1-based) to a (dlaswp).
swap_columns(a, first, second) swap columns first[i] and second[i] of a, in turn (dswap:
                               contiguous columns, no Python between the swaps).
trsm_lower_unit(l, b)          b := L^-1 b, L the unit lower triangle of l (blocked).
trsm_right_lower_unit_t(l, b)  b := b L^-T, L the unit lower triangle of l (blocked).
trsm_right_upper(u, b)         b := b U^-1, U the upper triangle of u (blocked).
trsm_upper(u, b)               b := U^-1 b, U the upper triangle of u (dtrsm).
gemm_minus(c, a, b)            c -= a @ b (BLAS dgemm), 2 m n k flops.
gemm_minus_nt(c, a, bt)        c -= a @ bt.T (dgemm with B transposed: bt is n x k, no copy).
gemv_minus(y, a, x)            y -= a @ x (BLAS dgemv).
transpose_into(src, dst)       dst := src.T, in 32 x 32 tiles (a strided copy misses the
                               cache on every element of one side).

The blocked solves halve the triangle recursively down to TRSM_BLOCK columns, solving
those with dtrsm and updating the rest with one dgemm per level: the same flops as one
dtrsm (n^2 m for an n x n triangle), most of them in dgemm, which OpenBLAS runs several
times faster than its dtrsm on these panel-wide triangles.
"""
import numpy as np
cimport numpy as cnp
from scipy.linalg.cython_lapack cimport dgetrf, dlaswp
from scipy.linalg.cython_blas cimport dgemm, dgemv, dswap, dtrsm

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


def swap_columns(double[:, :] a not None, const long[::1] first not None,
                 const long[::1] second not None) -> None:
    cdef int m = a.shape[0], inc = 1
    cdef Py_ssize_t n = a.shape[1], i, p, q
    _ld(a)
    if first.shape[0] != second.shape[0]:
        raise ValueError("swap_columns: first and second differ in length")
    for i in range(first.shape[0]):
        if not (0 <= first[i] < n and 0 <= second[i] < n):
            raise IndexError(f"swap_columns: column {first[i]} or {second[i]} outside 0..{n - 1}")
    if m == 0:
        return
    with nogil:
        for i in range(first.shape[0]):
            p, q = first[i], second[i]
            if p != q:
                dswap(&m, &a[0, p], &inc, &a[0, q], &inc)


cdef int _trsm(char uplo, char diag, double[:, :] t, double[:, :] b) except -1:
    """b := T^-1 b, T the `uplo` triangle of t (unit diagonal when diag is 'U')."""
    cdef int m = b.shape[0], n = b.shape[1], ldt = _ld(t), ldb = _ld(b)
    cdef double one = 1.0
    cdef char side = b'L', no = b'N'
    if t.shape[0] != m or t.shape[1] < m:
        raise ValueError(f"trsm: triangle {t.shape[0]} x {t.shape[1]}, right-hand side {m} x {n}")
    if m == 0 or n == 0:
        return 0
    with nogil:
        dtrsm(&side, &uplo, &no, &diag, &m, &n, &one, &t[0, 0], &ldt, &b[0, 0], &ldb)
    return 0


DEF TRSM_BLOCK = 64


cdef void _lower_unit_left(int m, int n, double* l, int ldl, double* b, int ldb) noexcept nogil:
    """b (m x n) := L^-1 b: [L11 0; L21 L22] -> b1 := L11^-1 b1, b2 -= L21 b1, b2 := L22^-1 b2."""
    cdef double one = 1.0, minus_one = -1.0
    cdef char side = b'L', lower = b'L', no = b'N', unit = b'U'
    cdef int h = m // 2, rest = m - m // 2
    if m <= TRSM_BLOCK:
        dtrsm(&side, &lower, &no, &unit, &m, &n, &one, l, &ldl, b, &ldb)
        return
    _lower_unit_left(h, n, l, ldl, b, ldb)
    dgemm(&no, &no, &rest, &n, &h, &minus_one, l + h, &ldl, b, &ldb, &one, b + h, &ldb)
    _lower_unit_left(rest, n, l + h + <Py_ssize_t>h * ldl, ldl, b + h, ldb)


cdef void _lower_unit_right_t(int m, int n, double* l, int ldl, double* b, int ldb) noexcept nogil:
    """b (m x n) := b L^-T: b1 := b1 L11^-T, b2 -= b1 L21^T, b2 := b2 L22^-T."""
    cdef double one = 1.0, minus_one = -1.0
    cdef char side = b'R', lower = b'L', no = b'N', trans = b'T', unit = b'U'
    cdef int h = n // 2, rest = n - n // 2
    if n <= TRSM_BLOCK:
        dtrsm(&side, &lower, &trans, &unit, &m, &n, &one, l, &ldl, b, &ldb)
        return
    _lower_unit_right_t(m, h, l, ldl, b, ldb)
    dgemm(&no, &trans, &m, &rest, &h, &minus_one, b, &ldb, l + h, &ldl, &one,
          b + <Py_ssize_t>h * ldb, &ldb)
    _lower_unit_right_t(m, rest, l + h + <Py_ssize_t>h * ldl, ldl, b + <Py_ssize_t>h * ldb, ldb)


cdef void _upper_right(int m, int n, double* u, int ldu, double* b, int ldb) noexcept nogil:
    """b (m x n) := b U^-1: [U11 U12; 0 U22] -> b1 := b1 U11^-1, b2 -= b1 U12, b2 := b2 U22^-1."""
    cdef double one = 1.0, minus_one = -1.0
    cdef char side = b'R', upper = b'U', no = b'N'
    cdef int h = n // 2, rest = n - n // 2
    if n <= TRSM_BLOCK:
        dtrsm(&side, &upper, &no, &no, &m, &n, &one, u, &ldu, b, &ldb)
        return
    _upper_right(m, h, u, ldu, b, ldb)
    dgemm(&no, &no, &m, &rest, &h, &minus_one, b, &ldb, u + <Py_ssize_t>h * ldu, &ldu, &one,
          b + <Py_ssize_t>h * ldb, &ldb)
    _upper_right(m, rest, u + h + <Py_ssize_t>h * ldu, ldu, b + <Py_ssize_t>h * ldb, ldb)


ctypedef void (*_blocked_solve)(int, int, double*, int, double*, int) noexcept nogil


cdef int _solve(_blocked_solve solve, double[:, :] t, double[:, :] b, bint right,
                str name) except -1:
    """Run one of the blocked solves on b with the triangle of t (n x n: b's rows, or its
    columns when `right`)."""
    cdef int m = b.shape[0], n = b.shape[1], ldt = _ld(t), ldb = _ld(b)
    cdef int order = n if right else m
    if t.shape[0] != order or t.shape[1] < order:
        raise ValueError(f"{name}: triangle {t.shape[0]} x {t.shape[1]}, needs {order} x {order}")
    if m == 0 or n == 0:
        return 0
    with nogil:
        solve(m, n, &t[0, 0], ldt, &b[0, 0], ldb)
    return 0


def trsm_lower_unit(double[:, :] l not None, double[:, :] b not None) -> None:
    _solve(_lower_unit_left, l, b, False, "trsm_lower_unit")


def trsm_right_lower_unit_t(double[:, :] l not None, double[:, :] b not None) -> None:
    _solve(_lower_unit_right_t, l, b, True, "trsm_right_lower_unit_t")


def trsm_right_upper(double[:, :] u not None, double[:, :] b not None) -> None:
    _solve(_upper_right, u, b, True, "trsm_right_upper")


def trsm_upper(double[:, :] u not None, double[:, :] b not None) -> None:
    _trsm(b'U', b'N', u, b)


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


def gemm_minus_nt(double[:, :] c not None, double[:, :] a not None,
                  double[:, :] bt not None) -> None:
    cdef int m = c.shape[0], n = c.shape[1], k = a.shape[1]
    cdef int lda = _ld(a), ldb = _ld(bt), ldc = _ld(c)
    cdef double minus_one = -1.0, one = 1.0
    cdef char no = b'N', trans = b'T'
    if a.shape[0] != m or bt.shape[1] != k or bt.shape[0] != n:
        raise ValueError(f"gemm_minus_nt: ({m}, {n}) -= ({a.shape[0]}, {k}) @ ({bt.shape[0]}, {bt.shape[1]})^T")
    if m == 0 or n == 0 or k == 0:
        return
    with nogil:
        dgemm(&no, &trans, &m, &n, &k, &minus_one, &a[0, 0], &lda, &bt[0, 0], &ldb, &one,
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


def transpose_into(double[:, :] src not None, double[:, :] dst not None) -> None:
    cdef Py_ssize_t m = src.shape[0], n = src.shape[1], i, j, i0, j0, i1, j1
    cdef Py_ssize_t tile = 32
    if dst.shape[0] != n or dst.shape[1] != m:
        raise ValueError(f"transpose_into: ({m}, {n}) into ({dst.shape[0]}, {dst.shape[1]})")
    with nogil:
        j0 = 0
        while j0 < n:
            j1 = min(j0 + tile, n)
            i0 = 0
            while i0 < m:
                i1 = min(i0 + tile, m)
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        dst[j, i] = src[i, j]
                i0 += tile
            j0 += tile
