"""The CUDA kernels of linalg_io/kernels/cuda compiled for the host (tests/cuda_host) and
called through ctypes with NumPy arrays, launched with the geometry the CuPy launchers
compute, so tests check the kernel sources themselves on a machine without a GPU.

`build(directory)` compiles them with g++ (C++20; TSM2's CUDA threads fibers, SpTRSV's OS
threads: tests/cuda_host/emulation.h) into an `Emulator`, with every
(T1, T2, T3) the autotuner may pick (tsm2_gpu.candidates) for both types and layouts;
`cupy_standin` puts them behind the few CuPy calls tsm2_gpu makes, so that its launcher
and autotuner run whole.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from linalg_io.kernels import sptrsv_gpu, tsm2_gpu

HOST_DIR = Path(__file__).resolve().parent / "cuda_host"
GXX = shutil.which("g++")
_P = ctypes.c_void_p
SMS = 2  # the tests' small device: tsm2l's few blocks stride over the rows


def _host_source(source: Path, directory: Path) -> Path:
    """A copy of a kernel source whose dynamic shared memory names the driver's array."""
    copy = directory / source.name
    copy.write_text(source.read_text().replace("extern __shared__", "extern"))
    return copy


def build(directory: Path) -> Emulator:
    table = directory / "tsm2_table.inc"
    table.write_text("".join(
        f"TSM2_KERNEL({kernel}, {ctype}, {t1}, {t2}, {t3}, {layout})\n"
        for kernel in ("tsm2r", "tsm2l") for dtype, ctype in (("float32", "float"),
                                                              ("float64", "double"))
        for (t1, t2, t3) in tsm2_gpu.candidates(kernel, dtype) for layout in ("false", "true")))
    library = directory / "kernels_host.so"
    command = [GXX, "-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", "-Wall", "-Werror",
               "-Wno-unknown-pragmas", f"-I{HOST_DIR}",
               f'-DTSM2_SOURCE="{_host_source(tsm2_gpu.SOURCE, directory)}"',
               f'-DSPTRSV_SOURCE="{_host_source(sptrsv_gpu.KERNEL_SOURCE, directory)}"',
               f'-DTSM2_TABLE="{table}"', str(HOST_DIR / "kernels_host.cpp"), "-o", str(library)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"g++ failed on the emulated kernels:\n{done.stderr[-4000:]}")
    return Emulator(library)


def scaled_error(c, a, b) -> float:
    """max |C - A B| / (|A| |B|), elementwise, in float64."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = np.maximum(np.abs(a64) @ np.abs(b64), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(c.astype(np.float64) - a64 @ b64) / scale))


def _pointer(array: np.ndarray) -> ctypes.c_void_p:
    return _P(array.ctypes.data)


class Emulator:
    def __init__(self, library: Path) -> None:
        self.lib = ctypes.CDLL(str(library))
        self.lib.tsm2_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint,
                                         ctypes.c_uint, ctypes.c_long, _P, _P, _P,
                                         ctypes.c_longlong, ctypes.c_int, ctypes.c_int,
                                         ctypes.c_longlong, ctypes.c_longlong]
        self.lib.sptrsv_launch.argtypes = [ctypes.c_uint, ctypes.c_uint] + [_P] * 7 + [
            ctypes.c_int, ctypes.c_int, _P]

    def tsm2(self, kernel: str, tile, a: np.ndarray, b: np.ndarray, sms: int) -> np.ndarray:
        """C = A B by one launch of the kernel as tsm2_gpu._launch sets it up, on a device
        with `sms` multiprocessors; C starts as NaN, so any element not written shows."""
        row_major = bool(a.flags.c_contiguous)
        m, k = a.shape
        n = b.shape[1]
        b = np.ascontiguousarray(b)
        c = np.full((m, n), np.nan, dtype=a.dtype, order="C" if row_major else "F")
        grid, threads, shared = tsm2_gpu.launch_shape(kernel, tile, m, k, n, a.itemsize, sms)
        lda, ldc = tsm2_gpu.leading_dimensions(m, k, n, row_major)
        name = tsm2_gpu.name_expression(kernel, a.dtype.name, tile, row_major)
        _Function(self.lib, name)(grid, (threads,), (a, b, c, m, k, n, lda, ldc), shared)
        return c

    def sptrsv(self, grid, block, args) -> None:
        """The sync-free kernel called as CuPy calls it: kernel(grid, block, args), with
        NumPy arrays where CuPy passes device arrays."""
        colptr, rowidx, val, diag, left, in_degree, x, m, nrhs, next_column = args
        arrays = (colptr, rowidx, val, diag, left, in_degree, x)
        for array, dtype in zip(arrays, (np.int64, np.int32, np.float64, np.float64,
                                         np.float64, np.int32, np.float64)):
            if array.dtype != dtype or not array.flags.c_contiguous:
                raise TypeError(f"sptrsv_launch wants contiguous {np.dtype(dtype)} arrays")
        m, nrhs = int(m), int(nrhs)
        if colptr.size != m + 1 or min(rowidx.size, val.size) < colptr[-1] \
                or min(diag.size, in_degree.size) < m or min(left.size, x.size) < m * nrhs:
            raise ValueError("sptrsv_launch: arrays too small for m and nrhs (the kernel "
                             "would access them out of bounds)")
        self.lib.sptrsv_launch(grid[0], block[0], *(_pointer(a) for a in arrays), m, nrhs,
                               _pointer(next_column))


class _Function:
    """A RawModule function of tsm2.cu as CuPy calls it: f(grid, block, args, shared_mem)."""

    def __init__(self, lib, name: str) -> None:
        self.lib, self.name = lib, name

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        a, b, c, m, k, n, lda, ldc = args
        self._check_bounds(a, b, c, int(m), int(k), int(n), int(lda), int(ldc))
        status = self.lib.tsm2_launch(self.name.encode(), grid[0], grid[1], block[0],
                                      shared_mem, _pointer(a), _pointer(b), _pointer(c),
                                      int(m), int(k), int(n), int(lda), int(ldc))
        if status != 0:
            raise RuntimeError(f"{self.name}: emulated launch failed (status {status})")

    def _check_bounds(self, a, b, c, m: int, k: int, n: int, lda: int, ldc: int) -> None:
        """What a GPU would report as an illegal address (here: a crash of the test run):
        the leading dimensions and sizes that make the kernel stay inside A, B and C."""
        row_major = self.name.endswith("true>")
        for name, array, rows, cols, lead in (("A", a, m, k, lda), ("C", c, m, n, ldc)):
            inner, outer = (cols, rows) if row_major else (rows, cols)
            if lead < inner or array.size < (outer - 1) * lead + inner:
                raise ValueError(f"{self.name}: {name} ({array.shape}) with leading dimension "
                                 f"{lead} would be accessed out of bounds")
        if b.size < k * n:
            raise ValueError(f"{self.name}: B ({b.shape}) smaller than k x n = {k} x {n}")


def cupy_standin(emulator: Emulator, sms: int) -> SimpleNamespace:
    """The part of CuPy that tsm2_gpu uses, over NumPy arrays and the emulated kernels: a
    device called "host emulator" with `sms` multiprocessors, RawModule functions that
    launch on the host, events timed with perf_counter."""

    class RawModule:
        def __init__(self, code: str, options, name_expressions) -> None:
            assert code == tsm2_gpu.SOURCE.read_text()
            self.names = set(name_expressions)

        def get_function(self, name: str) -> _Function:
            if name not in self.names:
                raise KeyError(f"{name} was not among the module's name_expressions")
            return _Function(emulator.lib, name)

    class Event:
        def record(self) -> None:
            self.time = time.perf_counter()

        def synchronize(self) -> None:
            pass

    device = SimpleNamespace(id=0, attributes={"MultiProcessorCount": sms})
    cuda = SimpleNamespace(
        Device=lambda: device, Event=Event,
        get_elapsed_time=lambda start, stop: 1e3 * (stop.time - start.time),
        runtime=SimpleNamespace(getDeviceProperties=lambda _: {"name": b"host emulator"}),
        driver=SimpleNamespace(CUDADriverError=RuntimeError))
    return SimpleNamespace(RawModule=RawModule, cuda=cuda, int32=np.int32, int64=np.int64,
                           ascontiguousarray=np.ascontiguousarray, empty=np.empty)
