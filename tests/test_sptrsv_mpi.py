"""SpTRSV, real multi-rank solves (P = 1, 2, 3, 4, 8).

Each multi-rank test is one mpiexec launch that runs many cases (tests/mpi/sptrsv_cases.py):
lap2d, lap3d, shallow and deep random matrices, lower and upper, 1 and 4 right-hand
sides, both algorithms and both partitions. For every case: the relative residual is
below its threshold, the solution agrees with scipy.sparse.linalg.spsolve_triangular,
and every rank's measured bytes sent/received and messages equal the model exactly.
"""

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from mpi_harness import run_cli, run_cli_records, run_mpi_json

SHALLOW = "rand:1500:0.004:6"


DEEP = "rand:1200:0.002:300"


MATRICES = ["lap2d:24", "lap3d:10", SHALLOW, DEEP]


def all_cases(matrices):
    return [[m, upper, nrhs, algo, part] for m in matrices for upper in (False, True)
            for nrhs in (1, 4) for algo in ("levelset", "syncfree") for part in ("nnz", "level")]


def reduced_cases():
    """For 3 and 8 ranks: every matrix, side, nrhs and algorithm, partitions alternated."""
    cases = all_cases(["lap2d:24", "lap3d:10", SHALLOW, "rand:1200:0.002:60"])
    return [c for i, c in enumerate(cases) if (i // 2 + i) % 2 == 0]


def check_cases(results, ncases):
    assert len(results) == ncases
    for result in results:
        verify = result["verify"]
        assert verify["passed"] and verify["value"] < 1e-13, result["case"]
        assert verify["scipy_rel_diff"] < 1e-12, result["case"]
        assert result["measured"] == result["model"], result["case"]


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_solves_exact_traffic(nranks):
    cases = all_cases(MATRICES)
    results = run_mpi_json(nranks, "sptrsv_cases.py", [json.dumps(cases)], timeout=240)
    check_cases(results, len(cases))
    if nranks > 1:
        assert any(sum(r[0] for r in result["measured"]) > 0 for result in results)


@pytest.mark.parametrize("nranks", [3, 8])
def test_solves_exact_traffic_reduced(nranks):
    cases = reduced_cases()
    results = run_mpi_json(nranks, "sptrsv_cases.py", [json.dumps(cases)], timeout=240)
    check_cases(results, len(cases))
    assert {tuple(c[1:4]) for c in cases} == {(u, r, a) for u in (False, True) for r in (1, 4)
                                              for a in ("levelset", "syncfree")}


def test_cli_record_traffic_equals_model():
    records = run_cli_records(3, ["sptrsv", "--matrix", "lap3d:12", "--algo", "syncfree",
                                  "--nrhs", "2", "--reps", "2", "--quiet"])
    (record,) = records
    assert record["verify"]["passed"] and record["params"]["levels"] == 34
    for key in ("bytes_sent", "bytes_recv", "msgs_sent"):
        assert record["traffic"][key]["max"] == record["model"][key]["max"] > 0
        assert record["traffic"][key]["mean"] == pytest.approx(record["model"][key]["mean"])
    assert record["traffic"]["by_op"]["Put"] > 0


@pytest.mark.parametrize("content,message", [
    (np.array([[1.0, 0.0], [2.0, 0.0]]), "zero or missing diagonal"),
    (np.array([[1.0, 5.0], [2.0, 1.0]]), "not lower triangular"),
])
def test_bad_matrix_is_one_clear_error_on_all_ranks(tmp_path, content, message):
    path = tmp_path / "bad.mtx"
    scipy.io.mmwrite(path, sp.csr_matrix(content))
    result = run_cli(2, ["sptrsv", "--matrix", str(path), "--algo", "syncfree"], check=False,
                     timeout=60)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("linalg-io: error:")]
    assert len(errors) == 1 and message in errors[0] and str(path) in errors[0]   # once
