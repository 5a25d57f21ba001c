"""ReFrame checks of linalg-io: each runs one `linalg-io` command under the partition's
own launcher (srun, mpiexec), reads the record it writes (`--out record.jsonl`, one JSON
line; docs/records.md), and declares

- sanity: the run's verification PASSED, the record counts the job's ranks, and its
  wire bytes sent and received equal the model's, to the byte, for every rank (the
  model with the run's own pivots where the record has it: `model.given_pivots`);
- performance: `time` (the median over the timed repetitions of the slowest rank's
  time), `gflops`, `recv_MB` (logical bytes received by the busiest rank),
  `wire_sent_MB` and `wire_recv_MB` (what MPI moved, busiest rank), `time_over_model`
  (time / model.time_s) and `recv_over_lower_bound` (recv / lower_bound.bytes_per_rank).

References come from the record's own model block, which the run computes for the
partition's machine file (`--machine`, extras `linalg_io_machine`; none: the package's
default profile): `time` <= model.time_s x reference_scale x (1 + time_tolerance), and
`time_over_model` <= reference_scale x (1 + time_tolerance); the MB figures against
the model's to a millionth. A slower run fails its check with the measured ratio in
ReFrame's message (`time_over_model=43.2 x, expected 1.0 ...`).

Every size, grid, algorithm and the nodes, ranks per node and threads per rank are
ReFrame parameters: `reframe -P ranks_per_node=2,4,8 -P n=2048,4096 ...` is a scaling
study from this one file.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import ClassVar

import reframe as rfm
from reframe.core.builtins import (
    parameter,
    performance_function,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.exceptions import SanityError

RECORD = "record.jsonl"
# the tolerance where neither -S time_tolerance nor the partition's extras give one
DEFAULT_TOLERANCE = 0.5
MB = 1e6


def default_command() -> str:
    """linalg-io beside the Python that runs ReFrame (a venv), else from PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "linalg-io")
    return beside if os.path.exists(beside) else "linalg-io"


def read_record(stagedir: str) -> dict:
    """The one record the run wrote, or a SanityError saying what is missing."""
    path = os.path.join(stagedir, RECORD)
    if not os.path.exists(path):
        raise SanityError(f"the run wrote no record ({RECORD}): see its stderr")
    with open(path, encoding="utf-8") as file:
        lines = [line for line in file.read().splitlines() if line]
    if len(lines) != 1:
        raise SanityError(f"{RECORD} has {len(lines)} records, not 1")
    return json.loads(lines[0])


def model_traffic(record: dict) -> dict:
    """The model's traffic for this run: with the run's own pivots where the record has
    them (the LU), else the model's prediction."""
    return record["model"].get("given_pivots") or record["model"]


def wire_mismatches(record: dict) -> list[str]:
    """Ranks whose measured wire bytes differ from the model's ('' when all agree)."""
    wire = record["traffic"].get("wire")
    if wire is None:
        return [f"no wire count: {record['traffic'].get('wire_unavailable')}"]
    model = model_traffic(record)["wire"]
    found = []
    for side in ("sent", "recv"):
        key = f"per_rank_bytes_{side}"
        measured, predicted = wire[key], model[key]
        for rank, (got, want) in enumerate(zip(measured, predicted, strict=True)):
            if abs(got - want) >= 0.5:
                found.append(f"rank {rank} {side} {got:.0f} B, model {want:.0f} B")
    return found


class LinalgIOCheck(rfm.RunOnlyRegressionTest):
    """One linalg-io run under the partition's launcher; subclasses give the command."""

    valid_systems: ClassVar[list[str]] = ["*"]
    valid_prog_environs: ClassVar[list[str]] = ["*"]
    nodes = parameter([1], type=int)
    ranks_per_node = parameter([4], type=int)
    threads_per_rank = parameter([1], type=int)
    reps = variable(int, value=3)
    linalg_io_command = variable(str, value=default_command())
    machine_file = variable(str, value="")
    time_tolerance = variable(float, type(None), value=None)
    reference_scale = variable(float, value=1.0)
    tags: ClassVar[set[str]] = {"linalg-io"}

    def command(self) -> list[str]:
        raise NotImplementedError

    @run_after("init")
    def set_tasks(self):
        self.num_tasks_per_node = self.ranks_per_node
        self.num_tasks = self.nodes * self.ranks_per_node
        self.num_cpus_per_task = self.threads_per_rank
        self.descr = f"linalg-io {' '.join(self.command())} on {self.num_tasks} ranks"

    @run_before("run")
    def set_command(self):
        extras = self.current_partition.extras
        machine = self.machine_file or extras.get("linalg_io_machine", "")
        self.executable = self.linalg_io_command
        self.executable_opts = [*self.command(), "--reps", str(self.reps), "--threads",
                                str(self.threads_per_rank), "--out", RECORD, "--quiet",
                                *(["--machine", machine] if machine else [])]
        self.job.launcher.options += list(extras.get("linalg_io_launcher_options", []))

    @sanity_function
    def verified_and_wire_as_modelled(self):
        record = read_record(self.stagedir)
        verify = record["verify"]
        if not verify["passed"]:
            raise SanityError(f"verification FAILED: {verify['metric']} = {verify['value']} "
                              f"(threshold {verify['threshold']})")
        if record["nranks"] != self.num_tasks:
            raise SanityError(f"the record has {record['nranks']} ranks, the job "
                              f"{self.num_tasks}: the launcher did not start one MPI job")
        if self.job.scheduler.registered_name in ("slurm", "squeue"):
            job = (record.get("slurm") or {}).get("job_id")
            if job != str(self.job.jobid):
                raise SanityError(f"the record names Slurm job {job}, not {self.job.jobid}")
        mismatches = wire_mismatches(record)
        if mismatches:
            raise SanityError("wire bytes differ from the model's: " + "; ".join(mismatches))
        return True

    def tolerance(self) -> float:
        if self.time_tolerance is not None:
            return self.time_tolerance
        return float(self.current_partition.extras.get("linalg_io_time_tolerance",
                                                       DEFAULT_TOLERANCE))

    @run_before("performance")
    def set_references(self):
        record = read_record(self.stagedir)
        model = model_traffic(record)
        tolerance, scale = self.tolerance(), self.reference_scale
        exact = (-1e-6, 1e-6)
        self.reference = {"*": {
            "time": (record["model"]["time_s"] * scale, None, tolerance, "s"),
            "time_over_model": (scale, None, tolerance, "x"),
            "recv_MB": (model["bytes_recv"]["max"] / MB, *exact, "MB"),
            "wire_sent_MB": (model["wire"]["bytes_sent"]["max"] / MB, *exact, "MB"),
            "wire_recv_MB": (model["wire"]["bytes_recv"]["max"] / MB, *exact, "MB"),
        }}

    def record(self) -> dict:
        return read_record(self.stagedir)

    @performance_function("s", perf_key="time")
    def median_time_of_slowest_rank(self):
        return self.record()["time_s"]["median"]

    @performance_function("GFLOP/s")
    def gflops(self):
        return self.record()["gflops"]

    @performance_function("MB")
    def recv_MB(self):
        return self.record()["traffic"]["bytes_recv"]["max"] / MB

    @performance_function("MB")
    def wire_sent_MB(self):
        return self.record()["traffic"]["wire"]["bytes_sent"]["max"] / MB

    @performance_function("MB")
    def wire_recv_MB(self):
        return self.record()["traffic"]["wire"]["bytes_recv"]["max"] / MB

    @performance_function("x")
    def time_over_model(self):
        record = self.record()
        return round(record["time_s"]["median"] / record["model"]["time_s"], 4)

    @performance_function("x")
    def recv_over_lower_bound(self):
        record = self.record()
        return round(record["traffic"]["bytes_recv"]["max"]
                     / record["lower_bound"]["bytes_per_rank"], 4)


@rfm.simple_test
class LinalgIOLU(LinalgIOCheck):
    """`linalg-io lu`: 2D (block-cyclic, partial pivoting) and 2.5D (conflux). A grid
    of three factors with c > 1 is 2.5D only; a grid whose factors do not multiply to
    the ranks is skipped."""

    algo = parameter(["2d", "conflux"], type=str)
    n = parameter([1024], type=int)
    grid = parameter(["auto", "2x1x2"], type=str)

    @run_after("init")
    def skip_grids_that_do_not_fit(self):
        if self.grid == "auto":
            return
        factors = [int(f) for f in self.grid.split("x")]
        self.skip_if(self.algo == "2d" and len(factors) == 3 and factors[2] > 1,
                     f"grid {self.grid} is 2.5D: --algo conflux only")
        self.skip_if(math.prod(factors) != self.num_tasks,
                     f"grid {self.grid} is not {self.num_tasks} ranks")

    def command(self) -> list[str]:
        return ["lu", "--algo", self.algo, "--n", str(self.n), "--grid", self.grid]


@rfm.simple_test
class LinalgIOTSGEMM(LinalgIOCheck):
    """`linalg-io tsgemm`: C = A^T B with A m x k and B m x n (atb)."""

    variant = parameter(["atb"], type=str)
    m = parameter([262144], type=int)
    n = variable(int, value=16)
    k = variable(int, value=16)

    def command(self) -> list[str]:
        return ["tsgemm", "--variant", self.variant, "--m", str(self.m), "--n", str(self.n),
                "--k", str(self.k)]


@rfm.simple_test
class LinalgIOSpTRSV(LinalgIOCheck):
    """`linalg-io sptrsv`: level-set and synchronisation-free triangular solves."""

    algo = parameter(["levelset", "syncfree"], type=str)
    matrix = parameter(["lap2d:64"], type=str)

    def command(self) -> list[str]:
        return ["sptrsv", "--matrix", self.matrix, "--algo", self.algo]
