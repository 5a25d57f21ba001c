"""SIGTERM (or ^C) a sweep at random moments: does it exit 143 (130) with its summary,
after its point's ranks are gone, leaving only whole records of finished points?

Each trial runs a 4-point sweep (LU, TS-GEMM, SpTRSV on 2 ranks) in a fresh directory
and signals it after a uniform random delay in [--min-delay, --max-delay] seconds
(a trial whose sweep ends first says so). Per trial: the exit code, whether the
summary was printed, the processes naming the trial's directory still alive when the
sweep had exited, the records in the file (all whole) against the points that the
sweep reported PASSED, and a cut point's record (none expected).
Usage: .venv/bin/python bench/check_sweep_signals.py [--trials 20] [--signal TERM]
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from linalg_io.records import read_records

SWEEP = """\
out: {out}
defaults: {{np: 2, reps: 3, warmup: 1}}
runs:
  - {{command: lu, args: {{n: 512}}}}
  - {{command: tsgemm, args: {{variant: atb, m: 262144, n: 8, k: 8}}}}
  - {{command: sptrsv, args: {{matrix: "lap2d:64", algo: syncfree}}}}
  - {{command: lu, args: {{algo: conflux, n: 512}}}}
"""


def alive_naming(text: str) -> list[int]:
    """Live (not zombie) processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(
                    errors="replace") and (entry / "stat").read_text().split()[2] != "Z"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def trial(delay: float, signum: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="sweep-signal-") as tmp:
        out = Path(tmp) / "r.jsonl"
        sweep = Path(tmp) / "s.yaml"
        sweep.write_text(SWEEP.format(out=out))
        process = subprocess.Popen([sys.executable, "-m", "linalg_io", "sweep", str(sweep)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            process.wait(timeout=delay)
            signalled = False
        except subprocess.TimeoutExpired:
            process.send_signal(signum)
            signalled = True
        output, _ = process.communicate(timeout=120)
        left = [pid for pid in alive_naming(tmp) if pid != process.pid]
        lines = out.read_text().splitlines() if out.exists() else []
        records = read_records([out]) if out.exists() else []
        passed = output.count(" ... PASSED")
        cut = [line for line in output.splitlines() if "interrupted" in line]
        return {"delay": delay, "signalled": signalled, "code": process.returncode,
                "summary": " points: " in output, "left": len(left),
                "whole": len(records) == len(lines), "records": len(records), "passed": passed,
                "cut": cut[0].split("] ", 1)[-1] if cut else "-",
                "leftover_files": len(list(Path(tmp).glob(".r.jsonl.*")))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--signal", choices=("TERM", "INT"), default="TERM")
    parser.add_argument("--min-delay", type=float, default=0.0)
    parser.add_argument("--max-delay", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    signum = getattr(signal, f"SIG{args.signal}")
    print(f"{'#':>2} {'delay s':>7} {'exit':>4} {'summary':>7} {'ranks left':>10} "
          f"{'records':>7} {'PASSED':>6} {'whole':>5} {'temp':>4}  cut point")
    for number in range(1, args.trials + 1):
        start = time.monotonic()
        row = trial(rng.uniform(args.min_delay, args.max_delay), signum)
        row["code"] = row["code"] if row["signalled"] else f"{row['code']}*"
        print(f"{number:>2} {row['delay']:>7.2f} {row['code']!s:>4} {row['summary']!s:>7} "
              f"{row['left']:>10} {row['records']:>7} {row['passed']:>6} {row['whole']!s:>5} "
              f"{row['leftover_files']:>4}  {row['cut']}  ({time.monotonic() - start:.1f} s)",
              flush=True)
    print("* the sweep ended before the signal")


if __name__ == "__main__":
    main()
