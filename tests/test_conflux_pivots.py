"""The 2.5D LU model's expected pivots (`linalg_io.models.conflux_pivots`): the compiled
"uniform" loop (`linalg_io._kernels.conflux_pivots`) and the "proportional" one give,
bit for bit, what the NumPy loop step by step (tests/conflux_pivots_loop.py) gives."""

import hashlib

import numpy as np
import pytest
from conflux_pivots_loop import expected_pivots
from linalg_io.models.conflux_pivots import _expected_pivots


def sha1(array: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(array).tobytes()).hexdigest()


# (N, v, Px): a few steps to 23172; Px below, at and above N/v; process rows with
# unequal tile counts (where a power-of-two Px takes the tree, not the even split)
CASES = [(n, v, px) for px in (3, 5, 6, 7, 12, 100, 512, 1000)
         for n, v in ((200, 64), (1000, 128), (5 * 256 - 31, 256), (40 * 64 + 1, 64))]
CASES += [(96 * 32 - 5, 32, 2048), (8 * 128, 128, 16384), (23172 * 8 - 3, 8, 3),
          (1000 * 16 + 7, 16, 512), (300 * 16, 16, 1000)]
# the NumPy loop takes seconds on each
LONG = [(23172 * 8, 8, 12), (4000 * 16 + 7, 16, 512), (512 * 64 + 3, 64, 16384)]


def assert_matches(cases: list, pivots: str) -> None:
    for n, v, px in cases:
        active, owned = _expected_pivots(n, v, px, pivots)
        reference = expected_pivots(n, v, px, pivots)
        assert (sha1(active), sha1(owned)) == tuple(map(sha1, reference)), (n, v, px)


@pytest.mark.parametrize("pivots", ["uniform", "proportional"])
def test_expected_pivots_match_the_numpy_loop(pivots):
    assert_matches(CASES, pivots)


@pytest.mark.slow
def test_long_and_wide_expected_pivots_match_the_numpy_loop():
    assert_matches(LONG, "uniform")
