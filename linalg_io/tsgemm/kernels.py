"""Local tall-and-skinny products: the compiled kernels where they apply, BLAS beyond.

`matmul(a, b, threads)` is C = A B (TSM2L, TSM2R, A B) and `matmul_tn(a, b, threads)`
is C = A^T B, for NumPy arrays (CPU kernels of linalg_io._kernels.tsgemm) or CuPy
arrays (linalg_io.kernels.tsm2_gpu). Each returns (C, kernel) where `kernel` names
what ran, so the record says when BLAS did the work: the compiled kernels take
float32/float64 with the small dimensions (n of A B, any k; k and n of A^T B) at
most 64 and A (and, for A^T B, B) C- or Fortran-ordered; anything else is BLAS.
Output C has A's order (A B) or is C-ordered (A^T B); A B outputs of 4 MiB or
more are written with non-temporal stores (they would only evict A from cache).
"""

from __future__ import annotations

import numpy as np

MAX_SMALL = 64
STREAM_MIN_BYTES = 4 * 2**20
_ALIGN = 64
_PAGE = 4096


def compiled():
    """The compiled module, or None when the Cython kernels are not built."""
    try:
        from linalg_io._kernels import tsgemm
    except ImportError:
        return None
    return tsgemm


def aligned_empty(shape: tuple[int, ...], dtype, order: str,
                  away_from: np.ndarray | None = None) -> np.ndarray:
    """An uninitialised array whose data starts on a 64-byte boundary.

    `away_from`: the array a kernel will stream from while it writes this one; the data
    then starts about half a 4 KiB page from its data modulo 4 KiB. A core that stores to
    one stream and loads from another whose addresses match in their low 12 bits a few
    rows ahead stalls the loads on the stores (4K aliasing), which slows a streaming
    kernel such as TSM2L by a large factor (`bench/bench_tsgemm.py` times the kernels
    with their outputs placed this way)."""
    itemsize = np.dtype(dtype).itemsize
    count = int(np.prod(shape))
    raw = np.empty(count * itemsize + _PAGE, dtype=np.uint8)
    if away_from is None:
        offset = (-raw.ctypes.data) % _ALIGN
    else:
        target = (away_from.ctypes.data + _PAGE // 2) % _PAGE // _ALIGN * _ALIGN
        offset = (target - raw.ctypes.data) % _PAGE
    return raw[offset:offset + count * itemsize].view(dtype).reshape(shape, order=order)


def _layout(x: np.ndarray) -> str | None:
    if x.flags.c_contiguous:
        return "C"
    if x.flags.f_contiguous:
        return "F"
    return None


def cpu_kernel_reason(a: np.ndarray, b: np.ndarray, small: dict[str, int]) -> str | None:
    """Why the compiled kernel cannot take this product (None: it can); `small` names
    the dimensions that must be at most MAX_SMALL."""
    if compiled() is None:
        return "Cython kernels not built"
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64):
        return f"dtype {a.dtype}/{b.dtype} (kernels: float32, float64)"
    too_big = [f"{name} = {value}" for name, value in small.items() if value > MAX_SMALL]
    if too_big:
        return f"{', '.join(too_big)} > {MAX_SMALL}"
    if _layout(a) is None:
        return "A neither C- nor Fortran-contiguous"
    return None


def _stream_ok(c: np.ndarray, row_pairs: bool = False) -> bool:
    """Non-temporal stores for C: large, 32-byte aligned, rows (columns) 32-byte multiples
    apart, or 16 bytes apart when the kernel stores pairs of rows (`row_pairs`: row-major
    k = n = half a vector, one 32-byte store per two rows)."""
    lead = c.strides[0] if c.flags.c_contiguous else c.strides[1]
    return c.nbytes >= STREAM_MIN_BYTES and c.ctypes.data % 32 == 0 \
        and (lead % 32 == 0 or (row_pairs and lead == 16))


def _output(out: np.ndarray | None, shape: tuple[int, int], a: np.ndarray,
            order: str) -> np.ndarray:
    """`out` when it fits (shape, A's dtype, order), else a new 64-byte-aligned array
    half a page away from A (aligned_empty)."""
    dtype = a.dtype
    contiguous = "c_contiguous" if order == "C" else "f_contiguous"
    if out is not None and out.shape == shape and out.dtype == dtype \
            and getattr(out.flags, contiguous) and out.flags.writeable:
        return out
    return aligned_empty(shape, dtype, order, away_from=a)


def matmul(a, b, threads: int = 1, out: np.ndarray | None = None):
    """C = A B with A m x k, B k x n (n <= 64 for the compiled kernel); (C, kernel).

    `out`: a buffer to write C into when it fits (A's order, m x n, A's dtype; reused
    across calls it saves the page faults of a fresh m x n array); otherwise a new one."""
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"A is {a.shape}, B is {b.shape}: inner dimensions differ")
    if not isinstance(a, np.ndarray):
        from linalg_io.kernels import tsm2_gpu

        return tsm2_gpu.matmul(a, b)
    if a.shape[1] == 0:   # C = 0 (a process column of a 2D grid wider than k holds no A)
        return a @ b, "matmul (k = 0)"
    reason = cpu_kernel_reason(a, b, {"n": b.shape[1]})
    if reason is not None:
        return a @ b, f"blas ({reason})"
    kernels = compiled()
    m, n = a.shape[0], b.shape[1]
    if _layout(a) == "C":
        c = _output(out, (m, n), a, "C")
        row_pairs = a.shape[1] * a.itemsize == n * a.itemsize == 16
        packed = aligned_empty(kernels.packed_b_shape(b.shape[0], n, a.dtype), a.dtype, "C")
        kernels.pack_b(b, packed)
        kernels.ab_rowmajor(a, packed, c, n, threads, _stream_ok(c, row_pairs))
        return c, "cython ab_rowmajor"
    c = _output(out, (m, n), a, "F")
    kernels.ab_colmajor(a, np.ascontiguousarray(b), c, threads, _stream_ok(c))
    return c, "cython ab_colmajor"


def matmul_tn(a, b, threads: int = 1):
    """C = A^T B with A m x k, B m x n (k, n <= 64 for the compiled kernel); (C, kernel).

    A and B in different orders: B is copied into A's order first (one extra pass)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"A is {a.shape}, B is {b.shape}: row counts differ")
    if not isinstance(a, np.ndarray):
        return a.T @ b, "cupy matmul"
    reason = cpu_kernel_reason(a, b, {"k": a.shape[1], "n": b.shape[1]})
    if reason is not None:
        return a.T @ b, f"blas ({reason})"
    kernels = compiled()
    out = np.empty((a.shape[1], b.shape[1]), dtype=a.dtype)
    if a.flags.c_contiguous and (b.flags.c_contiguous or not a.flags.f_contiguous):
        kernels.atb_rowmajor(a, np.ascontiguousarray(b), out, threads)
        return out, "cython atb_rowmajor" + ("" if b.flags.c_contiguous
                                             else " (B copied to C order)")
    kernels.atb_colmajor(a, np.asfortranarray(b), out, threads)
    return out, "cython atb_colmajor" + ("" if b.flags.f_contiguous else " (B copied to F order)")
