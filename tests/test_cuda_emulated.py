"""The CUDA kernel sources run on the host (tests/cuda_emulator.py: the blocks of a grid in
turn; TSM2's threads fibers switched at barriers in thread order, SpTRSV's OS threads),
launched with the geometry the CuPy launchers compute: TSM2R/TSM2L against NumPy, the
sync-free SpTRSV against SciPy. This catches index, tiling and synchronisation errors that
compiling with nvcc cannot (a tile written into the buffer being read, any one of TSM2's
three __syncthreads left out, a column solved before its in-degree reaches zero: each
checked to fail here, TSM2's on the first tile of the first shape); it says nothing of
speed. Skipped only without g++.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from cuda_emulator import SMS, scaled_error
from scipy.sparse.linalg import spsolve_triangular

from linalg_io.kernels import sptrsv_gpu, tsm2_gpu
from linalg_io.sptrsv.matrices import load_matrix

# (m, k, n): k over several T1 tiles with a partial last one, n over several T2 tiles with a
# partial last one, k not a multiple of T3, single rows and columns; tsm2l's k up to 64.
TSM2_SHAPES = {"tsm2r": [(200, 150, 5), (70, 64, 33), (129, 3, 32), (1, 1, 1)],
               "tsm2l": [(333, 7, 5), (1000, 64, 33), (1031, 16, 16), (5, 1, 1)]}


@pytest.mark.parametrize("kernel", ["tsm2r", "tsm2l"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_tsm2_kernel_source_matches_numpy_with_every_tile(cuda_emulator, kernel, dtype,
                                                          order) -> None:
    """Every (T1, T2, T3) the autotuner may pick, on every shape."""
    rng = np.random.default_rng(7)
    tiles = tsm2_gpu.candidates(kernel, np.dtype(dtype).name)
    assert len(tiles) >= 24
    for m, k, n in TSM2_SHAPES[kernel]:
        a = np.asarray(rng.standard_normal((m, k)), dtype=dtype, order=order)
        b = rng.standard_normal((k, n)).astype(dtype)
        for tile in tiles:
            c = cuda_emulator.tsm2(kernel, tile, a, b, SMS)
            assert not np.isnan(c).any(), (m, k, n, tile)
            assert scaled_error(c, a, b) <= k * np.finfo(dtype).eps, (m, k, n, tile)


def test_tsm2l_launch_strides_rows_on_a_small_device() -> None:
    """The geometry the tests above run: tsm2l with fewer threads than rows (each thread
    takes several), tsm2r with one thread per row and a block per column tile."""
    grid, threads, shared = tsm2_gpu.launch_shape("tsm2l", (128, 4, 1), 1000, 64, 33, 8, SMS)
    assert grid == (1, 9) and threads == 128 and shared == 64 * 4 * 8
    grid, threads, shared = tsm2_gpu.launch_shape("tsm2r", (64, 4, 2), 200, 150, 5, 8, SMS)
    assert grid == (4, 2) and threads == 64 and shared == 0


@pytest.mark.parametrize("spec", ["lap2d:12", "rand:400:0.01:30", "rand:300:0.01:300"])
@pytest.mark.parametrize("nrhs", [1, 3])
def test_syncfree_kernel_source_matches_scipy(cuda_emulator, spec, nrhs) -> None:
    lower = load_matrix(spec).tocsr()
    n = lower.shape[0]
    b = np.random.default_rng(1).standard_normal((n, nrhs))
    host = sptrsv_gpu.block_arrays(sp.tril(lower, k=-1, format="csr"), lower.diagonal(), 0, n, n)
    left, in_degree = b.copy(), host.in_degree.copy()
    x = np.full_like(b, np.nan)
    next_column = np.zeros(1, dtype=np.int32)
    grid, threads = sptrsv_gpu.launch_shape(n)
    cuda_emulator.sptrsv((grid,), (threads,), (host.colptr, host.rowidx, host.val, host.diag,
                                               left, in_degree, x, np.int32(n), np.int32(nrhs),
                                               next_column))
    reference = spsolve_triangular(lower, b, lower=True)
    assert np.abs(x - reference).max() <= 1e-12 * np.abs(reference).max()
    assert not in_degree.any()
    assert next_column[0] == grid * threads // 32
