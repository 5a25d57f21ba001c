"""Real redistributions on 2..16 ranks (one launch): every entry arrives, counted bytes =
Open MPI's wire bytes = model = owner changes, wire messages = the model's, peak NumPy
memory within the budget (the plans without MPI: test_redistribution.py)."""

import json
import sys

import numpy as np
import pytest
from mpi_harness import MPI_SCRIPTS, run_mpi_json

from linalg_io.errors import InputError
from linalg_io.layout.redist_plan import RedistPlan

sys.path.insert(0, str(MPI_SCRIPTS))
from layout_specs import build_layout, owners, random_spec


def mpi_cases() -> list[dict]:
    """36 small random pairs (every 4th relabelled), 8 larger random pairs with a
    memory fraction (feasible ones), and two 1024 x 1024 block-cyclic -> tiles."""
    rng = np.random.default_rng(5)
    sizes = [2, 3, 4, 6, 8, 12, 16]
    cases = []
    for index in range(36):
        p = sizes[index % 7]
        m = int(rng.integers(20, 90))
        n = m if index % 2 else int(rng.integers(20, 90))
        cases.append({"p": p, "m": m, "n": n, "src": random_spec(rng, m, n, p),
                      "dst": random_spec(rng, m, n, p), "relabel": index % 4 == 0,
                      "mem_fraction": None})
    while len(cases) < 44:
        p, fraction = int(rng.choice([2, 4, 8, 16])), float(rng.choice([0.3, 0.15]))
        m = n = int(rng.integers(300, 600))
        case = {"p": p, "m": m, "n": n, "src": random_spec(rng, m, n, p),
                "dst": random_spec(rng, m, n, p), "relabel": len(cases) % 2 == 0,
                "mem_fraction": fraction}
        try:
            RedistPlan(build_layout(case["src"], m, n, p), build_layout(case["dst"], m, n, p),
                       mem_fraction=fraction)
        except InputError:
            continue
        cases.append(case)
    for p, fraction in ((4, 0.1), (16, 0.25)):
        cases.append({"p": p, "m": 1024, "n": 1024, "relabel": False, "mem_fraction": fraction,
                      "src": {"kind": "scalapack", "mb": 32, "nb": 32, "pr": 2, "pc": p // 2,
                              "rsrc": 0, "csrc": 0, "order": "row"},
                      "dst": {"kind": "tiles", "v": 128, "px": 2, "py": p // 2, "c": 1}})
    return cases


@pytest.fixture(scope="module")
def redistributed():
    cases = mpi_cases()
    return run_mpi_json(16, "redist_cases.py", [json.dumps(cases)], timeout=240)


def test_every_entry_arrives(redistributed):
    assert len(redistributed) == len(mpi_cases())
    assert all(rank["correct"] for result in redistributed for rank in result["ranks"])


def test_measured_bytes_are_the_model_and_the_owner_changes(redistributed):
    relabelled = 0
    for result in redistributed:
        case = result["case"]
        p, m, n = case["p"], case["m"], case["n"]
        src = build_layout(case["src"], m, n, p)
        dst = build_layout(case["dst"], m, n, p)
        plan = RedistPlan.create(src, dst, relabel=case["relabel"],
                                 mem_fraction=case["mem_fraction"])
        assert result["dst_ranks"] == plan.dst.ranks.reshape(-1).tolist()
        before, after = owners(src, m, n), owners(plan.dst, m, n)
        changes = before != after
        sent = np.array([r["sent"] for r in result["ranks"]])
        recv = np.array([r["recv"] for r in result["ranks"]])
        assert np.array_equal(sent, 8 * np.bincount(before[changes], minlength=p)), case
        assert np.array_equal(recv, 8 * np.bincount(after[changes], minlength=p)), case
        assert np.array_equal(sent, 8 * plan.sent()) and np.array_equal(recv, 8 * plan.received())
        costs = plan.costs()
        assert [r["msgs"] for r in result["ranks"]] == costs["msgs"].tolist()
        wire = np.array([r["wire"] for r in result["ranks"]])   # what Open MPI moved
        assert np.array_equal(wire[:, 0], sent) and np.array_equal(wire[:, 1], recv), case
        assert np.array_equal(wire[:, 2], costs["wire_msgs"]), case
        if case["relabel"]:
            relabelled += 1
            assert plan.moved() <= RedistPlan(src, dst).moved()
    assert relabelled == 9 + 4


def test_peak_memory_within_the_budget(redistributed):
    bounded = [r for r in redistributed if r["case"]["mem_fraction"]]
    assert len(bounded) == 10
    rounds = []
    for result in bounded:
        case = result["case"]
        fraction = case["mem_fraction"]
        for rank in result["ranks"]:
            if rank["sent"] + rank["recv"]:
                assert 0 < rank["peak_bytes"] <= fraction * 8 * rank["local_entries"], case
            else:   # a rank that moves nothing still takes part in every round
                assert rank["peak_bytes"] <= 512 * 8, case
        plan = RedistPlan(build_layout(case["src"], case["m"], case["n"], case["p"]),
                          build_layout(case["dst"], case["m"], case["n"], case["p"]),
                          mem_fraction=fraction)
        rounds.append(plan.costs()["rounds"])
    assert max(rounds) > 4     # the bound did cut the exchange into rounds
