"""Distributed tsgemm on 1-4 ranks: every result checked against NumPy (float64 reference
of the regenerated inputs) and the traffic of every rank equal to the model's, byte for
byte and message for message (and, in the CLI record, what Open MPI's monitoring saw).
One mpiexec launch per rank count, many cases each."""

from __future__ import annotations

import json

import pytest
from mpi_harness import run_cli_records, run_mpi_json


def cases_for(p: int) -> list[dict]:
    cases = []
    for dtype in ("float64", "float32"):
        for order in ("C", "F"):
            cases += [
                {"variant": "tsm2l", "m": 1001 + p, "n": 16, "k": 16, "dtype": dtype,
                 "order": order},
                {"variant": "ab", "m": 777, "n": 5, "k": 3, "dtype": dtype, "order": order},
                {"variant": "atb", "m": 2049, "n": 9, "k": 32, "dtype": dtype, "order": order,
                 "threads": 2},
                {"variant": "tsm2r", "m": 301, "n": 7, "k": 211, "dtype": dtype, "order": order,
                 "dist": "1d"},
                {"variant": "tsm2r", "m": 257, "n": 16, "k": 129, "dtype": dtype,
                 "order": order, "dist": "2d", "threads": 2},
            ]
    cases += [{"variant": "tsm2r", "m": 64, "n": 4, "k": 3, "dtype": "float64", "order": "C",
               "dist": "2d"},
              {"variant": "tsm2r", "m": 64, "n": 4, "k": 1, "dtype": "float64", "order": "C",
               "dist": "2d"},  # k < Pc (P > 1): a process column with no columns of A
              {"variant": "tsm2r", "m": 123, "n": 65, "k": 40, "dtype": "float64",
               "order": "C", "dist": "auto"},  # n > 64: BLAS, said so
              {"variant": "atb", "m": 3, "n": 2, "k": 1, "dtype": "float64", "order": "C"}]
    return cases


@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_traffic_equals_model_and_results_verify(nranks: int) -> None:
    cases = cases_for(nranks)
    results = run_mpi_json(nranks, "tsgemm_cases.py", [json.dumps(cases)], timeout=150)
    assert len(results) == len(cases)
    for result in results:
        label = f"P={nranks} {result['options']} dist={result['dist']}"
        assert result["sent"] == result["model_sent"], label
        assert result["recv"] == result["model_recv"], label
        assert result["msgs"] == result["model_msgs"], label
        check = result["verify"]
        assert check["passed"] and check["value"] <= check["threshold"], (label, check)
        if nranks > 1 and result["options"]["variant"] != "tsm2l":
            assert max(result["sent"]) > 0, label
        if result["options"]["n"] > 64:
            assert result["kernel"].startswith("blas"), label
        else:
            assert result["kernel"].startswith("cython"), label


def test_cli_record_has_traffic_model_and_bandwidth() -> None:
    records = run_cli_records(2, ["tsgemm", "--variant", "atb", "--m", "40001", "--n", "16",
                                  "--k", "16", "--reps", "2", "--threads", "1"])
    (record,) = records
    assert record["kernel"] == "tsgemm" and record["algo"] == "atb"
    assert record["verify"]["passed"]
    assert record["traffic"]["bytes_sent"]["max"] == record["model"]["bytes_sent"]["max"] \
        == 16 * 16 * 8
    if record["traffic"]["wire"] is not None:   # Open MPI: its own count of the same bytes
        assert record["traffic"]["wire"]["per_rank_bytes_sent"] \
            == record["model"]["wire"]["per_rank_bytes_sent"] == [2048.0, 2048.0]
        assert record["traffic"]["wire"]["per_rank_bytes_recv"] \
            == record["model"]["wire"]["per_rank_bytes_recv"] == [2048.0, 2048.0]
    assert record["params"]["local_kernel"] == "cython atb_rowmajor"
    assert record["params"]["grid"] == [2, 1, 1]
    assert record["params"]["effective_gbps"] > 0
    assert record["params"]["memory_bytes"] == 8 * (40001 * 32 + 2 * 16 * 16)
    assert record["gflops"] > 0 and record["model"]["time_s"] > 0
    assert record["lower_bound"]["bytes_per_rank"] == 16 * 16 * 8
