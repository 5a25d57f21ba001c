"""The 2D LU's lower bound (`linalg_io.models.lu2d_bounds.time_seconds`) and the 2D grid
search's branch and bound on it (`linalg_io.lu.choice.bounded_2d`): the bound is at most
the model's time on every machine and grid tried, close to it where communication
dominates, and the pruned choice and table are the unpruned ones."""

import re

import pytest
from bound_machines import MACHINES, machine_profile, placeable
from linalg_io.models import lu2d
from linalg_io.models.lu2d_bounds import time_seconds

from linalg_io.cli import main as cli_main
from linalg_io.layout.grid_shapes import divisors
from linalg_io.lu.choice import (
    SQUARE_TIE,
    bounded_2d,
    candidates,
    choose_lu,
    fastest_2d,
    lu2d_seconds,
)
from linalg_io.model_command.lu_verdict import TOP


def _pairs(machine: str, n: int, p: int, nbs=(None,)) -> list[tuple[float, float, tuple]]:
    """(bound, exact time, (Pr, Pc, NB)) of every Pr x Pc of p (nbs None: of
    `candidates`, NB default_nb)."""
    profile = machine_profile(machine)
    placement = profile.placement(p)
    grids = [f"{pr}x{p // pr}" for pr in divisors(p)] if nbs != (None,) else ["auto"]
    choices = [candidate.choice for grid in grids for nb in nbs
               for candidate in candidates("2d", n, p, 1e30, profile, placement, grid,
                                           "auto" if nb is None else nb)]
    return [(time_seconds(n, choice.nb, *choice.grid, profile, placement),
             lu2d_seconds(profile, choice), choice.shape) for choice in choices]


@pytest.mark.parametrize("machine,n,p", [
    (machine, n, p) for machine in MACHINES
    for n, p in [(1000, 1), (3000, 12), (4096, 6), (6000, 96)]
    if placeable(machine, p)] + [("shared", 16384, 512)])
def test_bound_is_below_the_model_time(machine, n, p):
    """Every grid, NB 32 and 100 (a last block narrower; from P = 512 those of
    `candidates`, default_nb): 0 < bound <= the 2D model's time (pivots "expected")."""
    pairs = _pairs(machine, n, p, (None,) if p >= 512 else (32, 100))
    for bound, exact, shape in pairs:
        assert 0 < bound <= exact, (machine, n, p, shape, bound, exact)
    assert max(bound / exact for bound, exact, _ in pairs) > 0.5


def test_bound_sees_the_communication():
    """N = 65536, P = 4096 on the big machine (communication-bound; the grids of
    `candidates`, 4 x 1024 to 1024 x 4): the bound is at most the time, within 15% of it
    on every grid and within 2% on most."""
    ratios = sorted(bound / exact for bound, exact, _ in _pairs("big", 65536, 4096))
    assert len(ratios) == 9 and 0.85 < ratios[0] and ratios[-1] <= 1
    assert ratios[len(ratios) // 2] > 0.98


@pytest.mark.parametrize("machine,n,p", [
    ("example_cpu", 8192, 720), ("default", 4096, 240), ("shared", 16384, 512)])
def test_pruned_choice_and_rows_are_the_unpruned_ones(machine, n, p):
    """The choice of the pruned search is fastest_2d of every grid; with keep = TOP its
    TOP fastest are every grid's; at N = 8192, P = 720 (20 grids) it skips some."""
    profile = machine_profile(machine)
    placement = profile.placement(p)
    ask = {"n": n, "p": p, "memory": 1e30, "profile": profile, "placement": placement}
    choices = [candidate.choice for candidate in candidates("2d", **ask)]
    every = [(lu2d_seconds(profile, choice), choice) for choice in choices]
    assert choose_lu("2d", **ask) == fastest_2d(every)
    seconds = {choice: t for t, choice in every}
    for keep in (1, TOP):
        timed, skipped = bounded_2d(seconds.get, float, profile, choices, keep)
        assert sorted(t for _, t in timed)[:keep] == sorted(seconds.values())[:keep]
        assert {c for c, _ in timed} | set(skipped) == set(choices)
        assert fastest_2d([(t, c) for c, t in timed]) == fastest_2d(every)
        times = sorted(t for _, t in timed)
        assert all(time_seconds(n, c.nb, *c.grid, profile, placement)
                   > max(times[0] * (1 + SQUARE_TIE), times[keep - 1]) for c in skipped)
        if (machine, keep) == ("example_cpu", TOP):
            assert len(skipped) == 10


def test_model_lu_2d_table_is_the_unpruned_one(capsys):
    """`model lu --algo 2d` at N = 8192, P = 720 on example_cpu (20 grids): its verdict,
    its TOP rows and the sampled-time lines are those of `--all`; it says how many
    grids it did not evaluate."""
    ask = ["model", "lu", "--n", "8192", "--p", "720", "--machine", "example_cpu",
           "--algo", "2d"]
    assert cli_main(ask + ["--all"]) == 0
    every = capsys.readouterr().out.splitlines()
    assert cli_main(ask) == 0
    pruned = capsys.readouterr().out.splitlines()
    table = pruned.index(next(line for line in pruned if line.startswith("2D LU")))
    assert pruned[:table + 2 + TOP] == every[:table + 2 + TOP]
    assert pruned[table + 2 + TOP] == ("  ... 10 more not evaluated (a lower bound on their "
                                       "time ranks them after these)")
    rows = [line for line in every[table + 2:] if re.match(r"[* ] +\d+x\d+ ", line)]
    assert len(rows) == 20
    assert pruned[table + 3 + TOP:] == every[table + 2 + len(rows):]


@pytest.mark.parametrize("pr,pc", [(16, 16), (64, 256)])
def test_bound_where_the_model_samples_the_steps(pr, pc):
    """N = 9e6, NB = 128 (70313 steps: the model samples them, `lu2d.sampled_steps`) on
    the big machine: the bound, taken SAMPLED_ERROR lower there, is below the model's
    estimate and within 0.1% of it (compute-bound)."""
    profile = machine_profile("big")
    placement = profile.placement(pr * pc)
    choice = candidates("2d", 9_000_000, pr * pc, 1e30, profile, placement, f"{pr}x{pc}",
                        128)[0].choice
    assert lu2d.sampled_steps(70313, pr, pc) is not None
    exact = lu2d_seconds(profile, choice)
    assert 0.999 * exact < time_seconds(9_000_000, 128, pr, pc, profile, placement) <= exact
