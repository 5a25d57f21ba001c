"""`StepSample.smeared`'s means over the shifts (`lu2d_points.shifted_means`) against the
shifted copies summed (np.roll): whole numbers bit for bit (every sum exact, one
division), others to rounding; shifts (0, 1, d) (skewed planes) and others (orbits),
windows longer than the shift's orbit or the plane's rows (whole turns of it), shifts
of a whole axis (that axis stays), an even count, a shift that moves nothing (the grids
untouched), and the refusals."""

import numpy as np
import pytest
from linalg_io._kernels.lu2d_points import shifted_means


def _rolled(grids: np.ndarray, shift: tuple, count: int) -> np.ndarray:
    """Each cell's mean of the cells p - m shift, m = -(count // 2) .. count - 1 -
    count // 2, cyclic: the shifted copies summed in order, then divided."""
    half = count // 2
    total = np.zeros_like(grids)
    for m in range(-half, count - half):
        total += np.roll(grids, [m * d for d in shift], axis=(-3, -2, -1))
    return total / count


@pytest.mark.parametrize("dims, shift, count", [
    ((1, 8, 12), (0, 1, 1), 5),         # orbits of 24 cells, four of them
    ((2, 6, 9), (1, 2, 3), 7),          # every axis moves
    ((1, 5, 7), (0, 1, 1), 101),        # one orbit of 35: the window turns it twice
    ((3, 4, 4), (1, 0, 0), 9),          # the layers alone, more turns than cells
    ((1, 6, 4), (0, 2, 2), 4),          # an even count: one more shift back than ahead
    ((2, 3, 5), (2, 3, 6), 3),          # a whole axis (3 of 3) and more (6 of 5)
    ((1, 7, 1), (0, 1, 0), 7),          # a window of exactly the orbit
    ((2, 5, 9), (0, 1, 4), 13),         # skewed planes, more rows in a window than the plane
    ((1, 6, 10), (0, 7, -3), 8),        # skewed: x one on (7 of 6), y back, an even count
])
def test_means_are_the_shifted_copies_summed(dims, shift, count):
    rng = np.random.default_rng(7)
    whole = rng.integers(-1 << 20, 1 << 20, (3, *dims)).astype(float)
    got = whole.copy()
    shifted_means(got, shift, count)
    assert got.tobytes() == _rolled(whole, shift, count).tobytes()
    floats = rng.random((2, *dims)) * 10.0 ** rng.integers(-3, 9, (2, *dims))
    got = floats.copy()
    shifted_means(got, shift, count)
    want = _rolled(floats, shift, count)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15 * np.abs(floats).max())


def test_a_shift_that_moves_nothing_leaves_the_grids():
    grids = np.random.default_rng(2).random((2, 3, 4, 5)) / 3.0
    kept = grids.copy()
    shifted_means(grids, (3, 4, 10), 9)
    assert grids.tobytes() == kept.tobytes()


def test_refusals():
    grids = np.zeros((1, 2, 2, 2))
    with pytest.raises(ValueError, match="count >= 1"):
        shifted_means(grids, (0, 1, 1), 0)
    with pytest.raises(ValueError, match="three axes"):
        shifted_means(grids, (1, 1), 3)
    with pytest.raises(ValueError):
        shifted_means(np.zeros((1, 2, 2, 2))[:, :, :, ::-1], (0, 1, 1), 3)
