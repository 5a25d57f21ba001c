"""The 2D LU's lower bound (`linalg_io.models.lu2d_bounds`), its owned rows in closed form
and its block columns shared between grids, equals bit for bit the bound of
tests/lu2d_bounds_reference.py on every machine and grid of a sample of problems (a
partial last block, Pr or Pc = 1, more process rows than blocks, shared cores)."""

import lu2d_bounds_reference as reference
import pytest
from bound_machines import DEFAULT_RATES_MACHINES, machine_profile, placeable
from linalg_io.models import lu2d_bounds

from linalg_io.layout.grid_shapes import divisors

PROBLEMS = [(1000, 1, 64), (1000, 4, 64), (3000, 12, 100), (5000, 96, 128), (20000, 64, 64),
            (9000, 256, 32), (131072, 1024, 128), (70000, 4096, 64)]


@pytest.mark.parametrize("machine", DEFAULT_RATES_MACHINES)
def test_bounds_equal_the_reference(machine):
    profile = machine_profile(machine)
    tried = 0
    for n, p, nb in PROBLEMS:
        if not placeable(machine, p):
            continue
        placement = profile.placement(p)
        for pr in divisors(p):
            args = (n, nb, pr, p // pr, profile, placement)
            assert lu2d_bounds.time_seconds(*args) == reference.time_seconds(*args), args
            tried += 1
    assert tried > 20
