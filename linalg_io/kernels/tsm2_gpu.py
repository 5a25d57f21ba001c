"""CuPy launcher of the TSM2X kernels (cuda/tsm2.cu) and their autotuner.

`matmul(a, b)` computes C = A B for CuPy arrays A (m x k, C or Fortran order) and B
(k x n, small n) and returns (C, kernel name): tsm2l when k <= TSM2L_MAX_K (B whole in
shared memory, grid-stride rows), tsm2r otherwise (B in double-buffered T1 x T2
shared tiles). C has A's order. Other dtypes or non-contiguous A: cupy.matmul, said so.

Autotuner: per (device name, kernel, dtype, layout, shape class) the first call times
every candidate (T1, T2, T3) on the real operands (CUDA events, best of 3 after a
warm-up) and caches the fastest in a JSON file ($LINALG_IO_TSM2_CACHE, default
~/.cache/linalg-io/tsm2_tuning.json); later calls and processes reuse it. The shape
class is (next power of two of n, of k, and of m), so nearby shapes share a choice.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import partial
from pathlib import Path

from linalg_io.errors import EnvironmentProblem
from linalg_io.kernels.gpu import require_cupy

SOURCE = Path(__file__).with_name("cuda") / "tsm2.cu"
TSM2L_MAX_K = 64
# shared memory a block may use without opting in: tsm2r's static double-buffered tile of
# B, tsm2l's dynamic k x T2 slice of B
SHARED_LIMIT = 48 * 1024
_TILES = {
    "tsm2r": [(t1, t2, t3) for t1 in (64, 128, 256) for t2 in (4, 8, 16, 32)
              for t3 in (2, 4, 8)],
    "tsm2l": [(t1, t2, t3) for t1 in (128, 256) for t2 in (4, 8, 16, 32) for t3 in (1, 2, 4)],
}
_CTYPE = {"float32": "float", "float64": "double"}
_modules: dict = {}
_choices: dict | None = None


def cache_path() -> Path:
    default = Path.home() / ".cache" / "linalg-io" / "tsm2_tuning.json"
    return Path(os.environ.get("LINALG_IO_TSM2_CACHE", default))


def _read_cache(path: Path) -> dict:
    """The cached choices; an unreadable or foreign file counts as empty (it is rewritten)."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _load_choices() -> dict:
    global _choices
    if _choices is None:
        _choices = _read_cache(cache_path())
    return _choices


def _save_choices() -> None:
    """Merge this process's choices into the file: several ranks (or jobs) tuning at once
    each write a temporary file of their own and rename it over the cache (atomic)."""
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    merged = {**_read_cache(path), **_choices}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(merged, indent=1, sort_keys=True))
    os.replace(tmp, path)


def candidates(kernel: str, dtype: str) -> list[tuple[int, int, int]]:
    """The (T1, T2, T3) the autotuner tries; tsm2r's double-buffered T1 x T2 tile of B is
    static shared memory, which must stay within 48 KiB."""
    itemsize = 4 if dtype == "float32" else 8
    return [tile for tile in _TILES[kernel]
            if kernel != "tsm2r" or 2 * tile[0] * tile[1] * itemsize <= SHARED_LIMIT]


def name_expression(kernel: str, dtype: str, tile: tuple[int, int, int], row_major: bool) -> str:
    t1, t2, t3 = tile
    return f"{kernel}<{_CTYPE[dtype]}, {t1}, {t2}, {t3}, {'true' if row_major else 'false'}>"


def _module(cupy, kernel: str, dtype: str, row_major: bool):
    key = (cupy.cuda.Device().id, kernel, dtype, row_major)
    if key not in _modules:
        names = [name_expression(kernel, dtype, tile, row_major)
                 for tile in candidates(kernel, dtype)]
        _modules[key] = cupy.RawModule(code=SOURCE.read_text(), options=("-std=c++17",),
                                       name_expressions=names)
    return _modules[key]


def _pow2(x: int) -> int:
    return 1 << max(0, int(x) - 1).bit_length()


def shape_class(kernel: str, m: int, k: int, n: int) -> str:
    return f"{kernel}:m{_pow2(m)}:k{_pow2(k)}:n{_pow2(n)}"


def launch_shape(kernel: str, tile, m: int, k: int, n: int, itemsize: int,
                 sms: int) -> tuple[tuple[int, int], int, int]:
    """(grid, threads per block, dynamic shared bytes) of one launch on a device with `sms`
    multiprocessors: grid = (row blocks, column tiles of T2). tsm2r: one block per T1 rows
    of A; tsm2l: at most 8 blocks per SM in all (each thread strides over rows), B's
    k x T2 slice in dynamic shared memory."""
    t1, t2, _ = tile
    column_tiles = (n + t2 - 1) // t2
    row_blocks = (m + t1 - 1) // t1
    if kernel == "tsm2r":
        return (row_blocks, column_tiles), t1, 0
    return (max(1, min(row_blocks, 8 * sms // column_tiles)), column_tiles), t1, k * t2 * itemsize


def leading_dimensions(m: int, k: int, n: int, row_major: bool) -> tuple[int, int]:
    """(lda, ldc) of A (m x k) and C (m x n), both in the same order."""
    return (k, n) if row_major else (m, m)


_devices: dict = {}


def _device(cupy) -> tuple[str, int]:
    """(name, multiprocessors) of the current device, asked once per device: the queries
    cost far more than a small launch and would sit inside every timed call."""
    key = (id(cupy), cupy.cuda.Device().id)
    if key not in _devices:
        name = cupy.cuda.runtime.getDeviceProperties(key[1])["name"]
        _devices[key] = (name.decode() if isinstance(name, bytes) else name,
                         cupy.cuda.Device().attributes["MultiProcessorCount"])
    return _devices[key]


def _launch(cupy, kernel: str, tile, a, b, c, row_major: bool) -> None:
    m, k = a.shape
    n = b.shape[1]
    function = _module(cupy, kernel, a.dtype.name, row_major).get_function(
        name_expression(kernel, a.dtype.name, tile, row_major))
    sms = _device(cupy)[1]
    grid, threads, shared = launch_shape(kernel, tile, m, k, n, a.itemsize, sms)
    lda, ldc = leading_dimensions(m, k, n, row_major)
    args = (a, b, c, cupy.int64(m), cupy.int32(k), cupy.int32(n), cupy.int64(lda),
            cupy.int64(ldc))
    function(grid, (threads,), args, shared_mem=shared)


def _time(cupy, run, reps: int = 3) -> float:
    run()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    best = float("inf")
    for _ in range(reps):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) * 1e-3)
    return best


def tune(kernel: str, a, b, c, row_major: bool) -> tuple[int, int, int]:
    """The cached (T1, T2, T3) for this device and shape class, timing all candidates
    on these operands the first time."""
    cupy = require_cupy()
    device, sms = _device(cupy)
    # the SM count too: a MIG slice has the device's name and fewer SMs (tsm2l's grid)
    key = "|".join([device, f"{sms} SMs", a.dtype.name, "C" if row_major else "F",
                    shape_class(kernel, a.shape[0], a.shape[1], b.shape[1])])
    choices = _load_choices()
    if key in choices and tuple(choices[key]["tile"]) in candidates(kernel, a.dtype.name):
        return tuple(choices[key]["tile"])
    timings = {}
    for tile in candidates(kernel, a.dtype.name):
        _, _, shared = launch_shape(kernel, tile, a.shape[0], a.shape[1], b.shape[1], a.itemsize,
                                    sms)
        if shared > SHARED_LIMIT:
            continue
        try:
            timings[tile] = _time(cupy, partial(_launch, cupy, kernel, tile, a, b, c, row_major))
        except cupy.cuda.driver.CUDADriverError:
            continue
    if not timings:
        raise EnvironmentProblem(f"{kernel}: no tile of the autotuner launched on {device} "
                                 f"for A {a.shape}, B {b.shape}")
    best = min(timings, key=timings.get)
    choices[key] = {"tile": list(best), "seconds": timings[best],
                    "candidates": len(timings)}
    _save_choices()
    return best


def matmul(a, b):
    """C = A B on the GPU with the tuned TSM2 kernel; (C, kernel description)."""
    cupy = require_cupy()
    if a.dtype != b.dtype or a.dtype.name not in _CTYPE:
        return a @ b, f"cupy matmul (dtype {a.dtype}/{b.dtype})"
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        return a @ b, "cupy matmul (A not contiguous)"
    row_major = bool(a.flags.c_contiguous)
    kernel = "tsm2l" if a.shape[1] <= TSM2L_MAX_K else "tsm2r"
    b = cupy.ascontiguousarray(b)
    c = cupy.empty((a.shape[0], b.shape[1]), dtype=a.dtype, order="C" if row_major else "F")
    if c.size == 0:
        return c, kernel
    if a.shape[1] == 0:
        c.fill(0)
        return c, kernel
    tile = tune(kernel, a, b, c, row_major)
    _launch(cupy, kernel, tile, a, b, c, row_major)
    return c, f"{kernel} t1={tile[0]} t2={tile[1]} t3={tile[2]}"
