"""The one place that times repetitions, verifies, collects traffic and writes records.

An algorithm family plugs in through a *case factory* ``make_case(comm, config)`` (its
entry in the registry, `linalg_io.families`) returning an object with:

``kernel``, ``algo`` (str), ``params`` (dict for the record),
``setup_rep()``   restore the inputs before a repetition (local work only: untimed, uncounted),
``run()``         one timed repetition; every message through the CountedComm,
``verify()``      collective check -> ``{metric, value, threshold, passed, ...}``,
``flops()``       flops of one repetition (for GFLOP/s),
``model()``       the record's `model` block (``RankCosts.record_block``),
``lower_bound()`` ``{bytes_per_rank, formula}`` or None,
``describe()``    the parameters as a short string for the summary line,
and optionally ``logical_unavailable`` (str): why the package's logical counter
cannot see the run's messages (a library such as ScaLAPACK sends them itself);
the record's logical traffic is then null with that reason, the wire counts stay;
``network_probe`` (dict or None): the links the case measured at its start for its
choice (`linalg_io.lu.run_choice`), the record's field of that name.

Traffic: the logical counter (every call through the CountedComm) and the wire
counter (`linalg_io.comm.wire`, what the MPI library moved) both cover exactly the
timed ``run()`` calls, the counted region that ``MPI.Pcontrol(1)``/``(0)`` bracket;
neither sees the barriers, the timing reduction or the error agreement around them.

Errors: a `LinalgIOError` raised in the factory, `setup_rep`, `run` or `verify` is
agreed across ranks (every rank prints the same one line and exits with its code);
an algorithm that detects an error on some ranks only must first make it collective
(an Allreduce of a flag) so that no rank waits for one that has left.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

from linalg_io.contract import Case, RunConfig
from linalg_io.errors import InputError
from linalg_io.families import family
from linalg_io.progress import progress
from linalg_io.threads import check_pools, hold_pools


def _median_etc(times: list[float]) -> dict[str, float]:
    return {"min": min(times), "median": statistics.median(times), "max": max(times)}


def run_benchmark(config: RunConfig) -> int:
    """Run one benchmark on all ranks of COMM_WORLD; return the process exit code."""
    from mpi4py import MPI

    from linalg_io.comm.counting import CountedComm
    from linalg_io.comm.phase_clock import phase_time_summary
    from linalg_io.comm.summary import traffic_summary
    from linalg_io.comm.waiting import wait_policy
    from linalg_io.comm.wire import open_wire
    from linalg_io.launch.agree import agreed
    from linalg_io.launch.node import kernel_crowded
    from linalg_io.launch.watchdog import SETUP_FLOOR_S, start_watchdog, watch_case
    from linalg_io.report.line import summary_line

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    dog = start_watchdog(config.stall_timeout, rank, MPI.Get_processor_name())
    dog.stage("set-up", SETUP_FLOOR_S)
    agreed(world, lambda: check_outputs(config, rank))
    agreed(world, lambda: hold_pools(config.threads))   # before the case's first BLAS call
    waits = wait_policy(kernel_crowded(world, config.threads))
    counted = CountedComm(world, waits=waits)
    factory = family(config.command).load()
    with progress("set-up", rank == 0 and not config.quiet):
        case = agreed(world, lambda: factory(counted, config))
    # the pools of the libraries the case loaded too, read back on every rank
    agreed(world, lambda: hold_pools(config.threads))
    wire = open_wire(world)
    watch_case(dog, counted.counter, getattr(case, "phase_clock", None),
               wire if getattr(case, "logical_unavailable", None) else None)

    def counted_run() -> None:
        wire.start()
        case.run()
        wire.stop()

    def one_rep(where: str) -> float:
        dog.stage(where)
        agreed(world, case.setup_rep)
        waits.barrier(world)
        start = MPI.Wtime()
        agreed(world, counted_run, waits)
        elapsed = MPI.Wtime() - start
        dog.predict(case.model)   # after the first repetition: the model has its pivots
        return elapsed

    for warm in range(config.warmup):
        with progress(f"warm-up {warm + 1}/{config.warmup}", rank == 0 and not config.quiet):
            one_rep(f"warm-up {warm + 1}/{config.warmup}")
    counted.counter.reset()
    wire.reset()
    times = []
    MPI.Pcontrol(1)
    for rep in range(config.reps):
        elapsed = world.allreduce(one_rep(f"rep {rep + 1}/{config.reps}"), op=MPI.MAX)
        times.append(elapsed)
        if rank == 0 and not config.quiet and elapsed > 1.0:
            print(f"  rep {rep + 1}/{config.reps}: {elapsed:.3f} s", file=sys.stderr, flush=True)
    MPI.Pcontrol(0)
    dog.stage("verification and record")
    agreed(world, lambda: check_pools(config.threads))   # no pool changed during the reps
    traffic = traffic_summary(counted.counter, wire, world, config.reps,
                              getattr(case, "logical_unavailable", None))
    time_by_phase = phase_time_summary(getattr(case, "phase_clock", None), world, config.reps)
    verify = world.bcast(agreed(world, case.verify), root=0)
    from linalg_io.envinfo import gather_hosts
    from linalg_io.launch.node import node_load
    from linalg_io.slurm_job import slurm_job

    hosts = gather_hosts(world)
    launch = {"oversubscribed": node_load(world, config.threads), "slurm": slurm_job()}

    def write_record() -> None:
        if rank != 0:
            return
        record = {**build_record(config, case, world.Get_size(), times, verify, traffic, hosts,
                                 time_by_phase),
                  **launch}
        if config.out:
            from linalg_io.records import append_record

            try:
                append_record(config.out, record)
            except OSError as error:
                raise InputError(f"cannot append the record to {config.out}: {error}") from None
        if not config.quiet:
            print(summary_line(case.describe(), record), flush=True)

    agreed(world, write_record)   # every rank leaves with rank 0's write error, if any
    dog.stop()
    return 0 if verify["passed"] else 1


def check_outputs(config: RunConfig, rank: int) -> None:
    """Before any work: the machine profile reads (every rank; the models use it), and on
    rank 0, the writer, the records file can be appended to (InputError otherwise)."""
    from linalg_io.models.profile import load_profile

    try:
        load_profile(config.profile)
    except OSError as error:
        raise InputError(f"machine profile {config.profile}: {error.strerror}") from None
    if rank != 0 or not config.out:
        return
    out = Path(config.out)
    parent = next((p for p in out.absolute().parents if p.exists()), None)
    if out.exists() and not out.is_file():
        raise InputError(f"--out {out}: not a file")
    if out.exists() and not os.access(out, os.W_OK):
        raise InputError(f"--out {out}: not writable")
    if not out.exists() and (parent is None or not parent.is_dir()
                             or not os.access(parent, os.W_OK | os.X_OK)):
        raise InputError(f"--out {out}: cannot create it under {parent}")
    from linalg_io.records import check_records_file

    check_records_file(out)


def build_record(config: RunConfig, case: Case, nranks: int, times: list[float], verify: dict,
                 traffic: dict, hosts: list[str], time_by_phase: dict | None = None) -> dict:
    """Assemble schema v1 (docs/records.md#schema) on rank 0; `time_by_phase` (a case with a
    `phase_clock`, `linalg_io.comm.phase_clock.phase_time_summary`) goes in only when set."""
    from linalg_io import envinfo
    from linalg_io.records import options_fields, record_header

    time_s = _median_etc(times)
    flops = case.flops()
    return {
        **record_header(config.argv, case.kernel, case.algo, config.backend,
                        case.params.get("dtype", "float64")),
        "params": case.params,
        **options_fields(config.resolved, case.params),
        "nranks": nranks,
        "threads_per_rank": check_pools(config.threads),   # read back from the pools
        "hosts": hosts,
        "reps": config.reps,
        "times_s": times,
        "time_s": time_s,
        "gflops": flops / time_s["median"] / 1e9 if time_s["median"] > 0 else None,
        "verify": verify,
        "traffic": traffic,
        **({"time_by_phase": time_by_phase} if time_by_phase is not None else {}),
        **({"library": case.library_block()} if hasattr(case, "library_block") else {}),
        **({"network_probe": case.network_probe} if hasattr(case, "network_probe") else {}),
        "model": case.model(),
        "lower_bound": case.lower_bound(),
        "env": envinfo.environment(),
    }
