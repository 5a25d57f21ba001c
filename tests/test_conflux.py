"""2.5D LU (conflux) without MPI jobs: tile maps, tournament selection, the model, the CLI table."""

import re
from dataclasses import replace

import conflux_walk as walk_reference
import numpy as np
import pytest
from conflux_pivots_loop import tournament_pivots
from linalg_io.models import conflux as model
from linalg_io.models.conflux_pivots import pivot_counts
from linalg_io.models.lu2d import lu2d_costs, lu_lower_bound
from linalg_io.models.phase_time import conflux_phase_seconds
from linalg_io.models.profile import InterNode, load_profile
from linalg_io.models.rates import PANEL_RATE, gemm_efficiency
from mpi4py import MPI

from linalg_io.cli import main as cli_main
from linalg_io.comm.counting import CountedComm
from linalg_io.errors import InputError
from linalg_io.layout.conflux_layout import StepPlan, TileMap, slice_sizes
from linalg_io.layout.schedules import allgatherv_costs
from linalg_io.lu.choice import TILE_SIZES, candidate_table, choose_lu, ranked
from linalg_io.lu.conflux import HostKernels
from linalg_io.lu.tournament import select_rows, tournament


@pytest.mark.parametrize("n,v,px,py,reflected", [(301, 32, 2, 3, False), (256, 64, 4, 1, False),
                                                 (100, 128, 2, 2, False), (512, 32, 2, 2, True)])
def test_tile_map_partitions_rows_and_columns(n, v, px, py, reflected):
    tiles = TileMap(n, v, px, py, reflected)
    rows = np.concatenate([tiles.local_rows(x) for x in range(px)])
    cols = np.concatenate([tiles.local_cols(y) for y in range(py)])
    assert sorted(rows) == list(range(n)) and sorted(cols) == list(range(n))
    assert all((tiles.owner_row(tiles.local_rows(x)) == x).all() for x in range(px))
    assert all((tiles.owner_col(tiles.local_cols(y)) == y).all() for y in range(py))
    for k in range(tiles.ntiles):
        trailing = tiles.trailing_cols(k)
        assert trailing.sum() == n - min(n, (k + 1) * v)
        for y in range(py):
            start = tiles.local_col_start(y, k + 1)
            assert (tiles.local_cols(y)[start:] >= (k + 1) * v).all()


def test_tile_columns_reflected_cyclic():
    assert [s.ky for s in StepPlan.create(40, 5, 2, 2, 1).steps()] == [0, 1, 1, 0, 0, 1, 1, 0]
    for n, py, c in [(40, 3, 1), (35, 2, 1), (40, 2, 2)]:       # Py 3, 7 tiles, c 2: cyclic
        assert [s.ky for s in StepPlan.create(n, 5, 1, py, c).steps()] == [
            k % py for k in range(-(-n // 5))]
    # 1x2x1, 16 tiles: both columns receive the same L rows and do the same update
    # (cyclic: column 1 receives 64 tile-rows of L to column 0's 56, and 11% more flops)
    costs = model.conflux_costs(4096, 256, 1, 2, 1)
    assert costs.bytes_recv[0] == costs.bytes_recv[1]
    assert abs(costs.flops[1] / costs.flops[0] - 1) < 0.02


def test_step_plan_rotates_roots_and_splits_panels():
    plan = StepPlan.create(1000, 64, 2, 2, 4)
    steps = list(plan.steps())
    assert steps[-1].w == 1000 - 15 * 64
    assert {(s.ky, s.lk) for s in steps} == {(y, l) for y in range(2) for l in range(4)}
    assert list(slice_sizes(10, 4)) == [3, 3, 2, 2] and list(slice_sizes(2, 4)) == [1, 1, 0, 0]


def test_select_rows_follows_partial_pivoting():
    rng = np.random.default_rng(1)
    panel = np.asfortranarray(rng.standard_normal((40, 8)))
    ids = np.arange(100, 140, dtype=float)
    packed, factors = select_rows(panel, ids, 8, HostKernels.getrf)
    assert packed[0, 8] == 100 + np.argmax(np.abs(panel[:, 0]))
    winners = packed[:, :8]
    lower = np.tril(factors, -1) + np.eye(8)
    assert np.allclose(lower @ np.triu(factors), winners)
    few, _ = select_rows(panel[:3], ids[:3], 8, HostKernels.getrf)
    assert sorted(few[:3, 8]) == [100, 101, 102] and (few[3:, 8] == -1).all()


def test_tournament_on_one_rank_is_partial_pivoting():
    rng = np.random.default_rng(2)
    panel = np.asfortranarray(rng.standard_normal((30, 6)))
    comm = CountedComm(MPI.COMM_SELF)
    ids, lu00 = tournament(comm, panel, np.arange(30, dtype=float), 6, HostKernels.getrf)
    from scipy.linalg import lu_factor

    lu, piv = lu_factor(panel)
    order = np.arange(30)
    for i, p in enumerate(piv):
        order[i], order[p] = order[p], order[i]
    assert list(ids) == list(order[:6])
    assert np.allclose(lu00, lu[:6])


def test_model_matches_closed_form_and_balances_layers():
    for px, py, c in [(2, 2, 1), (4, 4, 1), (2, 2, 4), (2, 4, 2), (4, 4, 4)]:
        costs = model.conflux_costs(8192, 256, px, py, c, "uniform")
        closed = model.closed_form_words(8192, 256, px, py, c) * 8
        assert costs.bytes_sent.mean() == pytest.approx(closed, rel=0.06), (px, py, c)
        # the reduction root rotates over the layers: no hot layer (reference: 295/177 at 2x2x4)
        assert costs.bytes_sent.max() / costs.bytes_sent.mean() <= 1.15, (px, py, c)


def test_pivot_assumptions_bracket_and_count_rows():
    plan_none = model.conflux_plan_counts(600, 64, 3, 2, 2, "none")
    plan_uniform = model.conflux_plan_counts(600, 64, 3, 2, 2, "uniform")
    total = [p["sent"].sum() for p in (plan_none, plan_uniform)]
    # c > 1 gathers the pivot rows on row kx = k mod Px, which owns tile k: without row
    # swaps nothing is gathered; otherwise the w - p_kx pivot rows owned elsewhere
    plan = StepPlan.create(600, 64, 3, 2, 2)
    _, owned = pivot_counts(plan, "uniform")
    gathered = sum((s.w - owned[s.k][s.kx]) * plan.tiles.trailing_cols(s.k).sum()
                   for s in plan.steps())
    assert total[1] - total[0] == pytest.approx(gathered * 8, rel=1e-12)
    pivots = [np.arange(k * 64, min(600, (k + 1) * 64)) for k in range(10)]
    exact = model.conflux_costs(600, 64, 3, 2, 2, pivots)
    assert np.array_equal(exact.bytes_sent,
                          model.conflux_costs(600, 64, 3, 2, 2, "none").bytes_sent)


def test_tournament_pivots_follow_the_merge_tree():
    """The a priori pivots of a random matrix ("uniform"): the tournament's merges, level
    by level, as the recursive reference (tests/conflux_walk.py) splits them."""
    assert walk_reference.merge_tree(7, 0) == (((0, 4), (1, 5)), ((2, 6), 3))
    assert walk_reference.merge_tree(3, 1) == ((1, 0), 2)      # roles rotate with the step
    rng = np.random.default_rng(3)
    for px in (3, 5, 6, 7, 12):
        for step in range(px):
            rows = rng.integers(0, 700, px).astype(float)
            assert tournament_pivots(rows, 256, step) == pytest.approx(
                walk_reference.tournament_pivots(rows, 256, step), rel=1e-12, abs=1e-9)
    # Px a power of two, equal rows: the proportional share
    even = tournament_pivots(np.full(4, 512.0), 256, 5)
    assert np.allclose(even, 64.0)
    # Px = 3: the unpaired role holds its own against the folded pair (two rows' worth
    # of rows count 2^beta, not 2), the pair splits evenly
    three = tournament_pivots(np.full(3, 256.0), 256, 0)
    pair = 256 * 2**0.25 / (1 + 2**0.25)
    assert three == pytest.approx([pair / 2, 256 - pair, pair / 2])
    # step 0 of 7x1x1, N = 2048, v = 256: mean pivots per rank over seeds 1-6 measured
    # 35.5 31.2 34.3 55.7 32.0 34.0 33.3 (proportional: 64 32 ... 32)
    seven = tournament_pivots(np.array([512.0] + [256.0] * 6), 256, 0)
    assert seven == pytest.approx([38.9, 32.3, 32.5, 54.7, 32.7, 32.3, 32.5], abs=0.1)
    # a set gives at most its candidates; every step picks w rows
    few = tournament_pivots(np.array([10.0, 600.0, 600.0]), 256, 2)
    assert few[0] <= 10 and few.sum() == pytest.approx(256)


def _auto_choice(n: int, p: int, memory: float, profile, placement=None):
    return choose_lu("conflux", n, p, memory, profile, placement or profile.placement(p))


def test_choose_lu_respects_memory():
    profile = load_profile()
    choice = _auto_choice(8192, 16, 6e9, profile)
    assert choice.p == 16 and choice.nb in TILE_SIZES and choice.pivoting == "tournament"
    tight = model.memory_words(8192, 128, 4, 4, 1) * 8 * 1.01
    assert _auto_choice(8192, 16, tight, profile).grid[2] == 1
    with pytest.raises(InputError, match="fits"):
        _auto_choice(8192, 16, 1e6, profile)


def test_time_is_critical_path_or_shared_core_work():
    """The time model (models/conflux.py): per step max(crit_k, W_k / cores)."""
    profile = load_profile()
    n, v = 8192, 256
    grids = [(4, 1, 1), (2, 2, 1)]
    own_cores = replace(profile, ranks_per_node=4, cores_per_node=4).placement(4)
    two_cores = replace(profile, ranks_per_node=4, cores_per_node=2).placement(4)
    counts = {g: model.conflux_plan_counts(n, v, *g, "uniform", profile, own_cores)
              for g in grids}
    shared = {g: model.conflux_plan_counts(n, v, *g, "uniform", profile, two_cores)["time_s"]
              for g in grids}
    for g in grids:
        # 4 ranks on 2 cores: never below the critical path nor the total work over the cores
        assert shared[g] >= counts[g]["time_s"]
        assert shared[g] >= counts[g]["flops"].sum() / (2 * profile.gamma_flops)
    # Py = 1 puts every rank on every panel (getrf, tournament, solve_row over all the
    # trailing columns): more total work than Py = 2 for the same dgemm, so where the
    # cores are shared the model prefers a grid with Py > 1
    assert counts[(4, 1, 1)]["flops"].sum() > counts[(2, 2, 1)]["flops"].sum()
    assert shared[(2, 2, 1)] < shared[(4, 1, 1)]
    assert _auto_choice(n, 4, 6e9, profile, two_cores).grid[1] > 1


@pytest.mark.parametrize("bandwidth", [1e10, 1e8])
def test_look_ahead_overlaps_the_pivot_rows_with_the_update(bandwidth):
    """c = 1, Px > 1: the pivot rows' allgather of step k on the panel's column, started
    inside update k-1, costs max(R, G) with the rest of that update R instead of R + G,
    where the network overlaps (`inter_node.overlap`); without overlap, with c > 1 or
    Px = 1 the time is the sum. 2x1x1 on 2 nodes of 1 rank, N = 3v, pivots on the
    diagonal: only step 1 has both (kx = 1 sends its v x v pivot rows, G = alpha + beta
    v^2 8 bytes sent, beta v^2 8 received on row 0; rows 0 and 1 update v x v x v after
    panel 1's columns, R = 2 v^3 / (gamma eff(v)); S_1 also has the solves, row 0's v
    L rows v^3 and both rows' U v^3 at PANEL_RATE). 1e10 B/s: G < R, all of G hidden;
    1e8 B/s: G > R, G - R left. The phase times' push_pivots loses the same min(G, R)."""
    v = 64
    base = replace(load_profile(), ranks_per_node=1, cores_per_node=4, threads_per_rank=1,
                   gamma_flops=1e10)

    def on(overlap: bool):
        return replace(base, inter_node=InterNode(latency_s=2e-5, bandwidth_bytes_per_s=bandwidth,
                                                  overlap=overlap))

    def time(n, grid, profile):
        p = int(np.prod(grid))
        return model.conflux_plan_counts(n, v, *grid, "none", profile,
                                         profile.placement(p))["time_s"]

    sent, recv, msgs = allgatherv_costs(np.array([0.0, v * v * 8]))
    assert [list(sent), list(recv), list(msgs)] == [[0, v * v * 8], [v * v * 8, 0], [0, 1]]
    gather = 2e-5 * msgs + np.maximum(sent, recv) / bandwidth
    solves = np.array([2.0, 1.0]) * v**3 / (PANEL_RATE * 1e10)
    window = 2.0 * v**3 / (float(gemm_efficiency(float(v))) * 1e10)
    summed = (gather + solves).max()
    overlapped = (solves + np.maximum(gather - window, 0.0)).max()
    hidden = time(3 * v, (2, 1, 1), on(False)) - time(3 * v, (2, 1, 1), on(True))
    assert hidden == pytest.approx(summed - overlapped, rel=1e-9)
    # row 0 (twice the solves) is the slower: it hides its G (received) whole, or R
    assert hidden == pytest.approx(gather[0] if bandwidth > 1e9 else window, rel=1e-9)
    assert 0 < hidden < gather.max()
    # the phase times: push_pivots loses min(G, R) on each rank, the other phases nothing
    placement = on(True).placement(2)
    phases = [conflux_phase_seconds(3 * v, v, 2, 1, 1, on(overlap), placement, "none")["mean"]
              for overlap in (False, True)]
    assert phases[0]["push_pivots"] - phases[1]["push_pivots"] == pytest.approx(
        np.minimum(gather, window).mean(), rel=1e-9)
    assert {k: s for k, s in phases[0].items() if k != "push_pivots"} == pytest.approx(
        {k: s for k, s in phases[1].items() if k != "push_pivots"}, rel=1e-12)
    for n, grid in [(3 * v, (2, 1, 2)), (3 * v, (1, 2, 1)), (4 * v, (1, 1, 2))]:
        assert time(n, grid, on(True)) == time(n, grid, on(False)), grid


def test_model_lu_prints_candidates_baseline_and_bound(capsys):
    assert cli_main(["model", "lu", "--n", "8192", "--p", "16", "--mem", "2G", "--all"]) == 0
    text = capsys.readouterr().out
    assert "2.5D LU (conflux)" in text and "2D LU (block-cyclic" in text
    # one * per table: what `lu --grid auto` runs for each algorithm
    assert sum(line.startswith("*") for line in text.splitlines()) == 2
    assert "     2x2x4" in text and "more (--all" not in text
    # one row per 2D grid, fastest first, NB as `lu --algo 2d --nb auto` picks it (128
    # only on 4x4, where every rank holds 2048 rows and columns); 4x4 is marked
    rows_2d = [line.lstrip("*").split() for line in text.splitlines()
               if re.match(r"[* ] +\d+x\d+ ", line) and len(line.lstrip("*").split()) == 9]
    assert sorted((row[0], row[1]) for row in rows_2d) == sorted([
        ("1x16", "64"), ("2x8", "64"), ("4x4", "128"), ("8x2", "64"), ("16x1", "64")])
    times = [float(row[-1]) for row in rows_2d]
    assert times == sorted(times)
    assert any(line.startswith("*        4x4  128") for line in text.splitlines())
    # the verdict names both chosen runs and their ratio, before the tables
    verdict = text[:text.index("2.5D LU (conflux)")]
    chosen = [line.split() for line in text.splitlines() if line.startswith("*")]
    assert chosen[0][1] in verdict and "4x4 NB=128" in verdict
    assert f"{float(chosen[0][-1]):.4g} s" in verdict and "2.5D / 2D: time x" in verdict
    # the 10 best of each table without --all
    assert cli_main(["model", "lu", "--n", "8192", "--p", "16", "--mem", "2G"]) == 0
    short = capsys.readouterr().out
    assert "more (--all shows every candidate)" in short
    assert len(short.splitlines()) < len(text.splitlines())
    bounds = [line for line in text.splitlines() if re.match(r" +[0-9.]+ MB  ", line)]
    assert len(bounds) == 3 and "M = N^2/P = 4.194e+06 words" in bounds[2]


def test_model_lu_algo_grid_and_nb_pick_the_rows(capsys):
    assert cli_main(["model", "lu", "--n", "8192", "--p", "4", "--algo", "2d", "--grid", "2x2",
                     "--nb", "128"]) == 0
    text = capsys.readouterr().out
    assert "2.5D" not in text
    (row,) = [line.lstrip("*").split() for line in text.splitlines()
              if line.startswith("*        2x2")]
    expected = lu2d_costs(8192, 128, 2, 2, "expected")
    assert row[:2] == ["2x2", "128"]
    # received, then wire sent and received (= logical), messages, received with no swaps
    assert float(row[2]) == pytest.approx(expected.bytes_recv.max() / 1e6, abs=0.006)
    assert float(row[3]) == pytest.approx(expected.wire()[0].max() / 1e6, abs=0.006)
    assert float(row[4]) == pytest.approx(expected.wire()[1].max() / 1e6, abs=0.006)
    assert int(row[5]) == expected.msgs_sent.max()
    expected_recv = lu2d_costs(8192, 128, 2, 2, "none").bytes_recv.max() / 1e6
    assert float(row[6]) == pytest.approx(expected_recv, abs=0.006)
    bound = lu_lower_bound(8192, 4, 8192**2 / 4, "N^2/P")
    assert f"{bound['bytes_per_rank'] / 1e6:>11.2f} MB  what a 2D run records" in text
    assert cli_main(["model", "lu", "--n", "8192", "--p", "4", "--algo", "conflux", "--grid",
                     "2x2x1", "--nb", "256", "--mem", "2G"]) == 0
    text = capsys.readouterr().out
    assert "2D LU" not in text
    (row,) = [line.split() for line in text.splitlines() if line.startswith("*")]
    exact = model.conflux_costs(8192, 256, 2, 2, 1, "uniform")
    assert row[1:3] == ["2x2x1", "256"]
    words = model.memory_words(8192, 256, 2, 2, 1)
    assert f"M = {model.MEMORY} = {words:.4g} words" in text
    assert float(row[3]) == pytest.approx(exact.bytes_recv.max() / 1e6, abs=0.006)
    assert float(row[7]) == pytest.approx(exact.bytes_sent.max() / 1e6, abs=0.006)


def test_objectives_rank_by_time_or_by_wire_volume(capsys):
    """volume: the least busiest-rank wire bytes first; time: the least predicted time;
    `model lu` marks what `lu --objective` would run."""
    profile = load_profile()
    rows = candidate_table(8192, 16, 2e9, profile)
    by_volume, by_time = ranked(rows, "volume"), ranked(rows, "time")
    assert by_volume[0]["wire_max"] == min(r["wire_max"] for r in rows if r["fits"])
    assert by_time[0]["time_s"] <= min(r["time_s"] for r in rows if r["fits"]) * 1.001
    assert [r["wire_max"] for r in by_volume] == sorted(r["wire_max"] for r in by_volume)
    assert cli_main(["model", "lu", "--n", "8192", "--p", "16", "--mem", "2G", "--algo",
                     "conflux", "--objective", "volume"]) == 0
    (row,) = [line.split() for line in capsys.readouterr().out.splitlines()
              if line.startswith("*")]
    best = by_volume[0]
    assert row[1:3] == [f"{best['px']}x{best['py']}x{best['c']}", str(best["v"])]
