"""2D LU (block-cyclic, partial pivoting) benchmarks: speed against SciPy, traffic against the model.

speed    at each N (default 4096 8192): scipy.linalg.lu_factor with 2 BLAS threads,
         `linalg-io lu --algo 2d` on one rank with 2 threads (1x1) and on two ranks
         with 1 thread each (1x2, look-ahead), in one run; ratio = SciPy's time / ours
         (>= 0.85 is the target). Each configuration runs --rounds times, interleaved,
         with --reps repetitions each; the best and the median repetition are reported
         (other jobs on a shared machine only ever add time).
traffic  diagdom and random at each N (default 1024 2048) and P (default 4 8 16), grid
         auto: measured bytes sent per rank against the record's model (diagdom: no
         swaps, exact; random: the expected swaps), max relative difference over the
         ranks, and whether the measured max lies in the model's [none, worst] band.
phases   N=8192 on a 2x2 grid (random): max bytes sent per rank, by phase, against
         ScaLAPACK's 267 MB and HPL's 178 MB (ALGORITHMS.md).

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
    print("\n| N | configuration | best s | median s | GFLOP/s (best) | ratio best | ratio median |")
    print("|---|---|---|---|---|---|---|")
    for n in args.n:
        base = times[(n, "scipy lu_factor, 2 threads")]
        for name in configs:
            mine = times[(n, name)]
            print(f"| {n} | {name} | {min(mine):.3f} | {statistics.median(mine):.3f} | "
                  f"{flops[n] / min(mine) / 1e9:.1f} | {min(base) / min(mine):.3f} | "
                  f"{statistics.median(base) / statistics.median(mine):.3f} |")


def traffic(args: argparse.Namespace, out: Path) -> None:
    print("\n| N | P | grid | NB | dist | measured max MB | model max MB | max rel. diff per rank "
          "| model | band [none, worst] max MB | in band | HPL residual |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for p in args.p:
            for dist in args.dist:
                record = run_lu(p, ["--n", str(n), "--dist", dist, "--reps", "1",
                                    "--warmup", "0"], out)
                measured = np.array(record["traffic"]["per_rank_bytes_sent"])
                model = np.array(record["model"]["per_rank_bytes_sent"])
                band = record["model"]["bytes_sent_band"]
                grid = "x".join(str(d) for d in record["params"]["grid"][:2])
                rel = float(np.max(np.abs(measured / model - 1)))
                inside = band["none"] <= measured.max() <= band["worst"]
                print(f"| {n} | {p} | {grid} | {record['params']['nb']} | {dist} | "
                      f"{measured.max() / 1e6:.3f} | {model.max() / 1e6:.3f} | "
                      f"{rel:.4f} | {record['model']['pivoting']} | [{band['none'] / 1e6:.3f}, {band['worst'] / 1e6:.3f}] | "
                      f"{inside} | {record['verify']['value']:.3g} |", flush=True)


def phases(args: argparse.Namespace, out: Path) -> None:
    record = run_lu(4, ["--n", str(args.n[0]), "--grid", "2x2", "--nb", str(args.nb),
                        "--reps", "1", "--warmup", "0"], out)
    traffic, model = record["traffic"], record["model"]
    print(f"\nN={args.n[0]} 2x2 NB={args.nb} random: max bytes sent per rank "
          f"{traffic['bytes_sent']['max'] / 1e6:.1f} MB (mean "
          f"{traffic['bytes_sent']['mean'] / 1e6:.1f}); model band "
          f"[{model['bytes_sent_band']['none'] / 1e6:.1f}, "
          f"{model['bytes_sent_band']['worst'] / 1e6:.1f}] MB, expected "
          f"{model['bytes_sent_band']['expected'] / 1e6:.1f} MB; ScaLAPACK 267 MB, HPL 178 MB; "
          f"HPL residual {record['verify']['value']:.3g}, time {record['time_s']['median']:.1f} s")
    print("\n| phase | measured MB (busiest rank) | model MB (busiest rank) |")
    print("|---|---|---|")
    for phase in sorted(set(traffic["by_phase"]) | set(model["by_phase"])):
        print(f"| {phase} | {traffic['by_phase'].get(phase, 0) / 1e6:.1f} | "
              f"{model['by_phase'].get(phase, 0) / 1e6:.1f} |")


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
