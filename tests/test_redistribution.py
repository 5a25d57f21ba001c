"""Layouts and redistribution plans, no MPI: index maps against brute force, the plan's
volume against the owner-change count, relabelling against every permutation, rounds
within their budget (the real redistributions: test_redistribution_mpi.py)."""

import itertools
import sys

import numpy as np
import pytest
from mpi_harness import MPI_SCRIPTS

from linalg_io.errors import InputError
from linalg_io.layout import blockcyclic
from linalg_io.layout.axes import BlockAxis, BlockCyclicAxis, ExplicitAxis, indices
from linalg_io.layout.layouts import Descriptor, conflux_tiles, parse_scalapack, row_blocks
from linalg_io.layout.redist_plan import RedistPlan, Region, relabelling

sys.path.insert(0, str(MPI_SCRIPTS))
from layout_specs import build_layout, owners, random_spec


@pytest.mark.parametrize("axis", [BlockCyclicAxis(50, 7, 3, 2), BlockCyclicAxis(5, 8, 4, 3),
                                  BlockAxis.balanced(23, 5), BlockAxis.from_lengths([0, 9, 0, 4]),
                                  ExplicitAxis(np.array([2, 0, 0, 1, 2, 2, 0]), 3)])
def test_axis_maps_round_trip(axis):
    seen = np.zeros(axis.n, dtype=int)
    for proc in range(axis.nprocs):
        mine = indices(axis, proc)
        assert len(mine) == axis.count(proc)
        assert np.all(np.diff(mine) > 0)      # local order is global order
        assert np.array_equal(axis.owner(mine), np.full(len(mine), proc))
        assert np.array_equal(axis.local(mine), np.arange(len(mine)))
        seen[mine] += 1
    assert np.array_equal(seen, np.ones(axis.n))


def test_block_cyclic_axis_is_scalapack_numroc_with_source():
    axis = BlockCyclicAxis(50, 7, 3, 2)
    # blocks 0..7 on processes 2, 0, 1, 2, 0, 1, 2, 0 (block 7 holds 1 index)
    assert [axis.count(p) for p in range(3)] == [7 + 7 + 1, 14, 21]
    assert axis.owner(np.array([0, 7, 49])).tolist() == [2, 0, 0]
    for p in range(3):
        assert axis.count(p) == blockcyclic.numroc(50, 7, p, 3, 2)


def test_descriptor_layout_rank_orders_and_array():
    row = Descriptor(10, 12, 2, 3, 2, 3, rsrc=1, csrc=2).layout()
    col = Descriptor(10, 12, 2, 3, 2, 3, rsrc=1, csrc=2, order="col").layout()
    # entry (0, 0): process row 1, process column 2
    assert row.owner(0, 0) == 1 * 3 + 2 and col.owner(0, 0) == 2 * 2 + 1
    assert row.local_shape(1) == (4, 3) and col.local_shape(1) == (6, 3)
    desc = Descriptor(10, 12, 2, 3, 2, 3, rsrc=1, csrc=2)
    assert desc.array(7, 0).tolist() == [1, 7, 10, 12, 2, 3, 1, 2, 4]
    for layout in (row, col):
        for rank in range(6):
            rows, cols = layout.local_indices(rank)
            r, li, lj = layout.to_local(rows[:, None], cols[None, :])
            assert (r == rank).all()
            gi, gj = layout.to_global(rank, li, lj)
            assert np.array_equal(gi, np.broadcast_to(rows[:, None], gi.shape))
            assert np.array_equal(gj, np.broadcast_to(cols[None, :], gj.shape))


def test_conflux_tiles_and_row_blocks():
    tiles = conflux_tiles(10, 3, 2, 2, 2)
    assert tiles.nprocs == 8 and tiles.local_shape(5) == (0, 0)
    assert tiles.owner(3, 7) == 1 * 2 + 0         # tile (1, 2): process (1, 0) of layer 0
    reflected = conflux_tiles(24, 3, 2, 2, 1)     # tile columns 0 1 1 0 0 1 1 0
    assert [reflected.owner(3, 3 * j) for j in range(4)] == [2, 3, 3, 2]
    blocks = row_blocks(10, 4, 3)
    assert [blocks.local_shape(r) for r in range(3)] == [(4, 4), (3, 4), (3, 4)]


@pytest.mark.parametrize("call,message", [
    (lambda: Descriptor(4, 4, 0, 2, 1, 1), "MB, NB"),
    (lambda: Descriptor(4, 4, 2, 2, 2, 2, rsrc=2), "RSRC 2"),
    (lambda: Descriptor(4, 4, 2, 2, 1, 1, order="diag"), "rank order"),
    (lambda: row_blocks(10, 4, 3, [5, 5, 1]), "do not cover"),
    (lambda: parse_scalapack("scalapack:64"), "scalapack:MBxNB"),
    (lambda: parse_scalapack("blocks:4x4"), "scalapack:MBxNB"),
    (lambda: RedistPlan(row_blocks(4, 4, 2), row_blocks(4, 5, 2)), "redistribution between"),
])
def test_bad_layouts_are_input_errors(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_volume_is_the_owner_change_count_for_random_pairs():
    rng = np.random.default_rng(11)
    for _ in range(60):
        p = int(rng.integers(1, 17))
        m = int(rng.integers(1, 60))
        n = m if rng.random() < 0.5 else int(rng.integers(1, 60))
        src = build_layout(random_spec(rng, m, n, p), m, n, p)
        dst = build_layout(random_spec(rng, m, n, p), m, n, p)
        before, after = owners(src, m, n), owners(dst, m, n)
        expected = np.zeros((p, p), dtype=np.int64)
        np.add.at(expected, (before.ravel(), after.ravel()), 1)
        plan = RedistPlan(src, dst)
        assert np.array_equal(plan.volume, expected)
        assert plan.moved() == int((before != after).sum())
        assert np.array_equal(plan.sent(), np.bincount(before[before != after], minlength=p))


def test_regions_count_only_their_entries():
    src, dst = Descriptor(30, 30, 4, 4, 2, 2).layout(), conflux_tiles(30, 7, 2, 2, 1)
    regions = [Region(7, 30, 0, 7), Region(0, 7, 7, 30)]
    plan = RedistPlan(src, dst, regions)
    mask = np.zeros((30, 30), dtype=bool)
    for r in regions:
        mask[r.r0:r.r1, r.c0:r.c1] = True
    before, after = owners(src, 30, 30), owners(dst, 30, 30)
    assert plan.moved() == int(((before != after) & mask).sum())
    assert plan.volume.sum() == mask.sum()


@pytest.mark.parametrize("seed", range(6))
def test_relabelling_is_optimal_over_every_permutation(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(2, 7))
    m = n = int(rng.integers(5, 40))
    src = build_layout(random_spec(rng, m, n, p), m, n, p)
    dst = build_layout(random_spec(rng, m, n, p), m, n, p)
    plan = RedistPlan(src, dst)
    best = min(plan.volume.sum() - plan.volume[list(perm), range(p)].sum()
               for perm in itertools.permutations(range(p)))
    relabelled = RedistPlan.create(src, dst, relabel=True)
    assert relabelled.moved() == best <= plan.moved()
    before = owners(src, m, n)
    process_of = relabelling(plan.volume)
    assert np.array_equal(relabelled.process_of, process_of)
    assert sorted(process_of.tolist()) == list(range(p))
    assert relabelled.moved() == int((before != process_of[owners(dst, m, n)]).sum())


def test_rounds_stay_within_the_budget_and_move_everything_once():
    src, dst = Descriptor(256, 256, 3, 5, 2, 4).layout(), conflux_tiles(256, 8, 2, 2, 2)
    whole = RedistPlan(src, dst)
    for fraction in (0.2, 0.4, 1.0):
        plan = RedistPlan(src, dst, mem_fraction=fraction)
        costs = plan.costs()
        assert (costs["peak_buffer"] <= plan.budget).all()
        assert costs["rounds"] > 1 if fraction < 1 else costs["rounds"] >= 1
        moved = np.zeros((8, 8), dtype=np.int64)
        for pieces in plan._rounds(None):
            for piece in pieces:
                moved[piece.src, piece.dst] += piece.size
        assert np.array_equal(moved + np.diag(np.diag(whole.volume)), whole.volume)
        assert plan.schedule(3) == [[pc for pc in r if 3 in (pc.src, pc.dst)]
                                    for r in plan._rounds(None)]
    unbounded = whole.costs()
    assert unbounded["rounds"] == 1
    assert np.array_equal(unbounded["msgs"], (whole.sent() > 0).astype(int))
    with pytest.raises(InputError, match="fraction must be > 0"):
        RedistPlan(src, dst, mem_fraction=0)
    # rank 4 holds 127 x 65 entries; 4 (127 + 65) + 512 of them go to the index lists
    with pytest.raises(InputError, match=r"rank 4 holds 8255 entries.*\(1280 entries\); use "
                                         r"at least 0\.164"):
        RedistPlan(src, dst, mem_fraction=0.15)
    assert RedistPlan(src, dst, mem_fraction=0.164).budget.min() >= 1
