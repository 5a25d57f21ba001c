"""`model lu`'s 2D row (`lu_verdict.row_2d`: the traffic without the flops, the fixed
phases' received bytes summed once for the three pivotings) equals, bit for bit, the
row taken from `lu2d_costs` and `lu2d_received` as it was (every figure, every grid
shape tried: Pr or Pc = 1, P = 1, a partial last block, shared cores)."""

import numpy as np
import pytest
from bound_machines import machine_profile
from linalg_io.models.lu2d import PHASES, lu2d_costs, lu2d_received

from linalg_io.layout.grid_shapes import divisors
from linalg_io.model_command.lu_verdict import row_2d


def _reference_row(n, profile, placement, shape):
    pr, pc, nb = shape
    expected = lu2d_costs(n, nb, pr, pc, "expected")
    wire_sent, wire_recv, _ = expected.wire()

    def recv_max(pivoting):
        counts = lu2d_received(n, nb, pr, pc, pivoting)
        return float(sum(counts[phase] for phase in PHASES).max())

    return {"pr": pr, "pc": pc, "nb": nb,
            "bytes_recv_max": float(expected.bytes_recv.max()),
            "wire_sent_max": float(wire_sent.max()), "wire_recv_max": float(wire_recv.max()),
            "msgs_max": float(expected.msgs_sent.max()),
            "recv_none_max": recv_max("none"), "recv_worst_max": recv_max("worst"),
            "time_s": float(expected.critical_path[0](profile, placement))}


@pytest.mark.parametrize("machine,n,p,nb", [("example_cpu", 1000, 1, 64),
                                            ("example_cpu", 3000, 12, 100),
                                            ("big", 20000, 64, 128),
                                            ("shared", 9000, 256, 64),
                                            ("big", 131072, 1024, 128)])
def test_row_2d_equals_the_costs_row(machine, n, p, nb):
    profile = machine_profile(machine)
    placement = profile.placement(p)
    for pr in divisors(p):
        shape = (pr, p // pr, nb)
        new, old = row_2d(n, profile, placement, shape), _reference_row(n, profile, placement,
                                                                         shape)
        assert new == old, (shape, new, old)
        assert all(np.float64(new[key]).tobytes() == np.float64(old[key]).tobytes()
                   for key in new)
