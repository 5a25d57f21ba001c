"""`step_classes` against its definition, run classes (`classes_at`, `run_classes`)
against the classes of every rank (`step_classes`), and
`spread` against each rank's own sum over the steps: whole numbers exactly, fractions
to the float's last bits (math.fsum of the same terms)."""

import math

import numpy as np
import pytest
from linalg_io.models.rank_classes import (
    KIND_TABLE,
    _kinds,
    classes_at,
    run_classes,
    spread,
    step_classes,
)


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


@pytest.mark.parametrize("steps, n", [(1, 1), (3, 7), (5, 200)])
def test_step_classes_are_the_ranks_of_equal_features(steps, n):
    """Each step's classes are its distinct feature tuples (small integers: no two sum
    alike), numbered in the order of their sorted keys from 0, each one's
    representative its lowest rank, its count its ranks; features of any strides
    (broadcast along the steps), bool and constant ones among them."""
    rng = np.random.default_rng(steps * n)
    features = [rng.integers(0, 3, (steps, n)) * 1.0, rng.integers(0, 2, (steps, n)) > 0,
                np.broadcast_to(rng.integers(0, 4, (1, n)) * 1.0, (steps, n)),
                np.full((steps, n), 2.0)]
    got = step_classes(features)
    for k in range(steps):
        tuples = [tuple(float(f[k, x]) for f in features) for x in range(n)]
        distinct = sorted(set(tuples), key=tuples.index)
        assert (got.count[k] > 0).sum() == len(distinct)
        for members in ([x for x in range(n) if tuples[x] == t] for t in distinct):
            c = got.of[k, members[0]]
            assert (got.of[k, members] == c).all()
            assert got.rep[k, c] == members[0] and got.count[k, c] == len(members)
        assert got.count[k].sum() == n


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


@pytest.mark.parametrize("steps, n", [(1, 1), (1, 2), (4, 9), (6, 300)])
def test_run_classes_number_the_classes_as_step_classes(steps, n):
    """`run_classes`' runs (found by comparing neighbours) carry `step_classes`' own
    class numbers, representatives and counts: features of any strides, bool, constant
    on every rank, constant along each step, and in long runs among them."""
    rng = np.random.default_rng(7 * steps + n)
    features = [np.repeat(rng.integers(0, 3, (steps, -(-n // 25))), 25, axis=1)[:, :n] * 1.0,
                rng.integers(0, 9, (steps, n)) > 6,
                np.broadcast_to(rng.integers(0, 4, (1, n)) * 1.0, (steps, n)),
                np.broadcast_to(rng.integers(0, 4, (steps, 1)) * 1.0, (steps, n)),
                np.full((steps, n), 2.0)]
    dense = step_classes(features)
    runs = run_classes(features)
    assert np.array_equal(runs.rep, dense.rep) and np.array_equal(runs.count, dense.count)
    for step, start, end, cls in zip(runs.step, runs.start, runs.end, runs.of_run):
        assert (dense.of[step, start:end] == cls).all()
        assert start == 0 or dense.of[step, start - 1] != cls


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


def _every_rank(steps: int, n: int, seed: int):
    """`classes_at` of n ranks over the steps, every rank a break, from
    `_rotating_features`."""
    return classes_at(steps, n, *np.nonzero(np.ones((steps, n), dtype=bool)),
                      lambda at, rank: [f[at, rank] for f in _rotating_features(steps, n, seed)])


@pytest.mark.parametrize("whole", [True, False], ids=["whole numbers", "fractions"])
def test_spread_is_each_ranks_sum_over_the_steps(whole):
    steps, px, py, layers = 29, 6, 16, 2
    xs, ys = _every_rank(steps, px, 1), _every_rank(steps, py, 2)
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


@pytest.mark.parametrize("whole", [True, False], ids=["whole numbers", "fractions"])
def test_spread_merges_a_rows_runs_where_its_values_do_not_change(whole):
    """Steps of more pairs of runs than a share of the ranks: a row whose values there
    vary along one axis only (or at some steps only) goes in as the corners of its
    merged runs, the others on every rank; each rank's sum is its own, exactly
    (whole numbers) or to the last bits."""
    from linalg_io.models.rank_classes import DENSE_SHARE, BlockSpread
    steps, px, py, layers = 29, 6, 16, 2
    xs, ys = _every_rank(steps, px, 4), _every_rank(steps, py, 5)
    rng = np.random.default_rng(9)
    shape = (steps, layers, xs.size, ys.size)
    values = rng.random((4, *shape)) * 1e9
    values = np.round(values) if whole else values * 1e-3 + rng.random(values.shape) * 1e-7
    values[1] = values[1, ..., :1]                 # along x only
    values[2] = values[2, ..., :1, :]              # along y only
    values[3, ::2] = values[3, ::2, ..., :1]       # along x only at every other step
    got = spread(values, xs, ys)
    for row in range(4):
        terms = _walk(values[row], xs, ys)
        exact = np.vectorize(lambda *i, terms=terms: math.fsum(terms[i]))(
            *np.indices(got[row].shape))
        if whole:
            np.testing.assert_array_equal(got[row], exact)
        else:
            np.testing.assert_allclose(got[row], exact, rtol=4e-16, atol=0)
    whole_spread = BlockSpread(xs, ys)
    whole_spread.add(values)
    dense = np.flatnonzero(whole_spread.pairs * DENSE_SHARE > px * py)
    merged = [len(whole_spread._merged(row, dense)[0]) for row in range(8)]
    assert len(dense) > 20 and merged[:2] == [0, 0] and min(merged[2:6]) == len(dense)
    assert 0 < merged[6] < len(dense)


@pytest.mark.parametrize("shape", [(1, 1, 5), (3, 9, 4), (2, 40, 33), (6, 7, 70)])
def test_summed_up_is_cumsum_bit_for_bit(shape):
    from linalg_io.models.rank_classes import _summed_up
    values = np.random.default_rng(sum(shape)).random(shape) * 1e3 - 400.0
    want = np.cumsum(np.cumsum(values, axis=1), axis=2)
    assert _summed_up(values.copy()).tobytes() == want.tobytes()


@pytest.mark.parametrize("rows, steps, px, py, lines", [
    (1, 1, 1, 1, 1), (3, 5, 17, 9, 4), (2, 11, 40, 33, 6), (1, 3, 3, 40000, 2),
    (2, 6, 2, 140000, 3)])
def test_add_dense_is_a_pass_over_every_rank_per_step_bit_for_bit(rows, steps, px, py, lines):
    """`BlockSpread.totals`' dense steps: at each step in order, every rank's value
    (its process row's line, its column's place in it) split into the multiple of u
    nearest it and the rest, each added to its sums, as one NumPy pass over all ranks
    per step made them (tiles of whole process rows, and of part of one where Py is
    large; steps added a few at once, and the rest); a row of whole numbers adds no
    remainders, nor, in the last row, the lines of its first steps."""
    from linalg_io._kernels.lu2d_points import add_dense
    rng = np.random.default_rng(rows * steps + px * py)
    widths = rng.integers(1, 12, steps)
    offsets = np.cumsum([0] + [lines * w for w in widths])
    stored = (rng.random((rows, offsets[-1])) - 0.3) * 1e6
    stored[0] = np.round(stored[0])            # whole numbers: remainders 0
    stored[-1, :offsets[steps // 2]] = np.round(stored[-1, :offsets[steps // 2]])
    x_line = rng.integers(0, lines, (steps, px))
    line_at = offsets[:-1, None] + np.arange(lines)[None, :] * widths[:, None]
    y_off = (rng.random((steps, py)) * widths[:, None]).astype(np.int64)
    units = 2.0 ** rng.integers(-30, -10, rows).astype(float)
    highs = np.round(rng.random((rows, px * py)) * 1e9 / units[:, None]) * units[:, None]
    lows = rng.random((rows, px * py)) * 1e-3
    want_highs, want_lows = highs.copy(), lows.copy()
    for s in range(steps):
        at = line_at[s, x_line[s]][:, None] + y_off[s][None, :]
        grid = stored[:, at.reshape(-1)]
        high = np.round(grid / units[:, None]) * units[:, None]
        want_highs += high
        want_lows += grid - high
    add_dense(highs, lows, stored, x_line, line_at, widths, y_off, units)
    assert highs.tobytes() == want_highs.tobytes()
    assert lows.tobytes() == want_lows.tobytes()


@pytest.mark.parametrize("two, summed, placed", [(False, False, False), (True, False, True),
                                                 (False, True, False), (True, True, True)])
def test_add_differences_is_the_numpy_passes_bit_for_bit(two, summed, placed):
    """`_differences`' sums of a row: the pairs' terms (one index or a difference of two),
    each x edge's first pair's term and the others' difference to the pair before, the
    sums per touched cell (np.bincount) or per pair, added to the row at `at` (or in
    order), as the NumPy passes it replaced gave them."""
    from linalg_io._kernels.lu2d_points import add_differences
    from linalg_io.models.rank_classes import NONE
    rng = np.random.default_rng(7 + 2 * two + summed)
    per_edge = rng.integers(1, 9, 40)
    first = np.cumsum(per_edge) - per_edge
    pairs = int(per_edge.sum())
    values = rng.random(500) * 1e3 - 400.0
    above = rng.integers(0, 500, pairs)
    below = rng.integers(0, 500, pairs) if two else NONE
    touched = 60 if summed else pairs
    local = rng.integers(0, touched, pairs) if summed else NONE
    at = rng.permutation(touched + 5)[:touched] if placed else NONE
    row = rng.random(touched + 5 if placed else touched) * 1e6
    terms = values[above] - values[below] if two else values[above]
    weights = np.empty_like(terms)
    np.subtract(terms[1:], terms[:-1], out=weights[1:])
    weights[first] = terms[first]
    if summed:
        weights = np.bincount(local, weights=weights, minlength=touched)
    want = row.copy()
    where = at if placed else slice(None)
    want[where] = want[where] + weights
    add_differences(values, above, below, first, per_edge, local, touched, row, at)
    assert row.tobytes() == want.tobytes()


def test_changed_runs_compares_lines_and_columns():
    """Whether each run after a step's first has other values than the run before it:
    an x run its line, a y run its column (over the lines of the x runs that change,
    the same as over every line); steps not asked about left as they were."""
    from linalg_io._kernels.lu2d_points import changed_runs
    rng = np.random.default_rng(12)
    lines, widths = np.array([5, 3, 4]), np.array([6, 2, 5])
    line_first = np.r_[0, np.cumsum(lines * widths)[:-1]]
    stored = np.round(rng.random(int((lines * widths).sum())) * 2)
    stored[line_first[0]:line_first[0] + 6] = -0.0          # line 0 of step 0 ...
    stored[line_first[0] + 6:line_first[0] + 12] = 0.0      # ... alike line 1
    x_runs, y_runs = np.array([7, 4, 6]), np.array([9, 3, 8])
    x_key = np.concatenate([rng.integers(0, n, k) for n, k in zip(lines, x_runs)])
    y_key = np.concatenate([rng.integers(0, w, k) for w, k in zip(widths, y_runs)])
    x_key[:3], y_key[:3] = [0, 1, 1], [2, 2, 0]
    x_first, y_first = np.r_[0, np.cumsum(x_runs)[:-1]], np.r_[0, np.cumsum(y_runs)[:-1]]
    x_changed, y_changed = np.full(len(x_key), 7, np.uint8), np.full(len(y_key), 7, np.uint8)
    steps = np.array([0, 2])
    changed_runs(stored, steps, x_first, x_runs, x_key, y_first, y_runs, y_key, line_first,
                 lines, widths, x_changed, y_changed)
    for s in range(3):
        grid = stored[line_first[s]:line_first[s] + lines[s] * widths[s]].reshape(
            lines[s], widths[s])
        xk = x_key[x_first[s]:x_first[s] + x_runs[s]]
        yk = y_key[y_first[s]:y_first[s] + y_runs[s]]
        got_x = x_changed[x_first[s]:x_first[s] + x_runs[s]]
        got_y = y_changed[y_first[s]:y_first[s] + y_runs[s]]
        if s not in steps:
            assert (got_x == 7).all() and (got_y == 7).all()
            continue
        assert got_x[0] == 7 and got_y[0] == 7
        assert (got_x[1:] == (grid[xk[1:]] != grid[xk[:-1]]).any(axis=1)).all()
        assert (got_y[1:] == (grid[:, yk[1:]] != grid[:, yk[:-1]]).any(axis=0)).all()
    assert x_changed[1] == 0 and x_changed[2] == 0 and y_changed[1] == 0
    assert 0 < x_changed[1:7].sum() and 0 < y_changed[y_first[2] + 1:].sum()


def test_mark_terms_is_the_numpy_comparison():
    """`_weighted_pairs`' kinds of pairs whose term is not 0 in some row: a difference of
    two values of a row (equal values, opposite zeros and NaN among them), those marked
    before left marked."""
    from linalg_io._kernels.lu2d_points import mark_terms
    rng = np.random.default_rng(11)
    values = np.round(rng.random((3, 40)) * 3) - 1.0
    values[1, :5], values[2, 5] = -0.0, np.nan
    right, left = rng.integers(0, 40, 300), rng.integers(0, 40, 300)
    marked = np.zeros(300, dtype=np.uint8)
    marked[:7] = 1
    want = marked.astype(bool) | (values[:, right] - values[:, left] != 0).any(axis=0)
    mark_terms(values, right, left, marked)
    assert np.array_equal(marked.astype(bool), want) and 0 < want.sum() < 300
    with pytest.raises(ValueError, match="mark_terms"):
        mark_terms(values, right, left[:-1], marked)


def _runs(rng, n: int, steps: int) -> tuple:
    """Random runs of consecutive ranks of n per step: (first, runs, start, end)."""
    starts = [np.r_[0, np.sort(rng.choice(np.arange(1, n), rng.integers(0, min(n, 6)),
                                           replace=False))] for _ in range(steps)]
    runs = np.array([len(x) for x in starts])
    start = np.concatenate(starts)
    end = np.concatenate([np.r_[x[1:], n] for x in starts])
    return np.r_[0, np.cumsum(runs)[:-1]], runs, start, end


@pytest.mark.parametrize("px, py, steps, cells", [(1, 1, 3, False), (5, 7, 6, True),
                                                  (33, 64, 9, False), (33, 64, 9, True)])
def test_add_corners_is_the_second_differences_bit_for_bit(px, py, steps, cells):
    """`BlockSpread.totals`' corners: per row and step (of those handed in, in order),
    each pair's value (its classes' cell among its step's own classes, or its own)
    split into the multiple of u nearest it and the rest, the grid of the step's pairs'
    second differences of each (along x, then y: np.diff with a 0 before) added at the
    pairs' first corners, in order, where not 0 (a row of whole numbers: no rests); and,
    summed up, each rank's own values' sum."""
    from linalg_io._kernels.lu2d_points import add_corners
    from linalg_io.models.rank_classes import _summed_up
    rng = np.random.default_rng(px * py + steps)
    x_first, x_runs, x0, x1 = _runs(rng, px, steps)
    y_first, y_runs, y0, y1 = _runs(rng, py, steps)
    pairs = x_runs * y_runs
    pair_first = np.r_[0, np.cumsum(pairs)[:-1]]
    x_step, y_step = np.repeat(np.arange(steps), x_runs), np.repeat(np.arange(steps), y_runs)
    if cells:
        # each step its own classes: lines of its y classes, one per x class
        nx, ny = rng.integers(1, 8, steps), rng.integers(1, 7, steps)
        x_key = (rng.random(len(x0)) * nx[x_step]).astype(np.int64)
        y_key = (rng.random(len(y0)) * ny[y_step]).astype(np.int64)
        widths, sizes = ny, nx * ny
        line_first = np.cumsum(sizes) - sizes
    else:
        x_key, y_key = np.arange(len(x0)) - x_first[x_step], np.arange(len(y0)) - y_first[y_step]
        widths, line_first, sizes = y_runs, pair_first, pairs
    stored = (rng.random((3, sizes.sum())) - 0.3) * 1e6
    stored[rng.random(stored.shape) < 0.2] = 0.0
    stored[1] = np.round(stored[1])                    # whole numbers: no remainders
    units = 2.0 ** np.array([-20.0, -18.0, -21.0])
    rows = np.array([1, 2])                            # row 0 left out: stays as it is
    taken = np.array([s for s in range(steps) if s % 3 != 1], dtype=np.int64)
    # sums so far: multiples of u in `highs` (whose sums are then exact in any order)
    highs = np.round(rng.random((3, px * py)) * 1e9 / units[:, None]) * units[:, None]
    lows = rng.random((3, px * py)) * 1e-3
    want_highs, want_lows = highs.copy(), lows.copy()
    own = np.zeros((3, px, py))
    for r in rows:
        for k in taken:
            a = np.arange(x_first[k], x_first[k] + x_runs[k])
            b = np.arange(y_first[k], y_first[k] + y_runs[k])
            place = (line_first[k] + x_key[a][:, None] * widths[k] + y_key[b][None, :]
                     if cells else pair_first[k] + np.arange(pairs[k]).reshape(len(a), len(b)))
            value = stored[r, place]
            high = np.round(value / units[r]) * units[r]
            where = (x0[a][:, None] * py + y0[b][None, :]).ravel()
            for want, part in ((want_highs[r], high), (want_lows[r], value - high)):
                second = np.diff(np.diff(part, axis=0, prepend=0.0), axis=1, prepend=0.0)
                for at, term in zip(where, second.ravel()):
                    if term != 0.0:
                        want[at] += term
            for i, j in np.ndindex(value.shape):
                own[r, x0[a[i]]:x1[a[i]], y0[b[j]]:y1[b[j]]] += value[i, j]
    start_highs, start_lows = highs.copy(), lows.copy()
    add_corners(highs, lows, stored, rows, taken, x_first, x_runs, y_first, y_runs,
                line_first, widths, x0, y0, x_key, y_key, units, px)
    assert highs.tobytes() == want_highs.tobytes()
    assert lows.tobytes() == want_lows.tobytes()
    # the differences alone, summed up: each rank's own values (whole: exactly)
    added = _summed_up(np.stack([highs - start_highs, lows - start_lows]).reshape(2 * 3, px, py))
    totals = added[:3] + added[3:]
    assert totals[0].tobytes() == np.zeros((px, py)).tobytes()
    assert totals[1].tobytes() == own[1].tobytes()
    np.testing.assert_allclose(totals[2], own[2], rtol=1e-9, atol=1e-6)


def test_add_at_is_the_flat_index_add_bit_for_bit():
    """`Spreading.add`'s sums at the cells a call touches: each live row's
    `total[at] = total[at] + added` (NumPy's gather, add and scatter), the rows left
    out untouched; rows and values that do not match refused."""
    from linalg_io._kernels.lu2d_points import add_at
    rng = np.random.default_rng(11)
    totals = rng.random((5, 300)) * 1e9
    rows = np.array([4, 0, 2])
    at = rng.permutation(300)[:77]
    added = rng.random((3, 77)) * 1e-3 - 4e-4
    want = totals.copy()
    for row, values in zip(rows, added):
        want[row][at] = want[row][at] + values
    add_at(totals, rows, added, at)
    assert totals.tobytes() == want.tobytes()
    with pytest.raises(ValueError):
        add_at(totals, rows[:2], added, at)


@pytest.mark.parametrize("size, count", [(40, 10_000), (1000, 300), (10**6, 50), (7, 0)])
def test_kinds_are_numpys_unique_with_its_inverse(size, count):
    # a table where the keys are many and their range short (the edges of a step on an
    # axis of many ranks), a sort where the range is long: both np.unique's answer
    keys = np.random.default_rng(size).integers(0, size, count)
    kinds, inverse = _kinds(keys, size)
    want_kinds, want_inverse = np.unique(keys, return_inverse=True)
    assert (size <= KIND_TABLE * count) == (count >= 300)
    np.testing.assert_array_equal(kinds, want_kinds)
    np.testing.assert_array_equal(inverse, want_inverse)
    assert kinds.dtype == want_kinds.dtype and inverse.dtype == want_inverse.dtype
