"""The schedules' cost functions (linalg_io/layout/schedules.py) checked by hand, no MPI
(the collectives themselves on real jobs: test_collectives_mpi.py)."""

import numpy as np
import pytest

from linalg_io.layout import schedules


def test_binomial_tree_by_hand():
    """P = 8, root 0: rank 0 sends to 4, 2, 1; 4 to 6, 5; 2 to 3; 6 to 7."""
    sent, recv, msgs = schedules.bcast_costs(np.arange(8), 8, 80)
    assert msgs.tolist() == [3, 0, 1, 0, 2, 0, 1, 0]
    assert sent.tolist() == [240, 0, 80, 0, 160, 0, 80, 0]
    assert recv.tolist() == [0] + [80] * 7
    assert schedules.binomial_child_positions(0, 8) == [4, 2, 1]
    assert schedules.binomial_child_positions(6, 8) == [7]
    assert schedules.binomial_parent(6, 8) == 4
    assert schedules.binomial_child_positions(0, 5) == [4, 2, 1]


@pytest.mark.parametrize("p", [1000, 4096, 524289])
def test_cyclic_convolution_of_integers_is_exact(p):
    """`spectrum_of` and `cyclic_convolution` (NumPy's transforms below SCIPY_FFT_SIZE,
    SciPy's from it: P = 524289's are 2^21 long), rounded: the cyclic convolution of
    integer counts, term by term, as the sum of the rolled sequences gives it."""
    rng = np.random.default_rng(p)
    counts = np.zeros(p)
    roots = rng.choice(p, 5, replace=False)
    counts[roots] = rng.integers(1, 10**6, 5)
    children = rng.integers(0, 20, p).astype(float)
    want = sum(counts[s] * np.roll(children, s) for s in roots)
    got = np.rint(schedules.cyclic_convolution(
        schedules.spectrum_of(counts, p) * schedules.spectrum_of(children, p), p))
    assert (schedules.transform_size(p) >= schedules.SCIPY_FFT_SIZE) == (p > 4096)
    np.testing.assert_array_equal(got, want)
