"""SpTRSV on one GPU: our sync-free kernel against cuSPARSE and SciPy, then P ranks on GPUs.

single   lap3d:64, lap2d:1024 and lap3d:128 (or --matrices): median time of our
         sync-free kernel (kernels/cuda/sptrsv_syncfree.cu, in-degree counters and
         atomics; `DeviceTriangular`, the matrix split and uploaded before timing),
         cupyx.scipy.sparse.linalg.spsolve_triangular (cuSPARSE, the matrix already on the
         device, its analysis inside each call) and SciPy on the CPU; agreement between
         them. Device times from CUDA events, medians of --reps.
parallel `linalg-io sptrsv --backend gpu --np P` for P in --p-list, both algorithms:
         median time and measured vs modelled traffic (host-staged MPI).

    .venv/bin/python bench/gpu_sptrsv.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sptrsv import PARALLEL_HEADER, parallel


def device_time(cupy, action, reps: int) -> float:
    action()
    times = []
    for _ in range(reps):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        action()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def single(matrix: str, reps: int) -> str:
    from linalg_io.kernels.gpu import require_cupy

    cupy = require_cupy()   # before any cupyx import: exit 3 with a clear line without CuPy
    import cupyx.scipy.sparse as csp
    from cupyx.scipy.sparse.linalg import spsolve_triangular as cusparse_solve
    from scipy.sparse.linalg import spsolve_triangular

    from linalg_io.kernels.sptrsv_gpu import DeviceTriangular
    from linalg_io.sptrsv.matrices import load_matrix

    lower = load_matrix(matrix)
    b_host = np.random.default_rng(0).standard_normal(lower.shape[0])
    b = cupy.asarray(b_host)
    lower_gpu = csp.csr_matrix(lower)
    prepared = DeviceTriangular(lower)
    ours = device_time(cupy, lambda: prepared.solve(b), reps)
    cusparse = device_time(cupy, lambda: cusparse_solve(lower_gpu, b, lower=True), reps)
    cpu_times = []
    for _ in range(max(3, reps // 3)):
        start = time.perf_counter()
        reference = spsolve_triangular(lower, b_host, lower=True)
        cpu_times.append(time.perf_counter() - start)
    scipy_time = statistics.median(cpu_times)
    x = cupy.asnumpy(prepared.solve(b))
    x_cusparse = cupy.asnumpy(cusparse_solve(lower_gpu, b, lower=True))
    scale = np.abs(reference).max()
    return (f"| {matrix} | {lower.shape[0]} | {lower.nnz} | {ours * 1e3:.3f} | "
            f"{cusparse * 1e3:.3f} | {scipy_time * 1e3:.2f} | {cusparse / ours:.2f}x | "
            f"{scipy_time / ours:.1f}x | {np.abs(x - reference).max() / scale:.1e} | "
            f"{np.abs(x_cusparse - reference).max() / scale:.1e} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrices", nargs="+", default=["lap3d:64", "lap2d:1024", "lap3d:128"])
    parser.add_argument("--p-list", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    print("## One GPU: sync-free kernel vs cuSPARSE (cupyx spsolve_triangular) vs SciPy\n")
    print("| matrix | n | nnz | ours ms | cuSPARSE ms | SciPy CPU ms | vs cuSPARSE | vs SciPy | "
          "ours diff | cuSPARSE diff |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for matrix in args.matrices:
        print(single(matrix, args.reps), flush=True)
    print("\n## --backend gpu on P ranks (host-staged MPI), traffic measured vs model\n")
    print(PARALLEL_HEADER)
    for matrix in args.matrices[:2]:
        for nranks in args.p_list:
            for algo in ("levelset", "syncfree"):
                print(parallel(matrix, nranks, algo, 5, backend="gpu"), flush=True)
    return 0


if __name__ == "__main__":
    from linalg_io.errors import LinalgIOError

    try:
        sys.exit(main())
    except LinalgIOError as error:
        print(f"gpu_sptrsv: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
