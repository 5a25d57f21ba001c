"""Per-rank totals from rank classes (`linalg_io.models.rank_classes.spread`,
`Spreading`, `residues`) against summing every rank's value step by step."""

import numpy as np
import pytest
from linalg_io.models import conflux
from linalg_io.models.rank_classes import (
    BlockSpread,
    Spreading,
    residues,
    run_classes,
    spread,
)
from sample_budget import budget


def _axis(rng, steps: int, n: int, period: int):
    """Features [step, rank] that repeat every `period` ranks but near a root."""
    pattern = np.tile(rng.integers(0, 3, (steps, period)), (1, -(-n // period)))[:, :n]
    root = rng.integers(0, n, steps)
    near = np.abs(np.arange(n)[None, :] - root[:, None]) < 3
    return [np.where(near, 7 + np.arange(n)[None, :] % 2, pattern)]


def _every_rank(values: np.ndarray, fx: np.ndarray, fy: np.ndarray) -> np.ndarray:
    """Totals [lead, layer, x, y], rank by rank: the class of each rank at each step is
    the rank of its feature among the step's distinct features (as `step_classes`
    orders them: the classes' values are indexed by the same classes below)."""
    xs, ys = run_classes([fx]), run_classes([fy])
    lead, steps, layers = values.shape[:3]
    total = np.zeros((lead, layers, fx.shape[1], fy.shape[1]))
    for s in range(steps):
        of_x = np.empty(fx.shape[1], dtype=int)
        of_y = np.empty(fy.shape[1], dtype=int)
        for axis, of in ((xs, of_x), (ys, of_y)):
            for start, end, cls in zip(axis.start[axis.step == s], axis.end[axis.step == s],
                                       axis.of_run[axis.step == s]):
                of[start:end] = cls
        total += values[:, s][:, :, of_x][:, :, :, of_y]
    return total


@pytest.mark.parametrize("seed", range(4))
def test_spread_is_every_ranks_sum_exactly(seed):
    rng = np.random.default_rng(seed)
    steps, px, py = 6, 37, 13
    fx, fy = _axis(rng, steps, px, 4)[0], _axis(rng, steps, py, 3)[0]
    xs, ys = run_classes([fx]), run_classes([fy])
    values = rng.integers(-1000, 1000, (2, steps, 3, xs.size, ys.size)) * 0.125
    values[1] = 0.0                      # a row of no value (left out) stays 0
    totals = spread(values, xs, ys)
    assert totals.shape == (2, 3, px, py)
    assert np.array_equal(totals, _every_rank(values, fx, fy))
    assert not totals[1].any()


@pytest.mark.parametrize("seed", range(3))
def test_a_walk_kept_as_cells_or_as_pairs_gives_the_same_bits(seed, monkeypatch):
    # `BlockSpread` keeps a walk's values as its class grids' cells or as the pairs of
    # runs `spread` reads, whichever are fewer; both give every step's spread at once
    rng = np.random.default_rng(seed)
    steps, px, py = 9, 41, 17
    fx, fy = _axis(rng, steps, px, 5)[0], _axis(rng, steps, py, 2)[0]
    xs, ys = run_classes([fx]), run_classes([fy])
    values = rng.random((3, steps, 2, xs.size, ys.size)) * 10.0 ** rng.integers(-3, 9)
    whole = spread(values, xs, ys)
    for cells in (True, False):
        monkeypatch.setattr(BlockSpread, "_keeps_cells", lambda self, keep=cells: keep)
        walk = BlockSpread(xs, ys)
        for first, stop in ((0, 4), (4, 5), (5, steps)):
            walk.add(values[:, first:stop])
        assert walk.by_cells == cells
        assert walk.totals().tobytes() == whole.tobytes()


def test_residues_of_a_periodic_axis_have_few_runs():
    rng = np.random.default_rng(7)
    steps, px = 5, 400
    fx = _axis(rng, steps, px, 4)[0]
    xs = run_classes([fx])
    parts = residues(xs, 4)
    assert [part.n for part in parts] == [100, 100, 100, 100]
    assert sum(len(part.step) for part in parts) < len(xs.step) // 4
    for r, part in enumerate(parts):       # each rank 4 q + r keeps its class
        for s in range(steps):
            at = part.step == s
            of = np.repeat(part.of_run[at], part.end[at] - part.start[at])
            full = np.repeat(xs.of_run[xs.step == s], (xs.end - xs.start)[xs.step == s])
            assert np.array_equal(of, full[r::4])
    assert residues(xs, 1) == [xs]


@pytest.mark.parametrize("period", [2, 3, 7, 64])
def test_residues_keep_each_rank_and_merge_neighbours(period):
    """Random runs, short and long against the period: each rank d q + r keeps its class
    on residue r's axis, and no two runs of a step that meet there share a class."""
    rng = np.random.default_rng(period)
    steps, px = 6, 150
    xs = run_classes([rng.integers(0, 3, (steps, px)).repeat(rng.integers(1, 9, px), axis=1)
                      [:, :px]])
    for r, part in enumerate(residues(xs, period)):
        assert part.n == len(range(r, px, period))
        for s in range(steps):
            at = part.step == s
            of = np.repeat(part.of_run[at], part.end[at] - part.start[at])
            full = np.repeat(xs.of_run[xs.step == s], (xs.end - xs.start)[xs.step == s])
            assert np.array_equal(of, full[r::period])
            assert (part.start[at][1:] == part.end[at][:-1]).all()
            assert (part.of_run[at][1:] != part.of_run[at][:-1]).all()


@pytest.mark.parametrize("period", [1, 4, 5])
def test_spreading_sums_chunks_of_steps(period):
    rng = np.random.default_rng(period)
    totals, expected = _spread_parts(rng, period, 41, 9, (slice(0, 3), slice(3, 8)),
                                     lambda shape: rng.random((4, *shape)) * 1e6)
    assert totals.shape == (4, 2, 41, 9)
    assert np.allclose(totals, expected, rtol=1e-13, atol=0)


def _spread_parts(rng, period: int, px: int, py: int, parts, values_of) -> tuple:
    """(Spreading's totals, every rank's sums) of random classes over the steps of
    `parts`, each part's values `values_of`([steps, layers, x classes, y classes])."""
    steps = parts[-1].stop
    fx, fy = _axis(rng, steps, px, 4)[0], _axis(rng, steps, py, 3)[0]
    spreading = Spreading(period)
    expected = 0.0
    for part in parts:
        xs, ys = run_classes([fx[part]]), run_classes([fy[part]])
        values = values_of((part.stop - part.start, 2, xs.size, ys.size))
        spreading.add(values, xs, ys)
        expected = expected + _every_rank(values, fx[part], fy[part])
    return spreading.totals(), expected


def test_model_lu_takes_the_sample_size_from_the_row(monkeypatch):
    from linalg_io.model_command.lu_table import _sampled_lines_25d

    def remade(*args):
        raise AssertionError("step_sample made again")

    monkeypatch.setattr(conflux, "step_sample", remade)
    rows = [{"px": 64, "py": 4, "c": 1, "v": 128, "sampled_steps": (70, 4096)},
            {"px": 16, "py": 16, "c": 1, "v": 128, "sampled_steps": None}]
    lines = _sampled_lines_25d(rows)
    assert len(lines) == 1
    assert lines[0].endswith("64x4x1 v=128 (70 of 4096 steps)")


def test_a_sampled_candidate_row_says_its_sample(monkeypatch):
    from dataclasses import replace

    from linalg_io.models.profile import load_profile

    profile = replace(load_profile("example_cpu"), ranks_per_node=16, cores_per_node=16,
                      nodes=64)
    placement = profile.placement(64)
    grid = (16, 4, 1, 128)
    assert conflux.candidate_row(16384, 2.0**40, profile, placement, grid)[
        "sampled_steps"] is None
    budget(monkeypatch, exact=0, cells=0)
    monkeypatch.setattr(conflux, "SAMPLE_ROWS", 16)
    budget(monkeypatch, least=16)
    sample = conflux.step_sample(16384, 128, 16, 4, 1, placement, "uniform")
    row = conflux.candidate_row(16384, 2.0**40, profile, placement, grid)
    assert row["sampled_steps"] == (len(sample.rows), 128)
    assert len(sample.rows) < 128


@pytest.mark.parametrize("period", [1, 4])
@pytest.mark.parametrize("chunk", [1, 1024, 1 << 18])
def test_spreading_is_exact_on_whole_values_in_any_chunks(period, chunk, monkeypatch):
    """One step a chunk (its pairs added at their cells) or many (summed over the cells
    the chunk touches): values of a few bits sum exactly, to every rank's sum."""
    from linalg_io.models import rank_classes

    monkeypatch.setattr(rank_classes, "CHUNK_ELEMENTS", chunk)
    rng = np.random.default_rng(10 + period)

    def values_of(shape: tuple) -> np.ndarray:
        values = rng.integers(-1000, 1000, (3, *shape)) * 0.25
        values[1] = 0.0                  # a row of no value
        return values

    totals, expected = _spread_parts(rng, period, 43, 17, (slice(0, 5), slice(5, 12)),
                                     values_of)
    assert np.array_equal(totals, expected)
