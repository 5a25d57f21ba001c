"""CPU tall-and-skinny kernels (linalg_io._kernels.tsgemm) against NumPy/OpenBLAS, with
the roofline of every shape measured in the same run.

Shapes (s = bytes per element, K = k = n): TSM2L A(2^22 x K) B(K x K); A^T B with A, B
2^22 x K; TSM2R (8192 x 8192)(8192 x K); K = 16 (compute-bound in fp64) and K = 4
(memory-bound); float64 and float32; 1 and 2 threads (OpenMP for the kernels, BLAS
threads for NumPy, the same count).

Roofline per shape and thread count: min(copy bandwidth x arithmetic intensity, gemm
rate), intensity = 2 m k n / (s (A + B + C elements)), gemm rate = NumPy dgemm
(sgemm for float32) on 2048^3 and copy bandwidth = 2 x bytes / time of a 512 MiB
threaded memcpy, both measured in the same rounds as the shape (this machine's memory
bandwidth drifts by tens of percent within minutes; the line above each table gives
the rates measured once at the start of the thread count). The read-only bandwidth
(bytes / time of a threaded sum over 512 MiB, no stores, each thread reading its piece
as 4 far-apart streams in turn: one core here reads faster that way than from one
stream) is printed beside; for the products that only read (A^T B; TSM2R, whose C is
tiny) the last column is the percentage of min(read bandwidth x intensity, gemm rate),
the bound of a kernel that only reads, and the summary names those whose target (80% of
the copy roofline) is at or above that bound. Effective GB/s = s (A + B + C elements) / time.
Times: best of --reps rounds in which our kernel, NumPy and the rate probes take turns
(all see the same load); both write C into a buffer allocated once (np.matmul(..., out=)),
half a page from A modulo 4 KiB as matmul allocates it (kernels.aligned_empty), so
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

TARGET_PCT = 80  # issue 5: every shape at >= 80% of its roofline
SHAPES = (("TSM2L", "ab", 2**22, None), ("A^T B", "atb", 2**22, None),
          ("TSM2R", "ab", 8192, 8192))


# With more than one thread, OpenBLAS's workers spin for ~0.1 s after a call and would
# take a core from whatever runs next (an OpenMP kernel or probe): every timed run starts
# after this pause.
SETTLE_SECONDS = 0.15


def best_times(runs, reps: int, threads: int) -> list[float]:
    """Best time of each of `runs` over `reps` rounds, the runs taking turns within a
    round (after one warm-up call each) so that all of them see the same machine load."""
    for run in runs:
        run()
    best = [float("inf")] * len(runs)
    for _ in range(reps):
        for i, run in enumerate(runs):
            if threads > 1:
                time.sleep(SETTLE_SECONDS)
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


class MachineProbes:
    """The runs that measure the roofline's rates with this many threads: gemm on 2048^3
    (per dtype), memcpy and the read-only sum over 512 MiB. Each is (run, work): rate =
    work / best time (flop/s, or bytes/s with copy counting read + write)."""

    def __init__(self, threads: int):
        self.threads = threads
        rng = np.random.default_rng(0)
        self.square = {np.dtype(t).name: rng.random((2048, 2048)).astype(t)
                       for t in (np.float64, np.float32)}
        self.src = np.ones(2**29 // 8)
        self.dst = np.empty_like(self.src)

    def gemm(self, dtype: str):
        square = self.square[dtype]
        return partial(np.matmul, square, square), 2 * 2048**3

    def copy(self):
        run = partial(kernels.compiled().stream_copy, self.src.view(np.uint8),
                      self.dst.view(np.uint8), self.threads)
        return run, 2 * self.src.nbytes

    def read(self):
        return partial(kernels.compiled().stream_read, self.src, self.threads), self.src.nbytes

    def numpy_copy(self):
        return partial(np.copyto, self.dst, self.src), 2 * self.src.nbytes


def rates_of(probes: dict, times: list[float]) -> dict:
    return {name: work / t for (name, (_, work)), t in zip(probes.items(), times)}


def machine_rates(probes: MachineProbes, reps: int) -> dict:
    """All rates at once (the header line of a thread count)."""
    runs = {"float64": probes.gemm("float64"), "float32": probes.gemm("float32"),
            "copy": probes.copy(), "read": probes.read(), "numpy_copy": probes.numpy_copy()}
    with threadpool_limits(probes.threads):
        return rates_of(runs, best_times([run for run, _ in runs.values()], reps,
                                         probes.threads))


def scaled_error(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """max |C - A B| / (|A| |B|) with the reference in float64 (rows sampled for speed)."""
    rows = np.arange(0, a.shape[0], max(1, a.shape[0] // 4096))
    a64, b64 = a[rows].astype(np.float64), b.astype(np.float64)
    scale = np.maximum(np.abs(a64) @ np.abs(b64), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(c[rows].astype(np.float64) - a64 @ b64) / scale))


def bench_shape(name: str, kind: str, m: int, k_big: int | None, small: int, dtype,
                probes: MachineProbes, reps: int) -> dict:
    """Our kernel and NumPy on one shape, the roofline's rates measured in the same rounds
    (memory bandwidth on this machine drifts by tens of percent within minutes)."""
    threads = probes.threads
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
        # both outputs half a page from A modulo 4 KiB (what matmul allocates: no 4K
        # aliasing between the loads of A and the stores of C)
        c_ours = kernels.aligned_empty((m, n), dtype, "C", away_from=a)
        c_numpy = kernels.aligned_empty((m, n), dtype, "C", away_from=a)
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
    machine = {"gemm": probes.gemm(np.dtype(dtype).name), "copy": probes.copy(),
               "read": probes.read()}
    with threadpool_limits(threads):
        t_ours, t_numpy, *t_machine = best_times(
            [ours, theirs] + [run for run, _ in machine.values()], reps, threads)
    rates = rates_of(machine, t_machine)
    gemm = rates["gemm"]
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
        # the target as a percentage of the read-only roofline: >= 100 asks a kernel
        # that only reads to read faster than the read probe beside it
        "target_pct_read_roof": read_roof and TARGET_PCT * roof / read_roof,
        "numpy_pct_roof": 100 * flops / t_numpy / roof,
        "speedup": t_numpy / t_ours, "rel_err": error,
        "err_bound": (m if kind == "atb" else k) * float(np.finfo(dtype).eps),
        "rates": {key: value / 1e9 for key, value in rates.items()},
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
        probes = MachineProbes(threads)
        rates = machine_rates(probes, args.reps)
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
                    row = bench_shape(name, kind, m, k_big, small, dtype, probes, args.reps)
                    rows.append(row)
                    dims = f"{m}x{row['k']}x{row['n']}"
                    print(f"{name:<6} {dims:<20} {row['dtype']:<8} "
                          f"{row['bound']:<8} {row['roofline_gflops']:>8.1f} "
                          f"{row['ours_gflops']:>8.1f} {row['ours_gbps']:>9.1f} "
                          f"{row['ours_pct_roof']:>6.0f} {row['numpy_gflops']:>9.1f} "
                          f"{row['numpy_gbps']:>10.1f} {row['numpy_pct_roof']:>6.0f} "
                          f"{row['speedup']:>8.2f} {row['rel_err'] / row['err_bound']:>9.1e} "
                          f"{pct_or_dash(row['ours_pct_read_roof']):>10}", flush=True)
    reached = [row for row in rows if row["ours_pct_roof"] >= TARGET_PCT]
    lowest = min(rows, key=lambda row: row["ours_pct_roof"])
    print(f"\n{len(reached)} of {len(rows)} shapes at >= {TARGET_PCT}% of the roofline; lowest: "
          f"{lowest['shape']} {lowest['dtype']} K={lowest['n']} {lowest['threads']} thread(s) "
          f"{lowest['ours_pct_roof']:.0f}%")
    beyond_read = [row for row in rows if (row["target_pct_read_roof"] or 0) >= 100]
    if beyond_read:
        print(f"{len(beyond_read)} shape(s) only read and need more than the read-only bandwidth "
              f"measured beside them to reach {TARGET_PCT}% of the copy roofline: " + ", ".join(
                  f"{row['shape']} {row['dtype']} K={row['n']} {row['threads']} thread(s) "
                  f"({row['target_pct_read_roof']:.0f}% of read roof)" for row in beyond_read))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
