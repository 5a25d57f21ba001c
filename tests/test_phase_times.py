"""Per-phase wall time in the LU records (`time_by_phase`): every rank's phases add up to
its factorization time, which is the runner's timed repetition, and the time phases
carry the traffic phases' names. The model's per-phase prediction
(`models/phase_time.py`) splits exactly the bytes, messages and flops of the models'
per-rank totals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from linalg_io.models import phase_time
from linalg_io.models.conflux import conflux_plan_counts
from linalg_io.models.lu2d import lu2d_plan_counts
from mpi_harness import run_cli_records

from linalg_io.comm.phase_clock import OTHER, PhaseClock
from linalg_io.lu import conflux, lu2d
from linalg_io.lu.conflux import CONFLUX_PHASES
from linalg_io.lu.lu2d import LU2D_PHASES

SCHEDULER_SLICE_S = 0.004


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
    other = timing["per_rank"][OTHER]
    for rank, total in enumerate(totals):
        summed = sum(timing["per_rank"][name][rank] for name in timing["phases"])
        assert math.isclose(summed, total, rel_tol=1e-9)
        # a rank that lost its core for a while (this machine's two cores shared by the
        # ranks, mpiexec and pytest) charges the wait to whatever ran: OTHER too, but
        # never most of the rank's time
        assert other[rank] < 0.5 * total
    # nothing of substance outside the named phases (only the loop's own steps): every
    # rank runs the same loop, so the rank that lost its core least shows what the loop
    # spends outside them; a scheduler slice beside the 5% (time, on a shared core)
    best = min(range(nranks), key=lambda rank: other[rank] / totals[rank])
    assert other[best] < 0.05 * totals[best] + SCHEDULER_SLICE_S
    # a rank's factorization is the runner's repetition (the slowest rank's, per rep)
    mean_rep = sum(record["times_s"]) / len(record["times_s"])
    assert 0.7 * mean_rep <= max(totals) <= mean_rep
    # every traffic phase is a time phase, and took time on the rank that sent the most
    traffic_phases = set(record["traffic"]["by_phase"])
    assert traffic_phases and traffic_phases <= set(phases)
    for name in traffic_phases:
        assert timing["max"][name] > 0
    assert timing["max"]["update"] > 0
    predicted = record["model"]["time_by_phase"]
    assert list(predicted["max"]) == list(phases)
    assert predicted["max"]["update"] > 0


def _split_totals(phases: dict) -> tuple:
    """(sent, recv, msgs, flops) summed over the phases and their links."""
    traffic = [sum(sum(link[i] for link in phase.links.values()) for phase in phases.values())
               for i in range(3)]
    return (*traffic, sum(phase.flops for phase in phases.values()))


def test_model_phases_are_the_codes_and_split_the_totals_exactly():
    assert phase_time.CONFLUX_PHASES is conflux.CONFLUX_PHASES
    assert phase_time.LU2D_PHASES is lu2d.LU2D_PHASES
    for n, v, px, py, c in [(1000, 64, 3, 2, 2), (2048, 128, 2, 2, 2), (1500, 128, 2, 1, 1),
                            (900, 64, 1, 3, 1), (777, 64, 1, 2, 4)]:
        phases = phase_time.conflux_phases(n, v, px, py, c, "uniform")
        totals = conflux_plan_counts(n, v, px, py, c, "uniform")
        sent, recv, msgs, flops = _split_totals(phases)
        np.testing.assert_allclose(sent, totals["sent"], rtol=1e-12)
        np.testing.assert_allclose(recv, totals["recv"], rtol=1e-12)
        np.testing.assert_allclose(msgs, totals["msgs"], rtol=1e-12)
        if px > 1:
            np.testing.assert_allclose(flops, totals["flops"], rtol=1e-12)
        else:   # the panel's getrf gave L: no solve of the panel rows
            assert (flops < totals["flops"]).any() and (flops <= totals["flops"]).all()
    for n, nb, pr, pc in [(1000, 64, 2, 3), (777, 32, 1, 4), (512, 64, 4, 1)]:
        phases = phase_time.lu2d_phases(n, nb, pr, pc, "expected")
        totals = lu2d_plan_counts(n, nb, pr, pc, "expected")
        sent, recv, msgs, flops = _split_totals(phases)
        np.testing.assert_allclose(sent, sum(totals["sent"].values()), rtol=1e-12)
        np.testing.assert_allclose(recv, sum(totals["recv"].values()), rtol=1e-12)
        np.testing.assert_allclose(msgs, totals["msgs"], rtol=1e-12)
        np.testing.assert_allclose(flops, totals["flops"], rtol=1e-12)


def test_report_puts_measured_beside_model_per_phase():
    from linalg_io.report.phases import phase_table

    record = {"algo": "2d", "nranks": 2, "params": {"n": 512, "nb": 64, "grid": [1, 2, 1]},
              "time_s": {"median": 1.0},
              "time_by_phase": {"phases": ["panel", "update", OTHER],
                                "max": {"panel": 0.3, "update": 0.6, OTHER: 0.01},
                                "mean": {"panel": 0.2, "update": 0.5, OTHER: 0.01}},
              "model": {"time_by_phase": {"max": {"panel": 0.15, "update": 0.6}}}}
    table = phase_table([record, {"algo": "tsgemm", "params": {}}])
    assert list(table["phase"]) == ["panel", "update", OTHER]
    assert list(table["measured_over_model"])[:2] == [2.0, 1.0]
    assert table["model_s"].isna().tolist() == [False, False, True]
