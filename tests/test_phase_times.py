"""Per-phase wall time in the LU records (`time_by_phase`): every rank's phases add up to
its factorization time, which is the runner's timed repetition, and the time phases
carry the traffic phases' names."""

from __future__ import annotations

import math

import pytest
from mpi_harness import run_cli_records

from linalg_io.comm.phase_clock import OTHER, PhaseClock
from linalg_io.lu.conflux import CONFLUX_PHASES
from linalg_io.lu.lu2d import LU2D_PHASES


def test_clock_charges_every_interval_to_one_phase_and_restores_the_outer_one():
    clock = PhaseClock(("a", "b"))
    clock.start()
    clock.switch("a")
    with clock.phase("b"):
        sum(range(20000))
    assert clock.switch("a") == "a"       # back in the outer phase after the block
    sum(range(20000))
    clock.stop()
    (run,) = clock.runs
    assert run["a"] > 0 and run["b"] > 0
    assert math.isclose(run["a"] + run["b"] + run[OTHER], run["total"], rel_tol=1e-12)


@pytest.mark.parametrize("nranks, args, phases", [
    (2, ["--algo", "conflux", "--grid", "2x1x1", "--nb", "64"], CONFLUX_PHASES),
    (4, ["--algo", "conflux", "--grid", "1x2x2", "--nb", "32"], CONFLUX_PHASES),
    (4, ["--algo", "2d", "--grid", "2x2", "--nb", "32"], LU2D_PHASES),
])
def test_phase_times_add_up_to_the_factorization_on_every_rank(nranks, args, phases):
    (record,) = run_cli_records(nranks, ["lu", "--n", "600", "--reps", "2", "--warmup", "1",
                                         *args])
    assert record["verify"]["passed"]
    timing = record["time_by_phase"]
    assert timing["phases"] == [*phases, OTHER]
    totals = timing["total_per_rank"]
    assert len(totals) == nranks
    for rank, total in enumerate(totals):
        summed = sum(timing["per_rank"][name][rank] for name in timing["phases"])
        assert math.isclose(summed, total, rel_tol=1e-9)
        # nothing of substance outside the named phases (only the loop's own steps)
        assert timing["per_rank"][OTHER][rank] < 0.05 * total
    # a rank's factorization is the runner's repetition (the slowest rank's, per rep)
    mean_rep = sum(record["times_s"]) / len(record["times_s"])
    assert 0.7 * mean_rep <= max(totals) <= mean_rep
    # every traffic phase is a time phase, and took time on the rank that sent the most
    traffic_phases = set(record["traffic"]["by_phase"])
    assert traffic_phases and traffic_phases <= set(phases)
    for name in traffic_phases:
        assert timing["max"][name] > 0
    assert timing["max"]["update"] > 0
