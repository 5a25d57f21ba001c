# cython: language_level=3
"""Local dense kernels on Fortran-ordered float64 blocks, through SciPy's LAPACK/BLAS
with the GIL released.

getrf(a, ipiv)                 LU with partial pivoting of a in place (LAPACK dgetrf);
                               returns LAPACK's info (> 0: U[info-1, info-1] == 0).
gemm_minus(c, a, b)            c -= a @ b (BLAS dgemm), 2 m n k flops.
"""
import numpy as np
cimport numpy as cnp
from scipy.linalg.cython_lapack cimport dgetrf
from scipy.linalg.cython_blas cimport dgemm

cnp.import_array()


def getrf(double[::1, :] a not None, int[::1] ipiv not None) -> int:
    cdef int m = a.shape[0], n = a.shape[1], lda = max(1, a.shape[0]), info = 0
    if ipiv.shape[0] < min(m, n):
        raise ValueError("ipiv shorter than min(m, n)")
    if m == 0 or n == 0:
        return 0
    with nogil:
        dgetrf(&m, &n, &a[0, 0], &lda, &ipiv[0], &info)
    return info


def gemm_minus(double[::1, :] c not None, double[::1, :] a not None,
               double[::1, :] b not None) -> None:
    cdef int m = c.shape[0], n = c.shape[1], k = a.shape[1]
    cdef int lda = max(1, a.shape[0]), ldb = max(1, b.shape[0]), ldc = max(1, c.shape[0])
    cdef double minus_one = -1.0, one = 1.0
    cdef char no = b'N'
    if a.shape[0] != m or b.shape[0] != k or b.shape[1] != n:
        raise ValueError(f"gemm_minus: shapes ({m}, {n}) -= ({a.shape[0]}, {k}) @ ({b.shape[0]}, {b.shape[1]})")
    if m == 0 or n == 0 or k == 0:
        return
    with nogil:
        dgemm(&no, &no, &m, &n, &k, &minus_one, &a[0, 0], &lda, &b[0, 0], &ldb, &one,
              &c[0, 0], &ldc)
