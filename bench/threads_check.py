"""Ranks x threads on this machine: the time model against measured time, both splits.

    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/threads_check.py \\
        [--n 8192] [--rounds 2] [--out results/threads_check.jsonl]

Each round first runs `linalg-io calibrate --np 2 --threads 2 --write OUT.roundK.json`
(one thread's rates and a 2-thread rank's, `at_threads`; a round's own, as other jobs
on a shared machine change the rates between rounds), then the 2D LU and the 2.5D LU
(COnfLUX, the grid and tile a run picks) at N as 2 ranks x 1 thread and as 1 rank x 2
threads (`--profile OUT.roundK.json --out OUT`), one after the other so the two splits
see the same machine, with the load average before each. Prints, per algorithm and
split, the measured time (median over the rounds of each run's median) and the run
record's own prediction (model.time_s: its threads' rates, `MachineProfile.at_threads`),
their ratio, and the faster split by each (`faster_split`: none measured where the
rounds disagree).

--kernels instead measures, here and in this process, a rank's local kernels at 1 and 2
threads as `calibrate` does (`linalg_io.tools.kernel_rates`): the update's dgemm at
k = 64, 128, 256 relative to its own square dgemm, beside the default curve (a machine
file without `gemm_k_half`), the curve's h fitted to them, and the panel's getrf
relative to it, beside the default PANEL_RATE.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

CLI = [sys.executable, "-m", "linalg_io"]
SPLITS = ((2, 1), (1, 2))          # (ranks, threads per rank)
ALGOS = ("2d", "conflux")


def run(args: argparse.Namespace) -> None:
    for k in range(args.rounds):
        profile = f"{args.out}.round{k}.json"
        subprocess.run(CLI + ["calibrate", "--np", "2", "--threads", "2", "--write", profile],
                       check=True)
        for algo in ALGOS:
            for ranks, threads in SPLITS:
                print(f"load average {Path('/proc/loadavg').read_text().split()[0]}",
                      flush=True)
                subprocess.run(CLI + ["lu", "--np", str(ranks), "--threads", str(threads),
                                      "--algo", algo, "--n", str(args.n), "--reps",
                                      str(args.reps), "--warmup", "1", "--profile",
                                      profile, "--out", args.out], check=True)


def best_seconds(action, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def kernels() -> str:
    """The --kernels table (module doc)."""
    from linalg_io.models.rates import DEFAULT_RATES
    from threadpoolctl import threadpool_limits

    from linalg_io.tools.kernel_rates import (
        PANEL_COLUMNS,
        PANEL_ROWS,
        UPDATE_KS,
        fit_k_half,
        panel_share,
        update_shares,
    )

    square = np.random.default_rng(0).random((1024, 1024))
    lines = [(f"{'threads':>7} {'dgemm GF/s':>10}  k: measured/square (default curve)"
              f"{'':<14} h fitted  getrf {PANEL_ROWS}x{PANEL_COLUMNS} / dgemm "
              f"(default {DEFAULT_RATES.panel})")]
    for threads in (1, 2):
        with threadpool_limits(limits=threads):
            gamma = 2 * 1024**3 / best_seconds(lambda: square @ square)
            shares = update_shares(gamma, best_seconds)
            panel = panel_share(gamma, best_seconds)
        cells = [f"{k}: {share:.2f} ({float(DEFAULT_RATES.gemm(k)):.2f})"
                 for k, share in zip(UPDATE_KS, shares)]
        lines.append(f"{threads:>7} {gamma / 1e9:>10.1f}  {'  '.join(cells)}  "
                     f"{fit_k_half(UPDATE_KS, shares):>8.1f}  {panel:.2f}")
    return "\n".join(lines)


def table(out: str, n: int) -> str:
    by = defaultdict(list)
    for line in Path(out).read_text().splitlines():
        record = json.loads(line)
        if record["kernel"] == "lu" and record["params"]["n"] == n:
            key = (record["algo"], record["nranks"], record["threads_per_rank"])
            by[key].append(record)
    lines = [f"N={n}: measured (median of the runs' medians) against the record's model",
             (f"{'algo':<8} {'split':<18} {'grid':<8} {'v/NB':>5} {'runs':>4} "
              f"{'measured s':>10} {'model s':>8} {'model/meas':>10}")]
    for algo in ALGOS:
        times = {}
        for ranks, threads in SPLITS:
            records = by.get((algo, ranks, threads), [])
            if not records:
                continue
            last = records[-1]
            measured = float(np.median([r["time_s"]["median"] for r in records]))
            model = float(np.median([r["model"]["time_s"] for r in records]))
            times[(ranks, threads)] = (measured, model)
            grid = "x".join(map(str, last["params"]["grid"]))
            lines.append(f"{algo:<8} {f'{ranks} rank(s) x {threads}':<18} {grid:<8} "
                         f"{last['params']['nb']:>5} {len(records):>4} {measured:>10.3f} "
                         f"{model:>8.3f} {model / measured:>10.2f}")
        if len(times) == 2:
            lines.append(f"{'':<8} {faster_split(by, algo, times)}")
    return "\n".join(lines)


def faster_split(by: dict, algo: str, times: dict) -> str:
    """The faster split by the measurement and by the model, from the gap t(2 ranks x
    1) / t(1 rank x 2) - 1 of each round (the runs in order) and of the model: measured,
    the split every round puts ahead, or none where the rounds disagree (a tie within
    the machine's round-to-round noise); the model agrees where it names the same
    split, or, on a tie, where its gap lies within the rounds' gaps."""
    (two, one), keys = SPLITS, [(algo, ranks, threads) for ranks, threads in SPLITS]
    rounds = [a["time_s"]["median"] / b["time_s"]["median"] - 1
              for a, b in zip(by[keys[0]], by[keys[1]])]
    model = times[two][1] / times[one][1] - 1
    low, high = min(rounds), max(rounds)
    named = {two: "2x1", one: "1x2"}
    modeled = named[two if model < 0 else one]
    gaps = f"gap t(2x1)/t(1x2) - 1: rounds {low:+.1%} .. {high:+.1%}, model {model:+.1%}"
    if low < 0 < high:
        agree = low <= model <= high
        return (f"faster split: measured none (a tie: the rounds disagree), model {modeled}"
                f"; {gaps}" + ("" if agree else "  (DISAGREE: the model's gap is outside "
                                                 "the rounds')"))
    measured = named[two if high < 0 else one]
    return (f"faster split: measured {measured} (every round), model {modeled}; {gaps}"
            + ("" if measured == modeled else "  (DISAGREE)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/threads_check.jsonl")
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--table-only", action="store_true", help="print the table of OUT")
    parser.add_argument("--kernels", action="store_true", help="the kernel rates (module doc)")
    args = parser.parse_args()
    if args.kernels:
        print(kernels())
        return
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        run(args)
    print(table(args.out, args.n))


if __name__ == "__main__":
    main()
