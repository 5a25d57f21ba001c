# cython: language_level=3
"""Tall-and-skinny GEMM kernels (TSM2R, TSM2L, A^T B) for float32 and float64.

Each kernel streams its tall operand(s) exactly once, with the small operand in L1
and register tiles of the output (C side: tsgemm_kernels.h, tsgemm_impl.h next to
this file). Rows are split into one contiguous range per OpenMP thread (prange).
Shapes: k and n (the small dimensions) at most MAX_SMALL; the caller
(linalg_io.tsgemm.kernels) checks shapes, orders and alignment, packs B and falls
back to BLAS beyond. Costs per call: 2 m k n flops, one read of A (and of B for
A^T B), one write of C.

ab_rowmajor(a, b_packed, c, n, threads, stream)   c = a @ b; a, c C-ordered (rows
                                                   may be strided), b packed by pack_b
ab_colmajor(a, b, c, threads, stream)             c = a @ b; a, c F-ordered, b C-ordered
atb_rowmajor(a, b, out, threads)                  out = a.T @ b; a, b C-ordered
atb_colmajor(a, b, out, threads)                  out = a.T @ b; a, b F-ordered
stream_copy(src, dst, threads)                    dst[:] = src (for bandwidth probes)
stream_read(src, threads)                         sum of src, read once (bandwidth probe:
                                                  4 far-apart streams per thread)
`stream` = 1 writes C with non-temporal stores (C must be 32-byte aligned with rows,
or columns, a multiple of 32 bytes apart).
"""
import numpy as np
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.string cimport memcpy

cnp.import_array()

MAX_SMALL = 64
VECTOR_BYTES = 32
PANEL_VECTORS = 4
PARTIAL_GAP_ROWS = 16

cdef extern from "tsgemm_kernels.h" nogil:
    void ab_c_rows_d(long r0, long r1, int n, int k, const double *a, long lda,
                     const double *bp, double *c, long ldc, int stream)
    void ab_c_rows_s(long r0, long r1, int n, int k, const float *a, long lda,
                     const float *bp, float *c, long ldc, int stream)
    void ab_f_rows_d(long r0, long r1, int n, int k, const double *a, long lda,
                     const double *b, long ldb, double *c, long ldc, int stream)
    void ab_f_rows_s(long r0, long r1, int n, int k, const float *a, long lda,
                     const float *b, long ldb, float *c, long ldc, int stream)
    void atb_c_rows_d(long r0, long r1, int n, int k, const double *a, long lda,
                      const double *b, long ldb, double *c, long ldc, int alone)
    void atb_c_rows_s(long r0, long r1, int n, int k, const float *a, long lda,
                      const float *b, long ldb, float *c, long ldc, int alone)
    void atb_f_rows_d(long r0, long r1, int n, int k, const double *a, long lda,
                      const double *b, long ldb, double *c, long ldc)
    void atb_f_rows_s(long r0, long r1, int n, int k, const float *a, long lda,
                      const float *b, long ldb, float *c, long ldc)
    void ts_store_fence()
    double ts_read_sum(const double *p, long n)


cdef inline long split(long m, int parts, int part, long align) noexcept nogil:
    """Start of range `part` when m rows are cut into `parts` ranges of aligned size."""
    cdef long size = (m + parts - 1) // parts
    size = (size + align - 1) // align * align
    return min(m, size * part)


def packed_b_shape(k: int, n: int, dtype) -> tuple[int, int, int]:
    """Shape of the buffer pack_b fills: (panels, k, PANEL_VECTORS * W), W = 32 bytes /
    itemsize."""
    width = PANEL_VECTORS * VECTOR_BYTES // np.dtype(dtype).itemsize
    return (n + width - 1) // width, k, width


def pack_b(b, packed) -> None:
    """B (k x n) into `packed` (packed_b_shape; the caller aligns it to 64 bytes) as
    column panels of at most PANEL_VECTORS vectors: panel cp, of `cols` columns, is k
    rows of `cols` rounded up to whole vectors, zero padded, contiguous from the start
    of packed[cp] (tsgemm_impl.h reads each row of B as whole cache lines)."""
    k, n = b.shape
    panels, _, width = packed.shape
    vector = VECTOR_BYTES // packed.itemsize
    for cp in range(panels):
        cols = min(width, n - cp * width)
        row = (cols + vector - 1) // vector * vector
        rows = packed[cp].reshape(-1)[:k * row].reshape(k, row)
        rows[:, :cols] = b[:, cp * width:cp * width + cols]
        rows[:, cols:] = 0


def ab_rowmajor(floating[:, ::1] a, floating[:, :, ::1] b_packed, floating[:, ::1] c,
                int n, int threads, bint stream) -> None:
    cdef long m = a.shape[0]
    cdef int k = a.shape[1]
    cdef int t
    cdef long r0, r1
    if c.shape[0] != m or c.shape[1] != n or b_packed.shape[1] != k:
        raise ValueError("ab_rowmajor: shapes do not match")
    if m == 0 or n == 0:
        return
    for t in prange(threads, nogil=True, num_threads=threads, schedule="static"):
        r0 = split(m, threads, t, 16)
        r1 = split(m, threads, t + 1, 16)
        if r1 > r0:
            if floating is double:
                ab_c_rows_d(r0, r1, n, k, &a[0, 0], a.shape[1], &b_packed[0, 0, 0], &c[0, 0],
                            c.shape[1], stream)
            else:
                ab_c_rows_s(r0, r1, n, k, &a[0, 0], a.shape[1], &b_packed[0, 0, 0], &c[0, 0],
                            c.shape[1], stream)
            if stream:
                ts_store_fence()


def ab_colmajor(floating[::1, :] a, floating[:, ::1] b, floating[::1, :] c, int threads,
                bint stream) -> None:
    cdef long m = a.shape[0]
    cdef int k = a.shape[1], n = b.shape[1]
    cdef int t
    cdef long r0, r1
    if c.shape[0] != m or c.shape[1] != n or b.shape[0] != k:
        raise ValueError("ab_colmajor: shapes do not match")
    if m == 0 or n == 0:
        return
    for t in prange(threads, nogil=True, num_threads=threads, schedule="static"):
        r0 = split(m, threads, t, 16)
        r1 = split(m, threads, t + 1, 16)
        if r1 > r0:
            if floating is double:
                ab_f_rows_d(r0, r1, n, k, &a[0, 0], m, &b[0, 0], n, &c[0, 0], m, stream)
            else:
                ab_f_rows_s(r0, r1, n, k, &a[0, 0], m, &b[0, 0], n, &c[0, 0], m, stream)
            if stream:
                ts_store_fence()


def _partials(int threads, int k, int n, dtype) -> np.ndarray:
    """Zeroed k x n sums, one per thread, PARTIAL_GAP_ROWS rows apart (at least 64 bytes:
    no cache line written by two threads)."""
    return np.zeros((threads, k + PARTIAL_GAP_ROWS, n), dtype=dtype)


cdef void _sum_partials(floating[:, :, ::1] partial, floating[:, ::1] out) noexcept nogil:
    cdef Py_ssize_t t, p, j
    for p in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[p, j] = partial[0, p, j]
    for t in range(1, partial.shape[0]):
        for p in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[p, j] += partial[t, p, j]


def atb_rowmajor(floating[:, ::1] a, floating[:, ::1] b, floating[:, ::1] out,
                 int threads) -> None:
    cdef long m = a.shape[0]
    cdef int k = a.shape[1], n = b.shape[1]
    cdef int t
    cdef long r0, r1
    if b.shape[0] != m or out.shape[0] != k or out.shape[1] != n:
        raise ValueError("atb_rowmajor: shapes do not match")
    cdef floating[:, :, ::1] partial = _partials(threads, k, n, np.asarray(out).dtype)
    if m > 0 and k > 0 and n > 0:
        for t in prange(threads, nogil=True, num_threads=threads, schedule="static"):
            r0 = split(m, threads, t, 16)
            r1 = split(m, threads, t + 1, 16)
            if r1 > r0:
                if floating is double:
                    atb_c_rows_d(r0, r1, n, k, &a[0, 0], k, &b[0, 0], n, &partial[t, 0, 0], n,
                                 threads == 1)
                else:
                    atb_c_rows_s(r0, r1, n, k, &a[0, 0], k, &b[0, 0], n, &partial[t, 0, 0], n,
                                 threads == 1)
    _sum_partials(partial, out)


def atb_colmajor(floating[::1, :] a, floating[::1, :] b, floating[:, ::1] out,
                 int threads) -> None:
    cdef long m = a.shape[0]
    cdef int k = a.shape[1], n = b.shape[1]
    cdef int t
    cdef long r0, r1
    if b.shape[0] != m or out.shape[0] != k or out.shape[1] != n:
        raise ValueError("atb_colmajor: shapes do not match")
    cdef floating[:, :, ::1] partial = _partials(threads, k, n, np.asarray(out).dtype)
    if m > 0 and k > 0 and n > 0:
        for t in prange(threads, nogil=True, num_threads=threads, schedule="static"):
            r0 = split(m, threads, t, 16)
            r1 = split(m, threads, t + 1, 16)
            if r1 > r0:
                if floating is double:
                    atb_f_rows_d(r0, r1, n, k, &a[0, 0], m, &b[0, 0], m, &partial[t, 0, 0], n)
                else:
                    atb_f_rows_s(r0, r1, n, k, &a[0, 0], m, &b[0, 0], m, &partial[t, 0, 0], n)
    _sum_partials(partial, out)


def stream_copy(const unsigned char[::1] src, unsigned char[::1] dst, int threads) -> None:
    """dst[:] = src with one contiguous piece per thread (memcpy)."""
    cdef long size = src.shape[0]
    cdef int t
    cdef long r0, r1
    if dst.shape[0] != size:
        raise ValueError("stream_copy: sizes differ")
    if size == 0:
        return
    for t in prange(threads, nogil=True, num_threads=threads, schedule="static"):
        r0 = split(size, threads, t, 4096)
        r1 = split(size, threads, t + 1, 4096)
        if r1 > r0:
            memcpy(&dst[r0], &src[r0], r1 - r0)


def stream_read(const double[::1] src, int threads) -> float:
    """Sum of src with one contiguous piece per thread, each read as 4 interleaved streams
    (a read-only bandwidth probe)."""
    cdef long size = src.shape[0]
    cdef int t
    cdef long r0, r1
    cdef double total = 0
    if size == 0:
        return 0.0
    for t in prange(threads, nogil=True, num_threads=threads, schedule="static"):
        r0 = split(size, threads, t, 512)
        r1 = split(size, threads, t + 1, 512)
        if r1 > r0:
            total += ts_read_sum(&src[r0], r1 - r0)
    return total
