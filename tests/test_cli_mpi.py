"""The launcher, `info`, `pingpong`, `calibrate` and error agreement, on real mpiexec jobs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from linalg_io.models.profile import load_profile
from mpi_harness import run_cli, run_job

from linalg_io.records import read_records

CLI = [sys.executable, "-m", "linalg_io"]


def _error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("linalg-io: error:")]


def test_info_relaunches_under_mpiexec_with_np():
    out = subprocess.run(CLI + ["info", "--np", "4", "--json"], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    assert facts["ranks"] == 4
    assert "Open MPI" in facts["mpi_library"] or "MPICH" in facts["mpi_library"]
    assert "dense_local" in facts["cython_kernels"]
    assert facts["blas_threads_per_rank"] == [1, 1, 1, 1]
    (node,) = facts["nodes"].values()
    assert (node["ranks"], node["cores"], node["threads"]) == (4, os.cpu_count(), 4)
    assert node["ranks_outnumber_cores"] == node["oversubscribed"] == (4 > os.cpu_count())
    assert node["memory_bytes"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@pytest.mark.alone   # the calibrated latency and rates
def test_pingpong_record_and_calibrated_profile(tmp_path: Path):
    records = tmp_path / "pp.jsonl"
    run_cli(2, ["pingpong", "--max-bytes", "128K", "--reps", "2", "--warmup", "3",
                "--out", str(records)])
    (record,) = read_records([records])
    sizes = [row["bytes"] for row in record["results"]]
    assert sizes == [8, 32, 128, 512, 2048, 8192, 32768, 131072]
    assert record["verify"]["passed"]
    # per timed rep, ranks 0 and 1 each send every size iters times (warm-ups uncounted)
    expected = sum(row["bytes"] * row["iters"] for row in record["results"])
    assert record["traffic"]["bytes_sent"]["max"] == expected
    assert record["traffic"]["msgs_sent"]["max"] == sum(row["iters"] for row in record["results"])
    assert len(record["hosts"]) == 1 and record["threads_per_rank"] == 1
    profile_path = tmp_path / "profile.json"
    run_cli(2, ["calibrate", "--reps", "2", "--write", str(profile_path), "--quiet"])
    profile = load_profile(profile_path)
    assert 0 < profile.alpha_s < 1e-3
    assert 1e8 < 1 / profile.beta_s_per_byte < 1e12
    assert 1e8 < profile.gamma_flops < 1e13
    assert 1e8 < profile.mem_bw_bytes_per_s < 1e12
    # the local kernels' rates: the update's dgemm curve and the panel's share of gamma
    assert 0 <= profile.local.k_half <= 2048 and 0 < profile.local.panel < 2


def test_bad_input_gives_one_line_once_and_exit_2():
    """Every rank agrees on the error and exits 2; rank 0 alone prints it, and the
    relaunching mpiexec's box repeating the exit code is dropped."""
    result = run_cli(3, ["pingpong", "--min-bytes", "100", "--max-bytes", "10"], check=False)
    assert result.returncode == 2
    assert _error_lines(result) == [
        "linalg-io: error: need 1 <= --min-bytes <= --max-bytes, got 100, 10"]
    relaunched = subprocess.run(CLI + ["lu", "--n", "64", "--grid", "3x3", "--np", "4"],
                                capture_output=True, text=True, timeout=120, check=False)
    assert relaunched.returncode == 2
    assert relaunched.stderr == "linalg-io: error: grid 3x3 needs 9 ranks but the job has 4\n"
    assert relaunched.stdout == ""


def test_inputs_a_run_cannot_honour_fail_on_every_rank():
    cases = [(["info", "--np", "3"],
              "--np 3, but the launcher started 2 ranks (drop --np under mpiexec/srun)"),
             (["lu", "--algo", "2d", "--n", "64", "--nb", "100"],
              "--nb must lie in 1..N = 64, got 100"),
             (["lu", "--n", "64", "--file", "m.npy"],
              "--file m.npy is read only with --dist file (got --dist random)")]
    for args, message in cases:
        result = run_cli(2, args, timeout=60, check=False)
        lines = _error_lines(result)
        assert result.returncode == 2 and lines == [f"linalg-io: error: {message}"], result.stderr


def test_bad_machine_profile_is_bad_input(tmp_path: Path):
    not_json = tmp_path / "not_json.json"
    not_json.write_text("{alpha: 1")
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"alpha_s": 1e-6, "beta_s_per_byte": 1e-10}))
    negative = tmp_path / "negative.json"
    negative.write_text(json.dumps({"alpha_s": 1e-6, "beta_s_per_byte": 1e-10,
                                    "gamma_flops": -1, "mem_bw_bytes_per_s": "fast"}))
    cases = [(not_json, f"machine profile {not_json} is not JSON: "),
             (missing, f"machine profile {missing} lacks gamma_flops, mem_bw_bytes_per_s "),
             (negative, (f"machine profile {negative}: gamma_flops, mem_bw_bytes_per_s must "
                         "be positive numbers"))]
    for path, message in cases:
        out = subprocess.run(CLI + ["model", "tsgemm", "--variant", "atb", "--m", "1000",
                                    "--n", "4", "--k", "4", "--p", "2", "--profile", str(path)],
                             capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 2, out.stderr
        (line,) = out.stderr.strip().splitlines()
        assert line.startswith(f"linalg-io: error: {message}"), line
    records = tmp_path / "runs.jsonl"
    result = run_cli(2, ["tsgemm", "--variant", "atb", "--m", "1000", "--n", "4", "--k", "4",
                         "--profile", str(missing), "--out", str(records)], check=False)
    assert result.returncode == 2
    (line,) = _error_lines(result)
    assert "lacks gamma_flops" in line
    assert not records.exists()


def test_unwritable_out_and_unreadable_profile_fail_before_the_run_on_every_rank(tmp_path):
    """Checked before any work: an --out that cannot take a record, a --profile that does
    not read (lu 2d and sptrsv use it only in rank 0's model, after the run)."""
    directory = tmp_path / "a_directory"
    directory.mkdir()
    a_file = tmp_path / "a_file"
    a_file.write_text("keep me\n")
    cases = [(["lu", "--n", "64", "--out", str(directory)], f"--out {directory}: not a file"),
             (["lu", "--n", "64", "--out", str(a_file / "r.jsonl")],
              f"--out {a_file / 'r.jsonl'}: cannot create it under {a_file}"),
             (["sptrsv", "--matrix", "lap2d:8", "--profile", str(tmp_path / "none.json")],
              (f"machine file {tmp_path / 'none.json'}: no such file; shipped machines: "
               "example_cpu, example_gpu, lumi_c, piz_daint_mc (or the path of a JSON file, "
               "schema in the README)"))]
    for args, message in cases:
        result = run_cli(2, args + ["--reps", "1"], timeout=60, check=False)
        assert result.returncode == 2, result.stderr
        (line,) = _error_lines(result)
        assert line.endswith(message), line
        assert "reps" not in result.stdout and "PASSED" not in result.stdout
    assert a_file.read_text() == "keep me\n" and not any(directory.iterdir())


def test_record_of_a_matrix_market_run(tmp_path):
    """Reading a .mtx loads SciPy's reader, which threadpoolctl lists with a function for
    its version: the record's env keeps only plain BLAS/OpenMP facts."""
    import numpy as np
    import scipy.io
    import scipy.sparse as sp

    path = tmp_path / "lower.mtx"
    scipy.io.mmwrite(path, sp.csr_matrix(np.tril(np.ones((30, 30))) + 29 * np.eye(30)))
    records = tmp_path / "runs.jsonl"
    run_cli(2, ["sptrsv", "--matrix", str(path), "--reps", "1", "--out", str(records)],
            timeout=60)
    (record,) = read_records([records])
    assert record["verify"]["passed"] and record["params"]["matrix"] == str(path)
    assert {entry["internal_api"] for entry in record["env"]["blas"]} >= {"openblas"}


def test_a_bug_on_one_rank_aborts_the_job_instead_of_hanging():
    """No `python -m mpi4py` here (it would abort by itself): the CLI's own handler must."""
    from linalg_io.launch.relaunch import find_mpiexec, mpi_environment, mpiexec_flavour

    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    command = [mpiexec, "-n", "2"] + (["--oversubscribe"] if flavour == "openmpi" else []) \
        + [sys.executable, str(Path(__file__).parent / "mpi" / "uncaught.py"), "tsgemm",
           "--variant", "atb", "--m", "1000", "--n", "4", "--k", "4", "--reps", "1"]
    out = run_job(command, mpi_environment(1, flavour), timeout=90, check=False)
    assert out.returncode != 0
    assert "RuntimeError: injected bug in rank 0's record" in out.stderr
