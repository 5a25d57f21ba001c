"""`model lu`'s faster evaluation against the code it replaced (commit 5b96ce3), kept in
tests as the reference: on a sample of configurations up to P = 16384 (square and
extreme grids, N a multiple of the block or not, every pivoting, a node's shared cores
and a network that does not overlap), the 2D critical path gives the same seconds to
float rounding (relative 1e-12; the sums run over the steps in another order)."""

from dataclasses import replace

import pytest
from linalg_io.models.lu2d import critical_path_time
from linalg_io.models.profile import InterNode, load_profile
from lu2d_path_reference import critical_path_time as reference_path

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
            for pr in sample_grids(p):
                for pivoting in ("expected", "none", "worst"):
                    old = reference_path(n, nb, pr, p // pr, pivoting, profile, placement)
                    new = critical_path_time(n, nb, pr, p // pr, pivoting, profile, placement)
                    assert new == pytest.approx(old, rel=TIME_RTOL), (p, n, nb, pr, pivoting)
                    checked += 1
    assert checked >= 45
