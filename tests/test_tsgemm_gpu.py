"""TSM2R/TSM2L GPU kernels against NumPy, the autotuner's cache, and a GPU CLI run.

Skipped only when CuPy cannot be imported (then no GPU path can run at all); with
CuPy present but no usable GPU the tests fail, as a broken GPU set-up should.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="CuPy not importable: no GPU path to test here")

from mpi_harness import run_cli_records

from linalg_io.kernels import tsm2_gpu


@pytest.fixture(autouse=True)
def tuning_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LINALG_IO_TSM2_CACHE", str(tmp_path / "tsm2.json"))
    monkeypatch.setattr(tsm2_gpu, "_choices", None)
    return tmp_path / "tsm2.json"


def scaled_error(c, a, b) -> float:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = np.maximum(np.abs(a64) @ np.abs(b64), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(c.astype(np.float64) - a64 @ b64) / scale))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_tsm2l_and_tsm2r_match_numpy(dtype, order) -> None:
    rng = np.random.default_rng(0)
    eps = np.finfo(dtype).eps
    shapes = [(1001, k, n) for k in (1, 2, 3, 8, 16, 31, 32) for n in (1, 4, 16, 32)]
    shapes += [(515, 1031, 16), (257, 200, 33), (3, 4097, 2)]
    for m, k, n in shapes:
        a = np.asarray(rng.standard_normal((m, k)), dtype=dtype, order=order)
        b = rng.standard_normal((k, n)).astype(dtype)
        c, kernel = tsm2_gpu.matmul(cupy.asarray(a, order=order), cupy.asarray(b))
        assert kernel.startswith("tsm2l" if k <= tsm2_gpu.TSM2L_MAX_K else "tsm2r")
        host = cupy.asnumpy(c)
        assert host.flags.c_contiguous == (order == "C") or n == 1
        assert scaled_error(host, a, b) <= k * eps, (m, k, n, kernel)


def test_autotuner_caches_its_choice(tuning_cache) -> None:
    a = cupy.random.standard_normal((1 << 16, 8))
    b = cupy.random.standard_normal((8, 8))
    _, first = tsm2_gpu.matmul(a, b)
    cached = json.loads(tuning_cache.read_text())
    (key,) = cached
    assert "float64|C|tsm2l:m65536:k8:n8" in key
    assert cached[key]["candidates"] > 1
    _, second = tsm2_gpu.matmul(a, b)
    assert first == second


def test_gpu_backend_cli_run_verifies() -> None:
    records = run_cli_records(1, ["tsgemm", "--variant", "tsm2l", "--m", "100003", "--n", "16",
                                  "--k", "16", "--backend", "gpu", "--reps", "2"])
    (record,) = records
    assert record["verify"]["passed"] and record["params"]["local_kernel"].startswith("tsm2l")
