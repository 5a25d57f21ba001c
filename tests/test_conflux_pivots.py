"""The 2.5D LU model's expected pivots (`linalg_io.models.conflux_pivots`): the compiled
"uniform" loop (`linalg_io._kernels.conflux_pivots`) and the "proportional" one give,
bit for bit, what the NumPy loop step by step (tests/conflux_pivots_loop.py) gives; so
do the places where they change along the process rows (`pivot_changes`)."""

import hashlib

import numpy as np
import pytest
from conflux_pivots_loop import changes, expected_pivots
from linalg_io.models.conflux_pivots import (
    _expected_changes,
    _expected_pivots,
    pivot_changes,
    pivot_counts,
)

from linalg_io.layout.conflux_layout import StepPlan


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
        step, row = _expected_changes(n, v, px, pivots)
        want = changes(*reference)
        if active.strides[1] == owned.strides[1] == 0:     # alike on every process row
            assert len(want[0]) == 0
        assert (step.dtype, row.dtype) == (want[0].dtype, want[1].dtype)
        assert (sha1(step), sha1(row)) == tuple(map(sha1, want)), (n, v, px)


@pytest.mark.parametrize("pivots", ["uniform", "proportional"])
def test_expected_pivots_match_the_numpy_loop(pivots):
    assert_matches(CASES, pivots)


@pytest.mark.slow
def test_long_and_wide_expected_pivots_match_the_numpy_loop():
    assert_matches(LONG, "uniform")


def test_pivot_changes_of_a_run_and_of_none():
    """Pivot ids of a run (rows drawn at random) and "none": the masks' places."""
    rng = np.random.default_rng(5)
    for n, v, px, py in ((1000, 64, 3, 2), (2048, 128, 4, 1), (700, 32, 12, 1)):
        plan = StepPlan.create(n, v, px, py, 1)
        order = rng.permutation(n)
        ids = [order[k * v:(k + 1) * v] for k in range(plan.tiles.ntiles)]
        for pivots in (ids, "none"):
            step, row = pivot_changes(plan, pivots)
            want = changes(*pivot_counts(plan, pivots))
            assert len(want[0]) > 0 and (sha1(step), sha1(row)) == tuple(map(sha1, want))
