"""The compiled local dense kernels the LUs call (linalg_io._kernels.dense_local): the
blocked triangular solves, the dgemm with B transposed and the tiled transpose, against
NumPy, on views with a leading dimension larger than their rows (slices of a bigger
Fortran array); and the 2D LU's row copies (lu_kernels.gather_rows / place_rows)."""

import numpy as np
import pytest

from linalg_io._kernels import dense_local, lu_kernels


def _view(rng, rows, cols):
    """A rows x cols column-major slice of a larger Fortran array."""
    return np.asfortranarray(rng.standard_normal((rows + 3, cols + 2)))[2:2 + rows, 1:1 + cols]


@pytest.mark.parametrize("w, t", [(256, 300), (200, 77), (64, 10), (65, 1), (1, 4), (130, 0)])
def test_blocked_triangular_solves_match_numpy(w, t):
    rng = np.random.default_rng(w + t)
    tri = _view(rng, w, w)
    tri[:] = np.tril(tri, -1) * 0.2 + np.triu(tri, 1) * 0.2 + 4 * np.eye(w)
    unit_lower = np.tril(tri, -1) + np.eye(w)
    upper = np.triu(tri)
    b = _view(rng, w, t)
    expected = np.linalg.solve(unit_lower, b)
    dense_local.trsm_lower_unit(tri, b)
    np.testing.assert_allclose(b, expected, rtol=1e-11, atol=1e-11)
    bt = _view(rng, t, w)
    expected = np.linalg.solve(unit_lower, bt.T).T          # bt L^-T
    dense_local.trsm_right_lower_unit_t(tri, bt)
    np.testing.assert_allclose(bt, expected, rtol=1e-11, atol=1e-11)
    bt = _view(rng, t, w)
    expected = np.linalg.solve(upper.T, bt.T).T              # bt U^-1
    dense_local.trsm_right_upper(tri, bt)
    np.testing.assert_allclose(bt, expected, rtol=1e-11, atol=1e-11)
    b = _view(rng, w, t)
    expected = np.linalg.solve(upper, b)                     # U^-1 b (dtrsm, the 2D solve)
    dense_local.trsm_upper(tri, b)
    np.testing.assert_allclose(b, expected, rtol=1e-11, atol=1e-11)


def test_gemm_with_b_transposed_updates_in_place_and_checks_shapes():
    rng = np.random.default_rng(3)
    c, a, bt = _view(rng, 50, 40), _view(rng, 50, 7), _view(rng, 40, 7)
    expected = c - a @ bt.T
    dense_local.gemm_minus_nt(c, a, bt)
    np.testing.assert_allclose(c, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="gemm_minus_nt"):
        dense_local.gemm_minus_nt(c, a, _view(rng, 40, 6))
    with pytest.raises(ValueError, match="trsm_right_upper"):
        dense_local.trsm_right_upper(_view(rng, 5, 5), _view(rng, 3, 6))


@pytest.mark.parametrize("rows, cols", [(70, 33), (1, 100), (32, 32), (0, 5)])
def test_tiled_transpose_copies_exactly(rows, cols):
    src = _view(np.random.default_rng(rows), rows, cols)
    dst = np.empty((cols, rows), order="F")
    dense_local.transpose_into(src, dst)
    assert np.array_equal(dst, src.T)
    with pytest.raises(ValueError, match="transpose_into"):
        dense_local.transpose_into(src, np.empty((cols + 1, rows), order="F"))


def test_swap_columns_applies_the_swaps_in_turn_on_a_view():
    rng = np.random.default_rng(3)
    a = np.asfortranarray(rng.standard_normal((50, 40)))
    expected = a.copy()
    first = np.array([0, 1, 2, 2, 7], dtype=np.int64)
    second = np.array([5, 1, 9, 0, 39], dtype=np.int64)
    for p, q in zip(first, second):
        expected[10:, [p, q]] = expected[10:, [q, p]]
    dense_local.swap_columns(a[10:], first, second)
    np.testing.assert_array_equal(a, expected)
    with pytest.raises(IndexError):
        dense_local.swap_columns(a, np.array([40], dtype=np.int64), np.array([0], dtype=np.int64))


def test_row_gather_and_place_match_numpy_on_a_view():
    rng = np.random.default_rng(11)
    a = _view(rng, 60, 37)
    rows = np.array([59, 0, 17, 18, 3], dtype=np.int64)
    out = np.empty((rows.size, 37), order="F")
    lu_kernels.gather_rows(a, rows, out)
    np.testing.assert_array_equal(out, a[rows])
    expected = a.copy()
    block = np.asfortranarray(rng.standard_normal((rows.size, 37)))
    expected[rows] = block
    lu_kernels.place_rows(block, rows, a)
    np.testing.assert_array_equal(a, expected)
    lu_kernels.gather_rows(a, rows[:0], out[:0])      # no rows: nothing moves
    with pytest.raises(IndexError):
        lu_kernels.gather_rows(a, np.array([60], dtype=np.int64), np.empty((1, 37), order="F"))
    with pytest.raises(ValueError):
        lu_kernels.place_rows(np.ascontiguousarray(block), rows, a)   # row-major buffer
