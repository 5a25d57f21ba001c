"""Run classes (`classes_at`, `run_classes`) against the classes of every rank
(`step_classes`), and
`spread` against each rank's own sum over the steps: whole numbers exactly, fractions
to the float's last bits (math.fsum of the same terms)."""

import math

import numpy as np
import pytest
from linalg_io.models.rank_classes import classes_at, run_classes, spread, step_classes


def _rotating_features(steps: int, n: int, seed: int) -> list[np.ndarray]:
    """[step, rank] features that turn with a root (k mod n) plus a few fixed breaks,
    like a cyclic layout's: positions 0, 1, the last, and one more tile before m."""
    rng = np.random.default_rng(seed)
    k = np.arange(steps)[:, None]
    j = (np.arange(n)[None, :] - k) % n
    m = (steps - 1 - k) % n
    fixed = rng.integers(0, 2, n)[None, :]
    return [(j == 0) * 1.0 + (j == n - 1) * 2.0, ((j >= 1) & (j <= m)) * 1.0,
            np.broadcast_to(fixed * 1.0, (steps, n))]


@pytest.mark.parametrize("steps, n", [(1, 1), (7, 1), (12, 5), (40, 16), (33, 64)])
@pytest.mark.parametrize("how", ["classes_at", "run_classes"])
def test_run_classes_are_the_classes_of_every_rank(steps, n, how):
    features = _rotating_features(steps, n, steps * n)
    dense = step_classes(features)
    every = np.nonzero(np.ones((steps, n), dtype=bool))
    if how == "classes_at":
        runs = classes_at(steps, n, *every, lambda at, rank: [f[at, rank] for f in features])
    else:
        runs = run_classes(features)
    for k in range(steps):
        assert sorted(dense.rep[k][dense.count[k] > 0]) == sorted(runs.rep[k][runs.count[k] > 0])
        assert sorted(dense.count[k][dense.count[k] > 0]) == sorted(
            runs.count[k][runs.count[k] > 0])
        # the runs tile the ranks in order, each in the class of its features
        mine = runs.step == k
        assert runs.start[mine][0] == 0 and runs.end[mine][-1] == n
        assert (runs.start[mine][1:] == runs.end[mine][:-1]).all()
        assert (runs.of_run[mine][1:] != runs.of_run[mine][:-1]).all()   # runs merged
        for cls in np.flatnonzero(runs.count[k]):                        # lowest rank
            assert runs.rep[k, cls] == runs.start[mine][runs.of_run[mine] == cls].min()
        for start, end, cls in zip(runs.start[mine], runs.end[mine], runs.of_run[mine]):
            rep = runs.rep[k, cls]
            for f in features:
                assert (f[k, start:end] == f[k, rep]).all()


def _walk(values: np.ndarray, xs, ys) -> np.ndarray:
    """Each rank's terms over the steps, [layer, x, y, step]."""
    steps, layers = values.shape[:2]
    out = np.zeros((layers, xs.n, ys.n, steps))
    for run_x in range(len(xs.step)):
        for run_y in np.flatnonzero(ys.step == xs.step[run_x]):
            k = xs.step[run_x]
            out[:, xs.start[run_x]:xs.end[run_x], ys.start[run_y]:ys.end[run_y], k] = \
                values[k, :, xs.of_run[run_x], ys.of_run[run_y]][:, None, None]
    return out


@pytest.mark.parametrize("whole", [True, False], ids=["whole numbers", "fractions"])
def test_spread_is_each_ranks_sum_over_the_steps(whole):
    steps, px, py, layers = 29, 6, 16, 2
    xs = classes_at(steps, px, *np.nonzero(np.ones((steps, px), dtype=bool)),
                    lambda at, rank: [f[at, rank] for f in _rotating_features(steps, px, 1)])
    ys = classes_at(steps, py, *np.nonzero(np.ones((steps, py), dtype=bool)),
                    lambda at, rank: [f[at, rank] for f in _rotating_features(steps, py, 2)])
    rng = np.random.default_rng(3)
    values = rng.random((steps, layers, xs.size, ys.size)) * 1e9
    values[rng.random(values.shape) < 0.3] = 0.0
    values = np.round(values) if whole else values * 1e-3 + rng.random(values.shape) * 1e-7
    first_runs = np.searchsorted(xs.step, np.arange(steps))
    values[np.arange(steps), :, xs.of_run[first_runs]] = 0.0     # process row 0: nothing
    got = spread(values, xs, ys)
    terms = _walk(values, xs, ys)
    exact = np.vectorize(lambda *i: math.fsum(terms[i]))(*np.indices(got.shape))
    if whole:
        np.testing.assert_array_equal(got, exact)
    else:
        np.testing.assert_allclose(got, exact, rtol=4e-16, atol=0)
    # process row 0's ranks get exactly zero, beside ranks of large totals
    assert (terms[:, 0] == 0).all() and (got[:, 0] == 0).all() and got[:, 1:].min() > 1e3


@pytest.mark.parametrize("shape", [(1, 1, 5), (3, 9, 4), (2, 40, 33), (6, 7, 70)])
def test_summed_up_is_cumsum_bit_for_bit(shape):
    from linalg_io.models.rank_classes import _summed_up
    values = np.random.default_rng(sum(shape)).random(shape) * 1e3 - 400.0
    want = np.cumsum(np.cumsum(values, axis=1), axis=2)
    assert _summed_up(values.copy()).tobytes() == want.tobytes()
