"""`lu --algo conflux --grid auto --nb auto --objective time` on the shaped emulated cluster
against the model's five best configurations, measured in interleaved rounds.

    sudo .venv/bin/python bench/bench_cluster_auto.py [--rate 300mbit] [--n 4096]
         [--nodes 2] [--per-node 1] [--rounds 3] [--machine FILE]

The cluster up at RATE (bench/emulated_cluster.sh); `linalg-io calibrate` on 2 ranks per
node writes the machine file (or --machine: its rates, with this run's layout), set to
--per-node ranks per node; `linalg-io model lu --algo conflux --all` with that file gives
the ranking, the five best are run with their grid and tile, and the auto choice beside
them (--profile FILE: it chooses on the same model), round after round. The table: per
configuration the model's rank and time, measured best and median over the rounds
(each launch's fastest repetition), the measured rank; then the auto run's choice, its
best against the fastest of the five, and whether the measured order is the model's.
Load and foreign CPU per launch as bench/bench_cluster_model.py measures them. The
cluster is LIO_CLUSTER (default lio26) on LIO_CLUSTER_SUBNET (default 10.213.0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cluster_model import account, cluster, linalg_io


def model_ranking(n: int, p: int, machine: Path) -> list[tuple[str, int, float, bool]]:
    """[(grid, v, predicted s, whether `lu --grid auto` runs it)] in `model lu --all`'s
    order (best first for time)."""
    done = subprocess.run([sys.executable, "-m", "linalg_io", "model", "lu", "--algo", "conflux",
                           "--n", str(n), "--p", str(p), "--machine", str(machine), "--all",
                           "--objective", "time"], capture_output=True, text=True, check=True)
    rows, inside = [], False
    for line in done.stdout.splitlines():
        words = line.split()
        if words[:2] == ["grid", "v"]:
            inside = True
            continue
        if inside:
            if not words or words[0] == "*" and len(words) > 1 and words[1] == "=":
                break
            marked = words[0] == "*"
            words = words[1:] if marked else words
            rows.append((words[0], int(words[1]), float(words[-1]), marked))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", default="300mbit")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--per-node", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--machine", help="machine file to take instead of calibrating")
    parser.add_argument("--out", default="results/cluster_auto.jsonl")
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    account()
    p = args.nodes * args.per_node
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True,
                                    check=False).stdout.strip())
    cluster("up", str(args.nodes), args.rate)
    try:
        machine = out.with_name(f"machine_auto_{args.rate}.json")
        if args.machine:
            data = json.loads(Path(args.machine).read_text())
        else:
            linalg_io(2 * args.nodes, ["calibrate", "--reps", "3", "--write", str(machine),
                                       "--quiet"])
            data = json.loads(machine.read_text())
        data.update(ranks_per_node=args.per_node, nodes=args.nodes)
        machine.write_text(json.dumps(data, indent=2) + "\n")
        ranking = model_ranking(args.n, p, machine)
        top = ranking[:args.top]
        print(f"model lu --all on {machine}:", ", ".join(
            f"{g} v={v} {t:.3f}s{' (auto)' if m else ''}" for g, v, t, m in ranking))
        variants = {"auto": ["--grid", "auto", "--nb", "auto", "--objective", "time"]}
        variants.update({f"{g} v={v}": ["--grid", g, "--nb", str(v)] for g, v, _, _ in top})
        runs = {name: [] for name in variants}
        for round_ in range(args.rounds):
            for name, options in variants.items():
                part = out.with_name(f"{out.stem}_part.jsonl")
                part.unlink(missing_ok=True)
                load = linalg_io(p, ["lu", "--algo", "conflux", "--n", str(args.n), *options,
                                     "--reps", "1", "--warmup", "1", "--quiet", "--profile",
                                     str(machine), "--out", str(part)])
                (record,) = [json.loads(line) for line in part.read_text().splitlines()]
                part.unlink()
                record["bench"] = {"name": name, "rate": args.rate, "round": round_, **load}
                runs[name].append(record)
                with out.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record) + "\n")
    finally:
        cluster("down")
    print(table(top, runs))
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True,
                                    check=False).stdout.strip())
    return 0


def table(top: list, runs: dict) -> str:
    best = {name: min(r["time_s"]["min"] for r in records) for name, records in runs.items()}
    names = [f"{g} v={v}" for g, v, _, _ in top]
    measured_order = sorted(names, key=best.get)
    lines = [(f"{'configuration':<16} {'model rank':>10} {'model s':>8} {'best s':>8} "
              f"{'median s':>8} {'meas rank':>9} {'load1':>9} {'foreign':>11}")]
    for rank, (g, v, predicted, marked) in enumerate(top, start=1):
        name = f"{g} v={v}"
        lines.append(_row(name + (" *" if marked else ""), str(rank), f"{predicted:.3f}",
                          runs[name], str(measured_order.index(name) + 1)))
    auto = runs["auto"][0]
    chosen = "x".join(map(str, auto["params"]["grid"])) + f" v={auto['params']['nb']}"
    lines.append(_row("auto", "", "", runs["auto"], ""))
    fastest = measured_order[0]
    lines.append(f"\nauto chose {chosen}; its best {best['auto']:.3f} s against the fastest of "
                 f"the five, {fastest}, {best[fastest]:.3f} s: "
                 f"{best['auto'] / best[fastest]:.3f} (target <= 1.10)")
    lines.append(f"measured order {', '.join(measured_order)}; the model's "
                 f"{', '.join(names)}: {'the same' if measured_order == names else 'differs'}")
    return "\n".join(lines)


def _row(name: str, rank: str, predicted: str, records: list, measured_rank: str) -> str:
    times = [r["time_s"]["min"] for r in records]
    loads = [r["bench"]["load1"] for r in records]
    foreign = [r["bench"]["foreign"] for r in records]
    return (f"{name:<16} {rank:>10} {predicted:>8} {min(times):>8.3f} "
            f"{statistics.median(times):>8.3f} {measured_rank:>9} "
            f"{min(loads):>4.1f}-{max(loads):<4.1f} {min(foreign):>5.2f}-{max(foreign):<5.2f}")


if __name__ == "__main__":
    sys.exit(main())
