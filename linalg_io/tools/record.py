"""Records for the measuring tools (pingpong, calibrate): schema v1 with tool results."""

from __future__ import annotations

import statistics

from mpi4py import MPI

from linalg_io import envinfo
from linalg_io.records import append_record, options_fields, record_header


def append_tool_record(path: str, argv: list[str], kernel: str, algo: str, params: dict,
                       options: dict, times: list[float], verify: dict, traffic: dict | None,
                       extra: dict, hosts: list[str], threads: int) -> None:
    """Rank 0: append one record; `options` are the run's (`records.run_options`), `extra`
    holds the tool's own results."""
    record = {
        **record_header(argv, kernel, algo, "cpu"), "params": params,
        **options_fields(options, params),
        "nranks": MPI.COMM_WORLD.Get_size(), "threads_per_rank": threads, "hosts": hosts,
        "times_s": times,
        "time_s": {"min": min(times), "median": statistics.median(times), "max": max(times)},
        "gflops": None, "verify": verify, "traffic": traffic, "model": None,
        "lower_bound": None, "env": envinfo.environment(), **extra,
    }
    append_record(path, record)
