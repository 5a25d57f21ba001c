"""The 2D model's counts over runs of equal ranks (models/lu2d_runs.py) against the code
they replaced, frozen in tests/lu2d_reference.py (models/lu2d.py at 85a8d70, [step,
process row] arrays): at P = 16384 on tall, flat, square and intermediate grids, every
pivoting, every rank's bytes, messages and flops, by phase and by link; whole numbers
exactly, fractions (expected pivoting, flops) within 1e-12 of the array's largest
entry. And at sizes the frozen code needs minutes and gigabytes for (model lu's 4096 x 1
grid at N = 524288, worst case), the figures it gave, stored."""

import numpy as np
import pytest
from linalg_io.models.lu2d import (
    PHASES,
    lu2d_costs,
    lu2d_links,
    lu2d_phase_links,
    lu2d_plan_counts,
    lu2d_received,
)
from linalg_io.models.lu2d_runs import (
    Block,
    Jumps,
    bruck_at,
    bruck_misses,
    column_sum,
    outer_sum,
    piece_ends,
    run_counts,
    window_holds,
    window_sums,
)
from linalg_io.models.profile import load_profile
from lu2d_reference import lu2d_phase_links as reference_links
from lu2d_reference import lu2d_plan_counts as reference_counts

from linalg_io.layout.schedules import (
    allgatherv_costs,
    allgatherv_one_costs,
    bruck_messages,
    bruck_rounds,
)

CPU = load_profile("example_cpu")
RTOL = 1e-12


def assert_same(new, old, exact: bool, what: str) -> None:
    new, old = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    assert new.shape == old.shape, what
    if exact:
        np.testing.assert_array_equal(new, old, err_msg=what)
    else:
        np.testing.assert_allclose(new, old, rtol=0, atol=RTOL * np.abs(old).max(),
                                   err_msg=what)


@pytest.mark.parametrize("pr", [16384, 2048, 128, 8, 1])
def test_counts_and_links_equal_the_frozen_code_at_p16384(pr):
    p, pc = 16384, 16384 // pr
    placement = CPU.placement(p)
    for n, nb, pivoting in ((20000, 64, "worst"), (20000, 64, "none"), (9000, 100, "expected"),
                            (9000, 100, "worst")):
        if (pr, n, pivoting) == (16384, 20000, "none"):   # the frozen links' slowest case:
            continue            # N = 20000 unpivoted on the other grids, worst case on this
        exact = pivoting != "expected"
        what = f"N={n} NB={nb} {pr}x{pc} {pivoting}"
        new, old = (f(n, nb, pr, pc, pivoting) for f in (lu2d_plan_counts,
                                                          reference_counts))
        for key in ("sent", "recv", "msgs_by_phase"):
            for phase in PHASES:
                assert_same(new[key][phase], old[key][phase], exact,
                            f"{key} {phase}, {what}")
        for part in ("panel", "solve", "dgemm"):
            assert_same(new["flops_by_phase"][part],
                        np.broadcast_to(old["flops_by_phase"][part], (pr, pc)), False,
                        f"flops {part}, {what}")
        new_links, old_links = (f(n, nb, pr, pc, pivoting, placement)
                                for f in (lu2d_phase_links, reference_links))
        assert new_links.keys() == old_links.keys()
        for phase, links in old_links.items():
            assert new_links[phase].keys() == links.keys(), (phase, what)
            for key, parts in links.items():
                for i, (a, b) in enumerate(zip(new_links[phase][key], parts)):
                    assert_same(a, b, exact, f"links {phase} {key} {i}, {what}")


# made with the frozen code (tests/lu2d_reference.py, /tmp script): for each case
# `c = lu2d_reference.lu2d_costs(*case)`, then the max and sum of c.bytes_recv,
# c.bytes_sent, c.msgs_sent and the max of c.flops (the first took it 479 s and 2.5 GiB
# on a loaded 2-core machine; the new code well under 10 s)
FROZEN = [
    ((524288, 64, 4096, 1, "worst"), [4128059221278720.0, 1.6908530570357637e+19,
                                      4355942677839872.0, 1.6908530570357637e+19, 6393842.0,
                                      26110854485.0, 39578481546581.336]),
    ((524288, 128, 64, 64, "worst"), [1116437478912.0, 4504374598434816.0, 1116436299264.0,
                                      4504374598434816.0, 96270.0, 392429772.0,
                                      24275043308885.332]),
    ((262144, 64, 16, 1024, "expected"), [17630252316.977848, 286662550259094.25,
                                          17629460193.78367, 286662550259094.25, 39761.0,
                                          609343143.0, 863925611178.6666]),
]


@pytest.mark.parametrize("case, figures", FROZEN, ids=["4096x1", "64x64", "16x1024"])
def test_counts_at_scale_equal_the_frozen_figures(case, figures):
    costs = lu2d_costs(*case)
    got = [f(a) for a in (costs.bytes_recv, costs.bytes_sent, costs.msgs_sent)
           for f in (np.max, np.sum)] + [costs.flops.max()]
    exact = case[-1] != "expected"
    for name, new, old in zip(("recv max", "recv sum", "sent max", "sent sum", "msgs max",
                               "msgs sum", "flops max"), got, figures):
        if exact and name != "flops max" and not name.endswith("sum"):
            assert new == old, (case, name)
        else:   # sums over 2^12 .. 2^22 ranks in another order; fractions
            assert new == pytest.approx(old, rel=RTOL), (case, name)


def test_outer_sum_of_runs_is_the_sum_of_outer_products():
    rng = np.random.default_rng(3)
    steps, pr, pc = 40, 13, 7
    row_values, col_values = rng.integers(0, 9, (steps, 4)), rng.integers(0, 9, (steps, 3))
    row_starts = np.sort(rng.integers(0, pr + 1, (steps, 4)), axis=1)
    row_starts[:, 0] = 0
    col_starts = np.sort(rng.integers(0, pc + 1, (steps, 3)), axis=1)
    col_starts[:, 0] = 0

    def dense(starts, values, size):     # each rank takes the value of the run it is in
        run = (np.arange(size)[None, :, None] >= starts[:, None, :]).sum(axis=2) - 1
        return np.take_along_axis(values, run, axis=1).astype(float)

    expected = dense(row_starts, row_values, pr).T @ dense(col_starts, col_values, pc)
    got = outer_sum(Jumps.of_runs(row_starts, row_values),
                    Jumps.of_runs(col_starts, col_values), pr, pc)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("pr, pc", [(4, 6), (8, 8), (1, 5), (6, 1), (12, 3)])
def test_outer_sum_by_period_equals_every_pair(pr, pc):
    # runs whose starts repeat with k mod Pr (rows) and k mod Pc (columns), some steps
    # off the period, sparse blocks and zero jumps: the sums over the residues first
    # (two or more steps each) give the sum of the outer products, exactly
    rng = np.random.default_rng(pr * 10 + pc)
    period = int(np.lcm(pr, pc))
    steps = 3 * period + 2
    k = np.arange(steps)

    def runs(size, count, shift):        # starts cut at k + shift mod size, and 0
        starts = np.sort((k[:, None] + shift[None, :]) % (size + 1), axis=1)
        starts[:, 0] = 0
        return starts, rng.integers(-4, 9, (steps, count))

    row_starts, row_values = runs(pr, 4, rng.integers(0, pr + 1, 4))
    col_starts, col_values = runs(pc, 3, rng.integers(0, pc + 1, 3))
    row_values[rng.random(steps) < 0.3, 1:] = row_values[0, 0]      # zero jumps
    row_starts[-1, 1:] = np.sort(rng.integers(0, pr + 1, 3))        # off the period
    col_starts[period + 1, 1:] = np.sort(rng.integers(0, pc + 1, 2))
    some = np.sort(rng.choice(steps, steps // 3, replace=False))
    sparse_at = rng.integers(0, pr + 1, (len(some), 2))
    sparse_delta = rng.integers(-3, 4, (len(some), 2)).astype(float)
    rows = Jumps.join(Jumps.of_runs(row_starts, row_values),
                      Jumps((Block(some, sparse_at, sparse_delta),)))
    dense_rows = _dense_runs(row_starts, row_values, pr).astype(float)
    for i, step in enumerate(some):
        for at, delta in zip(sparse_at[i], sparse_delta[i]):
            dense_rows[step, at:] += delta
    dense_cols = _dense_runs(col_starts, col_values, pc).astype(float)
    np.testing.assert_array_equal(
        outer_sum(rows, Jumps.of_runs(col_starts, col_values), pr, pc),
        dense_rows.T @ dense_cols)
    column = rng.integers(0, pc, steps)
    np.testing.assert_array_equal(column_sum(rows, column, pr, pc),
                                  dense_rows.T @ (column[:, None] == np.arange(pc)))


@pytest.mark.parametrize("n, nb, pr, pc", [(1000, 16, 4, 8), (777, 10, 6, 5),
                                           (3000, 32, 1, 7), (2500, 24, 9, 1),
                                           (6000, 64, 32, 8)])
def test_received_and_record_links_are_the_full_counts(n, nb, pr, pc):
    # lu2d_received: the plan counts' "recv" bit for bit; lu2d_costs' links (its counts
    # handed on) those of lu2d_links counting afresh, ranks sharing cores or not
    pivots = np.random.default_rng(5).integers(np.arange(n), n)
    for pivoting in ("expected", "none", "worst", pivots):
        full = lu2d_plan_counts(n, nb, pr, pc, pivoting)["recv"]
        received = lu2d_received(n, nb, pr, pc, pivoting)
        for phase in PHASES:
            np.testing.assert_array_equal(received[phase], full[phase], err_msg=phase)
        costs = lu2d_costs(n, nb, pr, pc, pivoting)
        for profile in (CPU, CPU.for_run(4)):
            placement = profile.placement(pr * pc)
            fresh = lu2d_links(n, nb, pr, pc, pivoting, placement)
            handed = costs.links_at(placement)
            assert handed.keys() == fresh.keys()
            for key, parts in fresh.items():
                for a, b in zip(handed[key], parts):
                    np.testing.assert_array_equal(a, b, err_msg=str(key))


def _dense_runs(starts, values, size):
    """Each rank's value: that of the run it is in."""
    run = (np.arange(size)[None, :, None] >= starts[:, None, :]).sum(axis=2) - 1
    return np.take_along_axis(values, run, axis=1)


@pytest.mark.parametrize("p", [1, 2, 5, 8, 13, 64])
def test_bruck_misses_window_holds_and_sums_equal_the_schedules(p):
    rng = np.random.default_rng(p)
    steps = 60
    starts = np.sort(rng.integers(0, p + 1, (steps, 5)), axis=1)
    starts[:, 0] = 0
    nonempty = rng.random((steps, 5)) < 0.4
    dense = _dense_runs(starts, nonempty, p)
    dense[np.arange(steps), rng.integers(0, p, steps)] = True    # one non-empty block
    nonempty = np.zeros((steps, p), dtype=bool) | dense          # runs of one rank each
    one_each = np.broadcast_to(np.arange(p), (steps, p))
    messages = Jumps.join(Jumps.of_runs(one_each, np.full((steps, 1), len(bruck_rounds(p)))),
                          bruck_misses(one_each, run_counts(one_each, p), nonempty, p))
    ones = Jumps.of_runs(np.zeros((steps, 1), dtype=np.int64), np.ones((steps, 1)))
    per_step = [outer_sum(_only(messages, k), ones, p, 1)[:, 0] for k in range(steps)]
    np.testing.assert_array_equal(np.array(per_step), bruck_messages(nonempty))
    roots = rng.integers(0, p, steps)
    held = Jumps.join(*(j for _, _, j in window_holds(roots, p)))
    per_step = [outer_sum(_only(held, k), ones, p, 1)[:, 0] for k in range(steps)]
    np.testing.assert_array_equal(np.array(per_step),
                                  allgatherv_one_costs(p, 0.0, 1.0, roots)[2])
    # the rounds holding the root, weighted and summed into each step's column at once
    weight, column = rng.integers(0, 1000, steps).astype(float), rng.integers(0, 3, steps)
    held = allgatherv_one_costs(p, 0.0, 1.0, roots)[2] * weight[:, None]
    by_column = np.stack([held[column == c].sum(axis=0) for c in range(3)], axis=1)
    np.testing.assert_array_equal(window_sums(weight, roots, column, p, 3), by_column)


def _only(jumps: Jumps, k: int) -> Jumps:
    """The jumps of step k alone, as step 0."""
    mine = [np.arange(len(b.at)) == k if b.step is None else b.step == k for b in jumps.blocks]
    return Jumps(tuple(Block(np.zeros(int(m.sum()), dtype=np.int64), b.at[m], b.delta[m])
                       for b, m in zip(jumps.blocks, mine)))


@pytest.mark.parametrize("p", [1, 2, 5, 8, 13, 64])
def test_bruck_at_equals_the_allgatherv_at_every_rank_and_max_at_piece_ends(p):
    rng = np.random.default_rng(p + 100)
    steps = 50
    starts = np.sort(rng.integers(0, p + 1, (steps, 5)), axis=1)
    starts[:, 0] = 0
    blocks = rng.integers(0, 4, (steps, 5)) * rng.random((steps, 5))
    blocks[::7] = 2.5                                         # some steps: equal blocks
    dense = _dense_runs(starts, blocks, p)
    every = np.broadcast_to(np.arange(p), (steps, p))
    got = bruck_at(starts, run_counts(starts, p), blocks, every, p)
    expected = allgatherv_costs(dense)
    for name, a, b in zip(("sent", "recv", "msgs"), got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
    # each step's largest alpha msgs + beta max(sent, recv) is at one of the piece ends
    # of its runs' starts less each round's m and m - 1
    sizes = np.array([m for _, m in bruck_rounds(p)], dtype=np.int64)
    here = np.concatenate([starts, np.full((steps, 1), p)], axis=1)
    shifted = (here[:, :, None, None] - sizes[None, None, :, None]
               + np.arange(2)[None, None, None, :]).reshape(steps, -1)
    points = piece_ends([here, shifted], p)
    cost = expected[2] + 0.3 * np.maximum(expected[0], expected[1])
    at_points = np.take_along_axis(cost, points, axis=1)
    # (to rounding: on a flat piece the prefix differences may round apart)
    np.testing.assert_allclose(at_points.max(axis=1), cost.max(axis=1), rtol=1e-14)
