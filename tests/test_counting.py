"""Exact byte and message counts of CountedComm for known patterns on 2, 4 and 8 ranks.

Expected values are derived here from the counting rules of docs/records.md#counting and
compared with what every rank counted in tests/mpi/counting_patterns.py.
"""

import numpy as np
import pytest
from mpi_harness import run_mpi_json

D = 8  # bytes per double


def expected(P):
    ranks = range(P)
    counts = np.arange(1, P + 1)
    s = (np.arange(P)[:, None] + 2 * np.arange(P)[None, :]) % 3 + 1
    e = {}
    e["ring"] = [((r + 1) * D, ((r - 1) % P + 1) * D, 1) for r in ranks]
    e["sendrecv"] = [(20, 20, 1) for r in ranks]
    e["bcast"] = [(100 * D, 100 * D * (P - 1), 1) for r in ranks]
    e["ibcast"] = [(60 * D if r == P - 1 else 0, 0 if r == P - 1 else 60 * D,
                    1 if r == P - 1 else 0) for r in ranks]
    e["reduce"] = [((0 if r == 0 else 10 * D) + 7 * D, (10 * D if r == 0 else 0) + 7 * D,
                    (0 if r == 0 else 1) + 1) for r in ranks]
    gv = [(0 if r == P - 1 else (r + 1) * D, (counts.sum() - P) * D if r == P - 1 else 0,
           0 if r == P - 1 else 1) for r in ranks]
    sv = [((counts.sum() - 1) * D if r == 0 else 0, 0 if r == 0 else (r + 1) * D,
           1 if r == 0 else 0) for r in ranks]
    e["gatherv_scatterv"] = [tuple(a + b for a, b in zip(g, v)) for g, v in zip(gv, sv)]
    e["allgather"] = [((r + 1) * D + 3 * D, (counts.sum() - r - 1) * D + 3 * D * (P - 1), 2)
                      for r in ranks]
    e["alltoallv"] = [((s[r].sum() - s[r, r]) * D, (s[:, r].sum() - s[r, r]) * D, 1)
                      for r in ranks]
    e["reduce_scatter"] = [((counts.sum() - r - 1) * D, (r + 1) * D, 1) for r in ranks]
    # Put 1 + Accumulate 2 as origin, Get(target) 3; received: the same by symmetry
    e["one_sided"] = [(6 * D, 6 * D, 3) for r in ranks]
    e["self_only"] = [(0, 0, 0) for r in ranks]
    return e


@pytest.fixture(scope="module", params=[2, 4, 8])
def measured(request):
    return request.param, run_mpi_json(request.param, "counting_patterns.py", timeout=120)


PATTERNS = ["ring", "sendrecv", "bcast", "ibcast", "reduce", "gatherv_scatterv", "allgather",
            "alltoallv", "reduce_scatter", "one_sided", "self_only"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_exact_counts(measured, pattern):
    P, results = measured
    got = [(r["sent"], r["recv"], r["msgs"]) for r in results[pattern]]
    assert got == [tuple(int(v) for v in t) for t in expected(P)[pattern]]


def test_phase_and_operation_breakdown(measured):
    _, results = measured
    for r, counts in enumerate(results["ring"]):
        assert counts["by_phase"] == {"ring": (r + 1) * D}
        assert counts["by_op"] == {"Isend": (r + 1) * D}
    one_sided = results["one_sided"][0]
    assert one_sided["by_op"] == {"Put": D, "Accumulate": 2 * D, "Get(target)": 3 * D}
    assert one_sided["recv_by_op"] == {"Get": 3 * D, "Put/Accumulate(target)": 3 * D}
