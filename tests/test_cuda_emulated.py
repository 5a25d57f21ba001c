"""The CUDA kernel sources run on the host (tests/cuda_emulator.py: every CUDA thread an
OS thread, the blocks of a grid in turn), launched with the geometry the CuPy launchers
compute: TSM2R/TSM2L against NumPy, the sync-free SpTRSV against SciPy. This catches
index, tiling and synchronisation errors that compiling with nvcc cannot (a tile written
into the buffer being read, a column solved before its in-degree reaches zero: both
checked to fail here); it says nothing of speed. Skipped only without g++.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

from linalg_io.kernels import sptrsv_gpu, tsm2_gpu
from linalg_io.sptrsv.matrices import load_matrix

# (m, k, n): k over several T1 tiles with a partial last one, n over several T2 tiles with a
# partial last one, k not a multiple of T3, single rows and columns; tsm2l's k up to 64.
TSM2_SHAPES = {"tsm2r": [(200, 150, 5), (70, 64, 33), (129, 3, 32), (1, 1, 1)],
               "tsm2l": [(333, 7, 5), (1000, 64, 33), (1031, 16, 16), (5, 1, 1)]}
SMS = 2  # a small device: tsm2l's few blocks stride over the rows


def scaled_error(c, a, b) -> float:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = np.maximum(np.abs(a64) @ np.abs(b64), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(c.astype(np.float64) - a64 @ b64) / scale))


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


def test_cupy_launcher_and_autotuner_run_whole_on_the_emulator(cuda_emulator, tmp_path,
                                                               monkeypatch) -> None:
    """tsm2_gpu.matmul as on a GPU (module with every candidate, the autotuner timing each,
    its JSON cache, the launch and its argument order), the kernels emulated: results
    against NumPy, one cache entry per shape class, reused by the next call."""
    import cuda_emulator as emulation

    monkeypatch.setattr(tsm2_gpu, "require_cupy",
                        lambda: emulation.cupy_standin(cuda_emulator, SMS))
    monkeypatch.setenv("LINALG_IO_TSM2_CACHE", str(tmp_path / "tsm2.json"))
    monkeypatch.setattr(tsm2_gpu, "_choices", None)
    monkeypatch.setattr(tsm2_gpu, "_modules", {})
    rng = np.random.default_rng(5)
    cases = [(np.float64, "C", (300, 9, 5)), (np.float32, "F", (260, 33, 3)),
             (np.float64, "F", (90, 100, 7)), (np.float32, "C", (65, 130, 17))]
    for dtype, order, (m, k, n) in cases:
        a = np.asarray(rng.standard_normal((m, k)), dtype=dtype, order=order)
        b = rng.standard_normal((k, n)).astype(dtype)
        c, kernel = tsm2_gpu.matmul(a, b)
        assert kernel.startswith("tsm2l" if k <= tsm2_gpu.TSM2L_MAX_K else "tsm2r"), kernel
        assert c.flags.c_contiguous == (order == "C")
        assert scaled_error(c, a, b) <= k * np.finfo(dtype).eps, (m, k, n, kernel)
        assert tsm2_gpu.matmul(a, b)[1] == kernel
    cache = json.loads((tmp_path / "tsm2.json").read_text())
    assert len(cache) == len(cases)
    assert all(key.startswith("host emulator|") for key in cache)
    for key, entry in cache.items():
        device, sms, dtype, _, shape_class = key.split("|")
        assert (device, sms) == ("host emulator", f"{SMS} SMs")
        kernel = shape_class.split(":")[0]
        assert entry["candidates"] == len(tsm2_gpu.candidates(kernel, dtype))
        assert tuple(entry["tile"]) in tsm2_gpu.candidates(kernel, dtype)


def test_autotuner_cache_survives_a_corrupt_file_and_merges_with_other_writers(
        cuda_emulator, tmp_path, monkeypatch) -> None:
    """A cut-off cache (another rank died mid-write in an older version) is read as empty;
    saving merges with what other processes wrote meanwhile and leaves no temporary files."""
    import cuda_emulator as emulation

    monkeypatch.setattr(tsm2_gpu, "require_cupy",
                        lambda: emulation.cupy_standin(cuda_emulator, SMS))
    path = tmp_path / "tsm2.json"
    path.write_text('{"other device|float64|x": {"tile": [6')
    monkeypatch.setenv("LINALG_IO_TSM2_CACHE", str(path))
    monkeypatch.setattr(tsm2_gpu, "_choices", None)
    monkeypatch.setattr(tsm2_gpu, "_modules", {})
    a = np.random.default_rng(1).standard_normal((200, 8))
    b = np.random.default_rng(2).standard_normal((8, 4))
    c, _ = tsm2_gpu.matmul(a, b)
    assert scaled_error(c, a, b) <= 8 * np.finfo(np.float64).eps
    (mine,) = json.loads(path.read_text())
    # another process adds its choice while this one keeps its own in memory
    path.write_text(json.dumps({"other writer|float32|y": {"tile": [128, 4, 1]},
                                mine: json.loads(path.read_text())[mine]}))
    a32 = a.astype(np.float32)
    tsm2_gpu.matmul(a32, b.astype(np.float32))
    assert len(json.loads(path.read_text())) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["tsm2.json"]


def test_a_cached_tile_that_is_no_candidate_is_tuned_again(cuda_emulator, tmp_path,
                                                           monkeypatch) -> None:
    import cuda_emulator as emulation

    monkeypatch.setattr(tsm2_gpu, "require_cupy",
                        lambda: emulation.cupy_standin(cuda_emulator, SMS))
    path = tmp_path / "tsm2.json"
    monkeypatch.setenv("LINALG_IO_TSM2_CACHE", str(path))
    monkeypatch.setattr(tsm2_gpu, "_choices", None)
    monkeypatch.setattr(tsm2_gpu, "_modules", {})
    a = np.random.default_rng(1).standard_normal((200, 8))
    b = np.random.default_rng(2).standard_normal((8, 4))
    tsm2_gpu.matmul(a, b)
    (key,) = json.loads(path.read_text())
    tsm2_gpu._choices[key]["tile"] = [999, 4, 1]   # from an older candidate list
    c, kernel = tsm2_gpu.matmul(a, b)
    assert "t1=999" not in kernel and scaled_error(c, a, b) <= 8 * np.finfo(np.float64).eps
    assert tuple(json.loads(path.read_text())[key]["tile"]) in tsm2_gpu.candidates("tsm2l",
                                                                                   "float64")
