"""Every CUDA source under linalg_io/kernels/cuda compiles for sm_90 (offline, no GPU).

RawModule code gets no host headers, so nvcc compiling the file alone (with
LINALG_IO_NVCC_CHECK defined, which adds explicit template instantiations where a
file has templates) catches the errors NVRTC would report at run time. Skipped
when nvcc is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CUDA_DIR = Path(__file__).resolve().parents[1] / "linalg_io" / "kernels" / "cuda"
NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: CUDA sources not compiled")
@pytest.mark.parametrize("source", sorted(CUDA_DIR.glob("*.cu")), ids=lambda p: p.name)
def test_cuda_source_compiles_for_sm90(source: Path) -> None:
    result = subprocess.run(
        [NVCC, "-arch=sm_90", "-std=c++17", "-DLINALG_IO_NVCC_CHECK", "-Werror",
         "all-warnings", "-c", "-o", "/dev/null", str(source)],
        capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr[-4000:]


@pytest.mark.slow   # two nvcc runs of every tile: ~40 CPU seconds
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: CUDA sources not compiled")
def test_every_tsm2_candidate_the_autotuner_may_pick_compiles(tmp_path: Path) -> None:
    """All (T1, T2, T3) instantiations, both types and layouts: catches tiles that
    exceed the static shared memory or register limits before a GPU ever sees them.
    One nvcc per type, run side by side, device code only (-cubin: what NVRTC and the
    driver do for RawModule; ptxas still checks every entry's limits), so no host
    compiler runs over the instantiations."""
    from linalg_io.kernels import tsm2_gpu

    jobs = []
    for dtype, ctype in (("float32", "float"), ("float64", "double")):
        lines = [f'#include "{tsm2_gpu.SOURCE}"']
        for kernel in ("tsm2r", "tsm2l"):
            for tile in tsm2_gpu.candidates(kernel, dtype):
                for row_major in (False, True):
                    name = tsm2_gpu.name_expression(kernel, dtype, tile, row_major)
                    lines.append(f"template __global__ void {name}(const {ctype} *, "
                                 f"const {ctype} *, {ctype} *, long long, int, int, "
                                 f"long long, long long);")
        source = tmp_path / f"tsm2_all_{dtype}.cu"
        source.write_text("\n".join(lines) + "\n")
        jobs.append(subprocess.Popen(
            [NVCC, "-arch=sm_90", "-std=c++17", "-cubin", "-o", "/dev/null", str(source)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for job in jobs:
        _, stderr = job.communicate(timeout=600)
        assert job.returncode == 0, stderr[-4000:]
