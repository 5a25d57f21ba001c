"""The schedules' cost functions (linalg_io/layout/schedules.py) checked by hand, no MPI
(the collectives themselves on real jobs: test_collectives_mpi.py)."""

import numpy as np

from linalg_io.layout import schedules


def test_binomial_tree_by_hand():
    """P = 8, root 0: rank 0 sends to 4, 2, 1; 4 to 6, 5; 2 to 3; 6 to 7."""
    sent, recv, msgs = schedules.bcast_costs(np.arange(8), 8, 80)
    assert msgs.tolist() == [3, 0, 1, 0, 2, 0, 1, 0]
    assert sent.tolist() == [240, 0, 80, 0, 160, 0, 80, 0]
    assert recv.tolist() == [0] + [80] * 7
    assert schedules.binomial_child_positions(0, 8) == [4, 2, 1]
    assert schedules.binomial_child_positions(6, 8) == [7]
    assert schedules.binomial_parent(6, 8) == 4
    assert schedules.binomial_child_positions(0, 5) == [4, 2, 1]
