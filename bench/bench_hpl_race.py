"""The LU race where bytes cost: the 2D LU, the 2.5D LU (--grid auto --nb auto),
ScaLAPACK and HPL on the same cores, in interleaved rounds, one node and the emulated
cluster (bench/emulated_cluster.sh).

    sudo .venv/bin/python bench/bench_hpl_race.py [--layouts node2,node4,2x1@1gbit,
         2x1@300mbit,2x2@300mbit] [--n 8192,16384] [--rounds 3]
         [--algos 2d,conflux,scalapack,hpl] [--out results/hpl_race]
    .venv/bin/python bench/bench_hpl_race.py --report results/hpl_race

A layout is nodeP (P local ranks, `linalg-io lu --np P`) or KxR@RATE (K emulated nodes
of R ranks, each node's link shaped to RATE; no machine file, as a user runs it: the
auto choices take the shipped profile, and across nodes the 2.5D LU's links measured
at its start, its record's `network_probe`). Per layout (the cluster up once), round
after round, every algorithm and N is launched once with --reps 1 --warmup 0; each
launch appends its record to OUT/LAYOUT.jsonl. The report: per layout, N and algorithm, the best and
median time over the rounds, HPL's own time for HPL, and the wire bytes per rank
(busiest rank, sent / received; the same every round) and the 1-minute load before and
after the launches (OUT/LAYOUT.load); the 2.5D runs' network probes; then the times per phase
(max over ranks, median round) of every run, which say where the time goes. The
cluster is LIO_CLUSTER (default lio26) on LIO_CLUSTER_SUBNET (default 10.213.0).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

ALGOS = {"2d": [], "conflux": ["--grid", "auto", "--nb", "auto"], "scalapack": [], "hpl": []}


def parse_layout(text: str) -> tuple[int, int, str | None]:
    """'node4' -> (1, 4, None); '2x1@300mbit' -> (2, 1, '300mbit')."""
    if text.startswith("node"):
        return 1, int(text[4:]), None
    shape, rate = text.split("@")
    nodes, per_node = (int(v) for v in shape.split("x"))
    return nodes, per_node, rate


def launch(layout: str, algo: str, n: int, out: Path) -> None:
    nodes, per_node, _ = parse_layout(layout)
    args = ["lu", "--algo", algo, "--n", str(n), *ALGOS[algo], "--reps", "1", "--warmup", "0",
            "--quiet", "--out", str(out)]
    if nodes == 1:
        command = [sys.executable, "-m", "linalg_io", *args, "--np", str(per_node)]
        subprocess.run(command, check=False, timeout=3600)
    else:
        from bench_cluster_model import cluster

        cluster("run", str(nodes * per_node), "--", sys.executable, "-m", "linalg_io", *args,
                timeout=3600)


def run(layouts: list[str], sizes: list[int], algos: list[str], rounds: int,
        out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for layout in layouts:
        nodes, _, rate = parse_layout(layout)
        if nodes > 1:
            from bench_cluster_model import cluster

            cluster("up", str(nodes), rate)
        try:
            for round_ in range(rounds):
                for n in sizes:
                    for algo in algos:
                        before = os.getloadavg()[0]
                        launch(layout, algo, n, out_dir / f"{layout}.jsonl")
                        load = {"n": n, "algo": algo, "load1": [before, os.getloadavg()[0]]}
                        with open(out_dir / f"{layout}.load", "a", encoding="utf-8") as handle:
                            handle.write(json.dumps(load) + "\n")
                        print(f"{layout} round {round_ + 1} N={n} {algo} done, load1 "
                              f"{load['load1'][0]:.1f}-{load['load1'][1]:.1f}", flush=True)
        finally:
            if nodes > 1:
                cluster("down")


def _phases(record: dict) -> str:
    phases = record.get("time_by_phase")
    if not phases or not any(phases["max"].values()):
        return "(no phase timers)"
    return ", ".join(f"{name} {phases['max'][name]:.2f}" for name in phases["phases"])


def report(out_dir: Path) -> str:
    from linalg_io.records import read_records

    lines = [("| layout | N | algo | grid, NB/v | runs | best s | median s | HPL's own best s | "
              "wire sent / recv MB (busiest) | ratio to HPL (best) | load1 |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    probe_lines = ["| layout | N | network_probe: latency, bandwidth, seconds (each run) |",
                   "|---|---|---|"]
    phase_lines = ["| layout | N | algo | time per phase, max over ranks, s (median run) |",
                   "|---|---|---|---|"]
    for path in sorted(out_dir.glob("*.jsonl")):
        layout = path.stem
        records = read_records([path])
        loads: dict[tuple[int, str], list[float]] = {}
        if path.with_suffix(".load").exists():
            for line in path.with_suffix(".load").read_text().splitlines():
                entry = json.loads(line)
                loads.setdefault((entry["n"], entry["algo"]), []).extend(entry["load1"])
        groups: dict[tuple[int, str], list[dict]] = {}
        for record in records:
            groups.setdefault((record["params"]["n"], record["algo"]), []).append(record)
        for n in sorted({key[0] for key in groups}):
            hpl = groups.get((n, "hpl"))
            hpl_best = min(r["time_s"]["min"] for r in hpl) if hpl else None
            for algo in ALGOS:
                runs = groups.get((n, algo))
                if not runs:
                    continue
                times = [r["time_s"]["min"] for r in runs]
                wire = runs[-1]["traffic"]["wire"]
                own = (f"{min(r['library']['best_s'] for r in runs):.2f}"
                       if algo == "hpl" else "")
                grid = "x".join(str(d) for d in runs[-1]["params"]["grid"])
                ratio = f"{min(times) / hpl_best:.2f}" if hpl_best else ""
                load = loads.get((n, algo))
                load_text = f"{min(load):.1f}-{max(load):.1f}" if load else ""
                lines.append(
                    f"| {layout} | {n} | {algo} | {grid}, {runs[-1]['params']['nb']} | "
                    f"{len(runs)} | {min(times):.2f} | {statistics.median(times):.2f} | "
                    f"{own} | {wire['bytes_sent']['max'] / 1e6:.1f} / "
                    f"{wire['bytes_recv']['max'] / 1e6:.1f} | {ratio} | {load_text} |")
                probes = [r["network_probe"] for r in runs if r.get("network_probe")]
                if probes:
                    probe_lines.append(f"| {layout} | {n} | " + "; ".join(
                        f"{p['latency_s'] * 1e6:.0f} us, {p['bandwidth_bytes_per_s'] / 1e6:.1f} "
                        f"MB/s, {p['seconds']:.2f} s" for p in probes) + " |")
                middle = sorted(runs, key=lambda r: r["time_s"]["min"])[len(runs) // 2]
                phase_lines.append(f"| {layout} | {n} | {algo} | {_phases(middle)} |")
    return "\n\n".join("\n".join(table) for table in (lines, probe_lines, phase_lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", default="node2,node4,2x1@1gbit,2x1@300mbit,2x2@300mbit")
    parser.add_argument("--n", default="8192,16384")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--algos", default=",".join(ALGOS),
                        help="which of the LUs race (a target needs only its own two)")
    parser.add_argument("--out", default="results/hpl_race")
    parser.add_argument("--report", metavar="DIR", help="print the tables of a finished race")
    args = parser.parse_args()
    if args.report:
        print(report(Path(args.report)))
        return 0
    algos = args.algos.split(",")
    unknown = sorted(set(algos) - set(ALGOS))
    if unknown:
        parser.error(f"--algos: unknown {', '.join(unknown)} (known: {', '.join(ALGOS)})")
    run(args.layouts.split(","), [int(v) for v in args.n.split(",")], algos, args.rounds,
        Path(args.out))
    print(report(Path(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
