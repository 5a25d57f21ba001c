"""2.5D LU (conflux) benchmarks: traffic against the model and the references, time against 2D.

Runs `linalg-io lu` (each point one mpiexec launch, records appended to --out) and
prints Markdown tables:

layers    fixed P (default 16), the layer counts c in --c-list: received and wire
          bytes per rank measured vs the model, to check the model's ranking of c
          (bench_lu_wire.py --what volume has the N=8192 table against the peers);
time      N, P=4, one after the other: --algo conflux (auto, then --time-grids) and
          --algo 2d (auto);
accuracy  every grid of --grids at every N of --acc-n: measured vs a priori model, per
          rank (largest relative difference over the ranks) and max/mean;
seeds     every GRID[:V] of --seed-grids at every N of --acc-n, one run per seed of
          --seeds: per rank measured/model - 1 for the a priori model ("uniform", the
          tournament's expected pivots) and for the proportional share it replaced,
          per seed and as mean and spread over the seeds, beside the spread that
          random pivot positions alone give (sigma_rand: the model over --mc random
          row orders; E max_rand: the expected largest |deviation| over the ranks).

Traffic is deterministic, so one repetition without warm-up is enough (--reps 1
--warmup 0 for the traffic points). Run under the bench lock:
    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/bench_conflux.py --what layers
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from linalg_io.models import conflux as model


def run_lu(p: int, args: list[str], out: Path) -> dict:
    command = [sys.executable, "-m", "linalg_io", "lu", "--np", str(p), "--out", str(out)] + args
    print("+", " ".join(command[1:]), file=sys.stderr, flush=True)
    subprocess.run(command, check=True)
    return json.loads(out.read_text().strip().splitlines()[-1])


def mb(x: float) -> str:
    return f"{x / 1e6:.2f}"


def traffic_row(record: dict) -> str:
    t, m = record["traffic"], record["model"]
    grid = "x".join(str(d) for d in record["params"]["grid"])
    exact = m["given_pivots"]
    wire = t["wire"] or {"bytes_sent": {"max": float("nan")}, "bytes_recv": {"max": float("nan")}}
    phases = ", ".join(f"{k} {mb(v)}" for k, v in t["recv_by_phase"].items())
    return (f"| {record['nranks']} | {grid} | {record['params']['nb']} | "
            f"{mb(t['bytes_recv']['max'])} | {mb(m['bytes_recv']['max'])} | "
            f"{mb(exact['bytes_recv']['max'])} | {mb(wire['bytes_sent']['max'])} | "
            f"{mb(wire['bytes_recv']['max'])} | "
            f"{t['bytes_recv']['max'] / t['bytes_recv']['mean']:.3f} | "
            f"{mb(t['bytes_sent']['max'])} | {record['verify']['value']:.3g} | "
            f"{record['time_s']['median']:.2f} | {phases} |")


def accuracy_row(record: dict) -> str:
    t, m = record["traffic"], record["model"]
    measured = np.array(t["per_rank_bytes_sent"])
    apriori = np.array(m["per_rank_bytes_sent"])
    exact = np.array(m["given_pivots"]["per_rank_bytes_sent"])
    grid = "x".join(str(d) for d in record["params"]["grid"])
    pct = 100.0
    return (f"| {record['params']['n']} | {record['nranks']} | {grid} | {record['params']['nb']} | "
            f"{mb(measured.max())} | {mb(apriori.max())} | "
            f"{pct * (measured.max() / apriori.max() - 1):+.2f} | "
            f"{pct * (measured.mean() / apriori.mean() - 1):+.2f} | "
            f"{pct * np.max(np.abs(measured / apriori - 1)):.2f} | "
            f"{pct * np.max(np.abs(measured / exact - 1)):.2f} | "
            f"{measured.max() / measured.mean():.3f} |")


def random_order_deviations(n: int, v: int, grid: list[int], draws: int,
                            seed: int = 0) -> np.ndarray:
    """[draw, rank] bytes sent over their mean - 1 when the pivots are the rows in a
    random order (every row equally likely at every step)."""
    rng = np.random.default_rng(seed)
    cuts = np.arange(v, n, v)
    sent = np.array([model.conflux_costs(n, v, *grid, np.split(rng.permutation(n), cuts)).bytes_sent
                     for _ in range(draws)])
    return sent / sent.mean(axis=0) - 1


def seed_table(records: list[tuple[int, dict]], draws: int) -> str:
    """Markdown for one grid, v and N over the seeds (see --what seeds)."""
    first = records[0][1]
    n, v, grid = first["params"]["n"], first["params"]["nb"], first["params"]["grid"]
    proportional = model.conflux_costs(n, v, *grid, "proportional").bytes_sent
    pct = 100.0
    before, after = [], []
    for _, record in records:
        measured = np.array(record["traffic"]["per_rank_bytes_sent"])
        before.append(pct * (measured / proportional - 1))
        after.append(pct * (measured / np.array(record["model"]["per_rank_bytes_sent"]) - 1))
    before, after = np.array(before), np.array(after)
    noise = pct * random_order_deviations(n, v, grid, draws)

    def ranks(values: np.ndarray, sign: str = "+") -> str:
        return " ".join(f"{x:{sign}.2f}" for x in values)

    lines = [f"\n#### {'x'.join(map(str, grid))}, v={v}, N={n}\n",
             ("| seed | max over ranks, proportional % | max over ranks, model % "
              "| per rank, model % |"),
             "|---|---|---|---|"]
    lines += [f"| {seed} | {np.abs(b).max():.2f} | {np.abs(a).max():.2f} | {ranks(a)} |"
              for (seed, _), b, a in zip(records, before, after)]
    spread = after.std(axis=0, ddof=1) if len(after) > 1 else np.zeros(after.shape[1])
    lines += [(f"| mean, proportional | {np.abs(before).max(axis=1).mean():.2f} | | "
               f"{ranks(before.mean(axis=0))} |"),
              (f"| mean, model | | {np.abs(after).max(axis=1).mean():.2f} | "
               f"{ranks(after.mean(axis=0))} |"),
              f"| sd over seeds | | | {ranks(spread, '')} |",
              (f"| sigma_rand, E max_rand | | {np.abs(noise).max(axis=1).mean():.2f} | "
               f"{ranks(noise.std(axis=0), '')} |")]
    return "\n".join(lines)


HEADER = ("| P | grid | v | recv max MB | model (a priori) | model (given pivots) | wire sent "
          "max | wire recv max | recv max/mean | sent max MB | HPL residual | time s | "
          "received by phase (busiest rank, MB) |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("layers", "time", "accuracy", "seeds", "all"),
                        default="all")
    parser.add_argument("--seed-grids", default="7x1x1,5x1x1,3x1x1,6x1x1,3x1x2,7x1x1:128",
                        help="GRID or GRID:V (V defaults to --acc-nb)")
    parser.add_argument("--seeds", default="1,2,3,4,5,6")
    parser.add_argument("--mc", type=int, default=200, help="random row orders for sigma_rand")
    parser.add_argument("--grids", default="2x2x1,1x2x2,4x1x1,2x2x2,2x4x1,2x3x2,3x2x2,"
                                           "4x4x1,2x4x2,2x2x4,7x1x1")
    parser.add_argument("--acc-n", default="2048,4096")
    parser.add_argument("--acc-nb", type=int, default=256)
    parser.add_argument("--time-grids", default="2x2x1,1x2x2",
                        help="conflux grids timed beside the auto choice (P=4)")
    parser.add_argument("--time-reps", type=int, default=1)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--layers-p", type=int, default=16)
    parser.add_argument("--c-list", default="4x4x1,2x4x2,2x2x4")
    parser.add_argument("--layers-n", type=int, default=4096)
    parser.add_argument("--dist", default="random")
    parser.add_argument("--out", default="results/bench_conflux.jsonl")
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    common = ["--dist", args.dist, "--reps", "1", "--warmup", "0"]

    def point(p: int, extra: list[str]) -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            record = run_lu(p, extra, Path(tmp) / "r.jsonl")
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        return record

    if args.what in ("layers", "all"):
        rows = []
        for grid in args.c_list.split(","):
            record = point(args.layers_p, ["--algo", "conflux", "--n", str(args.layers_n),
                                           "--grid", grid, "--nb", "256"] + common)
            rows.append(traffic_row(record) + f" model time {record['model']['time_s']:.3f} s")
        print(f"\n### layers, N={args.layers_n}, P={args.layers_p}\n\n{HEADER}\n" + "\n".join(rows))
    if args.what in ("accuracy", "all"):
        rows = []
        for n in (int(x) for x in args.acc_n.split(",")):
            for grid in args.grids.split(","):
                p = 1
                for d in grid.split("x"):
                    p *= int(d)
                record = point(p, ["--algo", "conflux", "--n", str(n), "--grid", grid,
                                   "--nb", str(args.acc_nb)] + common)
                rows.append(accuracy_row(record))
        print("\n### model accuracy (a priori: the tournament's expected pivots; "
              f"dist {args.dist})\n\n"
              "| N | P | grid | v | sent max MB | model max MB | max err % | mean err % | "
              "worst rank err % | given pivots: worst rank err % | max/mean |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    if args.what in ("seeds", "all"):
        tables = []
        for n in (int(x) for x in args.acc_n.split(",")):
            for spec in args.seed_grids.split(","):
                grid, _, nb = spec.partition(":")
                p = int(np.prod([int(d) for d in grid.split("x")]))
                records = [(seed, point(p, ["--algo", "conflux", "--n", str(n), "--grid", grid,
                                            "--nb", nb or str(args.acc_nb), "--seed", seed]
                                        + common))
                           for seed in args.seeds.split(",")]
                tables.append(seed_table(records, args.mc))
        print("\n### a priori model over seeds (measured/model - 1 per rank; dist "
              f"{args.dist})\n" + "\n".join(tables))
    if args.what in ("time", "all"):
        rows = []
        runs = [("conflux", "auto", "auto")] + [
            ("conflux", grid, str(args.acc_nb)) for grid in args.time_grids.split(",") if grid]
        for algo, grid, nb in runs + [("2d", "auto", "auto")]:
            record = point(4, ["--algo", algo, "--n", str(args.n), "--grid", grid, "--nb", nb,
                               "--dist", args.dist, "--reps", str(args.time_reps),
                               "--warmup", "0"])
            rows.append(f"| {algo} | {'x'.join(map(str, record['params']['grid']))} | "
                        f"{record['params']['nb']} | {record['time_s']['median']:.2f} | "
                        f"{record['gflops']:.2f} | {mb(record['traffic']['bytes_recv']['max'])} | "
                        f"{record['verify']['value']:.3g} |")
        print(f"\n### time, N={args.n}, P=4 (same machine, consecutive runs)\n\n"
              "| algo | grid | nb | time s | GFLOP/s | recv max MB | HPL residual |\n"
              "|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
