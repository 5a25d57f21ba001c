"""Cost of the progress watchdog: the same runs with it (the default deadline) and
without it (`--stall-timeout off`), alternately, side by side.

Run: .venv/bin/python bench/bench_watchdog.py [--pairs 3] [--np 2]
Each pair runs one case with the watchdog on, then off (the order alternates from
pair to pair), under `--np`. Per case it prints the median of the records' median
times on and off and their ratio, and whether the logical and wire bytes and messages
(per rank, sent and received) are identical: they must be, the watchdog sends nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from linalg_io.records import read_records

CASES = {
    "lu 2d": ["lu", "--algo", "2d", "--n", "2048", "--grid", "1x2", "--dist", "diagdom"],
    "lu conflux": ["lu", "--algo", "conflux", "--n", "2048", "--nb", "128", "--grid", "1x2x1",
                   "--dist", "diagdom"],
    "tsgemm atb": ["tsgemm", "--variant", "atb", "--m", "1048576", "--n", "16", "--k", "16"],
    "sptrsv": ["sptrsv", "--matrix", "lap2d:256", "--algo", "levelset"],
}
COUNTS = ("per_rank_bytes_sent", "per_rank_bytes_recv")


def run(args: list[str], np: int, watchdog: bool, out: Path) -> dict:
    extra = [] if watchdog else ["--stall-timeout", "off"]
    subprocess.run([sys.executable, "-m", "linalg_io", *args, "--np", str(np), "--reps", "5",
                    "--warmup", "1", "--quiet", "--out", str(out), *extra],
                   check=True, timeout=600)
    return read_records([out])[-1]


def counts(record: dict) -> str:
    """Every rank's logical and wire bytes sent and received, and the messages."""
    traffic = record["traffic"]
    wire = traffic["wire"] or {}
    return json.dumps([[traffic[key] for key in COUNTS], traffic["msgs_sent"],
                       [wire.get(key) for key in COUNTS], wire.get("msgs_sent")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--np", type=int, default=2)
    options = parser.parse_args()
    print(f"{'case':<12} {'on s':>9} {'off s':>9} {'on/off':>7}  bytes and messages")
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in CASES.items():
            times = {True: [], False: []}
            seen = {True: set(), False: set()}
            for pair in range(options.pairs):
                for watchdog in ((True, False) if pair % 2 == 0 else (False, True)):
                    record = run(args, options.np, watchdog, Path(tmp) / f"{name}.jsonl")
                    times[watchdog].append(record["time_s"]["median"])
                    seen[watchdog].add(counts(record))
            on, off = statistics.median(times[True]), statistics.median(times[False])
            same = "identical" if seen[True] == seen[False] and len(seen[True]) == 1 \
                else f"DIFFER: {seen}"
            print(f"{name:<12} {on:>9.4f} {off:>9.4f} {on / off:>7.3f}  {same}", flush=True)


if __name__ == "__main__":
    main()
