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
