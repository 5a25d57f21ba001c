"""The TSM2 launcher and autotuner of linalg_io/kernels/tsm2_gpu.py run whole, as on a GPU,
with the CUDA kernels emulated on the host (tests/cuda_emulator.py, behind the few CuPy
calls tsm2_gpu makes): its module of every candidate, the timing of each, its JSON cache
and the launch. The kernel sources themselves are checked tile by tile in
tests/test_cuda_emulated.py. Skipped only without g++.
"""

from __future__ import annotations

import json

import numpy as np
from cuda_emulator import SMS, scaled_error

from linalg_io.kernels import tsm2_gpu


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
