"""ScaLAPACK's pdgetrf beside our LUs, and the 2.5D LU as a drop-in from a ScaLAPACK layout.

compare  at N (default 8192), for each Pr x Pc of --grids: `lu --algo 2d`, `--algo
         scalapack` (same grid and NB: the same block-cyclic matrix) and `--algo conflux`
         (its own grid and tile, the model's choice) one after the other on the same
         seed: time (median of reps), GFLOP/s, HPL residual, received bytes per rank
         (logical; ScaLAPACK's are invisible to the package, n/a) and wire bytes sent /
         received per rank (Open MPI's monitoring), the busiest rank's;
dropin   `lu --algo conflux --input-layout scalapack:MBxNB` at N on each P of --p-list:
         time, residual, and the redistribution's share (in + out) of the time (slowest
         rank's part times, median over reps) and of the bytes (over all ranks; wire and
         logical are equal here), beside the entries that change owner.

Records go to --out (appended). Run under the bench lock:
    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/bench_scalapack.py compare
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from linalg_io.runner import _megabytes as mb


def run_lu(p: int, args: list[str], out: Path) -> dict:
    command = [sys.executable, "-m", "linalg_io", "lu", "--np", str(p), "--out", str(out)] + args
    print("+", " ".join(command[1:]), file=sys.stderr, flush=True)
    subprocess.run(command, check=True)
    return json.loads(out.read_text().strip().splitlines()[-1])


def compare(args: argparse.Namespace) -> None:
    common = ["--n", str(args.n), "--reps", str(args.reps), "--seed", str(args.seed)]
    print("| grid | algo | layout | time s | GFLOP/s | HPL residual | recv max MB | "
          "wire sent / recv max MB |")
    print("|---|---|---|---|---|---|---|---|")
    for grid in args.grids.split(","):
        pr, pc = (int(x) for x in grid.split("x"))
        runs = [("2d", ["--grid", grid, "--nb", str(args.nb)]),
                ("scalapack", ["--grid", grid, "--nb", str(args.nb)]),
                ("conflux", [])]
        for algo, extra in runs:
            record = run_lu(pr * pc, ["--algo", algo] + common + extra, args.out)
            t = record["traffic"]
            layout = "x".join(map(str, record["params"]["grid"])) + f" nb={record['params']['nb']}"
            print(f"| {grid} | {algo} | {layout} | {record['time_s']['median']:.2f} | "
                  f"{record['gflops']:.1f} | {record['verify']['value']:.3g} | "
                  f"{mb(t, 'bytes_recv', 'max')} | {mb(t['wire'], 'bytes_sent', 'max')} / "
                  f"{mb(t['wire'], 'bytes_recv', 'max')} |", flush=True)


def dropin(args: argparse.Namespace) -> None:
    print("| P | input | 2.5D grid, v | time s | HPL residual | redistribution time share "
          "(in, out) | redistribution bytes share (in, out) | entries moved in (w/o "
          "relabelling) of N^2 | wire sent max MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    shapes = dict(item.split(":", 1) for item in args.shapes.split(",")) if args.shapes else {}
    for p in (int(x) for x in args.p_list.split(",")):
        shape = []
        if str(p) in shapes:
            grid, v = shapes[str(p)].split(":")
            shape = ["--grid", grid, "--nb", v]
        record = run_lu(p, ["--algo", "conflux", "--input-layout", f"scalapack:{args.blocks}",
                            "--n", str(args.n), "--reps", str(args.reps), "--seed",
                            str(args.seed)] + shape, args.out)
        params, t = record["params"], record["traffic"]
        parts = params["part_times_s"]
        totals = [sum(rep) for rep in zip(*parts.values())]
        share = {k: statistics.median(v / total for v, total in zip(parts[k], totals))
                 for k in ("redistribute_in", "redistribute_out")}
        everyone = sum(t["per_rank_bytes_sent"])
        by_phase = record["model"]["redistribution"]
        moved = {k: sum(by_phase[k]["per_rank_bytes_sent"]) / everyone for k in by_phase}
        entries = params["redistribute_in_entries"]
        grid = "x".join(map(str, params["grid"]))
        print(f"| {p} | scalapack:{args.blocks}@{'x'.join(map(str, params['input_grid']))} | "
              f"{grid}, {params['nb']} | {record['time_s']['median']:.2f} | "
              f"{record['verify']['value']:.3g} | "
              f"{share['redistribute_in'] + share['redistribute_out']:.1%} "
              f"({share['redistribute_in']:.1%}, {share['redistribute_out']:.1%}) | "
              f"{moved['redistribute_in'] + moved['redistribute_out']:.1%} "
              f"({moved['redistribute_in']:.1%}, {moved['redistribute_out']:.1%}) | "
              f"{entries['moved']} ({entries['without_relabelling']}) of {entries['total']} | "
              f"{mb(t['wire'], 'bytes_sent', 'max')} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("compare", "dropin"))
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--nb", type=int, default=128, help="compare: NB of 2d and scalapack")
    parser.add_argument("--grids", default="2x2,2x4", help="compare: Pr x Pc grids")
    parser.add_argument("--blocks", default="128x128", help="dropin: the input's MBxNB")
    parser.add_argument("--p-list", default="4,16", help="dropin: rank counts")
    parser.add_argument("--shapes", default="",
                        help="dropin: P:PxxPyxC:v,... fixes the 2.5D grid and tile of a P "
                             "(default: the model's choice)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/scalapack.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    {"compare": compare, "dropin": dropin}[args.what](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
