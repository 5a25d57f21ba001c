"""CPU tall-and-skinny kernels (linalg_io._kernels.tsgemm) against NumPy/OpenBLAS, with
the roofline of every shape measured in the same run.

Shapes (s = bytes per element, K = k = n): TSM2L A(2^22 x K) B(K x K); A^T B with A, B
2^22 x K; TSM2R (8192 x 8192)(8192 x K); K = 16 (compute-bound in fp64) and K = 4
(memory-bound); float64 and float32; 1 and 2 threads (OpenMP for the kernels, BLAS
threads for NumPy, the same count).

Roofline per shape and thread count: min(copy bandwidth x arithmetic intensity, gemm
rate), intensity = 2 m k n / (s (A + B + C elements)), gemm rate = NumPy dgemm
(sgemm for float32) on 2048^3 and copy bandwidth = 2 x bytes / time of a 512 MiB
threaded memcpy, both measured at the start of this run. The read-only bandwidth
(bytes / time of a threaded sum over 512 MiB, no stores, each thread reading its piece
as 4 far-apart streams in turn: one core here reads faster that way than from one
stream) is printed beside; for the products that only read (A^T B; TSM2R, whose C is
tiny) the last column is the percentage of min(read bandwidth x intensity, gemm rate),
the bound of a kernel that only reads. Effective GB/s = s (A + B + C elements) / time.
Times: best of --reps rounds in which our kernel and NumPy take turns (both see the
same load); both write C into a buffer allocated once (np.matmul(..., out=)), so
neither pays the page faults of a fresh output. The check is the componentwise error
against NumPy in float64, as in the tests.

Run (alone on the machine; OpenBLAS's core-type and L2 overrides unset):
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE flock /tmp/linalg-io-bench.lock \
      .venv/bin/python bench/bench_tsgemm.py [--reps 5] [--json out.json]
For quick iteration --shapes, --dtypes, --small and --threads pick a subset (default:
everything).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from linalg_io.tsgemm import kernels

SHAPES = (("TSM2L", "ab", 2**22, None), ("A^T B", "atb", 2**22, None),
          ("TSM2R", "ab", 8192, 8192))


def best_times(runs, reps: int) -> list[float]:
    """Best time of each of `runs` over `reps` rounds, the runs taking turns within a
    round (after one warm-up call each) so that all of them see the same machine load."""
    for run in runs:
        run()
    best = [float("inf")] * len(runs)
    for _ in range(reps):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def best_time(run, reps: int) -> float:
    return best_times([run], reps)[0]


def machine_rates(threads: int, reps: int) -> dict:
    """gemm rates (float64, float32) and copy bandwidth with this many threads."""
    compiled = kernels.compiled()
    rates = {}
    with threadpool_limits(threads):
        for dtype in (np.float64, np.float32):
            a = np.random.default_rng(0).random((2048, 2048)).astype(dtype)
            rates[np.dtype(dtype).name] = 2 * 2048**3 / best_time(partial(np.matmul, a, a),
                                                                   reps)
    src = np.ones(2**29 // 8)
    dst = np.empty_like(src)
    raw_src, raw_dst = src.view(np.uint8), dst.view(np.uint8)
    rates["copy"] = 2 * src.nbytes / best_time(
        lambda: compiled.stream_copy(raw_src, raw_dst, threads), reps)
    rates["numpy_copy"] = 2 * src.nbytes / best_time(lambda: np.copyto(dst, src), reps)
    rates["read"] = src.nbytes / best_time(lambda: compiled.stream_read(src, threads), reps)
    return rates


def scaled_error(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """max |C - A B| / (|A| |B|) with the reference in float64 (rows sampled for speed)."""
    rows = np.arange(0, a.shape[0], max(1, a.shape[0] // 4096))
    a64, b64 = a[rows].astype(np.float64), b.astype(np.float64)
    scale = np.maximum(np.abs(a64) @ np.abs(b64), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(c[rows].astype(np.float64) - a64 @ b64) / scale))


def bench_shape(name: str, kind: str, m: int, k_big: int | None, small: int, dtype,
                threads: int, rates: dict, reps: int) -> dict:
    rng = np.random.default_rng(1)
    k = k_big if k_big is not None else small
    n = small
    a = rng.random((m, k), dtype=np.float64).astype(dtype)
    if kind == "atb":
        b = rng.random((m, n), dtype=np.float64).astype(dtype)
        def ours():
            return kernels.matmul_tn(a, b, threads)

        def theirs():
            return a.T @ b
        elements = m * k + m * n + k * n
        c, kernel = ours()
        error = float(np.max(np.abs(c.astype(np.float64) - a.T.astype(np.float64) @ b)
                             / np.maximum(np.abs(a.T).astype(np.float64) @ np.abs(b), 1e-300)))
    else:
        b = rng.random((k, n), dtype=np.float64).astype(dtype)
        c_ours = kernels.aligned_empty((m, n), dtype, "C")
        c_numpy = np.empty((m, n), dtype=dtype)
        def ours():
            return kernels.matmul(a, b, threads, out=c_ours)

        def theirs():
            return np.matmul(a, b, out=c_numpy)
        elements = m * k + k * n + m * n
        c, kernel = ours()
        error = scaled_error(c, a, b)
    del c
    flops = 2.0 * m * k * n
    nbytes = np.dtype(dtype).itemsize * elements
    with threadpool_limits(threads):
        t_ours, t_numpy = best_times([ours, theirs], reps)
    gemm = rates[np.dtype(dtype).name]
    memory_bound = rates["copy"] * flops / nbytes
    roof = min(memory_bound, gemm)
    # read-only products (A^T B, and TSM2R whose C is tiny): bound by the read rate too
    output_elements = k * n if kind == "atb" else m * n
    read_roof = min(rates["read"] * flops / nbytes, gemm) \
        if output_elements * 100 < elements else None
    return {
        "shape": name, "m": m, "k": k, "n": n, "dtype": np.dtype(dtype).name,
        "threads": threads, "kernel": kernel, "bound": "memory" if memory_bound < gemm
        else "compute", "roofline_gflops": roof / 1e9,
        "ours_gflops": flops / t_ours / 1e9, "ours_gbps": nbytes / t_ours / 1e9,
        "numpy_gflops": flops / t_numpy / 1e9, "numpy_gbps": nbytes / t_numpy / 1e9,
        "ours_pct_roof": 100 * flops / t_ours / roof,
        "read_roofline_gflops": read_roof and read_roof / 1e9,
        "ours_pct_read_roof": read_roof and 100 * flops / t_ours / read_roof,
        "numpy_pct_roof": 100 * flops / t_numpy / roof,
        "speedup": t_numpy / t_ours, "rel_err": error,
        "err_bound": (m if kind == "atb" else k) * float(np.finfo(dtype).eps),
    }


def pct_or_dash(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--shapes", nargs="+", choices=[s[0] for s in SHAPES],
                        default=[s[0] for s in SHAPES])
    parser.add_argument("--dtypes", nargs="+", choices=["float64", "float32"],
                        default=["float64", "float32"])
    parser.add_argument("--small", type=int, nargs="+", default=[16, 4],
                        help="K values (k = n of the small dimensions)")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    if kernels.compiled() is None:
        raise SystemExit("Cython kernels not built: make kernels")
    blas = [(i["internal_api"], i["version"], i.get("architecture")) for i in threadpool_info()
            if i["user_api"] == "blas"]
    print(f"BLAS {blas}; load average {os.getloadavg()[0]:.2f}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')}")
    rows = []
    for threads in args.threads:
        rates = machine_rates(threads, args.reps)
        print(f"\nthreads={threads}: dgemm {rates['float64'] / 1e9:.1f} GFLOP/s, sgemm "
              f"{rates['float32'] / 1e9:.1f} GFLOP/s, copy {rates['copy'] / 1e9:.1f} GB/s, "
              f"read-only (4 streams a thread) {rates['read'] / 1e9:.1f} GB/s "
              f"(numpy copyto, 1 thread: {rates['numpy_copy'] / 1e9:.1f} GB/s)")
        print(f"{'shape':<6} {'m x k x n':<20} {'dtype':<8} {'bound':<8} {'roof GF':>8} "
              f"{'ours GF':>8} {'ours GB/s':>9} {'%roof':>6} {'numpy GF':>9} {'numpy GB/s':>10} "
              f"{'%roof':>6} {'x numpy':>8} {'err/bound':>9} {'%read roof':>10}")
        for dtype in map(np.dtype, args.dtypes):
            for small in args.small:
                for name, kind, m, k_big in (s for s in SHAPES if s[0] in args.shapes):
                    row = bench_shape(name, kind, m, k_big, small, dtype, threads, rates,
                                      args.reps)
                    rows.append(row | {"rates": {key: v / 1e9 for key, v in rates.items()}})
                    dims = f"{m}x{row['k']}x{row['n']}"
                    print(f"{name:<6} {dims:<20} {row['dtype']:<8} "
                          f"{row['bound']:<8} {row['roofline_gflops']:>8.1f} "
                          f"{row['ours_gflops']:>8.1f} {row['ours_gbps']:>9.1f} "
                          f"{row['ours_pct_roof']:>6.0f} {row['numpy_gflops']:>9.1f} "
                          f"{row['numpy_gbps']:>10.1f} {row['numpy_pct_roof']:>6.0f} "
                          f"{row['speedup']:>8.2f} {row['rel_err'] / row['err_bound']:>9.1e} "
                          f"{pct_or_dash(row['ours_pct_read_roof']):>10}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
