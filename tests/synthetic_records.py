"""Hand-built result records in the shape of `runner.build_record` (schema 1), for tests.

Received bytes per rank (logical) and the wire block (what the MPI library moved) are
their own numbers, different from the bytes sent, so that a test sees which one a
table or plot shows. `wire=False` gives a record whose wire counter was unavailable,
`older=True` one written before received per rank and wire bytes were recorded. Its
`options` and `auto` are what the runner records for its command line."""

from __future__ import annotations

import copy


def make_record(kernel: str = "lu", algo: str = "2d", params: dict | None = None,
                nranks: int = 4, per_rank_sent: list[float] | None = None,
                model_per_rank: list[float] | None = None, median: float = 0.5,
                flops: float = 1e9, passed: bool = True, lower_bound: float | None = 1.0e6,
                by_phase: dict | None = None, command: list[str] | None = None,
                run_id: str = "r0", per_rank_recv: list[float] | None = None,
                model_per_rank_recv: list[float] | None = None,
                wire_per_rank: tuple[list[float], list[float]] | None = None,
                wire: bool = True, older: bool = False, threads: int = 1) -> dict:
    """A complete record whose derived numbers (max, mean, gflops) follow from the inputs.

    Defaults per rank (4 ranks, MB): sent [4, 2, 2, 0], received [3, 3, 1, 1], model
    sent [3, 2, 2, 1], model received [2.5, 2, 2, 1.5], wire sent [5, 3, 3, 1] and
    received [4, 4, 2, 2], the model's wire sent [4.5, 3, 3, 1.5] and received
    [4, 4, 2, 2]; a list given for P ranks replaces the default."""
    params = copy.deepcopy(params if params is not None
                           else {"n": 1024, "nb": 64, "grid": [2, 2, 1], "dist": "random"})
    sent = list(per_rank_sent or [4.0e6, 2.0e6, 2.0e6, 0.0][:nranks])
    model = list(model_per_rank or [3.0e6, 2.0e6, 2.0e6, 1.0e6][:nranks])
    recv = list(per_rank_recv or [3.0e6, 3.0e6, 1.0e6, 1.0e6][:nranks])
    model_recv = list(model_per_rank_recv or [2.5e6, 2.0e6, 2.0e6, 1.5e6][:nranks])
    wire_sent, wire_recv = (list(w) for w in (wire_per_rank or (
        [5.0e6, 3.0e6, 3.0e6, 1.0e6][:nranks], [4.0e6, 4.0e6, 2.0e6, 2.0e6][:nranks])))
    times = [median * 0.9, median, median * 1.2]
    if command is None:  # what the CLI would have been given
        command = ["linalg-io", kernel, "--algo", algo]
        for key, value in params.items():
            text = "x".join(map(str, value)) if isinstance(value, list) else str(value)
            command += [f"--{key}", text]
        command += ["--np", str(nranks)]
    record = {
        "schema": 1,
        "run_id": run_id,
        "timestamp": "2026-11-30T01:00:00+00:00",
        "git_commit": "abc123",
        "command": command,
        "kernel": kernel,
        "algo": algo,
        "backend": "cpu",
        "dtype": "float64",
        "params": params,
        **resolved_options(command, params),
        "nranks": nranks,
        "threads_per_rank": threads,
        "hosts": ["node0"],
        "reps": 3,
        "times_s": times,
        "time_s": {"min": min(times), "median": median, "max": max(times)},
        "gflops": flops / median / 1e9,
        "verify": {"metric": "hpl_residual", "value": 0.25 if passed else 40.0,
                   "threshold": 16.0, "passed": passed},
        "traffic": {
            "level": "logical",
            "bytes_sent": {"max": max(sent), "mean": sum(sent) / len(sent), "min": min(sent)},
            "bytes_recv": stats(recv),
            "msgs_sent": {"max": 12.0, "mean": 8.0},
            "by_op": {"Bcast": max(sent)},
            "by_phase": by_phase if by_phase is not None
            else {"panel": max(sent) * 0.25, "update": max(sent) * 0.75},
            "recv_by_phase": {"panel": max(recv) * 0.25, "update": max(recv) * 0.75},
            "per_rank_bytes_sent": sent,
            "per_rank_bytes_recv": recv,
            "wire": {"source": "Open MPI monitoring", "bytes_sent": stats(wire_sent),
                     "bytes_recv": stats(wire_recv), "msgs_sent": {"max": 14.0, "mean": 9.0},
                     "per_rank_bytes_sent": wire_sent, "per_rank_bytes_recv": wire_recv},
        },
        "model": {
            "bytes_sent": {"max": max(model), "mean": sum(model) / len(model)},
            "bytes_recv": {"max": max(model_recv), "mean": sum(model_recv) / len(model_recv)},
            "msgs_sent": {"max": 10.0, "mean": 7.0},
            "flops": {"max": flops / nranks, "mean": flops / nranks},
            "time_s": 0.4,
            "formula": "N^2/sqrt(P) words",
            "per_rank_bytes_sent": model,
            "per_rank_bytes_recv": model_recv,
            "wire": {"bytes_sent": {"max": 4.5e6, "mean": 3.0e6},
                     "bytes_recv": {"max": 4.0e6, "mean": 3.0e6},
                     "msgs_sent": {"max": 13.0, "mean": 9.0}},
        },
        "lower_bound": (None if lower_bound is None
                        else {"bytes_per_rank": lower_bound, "formula": "N^2/sqrt(P*c)"}),
        "env": {"python": "3.11"},
    }
    if not wire:
        record["traffic"]["wire"] = None
        record["traffic"]["wire_unavailable"] = "MPICH: no monitoring component"
    if older:
        for block in (record["traffic"], record["model"]):
            del block["wire"], block["per_rank_bytes_recv"]
        del record["traffic"]["recv_by_phase"]
    return record


def resolved_options(command: list[str], params: dict) -> dict:
    """The record's `options` and `auto` as the runner writes them for this command line
    (none for a line today's parser refuses, as a record of another version)."""
    import contextlib
    import io

    from linalg_io.commands import build_parser
    from linalg_io.records import options_fields, run_options

    with contextlib.suppress(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        return options_fields(run_options(vars(build_parser().parse_args(command[1:]))), params)
    return {}


def stats(values: list[float]) -> dict:
    return {"max": max(values), "mean": sum(values) / len(values), "min": min(values)}
