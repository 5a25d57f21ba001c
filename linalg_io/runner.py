"""The one place that times repetitions, verifies, collects traffic and writes records.

An algorithm family plugs in through a *case factory* ``make_case(comm, config)``
(``linalg_io.<family>.case``) returning an object with:

``kernel``, ``algo`` (str), ``params`` (dict for the record),
``setup_rep()``   restore the inputs before a repetition (local work only: untimed, uncounted),
``run()``         one timed repetition; every message through the CountedComm,
``verify()``      collective check -> ``{metric, value, threshold, passed, ...}``,
``flops()``       flops of one repetition (for GFLOP/s),
``model()``       the record's `model` block (``RankCosts.record_block``),
``lower_bound()`` ``{bytes_per_rank, formula}`` or None,
``describe()``    the parameters as a short string for the summary line.

Errors: a `LinalgIOError` raised in the factory, `setup_rep`, `run` or `verify` is
agreed across ranks (every rank prints the same one line and exits with its code);
an algorithm that detects an error on some ranks only must first make it collective
(an Allreduce of a flag) so that no rank waits for one that has left.
"""

from __future__ import annotations

import importlib
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

FAMILIES = {
    "lu": "linalg_io.lu.case",
    "tsgemm": "linalg_io.tsgemm.case",
    "sptrsv": "linalg_io.sptrsv.case",
}


@dataclass
class RunConfig:
    """What the CLI hands the runner: a plain description of one run."""

    command: str
    options: dict[str, Any]
    argv: list[str] = field(default_factory=list)
    reps: int = 5
    warmup: int = 1
    seed: int = 0
    out: str | None = None
    threads: int = 1
    backend: str = "cpu"
    quiet: bool = False
    profile: str | None = None


def _median_etc(times: list[float]) -> dict[str, float]:
    return {"min": min(times), "median": statistics.median(times), "max": max(times)}


def run_benchmark(config: RunConfig) -> int:
    """Run one benchmark on all ranks of COMM_WORLD; return the process exit code."""
    from mpi4py import MPI
    from threadpoolctl import threadpool_limits

    from linalg_io.comm.agree import agreed
    from linalg_io.comm.counting import CountedComm
    from linalg_io.comm.summary import traffic_summary

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    threadpool_limits(config.threads)
    counted = CountedComm(world)
    factory = importlib.import_module(FAMILIES[config.command]).make_case
    case = agreed(world, lambda: factory(counted, config))

    def one_rep() -> float:
        agreed(world, case.setup_rep)
        world.Barrier()
        start = MPI.Wtime()
        agreed(world, case.run)
        return MPI.Wtime() - start

    for _ in range(config.warmup):
        one_rep()
    counted.counter.reset()
    times = []
    MPI.Pcontrol(1)
    for rep in range(config.reps):
        elapsed = world.allreduce(one_rep(), op=MPI.MAX)
        times.append(elapsed)
        if rank == 0 and not config.quiet and elapsed > 1.0:
            print(f"  rep {rep + 1}/{config.reps}: {elapsed:.3f} s", file=sys.stderr, flush=True)
    MPI.Pcontrol(0)
    traffic = traffic_summary(counted.counter, world, config.reps)
    verify = world.bcast(agreed(world, case.verify), root=0)
    from linalg_io.envinfo import gather_hosts

    hosts = gather_hosts(world)
    if rank == 0:
        record = build_record(config, case, world.Get_size(), times, verify, traffic, hosts)
        if config.out:
            from linalg_io.records import append_record

            append_record(config.out, record)
        if not config.quiet:
            print(summary_line(case, record), flush=True)
    world.Barrier()
    return 0 if verify["passed"] else 1


def build_record(config: RunConfig, case: Any, nranks: int, times: list[float], verify: dict,
                 traffic: dict, hosts: list[str]) -> dict:
    """Assemble schema v1 (SPEC section 3) on rank 0."""
    from linalg_io import envinfo
    from linalg_io.records import SCHEMA_VERSION, new_run_id, utc_timestamp

    time_s = _median_etc(times)
    flops = case.flops()
    return {
        "schema": SCHEMA_VERSION,
        "run_id": new_run_id(),
        "timestamp": utc_timestamp(),
        "git_commit": envinfo.git_commit(),
        "command": config.argv,
        "kernel": case.kernel,
        "algo": case.algo,
        "backend": config.backend,
        "dtype": case.params.get("dtype", "float64"),
        "params": case.params,
        "nranks": nranks,
        "threads_per_rank": config.threads,
        "hosts": hosts,
        "reps": config.reps,
        "times_s": times,
        "time_s": time_s,
        "gflops": flops / time_s["median"] / 1e9 if time_s["median"] > 0 else None,
        "verify": verify,
        "traffic": traffic,
        "model": case.model(),
        "lower_bound": case.lower_bound(),
        "env": envinfo.environment(),
    }


def summary_line(case: Any, record: dict) -> str:
    """One greppable line per run, in the spirit of HPL's."""
    median = record["time_s"]["median"]
    sent = record["traffic"]["bytes_sent"]["max"] / 1e6
    model = record["model"]["bytes_sent"]["max"] / 1e6
    gflops = record["gflops"] or 0.0
    status = "PASSED" if record["verify"]["passed"] else "FAILED"
    return (f"{case.kernel:<7} {case.algo:<9} {case.describe()} P={record['nranks']} "
            f"time={median:.4g}s GFLOP/s={gflops:.3f} sent_max={sent:.3f}MB "
            f"model={model:.3f}MB {record['verify']['metric']}={record['verify']['value']:.3g} "
            f"{status}")
