"""Helpers for jobs on the local Slurm (tests/slurm/local_slurm.sh): render a template,
submit it, wait for it, read its output and records. Used by tests/test_slurm_live.py,
tests/test_slurm_two_nodes.py and bench/bench_slurm.py. `via`: the command a Slurm
client runs under (the two-node Slurm's `two_node_slurm.sh run`, VIA_TWO_NODES); by
default the one-node Slurm's clients, run here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from linalg_io.cli import build_parser
from linalg_io.slurm import render_template

SCRIPT = Path(__file__).resolve().parent / "slurm" / "local_slurm.sh"
TWO_NODES = SCRIPT.with_name("two_node_slurm.sh")
VIA_TWO_NODES = ("bash", str(TWO_NODES), "run")
SLURM_DIR = "/tmp/linalg-io-slurm"
ENV = {**os.environ, "SLURM_CONF": f"{SLURM_DIR}/slurm.conf"}
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE")


def render(template: str, *argv: str) -> str:
    return render_template(build_parser().parse_args(
        ["slurm", "render", template, "--set", f"python={sys.executable}", *argv]))


def submit(script: str, cwd: Path, *sbatch: str, via: tuple[str, ...] = ()) -> str:
    path = cwd / f"job{len(list(cwd.glob('job*.sbatch')))}.sbatch"
    path.write_text(script)
    done = subprocess.run([*via, "sbatch", "--parsable", *sbatch, str(path)], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip().split(";")[0]


def job_fields(job: str, via: tuple[str, ...] = ()) -> dict[str, str]:
    text = subprocess.run([*via, "scontrol", "show", "job", "-o", job], env=ENV,
                          capture_output=True, text=True, timeout=60, check=True).stdout
    return dict(word.split("=", 1) for word in text.split() if "=" in word)


def wait(job: str, timeout: float = 240, via: tuple[str, ...] = ()) -> dict[str, str]:
    """The job's scontrol fields once it has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fields = job_fields(job, via)
        if fields["JobState"] in ENDED:
            return fields
        time.sleep(0.5)
    subprocess.run([*via, "scancel", job], env=ENV, check=False)
    raise AssertionError(f"job {job} still {fields['JobState']} after {timeout} s")


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.2)


def output(cwd: Path, job: str) -> str:
    return next(cwd.glob(f"*-{job}.out")).read_text()


def records(path: Path) -> list[dict]:
    """Every line of a records file, each a whole JSON record."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def processes_of(marker: str) -> list[str]:
    """Command lines of live processes that mention `marker` (a job's own path)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = status.read_bytes().split(b"\0")
        except OSError:
            continue
        line = b" ".join(words).decode(errors="replace")
        if marker in line:
            found.append(line)
    return found
