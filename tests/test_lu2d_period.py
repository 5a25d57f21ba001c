"""The 2D counts summed over the steps of each residue k mod lcm(Pr, Pc) first
(models/lu2d_runs.py, where every residue has two or more steps) against the per-rank
walk (tests/lu2d_walk.py): every rank's bytes sent and received and messages by phase,
byte for byte where they are whole numbers (no swaps, worst case), else (expected: the
sums run in another order) to relative 1e-12; flops to 1e-12; on grids up to P = 16384,
N a multiple of NB or not (the last step then off the period)."""

from math import lcm

import pytest
from linalg_io.models.lu2d import PHASES, lu2d_plan_counts, lu2d_received
from lu2d_walk import assert_counts_equal_walk, walk

RTOL = 1e-12

# (N, NB, Pr, Pc): at least two steps per residue k mod lcm(Pr, Pc)
CASES = [(4100, 16, 128, 128), (4200, 8, 64, 256),
         (4104, 8, 256, 64), (1000, 4, 16, 16), (999, 4, 8, 32), (600, 2, 1, 64),
         (700, 4, 48, 1), (900, 4, 6, 10)]


@pytest.mark.parametrize("n, nb, pr, pc", CASES,
                         ids=[f"N{n}-NB{nb}-{pr}x{pc}" for n, nb, pr, pc in CASES])
def test_counts_by_residue_equal_the_walk(n, nb, pr, pc):
    assert -(-n // nb) >= 2 * lcm(pr, pc)
    for pivoting in ("none", "worst", "expected"):
        walked = walk(n, nb, pr, pc, pivoting)
        fast = lu2d_plan_counts(n, nb, pr, pc, pivoting)
        received = lu2d_received(n, nb, pr, pc, pivoting)
        what = f"N={n} NB={nb} {pr}x{pc} {pivoting}"
        assert_counts_equal_walk(fast, walked, pivoting, what, RTOL,
                                 [(received[phase], walked["recv"][phase], f"received {phase}")
                                  for phase in PHASES])
