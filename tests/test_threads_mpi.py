"""Threads per rank on a real mpiexec job (the pools in one process: test_threads.py)."""

import json
import sys

from mpi_harness import run_job

from linalg_io import threads
from linalg_io.comm.launch import find_mpiexec, mpi_environment, mpiexec_flavour
from linalg_io.records import read_records


def plain_mpiexec(nranks: int, args: list[str], timeout: float = 120):
    """`mpiexec -n N python -m linalg_io ARGS` as a user would type it under mpirun,
    with an environment that asks OpenBLAS and OpenMP for 3 threads (no --np)."""
    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    env = mpi_environment(1, flavour)
    env.update({name: "3" for name in threads.THREAD_VARIABLES})
    command = [mpiexec, "-n", str(nranks)] + (["--oversubscribe"] if flavour == "openmpi"
                                              else []) + [sys.executable, "-m", "linalg_io"]
    return run_job(command + args, env, timeout)


def test_threads_hold_under_a_plain_mpiexec(tmp_path):
    out = tmp_path / "r.jsonl"
    plain_mpiexec(2, ["lu", "--n", "256", "--grid", "1x2", "--reps", "2", "--out", str(out)])
    plain_mpiexec(2, ["tsgemm", "--variant", "tsm2l", "--m", "20000", "--n", "8", "--k", "8",
                      "--threads", "2", "--reps", "2", "--out", str(out)])
    lu, gemm = read_records([out])
    assert lu["threads_per_rank"] == 1
    assert {pool["num_threads"] for pool in lu["env"]["blas"]} == {1}
    assert gemm["threads_per_rank"] == 2
    assert {pool["num_threads"] for pool in gemm["env"]["blas"]} == {2}
    assert {pool["internal_api"] for pool in gemm["env"]["blas"]} >= {"openblas", "openmp"}
    facts = json.loads(plain_mpiexec(2, ["info", "--json"]).stdout)
    assert facts["blas_threads_per_rank"] == [1, 1]
