"""`lu --algo hpl`: HPL (make hpl) in-process on 4 ranks, its bytes checked against an
independent count of HPL as its own MPI program (xhpl under Open MPI's monitoring dump,
one factorization subtracted from two), the record beside `--algo 2d` under plain
mpiexec, a sweep, and
the environment errors (exit 3, one line); offline: HPL.dat, HPL's output, the dump.

Without HPL these tests skip, unless LINALG_IO_REQUIRE_HPL is set (.ci/run sets it after
`make hpl`), where its absence fails them."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpi_harness import run_cli, run_cli_records, run_mpi_json

from linalg_io.errors import EnvironmentProblem, InputError
from linalg_io.lu.external import hpl_lib
from linalg_io.lu.external.hpl_dat import hpl_dat
from linalg_io.lu.external.hpl_program import HPLProgram, parse_output
from linalg_io.lu.external.monitoring_dump import read_dump


def _library() -> str | None:
    try:
        path = hpl_lib.find(None)
        HPLProgram().find(None)
        return path
    except EnvironmentProblem as error:
        if os.environ.get("LINALG_IO_REQUIRE_HPL"):
            pytest.fail(f"LINALG_IO_REQUIRE_HPL is set but: {error}")
        return None


needs_hpl = pytest.mark.skipif(_library() is None, reason="no HPL (make hpl builds it)")
N, NB, PR, PC = 1000, 64, 2, 2


@pytest.fixture(scope="module")
def in_process():
    return run_mpi_json(PR * PC, "hpl_bytes.py", [str(N), str(NB), str(PR), str(PC)])


@needs_hpl
def test_bytes_of_one_factorization_agree_with_xhpl_under_monitoring(in_process):
    from linalg_io.lu.external.program_count import count_one_factorization

    program = HPLProgram()
    counted = count_one_factorization(program, program.find(None), PR * PC, N, NB, PR, PC)
    assert [run.n for run in counted.twice] == [N, N] and all(r.passed for r in counted.twice)
    whole = np.array(in_process["whole"])          # [rank] (sent, recv, msgs)
    # one HPL_pdtest in-process == the difference of xhpl's two launches, byte for byte,
    # but for HPL_pdinfo's broadcast of the sizes, one int longer with two of them: the
    # root (rank 0) sends it to ranks 1 and 2, rank 2 forwards it to rank 3
    assert counted.traffic.msgs_sent.tolist() == whole[:, 2].tolist()
    assert (counted.traffic.bytes_sent - whole[:, 0]).tolist() == [8, 0, 4, 0]
    assert (counted.traffic.bytes_recv - whole[:, 1]).tolist() == [0, 4, 4, 4]
    # the factorization alone (what the record counts) is all of it but the set-up's
    # all-reduce and the residual check: O(N) words per rank
    factor = np.array(in_process["factor"])
    extra = whole - factor
    assert (extra[:, :2] >= 0).all() and (extra[:, :2] < 8 * 4 * N).all(), extra
    assert factor[:, 1].min() > 10 * extra[:, 1].max()
    assert in_process["verdict"] == "PASSED" and in_process["residual"] < 0.1


@needs_hpl
def test_cli_record_counts_one_factorization_beside_2d(in_process):
    args = ["lu", "--n", str(N), "--nb", str(NB), "--grid", f"{PR}x{PC}", "--reps", "2",
            "--warmup", "1"]
    hpl, = run_cli_records(4, args + ["--algo", "hpl"])
    ours, = run_cli_records(4, args + ["--algo", "2d"])
    assert hpl["algo"] == "hpl"
    for key in ("n", "nb", "grid"):
        assert hpl["params"][key] == ours["params"][key]
    assert hpl["params"]["grid"] == [PR, PC, 1]
    factor = np.array(in_process["factor"])
    wire = hpl["traffic"]["wire"]
    assert wire["per_rank_bytes_sent"] == factor[:, 0].tolist()   # every rep the same
    assert wire["per_rank_bytes_recv"] == factor[:, 1].tolist()
    assert wire["msgs_sent"]["max"] == factor[:, 2].max()
    assert "HPL sends" in hpl["traffic"]["logical_unavailable"]
    library = hpl["library"]
    assert library["name"] == "HPL" and library["version"].startswith("HPL 2.0")
    assert "triangular solve" in library["times"] and len(library["times_s"]) == 2
    flops = 2 / 3 * N**3 + 1.5 * N**2
    assert library["gflops"] == pytest.approx(flops / np.median(library["times_s"]) / 1e9)
    # HPL's own time lies within the runner's (which adds the barrier and the call)
    assert min(library["times_s"]) <= hpl["time_s"]["max"] + 1e-3
    verify = hpl["verify"]
    assert verify["passed"] and verify["library_verdict"] == "PASSED"
    assert verify["value"] == pytest.approx(
        verify["r_inf"] / (verify["eps"] * (verify["a_inf"] * verify["x_inf"] + verify["b_inf"])
                           * N))
    assert verify["eps"] == 2.0**-53                      # HPL's eps, half NumPy's
    phases = hpl["time_by_phase"]
    assert phases["phases"] == ["panel", "swap", "update", "solve", "other"]
    totals = sum(np.array(phases["per_rank"][p]) for p in phases["phases"])
    assert totals == pytest.approx(phases["total_per_rank"])
    assert hpl["model"] is None


@pytest.mark.mpi   # the sweep's runs (np: 2 in its file) launch mpiexec
@needs_hpl
def test_sweep_runs_hpl_beside_2d(tmp_path):
    spec = tmp_path / "hpl.yaml"
    spec.write_text("out: %s\ndefaults: {np: 2, reps: 1, warmup: 0}\n"
                    "runs:\n  - command: lu\n    args: {algo: [2d, hpl], n: 512, nb: 32}\n"
                    % (tmp_path / "sweep.jsonl"))
    done = subprocess.run([sys.executable, "-m", "linalg_io", "sweep", str(spec)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    from linalg_io.records import read_records

    records = read_records([tmp_path / "sweep.jsonl"])
    assert sorted(r["algo"] for r in records) == ["2d", "hpl"]
    assert all(r["verify"]["passed"] for r in records)
    hpl = next(r for r in records if r["algo"] == "hpl")
    assert hpl["nranks"] == 2 and hpl["params"]["grid"] == [1, 2, 1]


def test_missing_library_exit_3_and_says_where_it_looked(monkeypatch):
    result = run_cli(2, ["lu", "--algo", "hpl", "--n", "64", "--hpl",
                         "/nonexistent/libhpl.so"], check=False)
    assert result.returncode == 3
    assert "--hpl /nonexistent/libhpl.so: no such file" in result.stderr
    assert "Traceback" not in result.stderr
    monkeypatch.setattr(hpl_lib, "default_location", lambda: "/nowhere/libhpl-linalg-io.so")
    monkeypatch.setattr(hpl_lib.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(EnvironmentProblem, match=r"HPL not found \(looked for /nowhere/libhpl-"
                                                 r"linalg-io\.so, then libhpl-linalg-io\.so "
                                                 r"through ldconfig and LD_LIBRARY_PATH\); "
                                                 r"run `make hpl`"):
        hpl_lib.find(None)


def test_a_library_without_hpl_is_an_environment_error():
    from mpi4py import MPI

    result = run_cli(2, ["lu", "--algo", "hpl", "--n", "64", "--hpl", MPI.__file__],
                     check=False)
    assert result.returncode == 3
    assert f"HPL {MPI.__file__} cannot be used" in result.stderr and "lio_hpl_grid" in result.stderr


@pytest.mark.parametrize("args,message", [
    (["--algo", "2d", "--hpl", "x.so"], "--hpl goes with --algo hpl"),
    (["--algo", "hpl", "--dist", "diagdom"], "--dist random only"),
])
def test_option_misuse_is_bad_input(args, message):
    result = run_cli(2, ["lu", "--n", "64"] + args, check=False)
    assert result.returncode == 2
    assert message in result.stderr


def test_hpl_dat_lines():
    text = hpl_dat([8192, 8192], 128, 2, 4).splitlines()
    assert len(text) == 31                     # HPL.dat's 31 lines
    assert text[4].split()[0] == "2" and text[5].split()[:2] == ["8192", "8192"]
    assert text[7].split()[0] == "128" and text[8].split()[0] == "0"   # row-major PMAP
    assert (text[10].split()[0], text[11].split()[0]) == ("2", "4")
    with pytest.raises(InputError):
        hpl_dat([], 64, 1, 1)


def test_output_parser():
    text = ("T/V                N    NB     P     Q               Time                 Gflops\n"
            "WR11C2R4        1000    64     2     2               0.13              5.121e+00\n"
            "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=        0.0036148 ...... PASSED\n"
            "WR11C2R4        2000    64     2     2               1.50              3.500e+00\n"
            "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=       17.5000000 ...... FAILED\n")
    first, second = parse_output(text)
    assert (first.n, first.nb, first.p, first.q, first.time_s, first.gflops) == \
        (1000, 64, 2, 2, 0.13, 5.121)
    assert first.scaled_residual == 0.0036148 and first.passed
    assert second.n == 2000 and second.passed is False


def test_monitoring_dump_reader(tmp_path):
    prefix = tmp_path / "mon"
    lines = {0: ["E\t0\t1\t100 bytes\t2 msgs sent\t0,1", "E\t0\t2\t40 bytes\t1 msgs sent",
                 "C\t0\t1\t60 bytes\t12 msgs sent"],
             1: ["E\t1\t0\t7 bytes\t1 msgs sent", "E\t1\t1\t999 bytes\t3 msgs sent"],
             2: ["# POINT TO POINT"]}
    for rank, text in lines.items():
        Path(f"{prefix}.{rank}.prof").write_text("\n".join(text) + "\n")
    traffic = read_dump(str(prefix), 3)
    assert traffic.bytes_sent.tolist() == [140, 7, 0]        # self-sends and C lines out
    assert traffic.msgs_sent.tolist() == [3, 1, 0]
    assert traffic.bytes_recv.tolist() == [7, 100, 40]
    with pytest.raises(EnvironmentProblem, match="wrote 3 of 4 files"):
        read_dump(str(prefix), 4)


def test_report_labels_every_library_with_its_version():
    import pandas as pd

    from linalg_io.report.tables import libraries

    frame = pd.DataFrame({"params.library_version": ["HPL 2.0 (hpcc-1.5.0)", None, None],
                          "params.scalapack_lib": [None, "/usr/lib/libscalapack-openmpi.so.2.2",
                                                   None],
                          "git_commit": ["b57b839aa", "b57b839aa", "b57b839aa"]})
    assert libraries(frame).tolist() == ["HPL 2.0 (hpcc-1.5.0)",
                                         "ScaLAPACK libscalapack-openmpi.so.2.2",
                                         "linalg-io b57b839"]
