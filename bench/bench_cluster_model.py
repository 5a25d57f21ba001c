"""Predicted against measured time on the emulated cluster (bench/emulated_cluster.sh),
at two link rates and two layouts (2 nodes x 1 rank, 2 nodes x 2 ranks), for the 2D LU,
COnfLUX c = 1 and c = 2, TS-GEMM atb and ab, and SpTRSV level-set and sync-free.

    sudo .venv/bin/python bench/bench_cluster_model.py [--rates none,300mbit] [--rounds 3]
         [--base MACHINE] [--machine MACHINE] [--only "2d 1x4,2d 2x2,..."] [--nb NB]
         [--out results/cluster_model.jsonl]
    .venv/bin/python bench/bench_cluster_model.py --report results/cluster_model.jsonl

Per rate: the cluster up, `linalg-io calibrate` on 2 x 2 ranks writes the machine file
every run then predicts with (--profile; after the first rate, or with --base, only its
network is taken, the rest stays the first rate's or the base's; --machine: that file,
calibrated on these nodes before, and no calibration), the configurations run
in interleaved rounds (round 1 runs each once, then round 2, ...), the cluster down. The
table: best and median measured over the rounds, the model's time (on the machine file
the run took, by the model as it is now: --report predicts stored runs again), their
ratio, and the model's terms: compute (the time with free messages), network (what the
inter-node rates add) and on-node messages (the rest); then per configuration the
difference between the two rates, measured (best) against predicted. Each launch keeps
the load average and the foreign CPU around it (`bench_phases.launch`'s measure).
The cluster is LIO_CLUSTER (default lio26) on LIO_CLUSTER_SUBNET (default 10.213.0).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_phases import children_cpu, cpu_busy
from emulated_cluster import SCRIPT
from linalg_io.models import conflux, tsgemm
from linalg_io.models.lu2d import lu2d_costs
from linalg_io.models.profile import InterNode, load_profile
from linalg_io.models.sptrsv import sptrsv_costs

from linalg_io.sptrsv import analysis
from linalg_io.sptrsv.matrices import load_matrix

ENV = {"LIO_CLUSTER": os.environ.get("LIO_CLUSTER", "lio26"),
       "LIO_CLUSTER_SUBNET": os.environ.get("LIO_CLUSTER_SUBNET", "10.213.0")}
LU_N = 4096
ONLY: set[str] = set()     # --only: the configurations to run
LU_NB: list[str] = []      # --nb: the LUs' NB (2D) and v (COnfLUX), else their own choice
CONFIGS = {   # name: (ranks, CLI arguments)
    "2d 1x2": (2, ["lu", "--algo", "2d", "--n", str(LU_N), "--grid", "1x2"]),
    "conflux 2x1x1": (2, ["lu", "--algo", "conflux", "--n", str(LU_N), "--grid", "2x1x1"]),
    "conflux 1x1x2": (2, ["lu", "--algo", "conflux", "--n", str(LU_N), "--grid", "1x1x2"]),
    "atb P=2": (2, ["tsgemm", "--variant", "atb", "--m", "16384", "--n", "1024",
                    "--k", "1024"]),
    "2d 2x2": (4, ["lu", "--algo", "2d", "--n", str(LU_N), "--grid", "2x2"]),
    "conflux 2x2x1": (4, ["lu", "--algo", "conflux", "--n", str(LU_N), "--grid", "2x2x1"]),
    "conflux 1x2x2": (4, ["lu", "--algo", "conflux", "--n", str(LU_N), "--grid", "1x2x2"]),
    "atb P=4": (4, ["tsgemm", "--variant", "atb", "--m", "16384", "--n", "1024",
                    "--k", "1024"]),
    "ab P=4": (4, ["tsgemm", "--variant", "ab", "--m", "16384", "--n", "1024",
                   "--k", "1024"]),
    "levelset P=4": (4, ["sptrsv", "--algo", "levelset", "--matrix", "lap3d:48"]),
    "syncfree P=4": (4, ["sptrsv", "--algo", "syncfree", "--matrix", "lap3d:48"]),
    # a process row, then a process column, across the two nodes
    "2d 1x4": (4, ["lu", "--algo", "2d", "--n", str(LU_N), "--grid", "1x4"]),
    "2d 4x1": (4, ["lu", "--algo", "2d", "--n", str(LU_N), "--grid", "4x1"]),
    "conflux 1x4x1": (4, ["lu", "--algo", "conflux", "--n", str(LU_N), "--grid", "1x4x1"]),
    "conflux 4x1x1": (4, ["lu", "--algo", "conflux", "--n", str(LU_N), "--grid", "4x1x1"]),
    # a fibre across the two nodes, two layers on each
    "conflux 1x1x4": (4, ["lu", "--algo", "conflux", "--n", str(LU_N), "--grid", "1x1x4"]),
}


REPS = {"sptrsv": ["--reps", "30", "--warmup", "3"]}   # else one after one warm-up


def cluster(*args: str, timeout: float = 600) -> str:
    done = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, check=False,
                          timeout=timeout, env={**os.environ, **ENV})
    if done.returncode != 0:
        raise SystemExit(f"emulated_cluster {args[0]}: {done.stderr.strip()[-2000:]}")
    return done.stdout


ACCOUNT = Path("/sys/fs/cgroup/cpuacct") / f"linalg-io-bench-{os.getpid()}"


def own_cpu() -> float:
    """CPU seconds of this bench and everything it started: its cpuacct cgroup (the
    ranks in the nodes' namespaces are not children it waits for), else the children's
    rusage."""
    usage = ACCOUNT / "cpuacct.usage"
    return int(usage.read_text()) / 1e9 if usage.exists() else children_cpu()


def account() -> None:
    """Move this process into a cpuacct cgroup of its own (root, cgroup v1), for
    `own_cpu`; nothing where that is not possible."""
    try:
        ACCOUNT.mkdir(exist_ok=True)
        (ACCOUNT / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        return
    atexit.register(leave)


def leave() -> None:
    """Back to the parent cgroup; the bench's own one removed."""
    try:
        (ACCOUNT.parent / "cgroup.procs").write_text(str(os.getpid()))
        ACCOUNT.rmdir()
    except OSError:
        pass


def linalg_io(ranks: int, args: list[str]) -> dict:
    """One launch on the cluster; the load average before it and the foreign CPU during
    it (the machine's busy time less the launch's own, as a fraction of the cores)."""
    load, busy0, own0, wall0 = os.getloadavg()[0], cpu_busy(), own_cpu(), time.monotonic()
    cluster("run", str(ranks), "--", sys.executable, "-m", "linalg_io", *args)
    own, wall = own_cpu() - own0, time.monotonic() - wall0
    foreign = max(0.0, (cpu_busy() - busy0) / os.sysconf("SC_CLK_TCK") - own) \
        / (wall * (os.cpu_count() or 1))
    return {"load1": load, "foreign": foreign}


def model_time(record: dict, profile) -> float:
    """The record's prediction again, on `profile` (at the run's layout)."""
    p, params = record["nranks"], record["params"]
    profile = profile.at_threads(record.get("threads_per_rank", 1))   # the run's threads
    placement = profile.for_run(p // len(record["hosts"])).placement(p)
    if record["kernel"] == "sptrsv":
        return sptrsv_model(record, profile, placement)
    if record["kernel"] == "tsgemm":
        return tsgemm.model_block(params["variant"], params["m"], params["n"], params["k"], p,
                                  8, params["dist"], profile, placement)["time_s"]
    pr, pc, c = params["grid"]
    if record["algo"] == "2d":
        return lu2d_costs(params["n"], params["nb"], pr, pc, record["model"]["pivoting"]) \
            .record_block(profile, placement)["time_s"]
    return conflux.record_block(params["n"], params["nb"], pr, pc, c, profile, "uniform",
                                placement)["time_s"]


MATRICES: dict = {}


def sptrsv_model(record: dict, profile, placement) -> float:
    """The SpTRSV record's prediction again: the matrix, its levels and row partition as
    the run made them (`linalg_io.sptrsv.case`)."""
    params = record["params"]
    key = (params["matrix"], params["partition"], record["nranks"])
    if key not in MATRICES:
        lower = load_matrix(params["matrix"])
        levels = analysis.levels(lower)
        MATRICES[key] = (lower, levels, analysis.partition_rows(lower, levels, key[2], key[1]))
    lower, levels, owner = MATRICES[key]
    costs = sptrsv_costs(lower.indptr, lower.indices, levels, owner, record["nranks"],
                         params["nrhs"], record["algo"], placement.ranks_per_node)
    return costs.record_block(profile, placement)["time_s"]


def terms(record: dict, profile) -> dict:
    """The model's time split: compute (messages free), network (what the inter-node
    rates add over free inter-node messages) and on-node messages (with the on-node
    one-sided trip, the wake-ups and the level-set executor's calls per batch, where the
    machine file has them)."""
    free_net = replace(profile, inter_node=InterNode(0.0, float("inf"), 1))
    free_all = replace(free_net, alpha_s=0.0, beta_s_per_byte=0.0, onesided_trip_s=None,
                       wake_s=None, send_cpu_s=None, recv_cpu_s=None)
    total = model_time(record, profile)
    without_net = model_time(record, free_net)
    compute = model_time(record, free_all)
    return {"model_s": total, "compute_s": compute, "network_s": total - without_net,
            "on_node_msgs_s": without_net - compute}


def run_rate(rate: str, rounds: int, out: Path, base=None, given=None) -> list[dict]:
    """The rounds at one rate; the machine file: `base` (the first rate's calibration)
    with this rate's network, so that only the network differs between the rates (a
    dgemm rate calibrated again on the shared machine moves with its load); `given`: a
    machine file calibrated on these nodes at this rate before, taken as it is."""
    cluster("up", "2", rate)
    try:
        machine = Path(given) if given else out.with_name(f"machine_{rate}.json")
        if not given:
            linalg_io(4, ["calibrate", "--reps", "3", "--write", str(machine), "--quiet"])
        profile = load_profile(machine)
        if base is not None and not given:
            profile = replace(base, inter_node=profile.inter_node,
                              name=f"{base.name}, network at {rate}")
            machine.write_text(profile.to_json() + "\n")
        records = []
        for round_ in range(rounds):
            measured = trips() if TRIPS else None
            for name, (ranks, args) in CONFIGS.items():
                if ONLY and name not in ONLY:
                    continue
                part = out.with_name(f"{out.stem}_{rate}_{round_}.jsonl")
                part.unlink(missing_ok=True)
                reps = REPS.get(args[0], ["--reps", "1", "--warmup", "1"])
                reps = reps + (LU_NB if args[0] == "lu" else [])
                load = linalg_io(ranks, args + reps + ["--quiet",
                                                "--profile", str(machine), "--out", str(part)])
                (record,) = [json.loads(line) for line in part.read_text().splitlines()]
                part.unlink()
                record["bench"] = {"name": name, "rate": rate, "round": round_,
                                   "machine": str(machine.resolve()), **load}
                if measured and record["kernel"] == "sptrsv":
                    record["bench"]["trips_s"] = measured
                records.append(record)
                with out.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record) + "\n")
        return records
    finally:
        cluster("down")


TRIPS = []   # --trips: measure the batches' trips each round (bench_onesided_latency.py)


def trips() -> dict:
    """One-way trips of an SpTRSV batch in this round, seconds: {"two-sided" | "put-with-
    signal": {"one node": s, "two nodes": s}} (bench_onesided_latency.py on 2 x 2)."""
    out = cluster("run", "4", "--", sys.executable, str(ROOT / "bench" /
                                                         "bench_onesided_latency.py"))
    found: dict = {}
    for line in out.splitlines():
        if line.startswith("ranks ") and line.endswith("us one way"):
            where = "one node" if "(one node" in line else "two nodes"
            kind = "put-with-signal" if "put-with-signal" in line else "two-sided"
            found.setdefault(kind, {})[where] = float(line.split()[-4]) * 1e-6
    return found


def at_trips(record: dict, profile) -> float:
    """The SpTRSV record's model with every message's latency the trip its executor met
    in the run's round (`trips`): the two-sided trip as alpha for the level-set solve,
    the put-with-signal trip as the one-sided trips for the sync-free one, on the node
    and across."""
    kind = "two-sided" if record["algo"] == "levelset" else "put-with-signal"
    trip = record["bench"]["trips_s"][kind]
    if kind == "two-sided":
        loaded = replace(profile, alpha_s=trip["one node"],
                         inter_node=replace(profile.inter_node, latency_s=trip["two nodes"]))
    else:
        loaded = replace(profile, onesided_trip_s=trip["one node"],
                         inter_node=replace(profile.inter_node,
                                            onesided_trip_s=trip["two nodes"]))
    return model_time(record, loaded)


def predict(records: list[dict]) -> None:
    """Each record's model terms (`terms`) on the machine file it ran with; for SpTRSV
    with the round's trips (`--trips`), the model at those trips too (`at_trips`)."""
    profiles = {}
    for record in records:
        machine = record["bench"]["machine"]
        profile = profiles.setdefault(machine, load_profile(machine))
        record["bench"].update(terms(record, profile))
        if "trips_s" in record["bench"]:
            record["bench"]["at_trips_s"] = at_trips(record, profile)


def span(key: str, runs: list[dict], digits: int) -> str:
    values = [r["bench"][key] for r in runs if key in r["bench"]]
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}" if values else "n/a"


def table(records: list[dict], rates: list[str]) -> str:
    lines = [(f"{'configuration':<15} {'rate':<8} {'best s':>7} {'median':>7} {'model':>7} "
              f"{'pred/meas':>9} {'/median':>7} {'compute':>8} {'network':>8} {'on-node':>8} "
              f"{'load1':>11} {'foreign':>11}")]
    best = {}
    for rate in rates:
        for name in CONFIGS:
            runs = [r for r in records if r["bench"]["name"] == name
                    and r["bench"]["rate"] == rate]
            if not runs:
                continue
            times = [r["time_s"]["median"] for r in runs]
            t = runs[0]["bench"]
            best[name, rate] = (min(times), t["model_s"])
            median = statistics.median(times)
            lines.append(f"{name:<15} {rate:<8} {min(times):>7.4f} {median:>7.4f} "
                         f"{t['model_s']:>7.4f} {t['model_s'] / min(times):>9.2f} "
                         f"{t['model_s'] / median:>7.2f} "
                         f"{t['compute_s']:>8.4f} {t['network_s']:>8.4f} "
                         f"{t['on_node_msgs_s']:>8.4f} "
                         f"{span('load1', runs, 1):>11} {span('foreign', runs, 2):>11}")
    lines += trips_table(records, rates)
    if len(rates) == 2:
        lines.append(f"\n{'configuration':<15} {'measured diff':>13} {'predicted':>10} "
                     f"{'ratio':>6}")
        for name in CONFIGS:
            if (name, rates[0]) in best and (name, rates[1]) in best:
                measured = best[name, rates[1]][0] - best[name, rates[0]][0]
                predicted = best[name, rates[1]][1] - best[name, rates[0]][1]
                lines.append(f"{name:<15} {measured:>13.3f} {predicted:>10.3f} "
                             f"{predicted / measured if measured else float('nan'):>6.2f}")
    return "\n".join(lines)


def trips_table(records: list[dict], rates: list[str]) -> list[str]:
    """SpTRSV at the trips its rounds measured (`at_trips`): medians over the rounds of
    the measured time, the model at the round's trips, and the trips (us, one way)."""
    lines = [(f"\n{'configuration':<15} {'rate':<8} {'median':>7} {'at trips':>8} "
             f"{'/median':>7}   trips on node / across (us, median over rounds)")]
    for rate in rates:
        for name in CONFIGS:
            runs = [r for r in records if r["bench"]["name"] == name
                    and r["bench"]["rate"] == rate and "at_trips_s" in r["bench"]]
            if not runs:
                continue
            kind = "two-sided" if runs[0]["algo"] == "levelset" else "put-with-signal"
            median = statistics.median(r["time_s"]["median"] for r in runs)
            model = statistics.median(r["bench"]["at_trips_s"] for r in runs)
            trip = {where: statistics.median(r["bench"]["trips_s"][kind][where] for r in runs)
                    for where in ("one node", "two nodes")}
            lines.append(f"{name:<15} {rate:<8} {median:>7.4f} {model:>8.4f} "
                         f"{model / median:>7.2f}   {kind} {trip['one node'] * 1e6:.1f} / "
                         f"{trip['two nodes'] * 1e6:.1f}")
    return lines if len(lines) > 1 else []


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="none,300mbit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="results/cluster_model.jsonl")
    parser.add_argument("--base", help="machine file whose rates (all but the network) "
                        "every rate takes (default: the first rate's calibration)")
    parser.add_argument("--machine", help="machine file calibrated on these nodes before "
                        "(one rate): no calibration")
    parser.add_argument("--trips", action="store_true", help="each round, measure the "
                        "SpTRSV batches' trips (bench_onesided_latency.py) and predict "
                        "SpTRSV at them too")
    parser.add_argument("--only", help="comma-separated configuration names (default: all)")
    parser.add_argument("--nb", type=int, help="the LUs' NB and v (default: their own)")
    parser.add_argument("--report", nargs="+", metavar="JSONL",
                        help="no runs: the table of these files' runs, predicted again")
    args = parser.parse_args()
    ONLY.update(args.only.split(",") if args.only else ())
    LU_NB.extend(["--nb", str(args.nb)] if args.nb else [])
    TRIPS.extend([True] if args.trips else [])
    if args.report:
        records = [json.loads(line) for path in args.report
                   for line in Path(path).read_text().splitlines() if line.strip()]
        predict(records)
        print(table(records, list(dict.fromkeys(r["bench"]["rate"] for r in records))))
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    account()
    rates = args.rates.split(",")
    print("uptime:", uptime())
    records = []
    base = load_profile(args.base) if args.base else None
    for rate in rates:
        records += run_rate(rate, args.rounds, out, base, args.machine)
        base = base or load_profile(records[-1]["bench"]["machine"])
    predict(records)
    print(table(records, rates))
    print("uptime:", uptime())
    return 0


if __name__ == "__main__":
    sys.exit(main())
