"""Pure index math: grid shapes and the element-wise matrix generator."""

import numpy as np
import pytest

from linalg_io.errors import InputError
from linalg_io.layout.generate import matrix_entries, vector_entries
from linalg_io.layout.grid_shapes import parse_grid, square_2d


@pytest.mark.parametrize("p,shape", [(1, (1, 1)), (4, (2, 2)), (6, (2, 3)), (7, (1, 7)),
                                     (12, (3, 4)), (64, (8, 8))])
def test_square_2d(p, shape):
    assert square_2d(p) == shape


def test_parse_grid_checks_rank_count():
    assert parse_grid("2x3", 6, 2) == (2, 3)
    assert parse_grid("2x2", 4, 3) == (2, 2, 1)
    with pytest.raises(InputError, match="needs 6 ranks but the job has 4"):
        parse_grid("2x3", 4, 2)
    with pytest.raises(InputError, match="form"):
        parse_grid("2by2", 4, 2)


def test_generator_is_distribution_independent():
    n = 37
    whole = matrix_entries("random", 5, n, np.arange(n), np.arange(n))
    rows, cols = np.array([3, 30, 11]), np.array([36, 0])
    assert np.array_equal(matrix_entries("random", 5, n, rows, cols), whole[np.ix_(rows, cols)])
    assert -0.5 <= whole.min() and whole.max() < 0.5
    assert abs(whole.mean()) < 0.05
    assert not np.array_equal(whole, matrix_entries("random", 6, n, np.arange(n), np.arange(n)))
    b = vector_entries(5, n, np.arange(n))
    assert b.shape == (n,) and not np.array_equal(b, whole[:, 0])


def test_diagdom_needs_no_pivoting():
    import scipy.linalg

    n = 50
    a = matrix_entries("diagdom", 1, n, np.arange(n), np.arange(n))
    _, piv = scipy.linalg.lu_factor(a)
    assert np.array_equal(piv, np.arange(n))
