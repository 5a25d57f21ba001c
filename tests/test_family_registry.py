"""A kernel family declared in this file alone (`TOY`) runs through the command line, the
runner, a sweep, its records and the report: the registry (`linalg_io.families`) is the
only place a family is declared, and what a run left to 'auto' is in its record.

The child processes (the sweep's points and their ranks) find `TOY` through the
registry's environment variable, ``LINALG_IO_FAMILIES=test_family_registry:TOY``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linalg_io.argtypes import int_or_auto
from linalg_io.families import PLUGINS_VARIABLE, Family, register, unregister
from linalg_io.options import Option

AUTO_SIZE = 64   # what the toy chooses for --size auto


class ToyCase:
    """Sum of the vector 0, 1, ..., size-1 split in equal parts over the ranks: one
    Allreduce of each rank's partial sum (8 bytes sent and received per rank)."""

    kernel = "toy"

    def __init__(self, comm, config):
        self.comm = comm
        size = config.options["size"]
        self.size = AUTO_SIZE if size == "auto" else int(size)
        self.algo = config.options["algo"]
        self.params = {"size": self.size, "dtype": "float64"}
        part = self.size // comm.size
        self.local = np.arange(comm.rank * part, (comm.rank + 1) * part, dtype=float)
        self.total = np.zeros(1)

    def setup_rep(self) -> None:
        self.total[:] = 0.0

    def run(self) -> None:
        with self.comm.phase("sum"):
            self.comm.Allreduce(np.array([self.local.sum()]), self.total)

    def verify(self) -> dict:
        n = self.local.size * self.comm.size
        error = abs(self.total[0] - n * (n - 1) / 2)
        return {"metric": "abs_error", "value": float(error), "threshold": 0.5,
                "passed": bool(error < 0.5)}

    def flops(self) -> float:
        return float(self.size)

    def model(self) -> None:
        return None

    def lower_bound(self) -> None:
        return None

    def describe(self) -> str:
        return f"size={self.size}"


def make_toy_case(comm, config) -> ToyCase:
    return ToyCase(comm, config)


TOY = Family(
    "toy", "sum of a vector over the ranks (the registry's test family)",
    (Option("algo", "how the partial sums meet", choices=("allreduce",), default="allreduce"),
     Option("size", "vector length; auto: 64", int_or_auto, "auto")),
    "test_family_registry:make_toy_case", timed="the sum only", sizes=("size",))


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister("toy")


def test_the_toy_family_is_a_command_a_sweep_point_and_a_summary(toy, tmp_path):
    from linalg_io.commands import build_parser
    from linalg_io.python_api import command_line
    from linalg_io.report.line import time_text
    from linalg_io.sweep import load_sweep

    parsed = build_parser().parse_args(["toy", "--size", "8", "--reps", "2"])
    assert (parsed.command, parsed.size, parsed.algo, parsed.reps) == ("toy", 8, "allreduce", 2)
    sweep = tmp_path / "toy.yaml"
    sweep.write_text("runs: [{command: toy, np: 2, args: {size: [auto, 16]}}]\n")
    _, points = load_sweep(sweep)
    assert [p.argv for p in points] == [("toy", "--size", "auto", "--np", "2"),
                                        ("toy", "--size", "16", "--np", "2")]
    assert command_line("toy", 2, {"size": 8}) == ["toy", "--size", "8", "--np", "2"]
    record = {"kernel": "toy", "time_s": {"median": 0.5}, "times_s": [0.5], "model": None}
    assert time_text(record).endswith("median of 1 reps of the slowest rank, the sum only)")
    unregister("toy")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["toy"])


@pytest.mark.mpi
def test_the_toy_family_runs_through_sweep_records_and_report(tmp_path):
    """`linalg-io sweep` with --report over two toy points on 2 ranks, then --resume."""
    sweep = tmp_path / "toy.yaml"
    sweep.write_text(textwrap.dedent("""\
        defaults: {np: 2, reps: 2, warmup: 0}
        runs: [{command: toy, args: {size: [auto, 16]}}]
        """))
    out, report = tmp_path / "toy.jsonl", tmp_path / "report"
    env = {**os.environ, PLUGINS_VARIABLE: "test_family_registry:TOY",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                       os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "linalg_io", "sweep", str(sweep), "--out", str(out)]
    done = subprocess.run(command + ["--report", str(report)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["kernel"], r["algo"], r["params"]["size"], r["nranks"]) for r in records] == [
        ("toy", "allreduce", 64, 2), ("toy", "allreduce", 16, 2)]
    assert [r["auto"] for r in records] == [{"size": 64}, {}]
    assert records[0]["options"] == {"algo": "allreduce", "size": "auto", "backend": "cpu",
                                     "reps": 2, "warmup": 0, "seed": 0, "threads": 1,
                                     "profile": None}
    assert all(r["verify"]["passed"] and r["verify"]["value"] == 0.0 for r in records)
    for r in records:   # one Allreduce of one float64 per rep: 8 bytes each way per rank
        assert (r["traffic"]["bytes_sent"]["max"], r["traffic"]["bytes_recv"]["min"]) == (8, 8)
        assert r["traffic"]["by_phase"] == {"sum": 8.0}
    table = pd.read_csv(report / "toy.csv")
    assert sorted(table["config"]) == ["allreduce size=16 P=2", "allreduce size=64(auto) P=2"]
    again = subprocess.run(command + ["--resume"], env=env, capture_output=True, text=True,
                           timeout=300, check=False)
    assert again.returncode == 0 and again.stdout.count("skipped (recorded in") == 2, again.stdout
    assert len(out.read_text().splitlines()) == 2
