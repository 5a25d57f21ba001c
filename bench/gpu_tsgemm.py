"""TSM2R and TSM2L (linalg_io/kernels/tsm2_gpu.py) against cupy.matmul on one GPU.

For k (TSM2L: A m x k times B k x k) and n (TSM2R: A N x N times B N x n) in
{2, 4, 8, 16, 32}, float32 and float64: median time, GFLOP/s (2 m k n), effective
bandwidth (bytes of A, B and C once / time) and its share of the peak given with
--peak-tbs (4.3 TB/s by default), for both kernels and cupy.matmul, plus the speedup.
Run: python bench/gpu_tsgemm.py [--m 33554432] [--N 16384] [--peak-tbs 4.3]
"""

from __future__ import annotations

import argparse
import sys
from functools import partial

from linalg_io.kernels import tsm2_gpu
from linalg_io.kernels.gpu import require_cupy


def timed(cupy, run, reps: int) -> float:
    run()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e-3)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=1 << 25, help="rows of A for TSM2L")
    parser.add_argument("--N", type=int, default=16384, help="order of A for TSM2R")
    parser.add_argument("--peak-tbs", type=float, default=4.3)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    cupy = require_cupy()
    peak = args.peak_tbs * 1e12
    print(f"{'kernel':<6} {'dtype':<8} {'shape':<28} {'ours GF/s':>10} {'ours GB/s':>10} "
          f"{'%peak':>6} {'cupy GF/s':>10} {'cupy GB/s':>10} {'%peak':>6} {'speedup':>8}  tile")
    for dtype in ("float32", "float64"):
        for small in (2, 4, 8, 16, 32):
            for name, (m, k, n) in (("TSM2L", (args.m, small, small)),
                                    ("TSM2R", (args.N, args.N, small))):
                a = cupy.random.standard_normal((m, k), dtype=dtype)
                b = cupy.random.standard_normal((k, n), dtype=dtype)
                c, tile = tsm2_gpu.matmul(a, b)
                error = float(cupy.max(cupy.abs(c - a @ b)) / cupy.max(cupy.abs(a @ b)))
                ours = timed(cupy, partial(tsm2_gpu.matmul, a, b), args.reps)
                theirs = timed(cupy, partial(cupy.matmul, a, b), args.reps)
                flops = 2.0 * m * k * n
                moved = a.itemsize * (m * k + k * n + m * n)
                print(f"{name:<6} {dtype:<8} {f'{m}x{k} * {k}x{n}':<28} "
                      f"{flops / ours / 1e9:>10.1f} {moved / ours / 1e9:>10.1f} "
                      f"{100 * moved / ours / peak:>6.1f} {flops / theirs / 1e9:>10.1f} "
                      f"{moved / theirs / 1e9:>10.1f} {100 * moved / theirs / peak:>6.1f} "
                      f"{theirs / ours:>8.2f}  {tile} (rel err {error:.1e})", flush=True)
                del a, b, c
                cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    from linalg_io.errors import LinalgIOError

    try:
        main()
    except LinalgIOError as error:
        print(f"gpu_tsgemm: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
