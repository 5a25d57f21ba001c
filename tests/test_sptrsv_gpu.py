"""SpTRSV on the GPU: the sync-free CuPy kernel alone, and multi-rank solves with --backend gpu.

Skipped only when CuPy is not installed; with CuPy but no usable GPU the tests fail
(EnvironmentProblem), as they should on a GPU machine.
"""

import json

import numpy as np
import pytest
from mpi_harness import run_cli_records, run_mpi_json
from scipy.sparse.linalg import spsolve_triangular

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'linalg-io[gpu]')")

from linalg_io.kernels.sptrsv_gpu import solve_triangular_gpu
from linalg_io.sptrsv.matrices import as_lower, load_matrix

MATRICES = ["lap2d:40", "lap3d:12", "rand:3000:0.002:8", "rand:2000:0.001:500"]


@pytest.mark.parametrize("spec", MATRICES)
@pytest.mark.parametrize("nrhs", [1, 3])
@pytest.mark.parametrize("upper", [False, True])
def test_syncfree_kernel_matches_scipy(spec, nrhs, upper):
    matrix = load_matrix(spec, upper=upper)
    b = np.random.default_rng(1).standard_normal((matrix.shape[0], nrhs))
    lower = as_lower(matrix, upper)
    b_lower = b[::-1] if upper else b
    x_lower = cupy.asnumpy(solve_triangular_gpu(lower, cupy.asarray(b_lower)))
    x = x_lower[::-1] if upper else x_lower
    reference = spsolve_triangular(matrix, b, lower=not upper)
    assert np.abs(x - reference).max() / np.abs(reference).max() < 1e-12
    residual = np.abs(matrix @ x - b).max()
    assert residual / (abs(matrix).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()) < 1e-14


def test_kernel_agrees_with_cusparse():
    import cupyx.scipy.sparse as csp
    from cupyx.scipy.sparse.linalg import spsolve_triangular as cusparse_solve

    lower = load_matrix("lap3d:24")
    b = cupy.asarray(np.random.default_rng(2).standard_normal(lower.shape[0]))
    ours = solve_triangular_gpu(lower, b)
    theirs = cusparse_solve(csp.csr_matrix(lower), b, lower=True)
    assert float(cupy.abs(ours - theirs).max() / cupy.abs(theirs).max()) < 1e-12


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_multirank_gpu_solves_exact_traffic(nranks):
    cases = [[m, upper, nrhs, algo, "nnz"] for m in ("lap2d:24", "lap3d:10", "rand:1200:0.002:60")
             for upper in (False, True) for nrhs in (1, 4) for algo in ("levelset", "syncfree")]
    results = run_mpi_json(nranks, "sptrsv_cases.py", [json.dumps(cases), "gpu"], timeout=300)
    assert len(results) == len(cases)
    for result in results:
        assert result["verify"]["passed"], result["case"]
        assert result["verify"]["scipy_rel_diff"] < 1e-12, result["case"]
        assert result["measured"] == result["model"], result["case"]


def test_cli_gpu_record():
    (record,) = run_cli_records(2, ["sptrsv", "--matrix", "lap3d:32", "--algo", "syncfree",
                                    "--backend", "gpu", "--reps", "3", "--quiet"])
    assert record["backend"] == "gpu" and record["verify"]["passed"]
    assert record["traffic"]["bytes_sent"]["max"] == record["model"]["bytes_sent"]["max"]
