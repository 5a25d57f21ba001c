"""Interleaved LU timings with the time per phase, measured and modelled, and the load.

Each round runs every variant once at every (P, N), in turn, so that whatever else
the machine does falls on all of them alike. Around every launch it reads the load
average and /proc/stat: `foreign` is the CPU the rest of the machine used during the
launch (all cores' busy time minus this launch's own, from the children's rusage),
as a fraction of the cores; rounds with foreign > --max-foreign are left out of the
summary (all are kept when none qualifies, and the table says so).

The table gives, per (P, N, variant), the best and the median over the kept rounds of
each launch's fastest repetition, and the ratio of each variant's best to the first
variant's. --phases prints the per-phase seconds per repetition of the slowest rank
(`time_by_phase.max`) of the kept launch with the best time beside the model's
(`model.time_by_phase`). Variants are NAME=ARGS, ARGS the `linalg-io lu` options,
after any KEY=VALUE environment words (PYTHONPATH=DIR runs another checkout):
    flock /tmp/linalg-io-bench.lock env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
      .venv/bin/python bench/bench_phases.py --np 2 --n 8192 --rounds 3 --phases \\
      "2d=--algo 2d" "auto=--algo conflux --grid auto --nb auto"
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_busy() -> float:
    """Busy jiffies over all cores (all but idle and iowait), from /proc/stat."""
    fields = [float(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]


def children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def split_variant(options: str) -> tuple[dict, list[str]]:
    """(environment, lu options) of a variant's ARGS: leading KEY=VALUE words are
    environment variables (e.g. PYTHONPATH=/path/to/another/checkout)."""
    words = shlex.split(options)
    env = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    return env, words


def launch(p: int, n: int, options: str, reps: int, warmup: int, out: Path) -> dict:
    """One `linalg-io lu` launch; its record, with the load around it."""
    env, args = split_variant(options)
    command = [sys.executable, "-m", "linalg_io", "lu", "--np", str(p), "--n", str(n),
               "--reps", str(reps), "--warmup", str(warmup), "--quiet", "--out", str(out),
               *args]
    load = os.getloadavg()[0]
    busy0 = cpu_busy()
    own0, wall0 = children_cpu(), time.monotonic()
    # `python -m` puts the working directory first on sys.path: run another checkout's
    # code (PYTHONPATH=DIR) from DIR, or this checkout's would be imported
    where = env["PYTHONPATH"].split(os.pathsep)[0] if "PYTHONPATH" in env else None
    subprocess.run(command, check=True, env={**os.environ, **env}, cwd=where)
    busy1 = cpu_busy()
    own, wall = children_cpu() - own0, time.monotonic() - wall0
    ticks = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count() or 1
    foreign = max(0.0, (busy1 - busy0) / ticks - own) / (wall * cores)
    record = json.loads(out.read_text().strip().splitlines()[-1])
    out.unlink()
    return {"load1": load, "foreign": foreign, "record": record}


def summarize(results: list[dict], max_foreign: float) -> list[dict]:
    rows = []
    for key in dict.fromkeys((r["np"], r["n"], r["variant"]) for r in results):
        runs = [r for r in results if (r["np"], r["n"], r["variant"]) == key]
        kept = [r for r in runs if r["foreign"] <= max_foreign] or runs
        best_run = min(kept, key=lambda r: r["record"]["time_s"]["min"])
        times = [r["record"]["time_s"]["min"] for r in kept]
        rows.append({"np": key[0], "n": key[1], "variant": key[2], "kept": len(kept),
                     "rounds": len(runs), "all_kept": kept is runs,
                     "best": min(times), "median": statistics.median(times),
                     "foreign": [round(r["foreign"], 3) for r in runs],
                     "load1": [round(r["load1"], 2) for r in runs],
                     "params": best_run["record"]["params"],
                     "phases": best_run["record"].get("time_by_phase"),
                     "model_phases": best_run["record"]["model"].get("time_by_phase"),
                     "model_time": best_run["record"]["model"].get("time_s")})
    return rows


def print_tables(rows: list[dict], phases: bool) -> None:
    first = {}
    print("| P | N | variant | grid, tile | best s | median s | best / first | kept "
          "| foreign CPU per round | load1 per round |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        base = first.setdefault((row["np"], row["n"]), row["best"])
        params = row["params"]
        grid = "x".join(str(g) for g in params["grid"])
        print(f"| {row['np']} | {row['n']} | {row['variant']} | {grid} {params['nb']} "
              f"| {row['best']:.3f} | {row['median']:.3f} | {row['best'] / base:.3f} "
              f"| {row['kept']}/{row['rounds']}{'' if not row['all_kept'] else ' (all)'} "
              f"| {row['foreign']} | {row['load1']} |")
    if not phases:
        return
    for row in rows:
        # model.time_by_phase is {"max": {phase: s}, "mean": {...}}: the slowest rank's
        model = (row["model_phases"] or {}).get("max", {})
        measured = row["phases"]
        if not measured:
            continue
        print(f"\nP={row['np']} N={row['n']} {row['variant']} "
              f"({'x'.join(str(g) for g in row['params']['grid'])} {row['params']['nb']}): "
              f"best {row['best']:.3f} s, model {row['model_time'] or float('nan'):.3f} s")
        print("| phase | measured max s | measured mean s | model s |")
        print("|---|---|---|---|")
        for name in measured["phases"]:
            predicted = model.get(name)
            print(f"| {name} | {measured['max'][name]:.3f} | {measured['mean'][name]:.3f} "
                  f"| {'-' if predicted is None else f'{predicted:.3f}'} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("variants", nargs="+", help="NAME=ARGS (linalg-io lu options)")
    parser.add_argument("--np", type=int, nargs="+", default=[2])
    parser.add_argument("--n", type=int, nargs="+", default=[8192])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--max-foreign", type=float, default=0.10)
    parser.add_argument("--phases", action="store_true")
    parser.add_argument("--save", help="append every launch's result (JSON lines) here")
    args = parser.parse_args(argv)
    variants = [v.split("=", 1) for v in args.variants]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "record.jsonl"
        for rnd in range(args.rounds):
            for p in args.np:
                for n in args.n:
                    for name, options in variants:
                        result = launch(p, n, options, args.reps, args.warmup, out)
                        result.update(variant=name, np=p, n=n, round=rnd)
                        results.append(result)
                        print(f"round {rnd} P={p} N={n} {name}: "
                              f"{result['record']['time_s']['min']:.3f} s "
                              f"foreign {result['foreign']:.2f} load {result['load1']:.1f}",
                              file=sys.stderr, flush=True)
                        if args.save:
                            with open(args.save, "a") as f:
                                f.write(json.dumps(result) + "\n")
    print_tables(summarize(results, args.max_foreign), args.phases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
