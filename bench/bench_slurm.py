"""Slurm jobs against `--np`, and scancel at random moments, on the local Slurm.

templates  every template in slurm/ rendered, submitted with sbatch and waited for
           (GPU ones with --set backend=cpu: a CPU stand-in), one after the other
           with the same problems run under `--np` (interleaved, --rounds times):
           job state, exit code, records (PASSED), and the median time of each
           record against the same command's under --np (ratio = Slurm / --np,
           best and median over the rounds);
scancel    a sweep job cancelled --cancels times, each at a random moment
           (uniform in [--min-s, --max-s] after the job started running): exit
           code, whether the sweep's summary is in the job output, whether every
           line of the records file is a whole PASSED record, and whether any
           process of the job is left.

Rebuilds stale kernels first (`make kernels`); starts the local Slurm
(tests/slurm/local_slurm.sh) if it is not running and stops it afterwards if it
started it. Prints Markdown tables. Run as root:
    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/bench_slurm.py --what templates
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from slurm_harness import ENV, SCRIPT, output, processes_of, records, render, submit, wait, wait_for

LU = "lu --algo 2d --n 1024 --grid 2x2 --reps 5"
SWEEP_YAML = ("defaults: {np: 4, reps: 3, warmup: 1}\nruns:\n"
              "  - command: lu\n    args: {algo: 2d, n: 1024, grid: 2x2}\n")
TEMPLATES = {
    "single": ["--set", f"args={LU}"],
    "lu_sweep": ["--set", "sizes=1024", "--set", "reps=3"],
    "gpu_tsgemm": ["--set", "backend=cpu", "--set", "m=1048576", "--set", "reps=3"],
    "sptrsv_multigpu": ["--set", "backend=cpu", "--set", "matrix=lap3d:24", "--set", "reps=3"],
    "sweep": [],
    "calibrate": ["--ntasks-per-node", "2", "--set", "reps=2"],
}


def np_twin(command: list[str], nranks: int, out: Path) -> dict:
    """The record of `command` (a record's argv) run with --np instead of srun."""
    argv = [word for word in command[1:]]
    if "--out" in argv:
        del argv[argv.index("--out"):argv.index("--out") + 2]
    if "--np" in argv:
        del argv[argv.index("--np"):argv.index("--np") + 2]
    out.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "linalg_io", *argv, "--np", str(nranks),
                    "--out", str(out), "--quiet"], check=True, capture_output=True, timeout=600)
    return records(out)[-1]


def templates(rounds: int, work: Path) -> None:
    (work / "sweep.yaml").write_text(SWEEP_YAML)
    if "sweep" in TEMPLATES:
        TEMPLATES["sweep"] = ["--set", f"sweep={work / 'sweep.yaml'}"]
    rows = []
    for name, extra in TEMPLATES.items():
        ratios, jobs, times, verdicts = [], [], [], []
        for round_ in range(rounds):
            folder = work / f"{name}-{round_}"
            folder.mkdir()
            script = render(name, *extra)
            started = time.monotonic()
            job = submit(script, folder)
            fields = wait(job, timeout=900)
            jobs.append((job, fields["JobState"], fields["ExitCode"]))
            if fields["JobState"] != "COMPLETED":
                print(f"job {job} ({name}) {fields['JobState']}:\n{output(folder, job)[-3000:]}",
                      file=sys.stderr)
            times.append(time.monotonic() - started)
            found = records(next(folder.glob("results/*.jsonl"), folder / "none"))
            for record in found:
                twin = np_twin(record["command"], record["nranks"], folder / "np.jsonl")
                ratios.append(record["time_s"]["median"] / twin["time_s"]["median"])
            verdicts += [("PASSED" if r["verify"]["passed"] else "FAILED") for r in found]
            if name == "calibrate":
                machine = json.loads((folder / "machine.json").read_text())
                verdicts += [(f"machine.json alpha={machine['alpha_s']:.2e}s "
                             f"beta={machine['beta_s_per_byte']:.2e}s/B "
                             f"inter_node={'inter_node' in json.dumps(machine)}")]
        command = f"linalg-io slurm render {name} " + " ".join(
            f'"{word}"' if " " in word else word for word in extra)
        ratio = (f"{min(ratios):.2f} / {statistics.median(ratios):.2f}" if ratios else "n/a")
        rows.append((name, command, ", ".join(f"{j} {s} {e}" for j, s, e in jobs),
                     " ".join(verdicts), f"{statistics.median(times):.1f}", ratio))
    print("| template | command | jobs (id state exit) | records | job s (median) "
          "| time Slurm / --np (best / median) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def scancels(count: int, low: float, high: float, work: Path, seed: int) -> None:
    chooser = random.Random(seed)
    sweep = work / "points.yaml"
    sweep.write_text("defaults: {np: 4, reps: 2, warmup: 0}\nruns:\n  - command: lu\n"
                     "    args: {algo: 2d, n: [384, 512, 640, 768, 896, 1024], nb: 64}\n")
    print("| # | cancel after s | job state | exit | summary | records whole (PASSED/lines) "
          "| processes left |")
    print("|---|---|---|---|---|---|---|")
    for number in range(1, count + 1):
        folder = work / f"cancel-{number}"
        folder.mkdir()
        out = folder / "sweep.jsonl"
        job = submit(render("sweep", "--set", f"sweep={sweep}", "--set", f"out={out}"), folder)
        wait_for(lambda here=folder: list(here.glob("*.out")), 120, "job start")
        delay = chooser.uniform(low, high)
        time.sleep(delay)
        subprocess.run(["scancel", job], env=ENV, check=True)
        fields = wait(job, timeout=120)
        text = output(folder, job)
        summary = "6 points:" in text
        lines = out.read_text().splitlines() if out.exists() else []
        try:
            whole = [json.loads(line) for line in lines]
            intact = f"{sum(r['verify']['passed'] for r in whole)}/{len(lines)}"
        except json.JSONDecodeError:
            intact = f"NO: {len(lines)} lines, one not JSON"
        time.sleep(2)
        left = len(processes_of(str(out)))
        print(f"| {number} | {delay:.1f} | {fields['JobState']} | {fields['ExitCode']} | "
              f"{'yes' if summary else 'NO'} | {intact} | {left} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("templates", "scancel"), required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", choices=tuple(TEMPLATES), help="these templates")
    parser.add_argument("--cancels", type=int, default=10)
    parser.add_argument("--min-s", type=float, default=1.0)
    parser.add_argument("--max-s", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # the ranks import the checkout's compiled kernels: ones older than their .pyx (a
    # merge) fail the runs that need a new kernel (an lu_sweep job's conflux point)
    subprocess.run(["make", "-s", "kernels"], cwd=SCRIPT.parents[2], check=True)
    running = subprocess.run([str(SCRIPT), "status"], check=False).returncode == 0
    if not running:
        subprocess.run([str(SCRIPT), "start"], check=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-slurm-") as work:
            if args.what == "templates":
                for name in set(TEMPLATES) - set(args.only or TEMPLATES):
                    del TEMPLATES[name]
                templates(args.rounds, Path(work))
            else:
                scancels(args.cancels, args.min_s, args.max_s, Path(work), args.seed)
    finally:
        if not running:
            subprocess.run([str(SCRIPT), "stop"], check=False)


if __name__ == "__main__":
    main()
