"""Hand-built result records in the shape of `runner.build_record` (schema 1), for tests."""

from __future__ import annotations

import copy


def make_record(kernel: str = "lu", algo: str = "2d", params: dict | None = None,
                nranks: int = 4, per_rank_sent: list[float] | None = None,
                model_per_rank: list[float] | None = None, median: float = 0.5,
                flops: float = 1e9, passed: bool = True, lower_bound: float | None = 1.0e6,
                by_phase: dict | None = None, command: list[str] | None = None,
                run_id: str = "r0") -> dict:
    """A complete record whose derived numbers (max, mean, gflops) follow from the inputs."""
    params = copy.deepcopy(params if params is not None
                           else {"n": 1024, "nb": 64, "grid": [2, 2, 1], "dist": "random"})
    sent = list(per_rank_sent or [4.0e6, 2.0e6, 2.0e6, 0.0][:nranks])
    model = list(model_per_rank or [3.0e6, 2.0e6, 2.0e6, 1.0e6][:nranks])
    times = [median * 0.9, median, median * 1.2]
    if command is None:  # what the CLI would have been given
        command = ["linalg-io", kernel, "--algo", algo]
        for key, value in params.items():
            text = "x".join(map(str, value)) if isinstance(value, list) else str(value)
            command += [f"--{key}", text]
        command += ["--np", str(nranks)]
    return {
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
        "nranks": nranks,
        "threads_per_rank": 1,
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
            "bytes_recv": {"max": max(sent), "mean": sum(sent) / len(sent), "min": min(sent)},
            "msgs_sent": {"max": 12.0, "mean": 8.0},
            "by_op": {"Bcast": max(sent)},
            "by_phase": by_phase if by_phase is not None
            else {"panel": max(sent) * 0.25, "update": max(sent) * 0.75},
            "per_rank_bytes_sent": sent,
        },
        "model": {
            "bytes_sent": {"max": max(model), "mean": sum(model) / len(model)},
            "bytes_recv": {"max": max(model), "mean": sum(model) / len(model)},
            "msgs_sent": {"max": 10.0, "mean": 7.0},
            "flops": {"max": flops / nranks, "mean": flops / nranks},
            "time_s": 0.4,
            "formula": "N^2/sqrt(P) words",
            "per_rank_bytes_sent": model,
        },
        "lower_bound": (None if lower_bound is None
                        else {"bytes_per_rank": lower_bound, "formula": "N^2/sqrt(P*c)"}),
        "env": {"python": "3.11"},
    }
