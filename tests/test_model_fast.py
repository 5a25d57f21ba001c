"""The fast LU models (rank classes, sums of products over the steps) against the per-rank
walks they replaced (tests/conflux_walk.py, tests/lu2d_walk.py): every grid of P <= 64,
N a multiple of v or not, Px not a power of two, every pivot model and a run's pivots,
on one node and on a cluster of 4-rank nodes that share 2 cores and a network link.
Counts: every rank's bytes sent and received, messages and flops; time: the critical
path (COnfLUX)."""

from dataclasses import replace

import numpy as np
import pytest
from conflux_walk import walk as conflux_walk
from linalg_io.models.conflux import conflux_plan_counts
from linalg_io.models.lu2d import PHASES, lu2d_plan_counts
from linalg_io.models.profile import InterNode, load_profile
from lu2d_walk import walk as lu2d_walk

from linalg_io.layout.grid_shapes import divisors
from linalg_io.lu.choice import grid_candidates

PROFILE = load_profile()
CLUSTER = replace(PROFILE, name="test cluster", ranks_per_node=4, cores_per_node=2,
                  inter_node=InterNode(latency_s=5e-6, bandwidth_bytes_per_s=2e9))
RANKS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 36, 64)


def run_pivots(n: int, v: int, seed: int) -> list[np.ndarray]:
    """A run's pivot ids per step: a random order of the rows, v per step."""
    order = np.random.default_rng(seed).permutation(n)
    return [order[k:k + v] for k in range(0, n, v)]


def assert_same(walked: np.ndarray, fast: np.ndarray, what: str) -> None:
    assert fast.shape == walked.shape, what
    np.testing.assert_allclose(fast, walked, rtol=1e-10, atol=1e-6, err_msg=what)
    assert fast.max() == pytest.approx(walked.max(), rel=1e-12, abs=1e-6), what
    assert fast.mean() == pytest.approx(walked.mean(), rel=1e-12, abs=1e-6), what


@pytest.mark.parametrize("n, v", [(400, 64), (512, 128)])
def test_conflux_classes_equal_the_per_rank_walk(n, v):
    checked = 0
    for p in RANKS:
        for px, py, c in grid_candidates(p):
            models = ("none", "uniform", "proportional") if p < 24 else ("uniform",)
            for pivots in models + (run_pivots(n, v, p),):
                label = pivots if isinstance(pivots, str) else "a run's"
                for profile in (PROFILE, CLUSTER):
                    placement = profile.placement(p)
                    walked = conflux_walk(n, v, px, py, c, pivots, profile, placement)
                    fast = conflux_plan_counts(n, v, px, py, c, pivots, profile, placement)
                    what = f"N={n} v={v} {px}x{py}x{c} pivots {label} on {profile.name}"
                    for key in ("sent", "recv", "msgs", "flops"):
                        assert_same(walked[key], fast[key], f"{key}, {what}")
                    assert fast["time_s"] == pytest.approx(walked["time_s"], rel=1e-9), what
                    checked += 1
    assert checked > 300


@pytest.mark.parametrize("n, nb", [(777, 64), (1024, 128), (300, 32)])
def test_lu2d_products_equal_the_per_rank_walk(n, nb):
    for p in RANKS:
        for pr in divisors(p):
            pc = p // pr
            for pivoting in ("none", "expected", "worst",
                             np.array([np.random.default_rng(p).integers(j, n) for j in range(n)])):
                walked = lu2d_walk(n, nb, pr, pc, pivoting)
                fast = lu2d_plan_counts(n, nb, pr, pc, pivoting)
                named = pivoting if isinstance(pivoting, str) else "given"
                what = f"N={n} NB={nb} {pr}x{pc} pivoting {named}"
                for key in ("sent", "recv"):
                    for phase in PHASES:
                        assert_same(walked[key][phase], fast[key][phase], f"{key} {phase}, {what}")
                assert_same(walked["msgs"], fast["msgs"], f"msgs, {what}")
                assert_same(walked["flops"], fast["flops"], f"flops, {what}")
