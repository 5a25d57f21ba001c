"""The record's `env` block and the `info` command's facts about this installation."""

from __future__ import annotations

import importlib
import os
import pkgutil
import platform
import socket
import subprocess
from functools import lru_cache
from pathlib import Path

import numpy
import scipy

import linalg_io._kernels


def gather_hosts(world) -> list[str] | None:
    """Collective over `world`: the sorted distinct host names on rank 0, None elsewhere."""
    hosts = world.gather(socket.gethostname(), root=0)
    return sorted(set(hosts)) if hosts is not None else None


def built_kernels() -> list[str]:
    """Names of the compiled Cython kernel modules that import."""
    names = []
    for module in pkgutil.iter_modules(linalg_io._kernels.__path__):
        try:
            importlib.import_module(f"linalg_io._kernels.{module.name}")
        except ImportError:
            continue
        names.append(module.name)
    return sorted(names)


def blas_info() -> list[dict]:
    """BLAS/OpenMP libraries loaded, as threadpoolctl sees them. Only the BLAS and OpenMP
    pools, and only plain values: SciPy's Matrix Market reader registers a pool of its
    own whose `version` is a function (no JSON for the record)."""
    from threadpoolctl import threadpool_info

    keep = ("internal_api", "version", "num_threads", "architecture", "threading_layer")
    plain = (str, int, float, type(None))
    return [{k: lib[k] for k in keep if k in lib and isinstance(lib[k], plain)}
            for lib in threadpool_info() if lib.get("user_api") in ("blas", "openmp")]


def cupy_info() -> tuple[str | None, str | None]:
    """(cupy version, first GPU name) or Nones when CuPy or a GPU is missing."""
    try:
        import cupy
    except ImportError:
        return None, None
    try:
        props = cupy.cuda.runtime.getDeviceProperties(0)
        return cupy.__version__, props["name"].decode()
    except Exception:  # noqa: BLE001 - any CUDA runtime failure means "no usable GPU"
        return cupy.__version__, None


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def mpi_library_version() -> str:
    """MPI_Get_library_version without the trailing NUL some libraries include."""
    from mpi4py import MPI

    return MPI.Get_library_version().split("\x00")[0].strip()


def environment() -> dict:
    """The record's `env` block (call on rank 0 only: it imports CuPy if present)."""
    import mpi4py

    cupy_version, gpu = cupy_info()
    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "mpi4py": mpi4py.__version__,
        "mpi_library": mpi_library_version().splitlines()[0].strip().rstrip(","),
        "blas": blas_info(),
        "cupy": cupy_version,
        "gpu": gpu,
        "cython_kernels": built_kernels(),
        "cores": os.cpu_count(),   # of rank 0's host: the report flags oversubscription
    }
