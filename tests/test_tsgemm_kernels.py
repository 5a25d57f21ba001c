"""Local tall-and-skinny kernels against NumPy, and the tsgemm model's closed forms.

Error metric: max |C - C_ref| / (|A| |B|) componentwise, C_ref in float64; the bound
is inner * eps(dtype) (inner = summed dimension), the tolerance the runner uses.
"""

from __future__ import annotations

import numpy as np
import pytest
from linalg_io.models import tsgemm as model
from linalg_io.models.profile import load_profile

from linalg_io.tsgemm import kernels
from linalg_io.tsgemm.inputs import block

pytestmark = pytest.mark.skipif(kernels.compiled() is None,
                                reason="Cython kernels not built (make kernels)")
DTYPES = (np.float32, np.float64)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A B in float64 by einsum's own loops: OpenBLAS's dgemm takes ~100 times longer on
    some of these shapes (a long summed dimension: A^T B with m ~ 10^5-10^6 rows and
    k, n of 7-64 takes seconds), which made these references most of the file's time."""
    return np.einsum("ij,jk->ik", a.astype(np.float64), b.astype(np.float64))


def scaled_error(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    scale = np.maximum(product(np.abs(a), np.abs(b)), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(c.astype(np.float64) - product(a, b)) / scale))


def operands(rng, shape_a, shape_b, dtype, order):
    a = np.asarray(rng.standard_normal(shape_a), dtype=dtype, order=order)
    b = np.asarray(rng.standard_normal(shape_b), dtype=dtype, order=order)
    return a, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_ab_every_k_and_n_up_to_32_odd_m(dtype, order) -> None:
    rng = np.random.default_rng(1)
    eps = np.finfo(dtype).eps
    for k in range(1, 33):
        for n in sorted({1, 3, 4, k, 17, 32}):
            m = 2 * k + 37 + n  # odd and even row counts, row tails of every length
            a, b = operands(rng, (m, k), (k, n), dtype, order)
            for threads in (1, 2):
                c, kernel = kernels.matmul(a, b, threads)
                layout = "rowmajor" if a.flags.c_contiguous else "colmajor"  # k = 1: both
                assert kernel == f"cython ab_{layout}"
                assert c.dtype == dtype and c.shape == (m, n)
                assert scaled_error(c, a, b) <= k * eps, (k, n, m, threads)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_atb_every_k_and_n_up_to_32_odd_m(dtype, order) -> None:
    rng = np.random.default_rng(2)
    eps = np.finfo(dtype).eps
    for k in range(1, 33):
        for n in sorted({1, 4, k, 13, 32}):
            m = 40 * k + 1 + 2 * n
            a, b = operands(rng, (m, k), (m, n), dtype, order)
            for threads in (1, 2):
                c, kernel = kernels.matmul_tn(a, b, threads)
                assert kernel.startswith("cython atb_") and "copied" not in kernel
                assert scaled_error(c, a.T, b) <= m * eps, (k, n, m, threads)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_tsm2r_large_inner_dimension_and_wide_n(dtype, order) -> None:
    """TSM2R: A large and regular (k panels, several column panels of B up to n = 64;
    k panels of B rows narrower than a full panel: n = 5, and n = 33 whose last column
    panel is one vector)."""
    rng = np.random.default_rng(3)
    eps = np.finfo(dtype).eps
    for m, k, n in [(515, 1031, 16), (333, 700, 64), (97, 2000, 5), (61, 1001, 7), (1, 300, 33),
                    (37, 9000, 5), (45, 2100, 33)]:
        a, b = operands(rng, (m, k), (k, n), dtype, order)
        for threads in (1, 2):
            c, _ = kernels.matmul(a, b, threads)
            assert scaled_error(c, a, b) <= k * eps, (m, k, n, threads)


# (k, n) of A^T B read as two parts: one register tile covers C (A B^T vectors full and
# partial, and the half-vector kernel: k = n = 2 in float64, 4 in float32), then C in L1
# (one group of column vectors, full and partial; several groups, rows in chunks swept
# once per group, a partial last one)
TWO_PART_SHAPES = {np.float64: [(1, 1), (2, 2), (4, 4), (3, 8), (6, 6), (5, 3),
                                (16, 16), (4, 16), (13, 5), (7, 33), (64, 64)],
                   np.float32: [(1, 1), (4, 4), (6, 8), (3, 16), (5, 11),
                                (16, 16), (7, 3), (9, 40), (64, 64)]}


@pytest.mark.parametrize("dtype", DTYPES)
def test_atb_read_in_two_parts(dtype) -> None:
    """Row ranges long enough (8 MiB of A per thread) to be read as two parts at once, plus
    the rows between and after them: small integers, so every summation order is exact in
    both dtypes (|sums| < 2^24)."""
    rng = np.random.default_rng(5)
    itemsize = np.dtype(dtype).itemsize
    for k, n in TWO_PART_SHAPES[dtype]:
        skew_rows = 2**20 // (k * itemsize)
        for threads in (1, 3):
            m = 8 * skew_rows * threads + 2 * skew_rows + 12345
            a = rng.integers(-2, 3, (m, k), dtype=np.int8).astype(dtype)
            b = rng.integers(-2, 3, (m, n), dtype=np.int8).astype(dtype)
            c, kernel = kernels.matmul_tn(a, b, threads)
            assert kernel == "cython atb_rowmajor"
            expected = product(a.T, b)  # exact: |sums| < 2^53
            assert np.array_equal(c.astype(np.float64), expected), (k, n, m, threads)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tsm2r_dot_products_for_n_up_to_4(dtype) -> None:
    """Long rows and n <= 4 (dot-product kernel): row and k tails, several k panels."""
    rng = np.random.default_rng(7)
    eps = np.finfo(dtype).eps
    for n in (1, 2, 3, 4):
        for m, k in [(13, 64), (7, 67), (10, 301), (5, 16411 if dtype == np.float32 else 8209)]:
            a, b = operands(rng, (m, k), (k, n), dtype, "C")
            for threads in (1, 2):
                c, kernel = kernels.matmul(a, b, threads)
                assert kernel == "cython ab_rowmajor"
                assert scaled_error(c, a, b) <= k * eps, (m, k, n, threads)


def test_streaming_stores_on_large_aligned_output() -> None:
    """Outputs of >= 4 MiB take the non-temporal store path; the result is the same."""
    rng = np.random.default_rng(4)
    for order in ("C", "F"):
        a, b = operands(rng, (70001, 8), (8, 8), np.float64, order)
        c, _ = kernels.matmul(a, b, 2)
        assert c.nbytes >= kernels.STREAM_MIN_BYTES and c.ctypes.data % 64 == 0
        assert scaled_error(c, a, b) <= 8 * np.finfo(np.float64).eps
    a, b = operands(rng, (2**18 + 3, 4), (4, 4), np.float32, "C")  # rows 16 bytes apart
    c, _ = kernels.matmul(a, b, 2)
    assert kernels._stream_ok(c, row_pairs=True) and not kernels._stream_ok(c)
    assert scaled_error(c, a, b) <= 4 * np.finfo(np.float32).eps


def test_bandwidth_probes() -> None:
    # 100003 elements: read as one tail; 2^20 + 12345: four streams, the gaps between
    # them and the tail (integers, so every summation order is exact)
    for size in (100003, 2**20 + 12345):
        src = np.arange(size, dtype=np.float64)
        dst = np.empty_like(src)
        for threads in (1, 2, 3):
            assert kernels.compiled().stream_read(src, threads) == size * (size - 1) // 2
            kernels.compiled().stream_copy(src.view(np.uint8), dst.view(np.uint8), threads)
            assert np.array_equal(dst, src)


def test_mixed_orders_and_fallbacks_say_what_ran() -> None:
    rng = np.random.default_rng(5)
    a = np.asarray(rng.standard_normal((101, 6)), order="C")
    b_f = np.asfortranarray(rng.standard_normal((101, 5)))
    c, kernel = kernels.matmul_tn(a, b_f, 1)
    assert kernel == "cython atb_rowmajor (B copied to C order)"
    assert scaled_error(c, a.T, b_f) <= 101 * np.finfo(np.float64).eps
    c, kernel = kernels.matmul(a, rng.standard_normal((6, 65)), 1)
    assert kernel == "blas (n = 65 > 64)"
    c, kernel = kernels.matmul_tn(rng.standard_normal((50, 70)), rng.standard_normal((50, 3)))
    assert kernel == "blas (k = 70 > 64)"
    strided = rng.standard_normal((40, 12))[:, ::2]
    c, kernel = kernels.matmul(strided, rng.standard_normal((6, 4)))
    assert kernel.startswith("blas (A neither")
    c, kernel = kernels.matmul(a.astype(np.float32), rng.standard_normal((6, 4)))
    assert kernel.startswith("blas (dtype")


def test_inputs_do_not_depend_on_the_decomposition() -> None:
    whole = block("A", 3, (0, 50), (0, 9), 9, np.float64)
    part = block("A", 3, (17, 31), (2, 7), 9, np.float32, "F")
    assert np.array_equal(part, whole[17:31, 2:7].astype(np.float32))
    assert part.flags.f_contiguous and -0.5 <= whole.min() and whole.max() < 0.5
    assert not np.array_equal(whole, block("B", 3, (0, 50), (0, 9), 9, np.float64))


def test_model_closed_forms() -> None:
    s, m, n, k = 8, 1003, 16, 40
    c = k * n * s    # the k x n result or operand, 5120 B: binomial trees
    for p in (1, 2, 3, 4):
        atb, _ = model.rank_costs("atb", m, n, k, p, s)
        # reduce onto rank 0 and bcast back: every other rank sends c up and gets c down
        assert atb.bytes_sent.sum() == atb.bytes_recv.sum() == 2 * (p - 1) * c
        assert atb.bytes_sent[1:].tolist() == [c * (1 + (r == 2 and p == 4)) for r in range(1, p)]
        ab, _ = model.rank_costs("ab", m, n, k, p, s)
        assert ab.bytes_recv.tolist() == [0] + [c] * (p - 1) and ab.msgs_sent.sum() == p - 1
        one_d, memory = model.rank_costs("tsm2r", m, n, k, p, s, "1d")
        pieces = model.row_blocks(k, p) * n * s
        assert one_d.bytes_recv.tolist() == ((c - pieces) * (p > 1)).tolist()
        assert one_d.bytes_sent.sum() == one_d.bytes_recv.sum()
        assert one_d.flops.sum() == 2 * m * n * k
        assert memory.sum() == s * (m * k + p * k * n + m * n)
        two_d, _ = model.rank_costs("tsm2r", m, n, k, p, s, "2d")
        pr, pc = model.grid_for("tsm2r", p, "2d")
        # each B piece reaches the pr - 1 other ranks of its column once; each partial C
        # goes up its row's reduction once
        assert two_d.bytes_recv.sum() == two_d.bytes_sent.sum() == \
            (pr - 1) * c + (pc - 1) * m * n * s
        assert two_d.flops.sum() == 2 * m * n * k


def test_model_picks_the_cheaper_tsm2r_distribution() -> None:
    profile = load_profile()
    for m, k, p in [(8192, 8192, 4), (64, 100000, 4), (100000, 64, 4), (5000, 5000, 2)]:
        times = {}
        for dist in ("1d", "2d"):
            costs, memory = model.rank_costs("tsm2r", m, 16, k, p, 8, dist)
            times[dist] = model.run_time(costs, memory, 8, profile, profile.placement(p))
        chosen = model.choose_dist(m, 16, k, p, 8, profile)
        assert times[chosen] == min(times.values())
    block_ = model.model_block("tsm2l", 2**22, 16, 16, 1, 8, "1d", profile)
    expected = max(8 * (2**22 * 32 + 256) / profile.mem_bw_bytes_per_s,
                   2 * 2**22 * 256 / profile.gamma_flops)
    assert block_["time_s"] == pytest.approx(expected)


def test_output_buffer_is_reused_when_it_fits() -> None:
    rng = np.random.default_rng(6)
    for order in ("C", "F"):
        a, b = operands(rng, (501, 7), (7, 9), np.float64, order)
        out = kernels.aligned_empty((501, 9), np.float64, order)
        c, _ = kernels.matmul(a, b, 2, out=out)
        assert c is out and scaled_error(c, a, b) <= 7 * np.finfo(np.float64).eps
        wrong = np.empty((501, 9), order="F" if order == "C" else "C")
        assert kernels.matmul(a, b, 1, out=wrong)[0] is not wrong


def test_new_output_is_half_a_page_from_a() -> None:
    """C allocated by matmul starts on a 64-byte boundary 1984-2048 bytes past A modulo
    4 KiB (no 4K aliasing between A's loads and C's stores), for any offset of A."""
    rng = np.random.default_rng(7)
    raw = rng.standard_normal(4096 + 64 * 5)
    b = rng.standard_normal((5, 3))
    for shift in range(0, 4096 // 8, 37):
        a = raw[shift:shift + 64 * 5].reshape(64, 5)
        c, _ = kernels.matmul(a, b, 1)
        gap = (c.ctypes.data - a.ctypes.data) % 4096
        assert c.ctypes.data % 64 == 0 and 2048 - 64 < gap <= 2048, (shift, gap)
        assert scaled_error(c, a, b) <= 5 * np.finfo(np.float64).eps


@pytest.mark.parametrize("order", ["C", "F"])
def test_empty_inner_dimension_gives_zeros(order) -> None:
    a = np.empty((50, 0), order=order)
    out = np.full((50, 2), np.nan, order=order)
    c, kernel = kernels.matmul(a, np.empty((0, 2)), out=out)
    assert kernel == "matmul (k = 0)" and c.shape == (50, 2) and not c.any()
