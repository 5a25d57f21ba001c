"""2D LU (block-cyclic, partial pivoting) benchmarks: speed against SciPy, traffic
against the model.

speed    at each N (default 4096 8192): scipy.linalg.lu_factor with 2 BLAS threads,
         `linalg-io lu --algo 2d` on one rank with 2 threads (1x1) and on two ranks
         with 1 thread each (1x2, look-ahead), in one run; ratio = SciPy's time / ours
         (>= 0.85 is the target). Each configuration runs --rounds times, interleaved,
         with --reps repetitions each; the best and the median repetition are reported
         (other jobs on a shared machine only ever add time).
traffic  diagdom and random at each N (default 1024 2048) and P (default 4 8 16), grid
         auto: bytes received per rank and wire bytes (sent/received) against the
         model given the run's pivots (exact) and a priori (diagdom: no swaps; random:
         the expected swaps): max relative difference over the ranks.
phases   N=8192 on a 2x2 grid (random): max bytes received per rank, by phase, and on
         the wire, against what ScaLAPACK (271 MB) and HPL (179 MB) receive there
         (issue 15's PMPI measurements).

Every point is one `linalg-io lu` launch (records appended to --out). Run under the
bench lock, without the OpenBLAS overrides (the children get the same environment):
    flock /tmp/linalg-io-bench.lock env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
        .venv/bin/python bench/bench_lu2d.py speed
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SCIPY_SNIPPET = """
import json, sys, time
import numpy as np, scipy.linalg
from threadpoolctl import threadpool_limits
from linalg_io.layout.generate import matrix_entries
n, reps = int(sys.argv[1]), int(sys.argv[2])
a = matrix_entries("random", 0, n, np.arange(n), np.arange(n))
times = []
with threadpool_limits(2):
    for rep in range(reps + 1):
        work = a.copy(order="F")
        start = time.perf_counter()
        scipy.linalg.lu_factor(work, overwrite_a=True, check_finite=False)
        if rep:
            times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def run_lu(p: int, args: list[str], out: Path, threads: int = 1) -> dict:
    command = [sys.executable, "-m", "linalg_io", "lu", "--algo", "2d", "--np", str(p),
               "--threads", str(threads), "--quiet", "--out", str(out)] + args
    print("+", " ".join(command[1:]), file=sys.stderr, flush=True)
    subprocess.run(command, check=True)
    return json.loads(out.read_text().strip().splitlines()[-1])


def speed(args: argparse.Namespace, out: Path) -> None:
    flops = {n: 2.0 / 3.0 * n**3 + 1.5 * n**2 for n in args.n}
    configs = {"scipy lu_factor, 2 threads": None,
               "lu2d 1 rank x 2 threads (1x1)": (1, 2, "1x1"),
               "lu2d 2 ranks x 1 thread (1x2)": (2, 1, "1x2")}
    times: dict[tuple[int, str], list[float]] = {}
    for n in args.n:
        for _ in range(args.rounds):
            for name, config in configs.items():
                if config is None:
                    result = subprocess.run([sys.executable, "-c", SCIPY_SNIPPET, str(n),
                                             str(args.reps)], check=True, capture_output=True,
                                            text=True)
                    reps = json.loads(result.stdout)
                else:
                    p, threads, grid = config
                    reps = run_lu(p, ["--n", str(n), "--grid", grid, "--nb", str(args.nb),
                                      "--reps", str(args.reps), "--warmup", "1"], out,
                                  threads)["times_s"]
                times.setdefault((n, name), []).extend(reps)
    print("\n| N | configuration | best s | median s | GFLOP/s (best) | ratio best "
          "| ratio median |")
    print("|---|---|---|---|---|---|---|")
    for n in args.n:
        base = times[(n, "scipy lu_factor, 2 threads")]
        for name in configs:
            mine = times[(n, name)]
            print(f"| {n} | {name} | {min(mine):.3f} | {statistics.median(mine):.3f} | "
                  f"{flops[n] / min(mine) / 1e9:.1f} | {min(base) / min(mine):.3f} | "
                  f"{statistics.median(base) / statistics.median(mine):.3f} |")


def _worst_rel(measured, model) -> float:
    return float(np.max(np.abs(np.asarray(measured) / np.asarray(model) - 1)))


def traffic(args: argparse.Namespace, out: Path) -> None:
    print("\n| N | P | grid | NB | dist | recv max MB | a priori model MB | rel. diff per rank "
          "| given pivots: recv / wire sent / wire recv rel. diff | wire sent/recv max MB | "
          "HPL residual |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for p in args.p:
            for dist in args.dist:
                record = run_lu(p, ["--n", str(n), "--dist", dist, "--reps", "1",
                                    "--warmup", "0"], out)
                t, m = record["traffic"], record["model"]
                exact, wire = m["given_pivots"], t["wire"]
                grid = "x".join(str(d) for d in record["params"]["grid"][:2])
                given = [_worst_rel(t["per_rank_bytes_recv"], exact["per_rank_bytes_recv"])]
                if wire is not None:
                    given += [_worst_rel(wire[key], exact["wire"][key])
                              for key in ("per_rank_bytes_sent", "per_rank_bytes_recv")]
                print(f"| {n} | {p} | {grid} | {record['params']['nb']} | {dist} | "
                      f"{t['bytes_recv']['max'] / 1e6:.3f} | {m['bytes_recv']['max'] / 1e6:.3f} | "
                      f"{_worst_rel(t['per_rank_bytes_recv'], m['per_rank_bytes_recv']):.4f} | "
                      f"{' / '.join(f'{x:.1e}' for x in given)} | "
                      + (f"{wire['bytes_sent']['max'] / 1e6:.3f}/"
                         f"{wire['bytes_recv']['max'] / 1e6:.3f}" if wire else "n/a")
                      + f" | {record['verify']['value']:.3g} |", flush=True)


def phases(args: argparse.Namespace, out: Path) -> None:
    record = run_lu(4, ["--n", str(args.n[0]), "--grid", "2x2", "--nb", str(args.nb),
                        "--reps", "1", "--warmup", "0"], out)
    traffic, model = record["traffic"], record["model"]
    wire = traffic["wire"]
    print(f"\nN={args.n[0]} 2x2 NB={args.nb} random: max bytes received per rank "
          f"{traffic['bytes_recv']['max'] / 1e6:.1f} MB (model, given pivots "
          f"{model['given_pivots']['bytes_recv']['max'] / 1e6:.1f}); wire sent/received "
          + (f"{wire['bytes_sent']['max'] / 1e6:.1f}/{wire['bytes_recv']['max'] / 1e6:.1f} MB"
             if wire else "n/a") +
          f"; ScaLAPACK receives 271 MB, HPL 179 MB there; "
          f"HPL residual {record['verify']['value']:.3g}, time {record['time_s']['median']:.1f} s")
    print("\n| phase | received MB (busiest receiver) | model MB (a priori) |")
    print("|---|---|---|")
    for phase in sorted(set(traffic["recv_by_phase"]) | set(model["recv_by_phase"])):
        print(f"| {phase} | {traffic['recv_by_phase'].get(phase, 0) / 1e6:.1f} | "
              f"{model['recv_by_phase'].get(phase, 0) / 1e6:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("speed", "traffic", "phases"))
    parser.add_argument("--n", type=int, nargs="+")
    parser.add_argument("--p", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--dist", nargs="+", default=["diagdom", "random"])
    parser.add_argument("--nb", type=int, default=128)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", help="append the records here (default: a temporary file)")
    args = parser.parse_args()
    args.n = args.n or {"speed": [4096, 8192], "traffic": [1024, 2048], "phases": [8192]}[args.what]
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if name in os.environ:
            print(f"warning: {name} is set; BLAS speed may not be representative",
                  file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "records.jsonl"
        {"speed": speed, "traffic": traffic, "phases": phases}[args.what](args, out)


if __name__ == "__main__":
    main()
