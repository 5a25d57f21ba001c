"""The LU's honest traffic: wire bytes per rank (Open MPI's monitoring) against the model,
the grid choice by real cost, and what monitoring costs.

Runs `linalg-io lu` (one mpiexec launch per point, records appended to --out; a point
already in --out with the same command is reused, so an interrupted run resumes) and
prints Markdown tables:

volume    N (8192), random matrix, P in --p-list (4 16 64): COnfLUX with --objective
          volume (auto grid and tile) and the 2D LU (auto grid): logical bytes sent and
          received, wire sent and received (max per rank), the model's wire, max/mean
          of the wire bytes, time, HPL verdict; the targets and the peers' received
          bytes (ALGORITHMS.md) beside them;
exact     the same runs and --dist diagdom ones: per rank, |wire - model| / model, the
          model given the run's pivots (random) or none (diagonally dominant);
choice    P in --choice-p (16 64): the model's five best candidates for --objective
          time, each run with its grid and tile, and --grid auto, in --rounds turns
          (the best of each; other jobs only ever add time): predicted and measured
          time, predicted and measured busiest-rank wire bytes; checks that auto's
          time is within 10% of the fastest and that the measured wire volumes rank as
          the model ranks them;
overhead  N (8192), P=4, 2D and COnfLUX 2x2x1, and a 2-rank ping-pong (8 B and 1 MiB),
          monitoring on and off in turns (--rounds): best and median times, ratios.

Time is shared-machine time (2 cores, oversubscribed): compare within one table only.
Run under the bench lock:
    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/bench_lu_wire.py --what volume
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from linalg_io.models.profile import load_profile

from linalg_io.lu.choice import candidate_table, ranked

PEERS_RECV_MB = {  # max per rank received, N = 8192, measured with a PMPI counter (issue 15)
    4: "HPL 179, COnfLUX 189, ScaLAPACK 271",
    16: "HPL 135, COnfLUX 4x4x1 135, ScaLAPACK 158",
    64: "ScaLAPACK 82, HPL 85, COnfLUX 8x8x1 80, 4x4x4 91",
}
TARGET_WIRE_MB = {4: 170, 16: 120, 64: 65}


def run_lu(p: int, args: list[str], out: Path, fresh: bool = False) -> dict:
    """The record of `linalg-io lu ARGS --np P` (reused from `out` when there, unless
    `fresh`)."""
    command = ["lu", "--np", str(p)] + args + ["--out", str(out)]
    if out.exists() and not fresh:
        for line in out.read_text().splitlines():
            record = json.loads(line)
            if record["command"][1:] == command:
                return record
    print("+ linalg-io", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "linalg_io"] + command, check=True)
    return json.loads(out.read_text().strip().splitlines()[-1])


def mb(x: float) -> str:
    return f"{x / 1e6:.1f}"


def label(record: dict) -> str:
    dims = record["params"]["grid"][:3 if record["algo"] == "conflux" else 2]
    grid = "x".join(str(d) for d in dims)
    return f"{record['algo']} {grid} v={record['params']['nb']}"


def wire_max(block: dict) -> float:
    return max(block["bytes_sent"]["max"], block["bytes_recv"]["max"])


def balance(wire: dict) -> float:
    worst = np.maximum(wire["per_rank_bytes_sent"], wire["per_rank_bytes_recv"])
    return float(worst.max() / worst.mean())


def volume(args) -> None:
    print("| P | run | logical sent | logical recv | wire sent | wire recv | model wire "
          "sent/recv | wire max/mean | time s | HPL | target | peers (recv) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in args.p_list:
        common = ["--n", str(args.n), "--reps", str(args.reps), "--warmup", "1"]
        runs = [run_lu(p, ["--algo", "conflux", "--grid", "auto", "--nb", "auto",
                           "--objective", "volume"] + common, args.out),
                run_lu(p, ["--algo", "2d", "--grid", "auto"] + common, args.out)]
        for record in runs:
            t, m = record["traffic"], record["model"]["given_pivots"]
            w = t["wire"]
            target = TARGET_WIRE_MB[p] if record["algo"] == "conflux" else ""
            print(f"| {p} | {label(record)} | {mb(t['bytes_sent']['max'])} | "
                  f"{mb(t['bytes_recv']['max'])} | {mb(w['bytes_sent']['max'])} | "
                  f"{mb(w['bytes_recv']['max'])} | {mb(m['wire']['bytes_sent']['max'])}/"
                  f"{mb(m['wire']['bytes_recv']['max'])} | {balance(w):.3f} | "
                  f"{record['time_s']['median']:.2f} | {record['verify']['value']:.2g} "
                  f"{'PASSED' if record['verify']['passed'] else 'FAILED'} | "
                  f"{target} | {PEERS_RECV_MB[p] if record['algo'] == 'conflux' else ''} |")


def exact(args) -> None:
    print("| P | run | dist | max over ranks of abs(wire/model - 1), sent / recv | wire msgs "
          "= model |")
    print("|---|---|---|---|---|")
    for p in args.p_list:
        for dist in ("diagdom", "random"):
            common = ["--n", str(args.n), "--dist", dist, "--reps", "1", "--warmup", "0"]
            for algo_args in (["--algo", "conflux", "--grid", "auto", "--nb", "auto",
                               "--objective", "volume"], ["--algo", "2d", "--grid", "auto"]):
                record = run_lu(p, algo_args + common, args.out)
                w, m = record["traffic"]["wire"], record["model"]["given_pivots"]["wire"]
                dev = [float(np.max(np.abs(np.array(w[key]) / np.array(m[key]) - 1)))
                       for key in ("per_rank_bytes_sent", "per_rank_bytes_recv")]
                same_msgs = w["msgs_sent"]["max"] == m["msgs_sent"]["max"]
                print(f"| {p} | {label(record)} | {dist} | {dev[0]:.2e} / {dev[1]:.2e} | "
                      f"{same_msgs} |")


def choice(args) -> None:
    profile = load_profile()
    for p in args.choice_p:
        mem = 24 * 2**30 // p
        # the profile's placement: all p ranks on this node's cores, as `lu --np p` runs
        top = ranked(candidate_table(args.n, p, mem, profile), "time")[:5]
        common = ["--n", str(args.n), "--reps", "1", "--warmup", "1"]
        configs = [["--grid", "auto", "--nb", "auto"]] + [
            ["--grid", f"{row['px']}x{row['py']}x{row['c']}", "--nb", str(row["v"])]
            for row in top]
        times: list[list[float]] = [[] for _ in configs]
        records: list[dict] = []
        for _ in range(args.rounds):   # interleaved: other jobs only ever add time
            for i, config in enumerate(configs):
                record = run_lu(p, ["--algo", "conflux"] + config + common, args.out,
                                fresh=True)
                times[i].append(record["time_s"]["min"])
                if len(records) < len(configs):   # the first round's, for bytes and verdicts
                    records.append(record)
        best = [min(t) for t in times]
        print(f"\nP={p}, N={args.n}: the model's five best for --objective time, each run "
              f"{args.rounds} times in turns (best of the rounds)")
        print("| rank | grid v | predicted s | measured s (rounds) | predicted wire max MB | "
              "measured wire max MB | HPL |")
        print("|---|---|---|---|---|---|---|")
        for i, row in enumerate(top):
            record = records[i + 1]
            print(f"| {i + 1} | {row['px']}x{row['py']}x{row['c']} {row['v']} | "
                  f"{row['time_s']:.2f} | {best[i + 1]:.2f} "
                  f"({', '.join(f'{t:.2f}' for t in times[i + 1])}) | {mb(row['wire_max'])} | "
                  f"{mb(wire_max(record['traffic']['wire']))} | "
                  f"{'PASSED' if record['verify']['passed'] else 'FAILED'} |")
        fastest = min(best[1:])
        by_model = sorted(range(len(top)), key=lambda i: top[i]["wire_max"])
        by_measure = sorted(range(len(top)),
                            key=lambda i: wire_max(records[i + 1]["traffic"]["wire"]))
        print(f"\nauto ran {label(records[0])}: {best[0]:.2f} s "
              f"({', '.join(f'{t:.2f}' for t in times[0])}), fastest of the five "
              f"{fastest:.2f} s: ratio {best[0] / fastest:.3f} (target <= 1.10); "
              f"wire volume order, model {[i + 1 for i in by_model]}, measured "
              f"{[i + 1 for i in by_measure]}: {'same' if by_model == by_measure else 'DIFFERENT'}")


def overhead(args) -> None:
    """LU times and ping-pong one-way times with Open MPI's monitoring on and off, in
    turns; best and median of every timed repetition of the rounds."""
    out = args.out.with_suffix(".overhead.jsonl")
    times: dict[tuple[str, str], list[float]] = {}
    lus = {"2d": ["lu", "--algo", "2d", "--grid", "2x2", "--nb", "128", "--n", str(args.n)],
           "conflux": ["lu", "--algo", "conflux", "--grid", "2x2x1", "--nb", "256",
                       "--n", str(args.n)],
           "pingpong": ["pingpong", "--max-bytes", "1M"]}
    for _ in range(args.rounds):
        for setting in ("1", "0"):
            for name, command in lus.items():
                nranks = "2" if name == "pingpong" else "4"
                subprocess.run([sys.executable, "-m", "linalg_io"] + command
                               + ["--np", nranks, "--reps", str(args.reps), "--warmup", "1",
                                  "--quiet", "--out", str(out)],
                               check=True, env={**os.environ,
                                                "OMPI_MCA_pml_monitoring_enable": setting})
                record = json.loads(out.read_text().strip().splitlines()[-1])
                assert (record["traffic"]["wire"] is not None) == (setting == "1")
                if name == "pingpong":
                    for row in record["results"]:
                        if row["bytes"] in (8, 2**20):
                            times.setdefault((f"ping-pong {row['bytes']} B", setting),
                                             []).append(row["one_way_s"])
                else:
                    times.setdefault((name, setting), []).extend(record["times_s"])
    print(f"N={args.n}, P=4 (ping-pong: 2 ranks), {args.rounds} rounds in turns\n")
    print("| run | on: best s | off: best s | on/off, best | on: median s | off: median s | "
          "on/off, median |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted({key[0] for key in times}):
        on, off = times[(name, "1")], times[(name, "0")]
        print(f"| {name} | {min(on):.4g} | {min(off):.4g} | {min(on) / min(off):.4f} | "
              f"{statistics.median(on):.4g} | {statistics.median(off):.4g} | "
              f"{statistics.median(on) / statistics.median(off):.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("volume", "exact", "choice", "overhead"),
                        required=True)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--p-list", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--choice-p", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("results/lu_wire.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    {"volume": volume, "exact": exact, "choice": choice, "overhead": overhead}[args.what](args)


if __name__ == "__main__":
    main()
