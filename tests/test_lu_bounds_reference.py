"""The 2.5D LU's lower bound (`linalg_io.models.lu_bounds`), its [step] arrays shared
between grids and its broadcast timed at a few positions, is at least the bound of
tests/lu_bounds_reference.py (every grid evaluated from scratch) on every machine and
a sample of problems (shared cores and not, c = 1 and c > 1, Py = 1, 2 (reflected
columns) and more, tiles whose pivot ids take the chain): equal bit for bit where none
of the later facts applies (c = 1, Py = 1: one process column, which holds step 0's
panel, on no shared nodes) but where one process row's own counts lift it (fact 10),
tighter elsewhere on every machine (a column's members on shared nodes, facts 4 and 6;
M(F_0) and layer 0's own terms, fact 8; the busiest row, fact 10)."""

import lu_bounds_reference as reference
import pytest
from bound_machines import DEFAULT_RATES_MACHINES, machine_profile, placeable
from linalg_io.models import lu_bounds
from linalg_io.models.conflux_nodes import group_nodes

from linalg_io.layout.conflux_layout import StepPlan
from linalg_io.lu.choice import TILE_SIZES, busy_grids

PROBLEMS = [(2048, 4), (4096, 6), (6000, 96), (16384, 512), (100000, 12), (65536, 16384),
            (524288, 1048576)]


@pytest.mark.parametrize("machine", DEFAULT_RATES_MACHINES)
def test_bounds_equal_the_reference(machine):
    profile = machine_profile(machine)
    tried = tighter = 0
    for n, p in PROBLEMS:
        if not placeable(machine, p):
            continue
        placement = profile.placement(p)
        for v in TILE_SIZES + (100, 4096):
            for px, py, c in busy_grids(n, v, p):
                args = (n, v, px, py, c, profile, placement)
                bound, old = lu_bounds.time_seconds(*args), reference.time_seconds(*args)
                # tighter: a column's members on shared nodes (facts 4, 6), M(F_0) on
                # its own and layer 0's terms (c > 1, fact 8)
                assert bound >= old, args
                tighter += bound > old
                if c == 1 and py == 1 and (px == 1 or group_nodes(py, px, placement) is None):
                    # ... and no process row's own counts taken (fact 10)
                    busiest = lu_bounds._busiest(StepPlan.create(n, v, px, py, c), profile,
                                                 placement)
                    assert bound == old or busiest is not None, args
                assert lu_bounds.update_seconds(*args) == reference.update_seconds(*args)
                tried += 1
        assert lu_bounds.update_work(n, 256, 4) == reference.update_work(n, 256, 4)
    assert tried > 100
    assert tighter > 0, machine
