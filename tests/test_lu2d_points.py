"""The 2D critical path where the ranks do not share cores and the pivots are assumed
(`linalg_io.models.lu2d._points_seconds`: each step's maxima over the ranks taken on
their factors; its row points and Bruck windows compiled, `linalg_io._kernels.
lu2d_points`) gives bit for bit the seconds of the code it replaced there: the [step,
row class, column class] evaluation (`_steps_seconds`, still the path of shared cores
and of a run's pivots) at the row points and windows of tests/lu2d_points_reference.py,
on a sample of grids (square, tall, flat, Pr or Pc = 1, a partial last block, more
process rows than blocks, up to Pr = 65536), every assumed pivoting, on a machine whose
network overlaps the update and on one whose does not; and where nodes share cores
(every process row at every step, the compiled windows alone)."""

from dataclasses import replace

import lu2d_points_reference as reference
import numpy as np
import pytest
from linalg_io.models import lu2d
from linalg_io.models.profile import load_profile

from linalg_io.layout.grid_shapes import divisors

BIG = replace(load_profile("example_cpu"), nodes=8192)
NO_OVERLAP = replace(BIG, name="no overlap",
                     inter_node=replace(BIG.inter_node, overlap=False))
# 32 cores to a node's 128 ranks: more than 32 ranks share them (every row's classes)
SHARED = replace(BIG, name="shared cores", cores_per_node=32)
PROBLEMS = [(200, 6, 8), (777, 16, 64), (1000, 12, 64), (9000, 64, 100), (20000, 256, 64),
            (65536, 1024, 128), (70000, 4096, 64), (40000, 16384, 32), (1048576, 65536, 64)]


def _reference_ends(firsts: list, p: int, shifted=None, sizes=()) -> np.ndarray:
    """The reference's `piece_ends` of the firsts `lu2d_runs.piece_ends` takes."""
    if shifted is not None:
        sizes = np.asarray(sizes, dtype=np.int64)
        firsts = [*firsts, (shifted[:, :, None, None] - sizes[None, None, :, None]
                            + np.arange(2)[None, None, None, :]).reshape(len(shifted), -1)]
    return reference.piece_ends(firsts, p)


def _reference_path(monkeypatch, col_net: bool) -> None:
    """Make `critical_path_time` take `_steps_seconds` where it takes `_points_seconds`,
    and the reference's row points and Bruck windows."""
    def classes(*terms):
        *terms, row_overlap = terms
        return lu2d._steps_seconds(*terms, None, col_net, row_overlap)

    monkeypatch.setattr(lu2d, "_points_seconds", classes)
    monkeypatch.setattr(lu2d, "piece_ends", _reference_ends)
    monkeypatch.setattr(lu2d, "run_of", reference.run_of)
    monkeypatch.setattr(lu2d, "bruck_at", lambda *args: reference.bruck_at(*args[:5]))


@pytest.mark.parametrize("profile", [BIG, NO_OVERLAP, SHARED],
                         ids=["big", "no overlap", "shared cores"])
def test_points_path_equals_the_reference(profile, monkeypatch):
    checked = 0
    # shared cores: every process row at every step (the reference's too), the small ones
    for n, p, nb in PROBLEMS if profile is not SHARED else PROBLEMS[:6]:
        placement = profile.placement(p)
        pr_all = divisors(p)
        for pr in sorted({pr_all[0], pr_all[len(pr_all) // 3], pr_all[len(pr_all) // 2],
                          pr_all[-1 - len(pr_all) // 3], pr_all[-1]}):
            pc = p // pr
            col_net = profile.on_network(p, placement)
            for pivoting in ("expected", "none", "worst"):
                args = (n, nb, pr, pc, pivoting, profile, placement)
                new = lu2d.critical_path_time(*args)
                with monkeypatch.context() as patch:
                    _reference_path(patch, col_net)
                    old = lu2d.critical_path_time(*args)
                assert new == old, args
                checked += 1
    assert checked >= 45


@pytest.mark.parametrize("n, nb, pr", [(200, 8, 3), (777, 64, 16), (9000, 100, 64),
                                       (20000, 64, 256), (70000, 64, 4096), (40000, 32, 16384)])
def test_rows_below_by_run_equal_numroc(n, nb, pr):
    """`_Steps.rows_at` (the rows below of each rank's run) against numroc at every
    process row of every step (`_owned_after`)."""
    blocks = lu2d._steps(n, nb, pr, 2)
    k = np.arange(len(blocks.starts))
    rows = np.broadcast_to(np.arange(pr), (len(k), pr))
    below, diag = blocks.rows_at(k, rows)
    ends = blocks.starts + blocks.widths
    assert np.array_equal(below, lu2d._owned_after(n, nb, ends, rows, pr).astype(float))
    assert np.array_equal(diag, rows == (k % pr)[:, None])


def test_kernels_on_edges_and_far_ranks():
    """`last_at_or_before` with runs of no rank (repeated starts) and ranks before the
    first start; `distinct_ends` with firsts several periods away from 0 .. p-1."""
    from linalg_io._kernels.lu2d_points import distinct_ends, last_at_or_before
    rng = np.random.default_rng(5)
    starts = np.sort(rng.integers(1, 40, (200, 9)), axis=1)
    ranks = rng.integers(0, 45, (200, 13))
    want = np.array([[max(0, int(np.searchsorted(s, q, side="right")) - 1) for q in row]
                     for s, row in zip(starts, ranks)])
    assert np.array_equal(last_at_or_before(starts, ranks), want)
    p = 37
    firsts = rng.integers(-5 * p, 5 * p, (50, 6))
    shifted = np.sort(rng.integers(-2 * p, 3 * p, (50, 3)), axis=1)
    sizes = np.array([1, 2, 4, 8, 16, 5])
    got = distinct_ends(firsts, p, shifted, sizes)
    for s in range(len(firsts)):
        order = [0, *firsts[s]] + [f - m + e for j, f in enumerate(shifted[s])
                                   if j == 0 or f != shifted[s, j - 1] for m in sizes
                                   for e in (0, 1)]
        seen = list(dict.fromkeys((v - e) % p for v in order for e in (0, 1)))
        row = list(got[s])
        assert row[:len(seen)] == seen and set(row[len(seen):]) <= {seen[0]}


def test_gather_is_take_along_axis():
    from linalg_io._kernels.lu2d_points import gather
    rng = np.random.default_rng(9)
    values = rng.random((30, 7))
    steps = rng.integers(0, 30, 12)
    index = rng.integers(0, 7, (12, 5))
    want = np.take_along_axis(values[steps], index, axis=1)
    assert gather(values, steps, index).tobytes() == want.tobytes()
    assert (gather(values[:12].copy(), None, index).tobytes()
            == np.take_along_axis(values[:12], index, axis=1).tobytes())
