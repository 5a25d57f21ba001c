"""The machines the lower-bound tests (tests/test_lu_bounds.py, tests/test_lu2d_bounds.py)
hold their bounds on: the repository's machine files, "big" (example_cpu with 8192
nodes), "shared" (the same with 32 cores to a node's 128 ranks: cores shared across
nodes; "default", this machine's one node, shares them too) and "rates" ("big" with
local rates of its own, as `calibrate` measures them: a steeper dgemm curve and a slower
panel than the defaults)."""

from dataclasses import replace

from linalg_io.models.profile import load_profile
from linalg_io.models.rates import LocalRates

from linalg_io.errors import InputError

MACHINES = ("default", "example_cpu", "example_gpu", "lumi_c", "piz_daint_mc", "big", "shared",
            "rates")
# the frozen references (tests/*bounds_reference.py) take the default local rates
DEFAULT_RATES_MACHINES = tuple(m for m in MACHINES if m != "rates")


def machine_profile(name: str):
    """The profile of one of MACHINES."""
    if name == "big":
        return replace(load_profile("example_cpu"), nodes=8192)
    if name == "rates":
        return replace(load_profile("example_cpu"), nodes=8192, local=LocalRates(14.0, 0.27))
    if name == "shared":
        return replace(load_profile("example_cpu"), nodes=8192, cores_per_node=32)
    return load_profile(None if name == "default" else name)


def placeable(machine: str, p: int) -> bool:
    """Whether the machine holds p ranks."""
    try:
        machine_profile(machine).placement(p)
    except InputError:    # more ranks than the machine holds
        return False
    return True
