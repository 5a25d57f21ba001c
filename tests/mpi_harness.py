"""Run real multi-rank jobs from pytest: `mpiexec -n N` with a timeout, JSON back from rank 0.

`run_mpi(n, [script, args...])` runs ``python -m mpi4py SCRIPT ARGS`` on n ranks
(oversubscribed), kills the whole job and fails the test if it outlives `timeout`,
and returns the completed process. `run_mpi_json` additionally passes a fresh
path in the environment variable LINALG_IO_TEST_OUT, where rank 0 writes JSON,
and returns it parsed. `run_cli(n, args)` runs ``linalg-io ARGS`` on n ranks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from linalg_io.launch.relaunch import (
    find_mpiexec,
    mpi_environment,
    mpiexec_command,
    mpiexec_flavour,
)

TESTS = Path(__file__).resolve().parent
MPI_SCRIPTS = TESTS / "mpi"


def open_mpi() -> bool:
    """Whether the mpiexec the tests launch is Open MPI's (asked once, when a test first
    needs it: never while collecting, so `pytest -m "not mpi"` starts no MPI)."""
    return mpiexec_flavour(find_mpiexec()) == "openmpi"


def run_mpi(nranks: int, argv: list[str], timeout: float = 120, threads: int = 1,
            env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    command = mpiexec_command(nranks, argv, flavour, mpiexec)
    full_env = mpi_environment(threads, flavour)
    full_env.update(env or {})
    return run_job(command, full_env, timeout, check)


def run_job(command: list[str], env: dict, timeout: float,
            check: bool = True) -> subprocess.CompletedProcess:
    """Run an mpiexec command line in its own session: a job that outlives `timeout` is
    killed whole (every rank) and fails the test as hung."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"MPI job hung (> {timeout} s, killed): {' '.join(command)}\n"
                    f"stdout:\n{stdout[-3000:]}\nstderr:\n{stderr[-3000:]}")
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if check and result.returncode != 0:
        pytest.fail(f"MPI job failed (exit {result.returncode}): {' '.join(command)}\n"
                    f"stdout:\n{stdout[-3000:]}\nstderr:\n{stderr[-3000:]}")
    return result


def run_mpi_json(nranks: int, script: str, args: list[str] | None = None,
                 timeout: float = 120, **kwargs) -> object:
    """Run tests/mpi/SCRIPT on n ranks; return the JSON rank 0 wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        env = dict(kwargs.pop("env", {}) or {}, LINALG_IO_TEST_OUT=str(out))
        run_mpi(nranks, [str(MPI_SCRIPTS / script)] + list(args or []), timeout=timeout,
                env=env, **kwargs)
        return json.loads(out.read_text())


def run_cli(nranks: int, args: list[str], timeout: float = 180, check: bool = True,
            **kwargs) -> subprocess.CompletedProcess:
    """`linalg-io ARGS` on n ranks (through python -m linalg_io under mpiexec)."""
    return run_mpi(nranks, ["-m", "linalg_io"] + list(args), timeout=timeout, check=check,
                   **kwargs)


def run_cli_records(nranks: int, args: list[str], timeout: float = 180, **kwargs) -> list[dict]:
    """Run `linalg-io ARGS --out tmp.jsonl` on n ranks and return its records."""
    from linalg_io.records import read_records

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "records.jsonl"
        run_cli(nranks, list(args) + ["--out", str(out)], timeout=timeout, **kwargs)
        return read_records([out])
