"""`lu --algo scalapack`: ScaLAPACK's pdgetrf through ctypes on 2..8 ranks against SciPy
(factors, pivots on every process column, pdgetrs), the CLI record beside `--algo 2d`
on the same matrix (HPL residual, wire bytes, logical traffic null with its reason),
and the environment errors (exit 3, one line).

Without a ScaLAPACK library these tests skip, unless LINALG_IO_REQUIRE_SCALAPACK is
set (.ci/run sets it after installing one), where its absence fails them."""

import json
import os

import pytest
from mpi_harness import run_cli, run_cli_records, run_mpi_json

from linalg_io.errors import EnvironmentProblem
from linalg_io.lu import scalapack


def _library() -> str | None:
    try:
        return scalapack.find_library(None)
    except EnvironmentProblem as error:
        if os.environ.get("LINALG_IO_REQUIRE_SCALAPACK"):
            pytest.fail(f"LINALG_IO_REQUIRE_SCALAPACK is set but: {error}")
        return None


needs_library = pytest.mark.skipif(_library() is None,
                                   reason="no ScaLAPACK library (make scalapack installs one)")
CASES = [([1, 2], 130, 32), ([2, 2], 150, 16), ([2, 4], 203, 24), ([4, 2], 96, 8),
         ([2, 3], 77, 5), ([1, 1], 40, 64)]


@needs_library
def test_pdgetrf_matches_scipy_on_every_grid():
    cases = [{"grid": g, "n": n, "nb": nb} for g, n, nb in CASES]
    results = run_mpi_json(8, "scalapack_cases.py", [json.dumps(cases)])
    assert [r["case"]["grid"] for r in results] == [g for g, _, _ in CASES]
    for result in results:
        assert result["info"] == 0 and result["solve_info"] == 0, result
        assert result["lu_max_diff"] < 1e-10, result
        assert all(result["pivots_equal"]), result   # ipiv valid on every process column
        assert result["x_max_diff"] < 1e-8, result


@needs_library
def test_cli_record_beside_2d_on_the_same_matrix():
    args = ["lu", "--n", "384", "--nb", "32", "--grid", "2x2", "--reps", "2", "--warmup", "0"]
    ours, = run_cli_records(4, args + ["--algo", "2d"])
    theirs, = run_cli_records(4, args + ["--algo", "scalapack"])
    assert theirs["algo"] == "scalapack" and theirs["verify"]["passed"]
    assert theirs["verify"]["value"] < 16
    for key in ("n", "nb", "grid", "matrix", "seed", "dist"):
        assert theirs["params"][key] == ours["params"][key]
    # the same matrix and right-hand side: ||A||_inf and ||b||_inf agree exactly, and the
    # two solutions agree to rounding
    assert theirs["verify"]["a_inf"] == ours["verify"]["a_inf"]
    assert theirs["verify"]["b_inf"] == ours["verify"]["b_inf"]
    assert abs(theirs["verify"]["x_inf"] - ours["verify"]["x_inf"]) < 1e-9 * ours["verify"]["x_inf"]
    traffic = theirs["traffic"]
    assert traffic["bytes_sent"] is None and traffic["bytes_recv"] is None
    assert "BLACS" in traffic["logical_unavailable"]
    assert traffic["wire"]["bytes_sent"]["max"] > 0 and traffic["wire"]["bytes_recv"]["min"] > 0
    assert theirs["model"] is None
    assert os.path.isfile(theirs["params"]["scalapack_lib"])
    assert os.path.isfile(theirs["params"]["scalapack_blas"])


def test_a_library_without_pdgetrf_is_an_environment_error():
    from mpi4py import MPI

    not_scalapack = MPI.__file__     # a shared object with MPI but no ScaLAPACK
    result = run_cli(2, ["lu", "--algo", "scalapack", "--n", "64", "--scalapack-lib",
                         not_scalapack], check=False)
    assert result.returncode == 3
    assert f"ScaLAPACK {not_scalapack} cannot be used" in result.stderr
    assert "pdgetrf_" in result.stderr


def test_missing_library_exit_3_and_says_where_it_looked(monkeypatch):
    result = run_cli(2, ["lu", "--algo", "scalapack", "--n", "64", "--scalapack-lib",
                         "/nonexistent/libscalapack.so"], check=False)
    assert result.returncode == 3
    assert "--scalapack-lib /nonexistent/libscalapack.so: no such file" in result.stderr
    assert "Traceback" not in result.stderr
    monkeypatch.setattr(scalapack.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(EnvironmentProblem, match=r"ScaLAPACK not found \(looked for "
                                                 r"libscalapack-openmpi\.so, libscalapack\.so "
                                                 r"through ldconfig and LD_LIBRARY_PATH\); "
                                                 r"install it \(make scalapack"):
        scalapack.find_library(None)


@pytest.mark.parametrize("args,message", [
    (["--algo", "2d", "--scalapack-lib", "x.so"], "--scalapack-lib goes with --algo scalapack"),
    (["--algo", "2d", "--input-layout", "scalapack:4x4"],
     "--input-layout goes with --algo conflux"),
    (["--algo", "conflux", "--redist-mem", "0.5"], "--redist-mem goes with --input-layout"),
])
def test_option_misuse_is_bad_input(args, message):
    result = run_cli(2, ["lu", "--n", "64"] + args, check=False)
    assert result.returncode == 2
    assert message in result.stderr


@needs_library
@pytest.mark.alone   # its 5 s deadline against the messages' cadence
def test_the_watchdog_sees_scalapacks_own_messages():
    """pdgetrf's messages bypass the counted communicator: the watchdog takes Open MPI's
    monitoring as its progress, so a repetition longer than --stall-timeout, moving all
    along, runs to its record (without it, ended after stall_s of 'silence', exit 5)."""
    # a repetition well over the deadline, the set-up (which has no progress of its own
    # but its end) well under it: with N = 6144 and 2 s the set-up now and then took longer
    stall_s = 5
    (record,) = run_cli_records(2, ["lu", "--algo", "scalapack", "--n", "8192", "--grid", "2x1",
                                    "--reps", "1", "--warmup", "0", "--stall-timeout",
                                    str(stall_s)], timeout=300)
    assert record["times_s"][0] > stall_s
    assert record["verify"]["passed"]
