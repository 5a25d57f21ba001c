import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def cuda_emulator(tmp_path_factory):
    """The CUDA kernels built for the host (tests/cuda_emulator.py); skipped without g++."""
    import cuda_emulator as emulation

    if emulation.GXX is None:
        pytest.skip("g++ not installed: the CUDA kernels cannot be emulated on the host")
    return emulation.build(tmp_path_factory.mktemp("cuda_host"))
