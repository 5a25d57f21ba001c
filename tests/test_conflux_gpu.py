"""2.5D LU (conflux) with --backend gpu (CuPy, one GPU per rank; ranks share GPUs round-robin).

Skipped without CuPy or a GPU. Same matrix on the CPU and the GPU: the HPL residual
passes, and the traffic is the plan's, byte for byte (diagonally dominant: the
pivots, hence every count, are the CPU run's).
"""

import pytest
from mpi_harness import run_cli_records

cupy = pytest.importorskip("cupy")
try:
    if cupy.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no GPU", allow_module_level=True)
except Exception:  # noqa: BLE001 - no CUDA driver
    pytest.skip("no usable GPU", allow_module_level=True)


@pytest.mark.parametrize("grid,dist", [("2x2x1", "diagdom"), ("1x2x2", "random"),
                                       ("2x1x2", "diagdom")])
def test_gpu_matches_cpu(grid, dist):
    args = ["lu", "--algo", "conflux", "--n", "1000", "--nb", "96", "--grid", grid,
            "--dist", dist, "--reps", "1", "--warmup", "0"]
    (gpu,) = run_cli_records(4, args + ["--backend", "gpu"], timeout=300)
    (cpu,) = run_cli_records(4, args, timeout=300)
    assert gpu["verify"]["passed"] and gpu["backend"] == "gpu"
    assert gpu["traffic"]["bytes_sent"]["max"] == gpu["model"]["given_pivots"]["bytes_sent"]["max"]
    if dist == "diagdom":
        assert gpu["traffic"]["bytes_sent"] == cpu["traffic"]["bytes_sent"]
    assert gpu["verify"]["value"] < 16 and cpu["verify"]["passed"]
