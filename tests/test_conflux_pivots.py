"""The 2.5D LU model's expected pivots (`linalg_io.models.conflux_pivots`): the compiled
"uniform" loop (`linalg_io._kernels.conflux_pivots`) and the "proportional" one give,
bit for bit, what the NumPy loop step by step (tests/conflux_pivots_loop.py) gives; so
do the places where they change along the process rows (`pivot_changes`), and the
rows at a sample of steps (`pivots_at`: the tournament rerun from its kept states)."""

import hashlib

import numpy as np
import pytest
from conflux_pivots_loop import changes, expected_pivots
from linalg_io.models import conflux_pivots
from linalg_io.models.conflux_pivots import (
    _expected_changes,
    _expected_pivots,
    _tournament_states,
    most_changes,
    pivot_changes,
    pivot_counts,
    pivots_at,
    state_steps,
    tournament_run,
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


@pytest.mark.parametrize("n, v, px, pivots, pooled", [
    (3000 * 16 + 7, 16, 96, "uniform", 0),       # unequal rows: the tournament rerun
    (3000 * 16 + 7, 16, 96, "uniform", 5),       # ... and pooled
    (2000 * 16, 16, 3000, "uniform", 0),         # idle process rows
    (4096 * 8, 8, 64, "uniform", 0),             # every row alike: one column
    (3000 * 16 + 7, 16, 96, "proportional", 0),
    (3000 * 16 + 7, 16, 96, "none", 0),
    (3000 * 16 + 7, 16, 96, "ids", 0),           # a run's pivot ids
])
def test_pivots_at_some_steps_are_those_of_every_step(n, v, px, pivots, pooled):
    """The rows at steps across several kept states (a state's first step, its last,
    the very last step) are the full tables' rows bit for bit, their changes those of
    the full tables at those steps; the most changes at one step, the full count's."""
    assert_pivots_at(n, v, px, pivots, pooled)


def test_pivots_at_with_states_far_apart(monkeypatch):
    """Where the states would pass STATE_BYTES they are kept further apart (36 steps here,
    not 16): the rows at the sampled steps are still every step's."""
    monkeypatch.setattr(conflux_pivots, "STATE_BYTES", 1 << 16)
    _tournament_states.cache_clear()
    try:
        assert state_steps(3001, 96) == 36
        assert_pivots_at(3000 * 16 + 7, 16, 96, "uniform", 0)
    finally:
        _tournament_states.cache_clear()


def assert_pivots_at(n: int, v: int, px: int, pivots: str, pooled: int) -> None:
    plan = StepPlan.create(n, v, px, 1, 1)
    steps = plan.tiles.ntiles
    every = state_steps(steps, min(steps, px))
    assert steps > 2 * every
    if pivots == "ids":
        order = np.random.default_rng(3).permutation(n)
        pivots = [order[k * v:(k + 1) * v] for k in range(steps)]
    at = np.unique(np.r_[0, 5, every - 1, every, 2 * every + 3,
                        np.arange(7, steps, 97), steps - 2, steps - 1])
    active, owned = pivot_counts(plan, pivots, pooled)
    got_active, got_owned, (row, x) = pivots_at(plan, pivots, pooled, at)
    assert sha1(got_active) == sha1(active[at]) and sha1(got_owned) == sha1(owned[at])
    step, where = pivot_changes(plan, pivots, pooled)
    kept = np.isin(step, at)
    np.testing.assert_array_equal(at[row], step[kept])
    np.testing.assert_array_equal(x, where[kept])
    if not pooled:
        assert most_changes(plan, pivots) == (np.bincount(step).max() if len(step) else 0)
    if not pooled and isinstance(pivots, str) and tournament_run(n, v, px, pivots):
        # the kernel's count per step as the tournament runs: the full tables' changes;
        # the states only as wide as the process rows holding rows
        states, differing = _tournament_states(n, v, px)
        np.testing.assert_array_equal(differing, np.bincount(step, minlength=steps))
        assert states.shape == (-(-steps // every), min(steps, px))
