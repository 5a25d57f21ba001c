"""Threads per rank on a real mpiexec job (the pools in one process: test_threads.py)."""

import json
import sys

from mpi_harness import run_job

from linalg_io import threads
from linalg_io.launch.relaunch import find_mpiexec, mpi_environment, mpiexec_flavour
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


def test_calibrate_threads_and_a_run_predicted_at_its_threads(tmp_path):
    """`calibrate --threads 2` writes one thread's rates at the top and a 2-thread rank's
    under at_threads, each with its local kernels' rates (the dgemm's curve and the
    panel's share of gamma, `linalg_io.tools.kernel_rates`); a run's record predicts with
    its own --threads' rates: one rank, no messages, the 2D model of those rates."""

    from linalg_io.models.profile import load_profile
    from mpi_harness import run_cli

    from linalg_io.model_command.lu_verdict import row_2d

    path = tmp_path / "machine.json"
    run_cli(2, ["calibrate", "--reps", "2", "--threads", "2", "--write", str(path), "--quiet"])
    data = json.loads(path.read_text())
    assert data["threads_per_rank"] == 2 and set(data["at_threads"]) == {"2"}
    assert 1e8 < data["at_threads"]["2"]["gamma_flops"] < 1e13
    one, two = load_profile(path, 1), load_profile(path, 2)
    assert (one.gamma_flops, two.gamma_flops) == (data["gamma_flops"],
                                                  data["at_threads"]["2"]["gamma_flops"])
    for entry, profile in ((data, one), (data["at_threads"]["2"], two)):
        assert 0 <= entry["gemm_k_half"] <= 2048 and 0 < entry["panel_rate"] < 2
        assert (profile.local.k_half, profile.local.panel) == (entry["gemm_k_half"],
                                                               entry["panel_rate"])
    out = tmp_path / "r.jsonl"
    for t in (1, 2):
        run_cli(1, ["lu", "--algo", "2d", "--n", "512", "--reps", "1", "--warmup", "0",
                    "--threads", str(t), "--profile", str(path), "--out", str(out)])
    records = read_records([out])
    assert [r["threads_per_rank"] for r in records] == [1, 2]
    for record, profile in zip(records, (one, two)):
        here = profile.for_run(1)
        expected = row_2d(512, here, here.placement(1), (1, 1, record["params"]["nb"]))
        assert record["model"]["time_s"] == expected["time_s"]
