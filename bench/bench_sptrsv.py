"""SpTRSV benchmark: one rank against SciPy, then P = 2 and 4 for both algorithms.

single   in this process (one MPI rank): for each matrix (default lap3d:64 and
         lap2d:1024), SciPy's spsolve_triangular and both of our solvers, repetitions
         interleaved so that all see the same machine load; prints the medians and the
         speed-up (target >= 10x). The set-up (matrix, levels, plan) is not timed.
parallel each (matrix, P, algo) one `linalg-io sptrsv --np P` launch; prints the median
         time, measured bytes/messages sent (max over ranks) beside the model's, the
         level count and the number of levels that carry messages.

Run under the bench lock:
    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/bench_sptrsv.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def single_rank(matrix: str, reps: int) -> str:
    from mpi4py import MPI
    from scipy.sparse.linalg import spsolve_triangular

    from linalg_io.comm.counting import CountedComm
    from linalg_io.contract import RunConfig
    from linalg_io.sptrsv.case import make_case

    cases = {}
    for algo in ("levelset", "syncfree"):
        options = {"matrix": matrix, "algo": algo, "upper": False, "nrhs": 1,
                   "partition": "nnz", "tril": False}
        cases[algo] = make_case(CountedComm(MPI.COMM_WORLD),
                                RunConfig(command="sptrsv", options=options))
    lower = cases["levelset"].lower
    b = cases["levelset"].b[:, 0].copy()
    times = {"scipy": [], "levelset": [], "syncfree": []}
    spsolve_triangular(lower, b, lower=True)
    for _ in range(reps):
        start = time.perf_counter()
        reference = spsolve_triangular(lower, b, lower=True)
        times["scipy"].append(time.perf_counter() - start)
        for algo, case in cases.items():
            case.setup_rep()
            start = time.perf_counter()
            case.run()
            times[algo].append(time.perf_counter() - start)
    diffs = {algo: float(np.abs(case.local.solution()[:, 0] - reference).max()
                         / np.abs(reference).max()) for algo, case in cases.items()}
    median = {k: statistics.median(v) for k, v in times.items()}
    params = cases["levelset"].params
    lines = []
    for algo in ("levelset", "syncfree"):
        lines.append(f"| {matrix} | {params['n']} | {params['nnz']} | {params['levels']} | "
                     f"{median['scipy'] * 1e3:.2f} | {algo} | {median[algo] * 1e3:.3f} | "
                     f"{median['scipy'] / median[algo]:.1f}x | {diffs[algo]:.1e} |")
    return "\n".join(lines)


PARALLEL_HEADER = (
    "| matrix | P | algo | levels | msg levels | time ms | model ms | sent kB | "
    "model kB | msgs | model msgs | exact | residual |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def parallel(matrix: str, nranks: int, algo: str, reps: int, backend: str = "cpu") -> str:
    """One `linalg-io sptrsv --np P` launch as a table row (see PARALLEL_HEADER)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.jsonl"
        command = [sys.executable, "-m", "linalg_io", "sptrsv", "--np", str(nranks),
                   "--matrix", matrix, "--algo", algo, "--reps", str(reps), "--quiet",
                   "--backend", backend, "--out", str(out)]
        subprocess.run(command, check=True)
        record = json.loads(out.read_text().strip().splitlines()[-1])
    t, m = record["traffic"], record["model"]
    exact = all(t[k]["max"] == m[k]["max"] and abs(t[k]["mean"] - m[k]["mean"]) < 1e-9
                for k in ("bytes_sent", "bytes_recv", "msgs_sent"))
    return (f"| {matrix} | {nranks} | {algo} | {record['params']['levels']} | "
            f"{m['message_levels']} | {record['time_s']['median'] * 1e3:.2f} | "
            f"{m['time_s'] * 1e3:.2f} | {t['bytes_sent']['max'] / 1e3:.1f} | "
            f"{m['bytes_sent']['max'] / 1e3:.1f} | {t['msgs_sent']['max']:.0f} | "
            f"{m['msgs_sent']['max']:.0f} | {'yes' if exact else 'NO'} | "
            f"{record['verify']['value']:.1e} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrices", nargs="+", default=["lap3d:64", "lap2d:1024"])
    parser.add_argument("--p-list", nargs="+", type=int, default=[2, 4])
    parser.add_argument("--reps", type=int, default=9, help="repetitions (median reported)")
    parser.add_argument("--what", choices=("all", "single", "parallel"), default="all")
    args = parser.parse_args()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"load average before the run: {load} (on {os.cpu_count()} cores)\n")
    if args.what in ("all", "single"):
        print("## One rank against scipy.sparse.linalg.spsolve_triangular (same run)\n")
        print("| matrix | n | nnz | levels | SciPy ms | algo | ours ms | speed-up | rel diff |")
        print("|---|---|---|---|---|---|---|---|---|")
        for matrix in args.matrices:
            print(single_rank(matrix, args.reps), flush=True)
    if args.what in ("all", "parallel"):
        print("\n## P ranks: time and traffic per rank (max), measured vs model\n")
        print(PARALLEL_HEADER)
        for matrix in args.matrices:
            for nranks in args.p_list:
                for algo in ("levelset", "syncfree"):
                    print(parallel(matrix, nranks, algo, args.reps), flush=True)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"\nload average after the run: {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
