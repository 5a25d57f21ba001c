"""`model lu`'s faster evaluation against the code it replaced, kept in tests as the
reference (2D: commit 5b96ce3, tests/lu2d_path_reference.py; 2.5D: commit 31c85bb,
tests/conflux_model_reference.py). 2.5D: on grids of up to P = 32768 (square, flat,
tall, c > 1, idle ranks), N a multiple of v or not, pivots none, uniform and
proportional, on example_cpu and on nodes that share cores, every rank's bytes sent and
received, messages and flops, in total, by communicator and by phase (P <= 64; P = 1024:
one pivot model per grid and machine, in turn), and
the critical path's seconds: equal where they are whole numbers (pivots none), else to
relative 1e-12 (the sums over the steps run in another order). 2D: on a sample of
configurations up to P = 16384 (square and extreme grids, N a multiple of the block or
not, every pivoting, a node's shared cores and a network that does not overlap), the 2D
critical path gives the same seconds to float rounding (relative 1e-12; the sums run
over the steps in another order), and the 2D counts of every rank equal the per-rank
walk (tests/lu2d_walk.py): bytes and messages exactly where they are whole numbers (no
swaps, worst case), else to relative 1e-12."""

from dataclasses import replace

import numpy as np
import pytest
from conflux_model_reference import conflux_plan_counts as conflux_reference
from linalg_io.models.conflux import conflux_plan_counts
from linalg_io.models.lu2d import critical_path_time, lu2d_plan_counts
from linalg_io.models.profile import InterNode, load_profile
from lu2d_path_reference import critical_path_time as reference_path
from lu2d_walk import assert_counts_equal_walk
from lu2d_walk import walk as lu2d_walk

from linalg_io.layout.grid_shapes import divisors

CPU = load_profile("example_cpu")
CLUSTER = replace(load_profile(), name="test cluster", ranks_per_node=4, cores_per_node=2,
                  inter_node=InterNode(latency_s=5e-6, bandwidth_bytes_per_s=2e9,
                                       overlap=False))
HERE = load_profile()
TIME_RTOL = 1e-12


def sample_grids(p: int) -> list[int]:
    """Pr of the square, the two extreme and two intermediate grids of p ranks."""
    pr = divisors(p)
    return sorted({pr[0], pr[len(pr) // 4], pr[len(pr) // 2], pr[-1 - len(pr) // 4], pr[-1]})


@pytest.mark.parametrize("profile, ranks", [
    (CPU, (1, 2, 6, 64, 256, 1024, 4096, 16384)),
    (CLUSTER, (4, 6, 16, 24, 64)),
    (HERE, (3, 8, 16)),
], ids=["example_cpu", "shared cores, no overlap", "this machine"])
def test_lu2d_critical_path_equals_the_reference(profile, ranks):
    checked = 0
    for p in ranks:
        placement = profile.placement(p)
        for n, nb in ((200, 8), (777, 64), (4096, 128), (9000, 64)):
            if (p, n) == (16384, 9000):   # the reference's 6 of the test's 12 s (P = 4096
                continue                  # holds N = 9000, P = 16384 the three others)
            for pr in sample_grids(p):
                for pivoting in ("expected", "none", "worst"):
                    old = reference_path(n, nb, pr, p // pr, pivoting, profile, placement)
                    new = critical_path_time(n, nb, pr, p // pr, pivoting, profile, placement)
                    assert new == pytest.approx(old, rel=TIME_RTOL), (p, n, nb, pr, pivoting)
                    checked += 1
    assert checked >= 45


@pytest.mark.parametrize("p", [256, 1024, 4096, 16384])
def test_lu2d_counts_equal_the_walk_at_scale(p):
    for n, nb in ((777, 64), (1000, 16)):
        for pr in sample_grids(p):
            for pivoting in ("none", "worst", "expected"):
                walked = lu2d_walk(n, nb, pr, p // pr, pivoting)
                fast = lu2d_plan_counts(n, nb, pr, p // pr, pivoting)
                what = f"N={n} NB={nb} {pr}x{p // pr} {pivoting}"
                assert_counts_equal_walk(fast, walked, pivoting, what, TIME_RTOL)


CONFLUX_CASES = [   # (P, N, v, grids Px x Py x c)
    (6, 777, 64, [(3, 2, 1), (1, 3, 2), (6, 1, 1)]),
    (64, 2000, 128, [(8, 8, 1), (4, 8, 2), (64, 1, 1), (1, 64, 1)]),
    (1024, 4000, 64, [(32, 32, 1), (8, 128, 1)]),
    (4096, 8192, 128, [(64, 64, 1), (32, 64, 2)]),
    (16384, 8192, 128, [(64, 128, 2)]),
    # idle process rows (Px > N/v tiles), c > 1 with N not a multiple of v, and larger P
    (1024, 3000, 128, [(64, 16, 1), (32, 8, 4)]),
    (4096, 9000, 256, [(16, 64, 4), (128, 16, 2)]),
]
# P = 32768 (N = 16384, v = 128) adds size, not kinds: the cases above hold every kind of
# grid and all three pivot models on both machines; here one pivot model (uniform) and one
# grid per machine (c = 1 with 1024 process rows, c = 2), which keeps the pure loop short
LARGEST = {"example_cpu": (32768, 16384, 128, [(1024, 32, 1)]),
           "shared cores": (32768, 16384, 128, [(256, 64, 2)])}
PIVOTS = ("none", "uniform", "proportional")


def _pairs(old: dict, new: dict):
    """(name, reference array, new array) of every per-rank figure of the counts."""
    for key in ("sent", "recv", "msgs", "flops"):
        yield key, old[key], new[key]
    for phase, figures in old.get("by_phase", {}).items():
        for key in ("sent", "recv", "msgs", "flops", "gamma_flops"):
            yield f"{phase} {key}", figures[key], new["by_phase"][phase][key]
        for group, links in figures["links"].items():
            for i, value in enumerate(links):
                yield f"{phase} {group} link {i}", value, new["by_phase"][phase]["links"][group][i]
    for group, (sent, recv) in old["by_group"].items():
        yield f"{group} sent", sent, new["by_group"][group][0]
        yield f"{group} recv", recv, new["by_group"][group][1]


@pytest.mark.parametrize("profile, largest", [(CPU, LARGEST["example_cpu"]),
                                              (CLUSTER, LARGEST["shared cores"])],
                         ids=list(LARGEST))
def test_conflux_counts_and_time_equal_the_reference(profile, largest):
    checked = phased = 0
    turn = 0 if profile is CPU else 1
    for p, n, v, grids in CONFLUX_CASES + [largest]:
        placement = profile.placement(p)
        for px, py, c in grids:
            for pivots in PIVOTS if p < largest[0] else PIVOTS[1:2]:
                args = (n, v, px, py, c, pivots, profile, placement)
                # by phase the reference takes ~20 times as long: every case up to P = 64,
                # and at P = 1024 each grid with one pivot model (the next one each grid)
                by_phase = p <= 64 or (p <= 1024 and pivots == PIVOTS[turn % len(PIVOTS)])
                parts = {"by_phase": by_phase, "by_group": True}
                old = conflux_reference(*args, **parts)
                new = conflux_plan_counts(*args, **parts)
                what = f"N={n} v={v} {px}x{py}x{c} pivots {pivots} on {profile.name}"
                for name, reference, fast in _pairs(old, new):
                    if pivots == "none" and "flops" not in name:
                        np.testing.assert_array_equal(fast, reference, err_msg=f"{name}, {what}")
                    else:
                        np.testing.assert_allclose(fast, reference, rtol=TIME_RTOL, atol=1e-9,
                                                   err_msg=f"{name}, {what}")
                assert new["time_s"] == pytest.approx(old["time_s"], rel=TIME_RTOL), what
                checked += 1
                phased += by_phase
            turn += p == 1024
    assert checked == sum(len(grids) for _, _, _, grids in CONFLUX_CASES) * len(PIVOTS) + 1
    assert phased == 7 * len(PIVOTS) + 4   # P = 6 and 64 (7 grids), P = 1024 (4 grids)
