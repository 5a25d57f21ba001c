"""Bad input, table-driven: every family and command, each case its command line, the
exit code, the one line it must print on stderr (no usage text, no traceback) and a
records file it must leave byte for byte as it was.

LOCAL cases run in this process (`linalg_io.cli.main`): usage errors, which argparse
refuses before anything launches, and the commands that run without MPI (model,
report, sweep, slurm). MPI cases go through the `--np 2` launcher under real mpiexec
(errors found at start-up on the ranks, --quiet: no progress lines); they are few, each
costs a launch.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from linalg_io.cli import main

RECORD = {"schema": 1, "run_id": "earlier", "kernel": "lu", "note": "a record kept as it was"}

# (argv, exit code, a fragment of the one line); {records} is a records file holding one
# record, {note} a text note, {npy} a small .npy matrix, {tmp} a fresh directory
LOCAL = [
    # lu (every algorithm shares the parser): sizes, seeds, choices
    (["lu", "--n", "0"], 2, "argument --n: must be a positive integer"),
    (["lu", "--n", "abc"], 2, "argument --n: not an integer: 'abc'"),
    (["lu", "--n", "64", "--nb", "0"], 2, "argument --nb: must be a positive integer"),
    (["lu", "--n", "64", "--seed", "-1"], 2, "argument --seed: must be an integer in 0 .. 2^64-1"),
    (["lu", "--n", "64", "--seed", str(2**64)], 2, "argument --seed: must be an integer in"),
    (["lu", "--n", "64", "--mem", "inf"], 2, "argument --mem: must be a positive size, finite"),
    (["lu", "--algo", "qr", "--n", "64"], 2, "argument --algo: invalid choice: 'qr'"),
    (["lu", "--algo", "conflux", "--n", "64", "--mem", "1e400"], 2, "argument --mem: must be a"),
    (["lu", "--algo", "scalapack", "--n", "64", "--reps", "0"], 2, "argument --reps: must be"),
    (["lu", "--algo", "conflux", "--n", "64", "--input-layout", "scalapack:16x16",
      "--redist-mem", "0"], 2, "argument --redist-mem: must be a positive number"),
    (["lu", "--n", "1" + "0" * 30], 2, "argument --n: must be a positive integer up to 2^62"),
    # tsgemm
    (["tsgemm", "--m", "64", "--n", "4", "--k", "4"], 2, ("the following arguments are required: "
                                                        "--variant")),
    (["tsgemm", "--variant", "atb", "--m", "0", "--n", "4", "--k", "4"], 2, "argument --m: must"),
    (["tsgemm", "--variant", "atb", "--m", "64", "--n", "4", "--k", "4", "--dtype", "int8"], 2,
     "argument --dtype: invalid choice"),
    # sptrsv
    (["sptrsv", "--algo", "levelset"], 2, "the following arguments are required: --matrix"),
    (["sptrsv", "--matrix", "lap2d:8", "--nrhs", "0"], 2, "argument --nrhs: must be a positive"),
    (["sptrsv", "--matrix", "rand:100:0.1:5", "--seed", "-3"], 2, ("argument --seed: must be an "
                                                                  "integer in 0 .. 2^64-1")),
    # model lu / tsgemm / sptrsv
    (["model", "lu", "--n", "64", "--p", "0"], 2, "argument --p: not a rank count"),
    (["model", "lu", "--scan", "strong", "--n", "4096", "--p", "1:1099511627776",
      "--out", "{records}"], 2, "argument --p: '1:1099511627776': at most 1048576 ranks"),
    (["model", "lu", "--n", "4096", "--p", "16", "--mem", "1e400"], 2, "argument --mem: must"),
    (["model", "lu", "--scan", "weak", "--mem-per-rank", "inf", "--p", "4:16"], 2,
     "argument --mem-per-rank: must be a positive size, finite"),
    (["model", "lu", "--n", "64", "--p", "2,4"], 2, "--p 2,4: one rank count, or --scan"),
    (["model", "lu", "--n", "4096", "--p", "8", "--grid", "2x2x3"], 2,
     "grid 2x2x3 needs 12 ranks but the job has 8"),
    (["model", "lu", "--n", "64", "--p", "4:16", "--scan", "strong", "--out", "{note}"], 2,
     "its first line is not a linalg-io record"),
    (["model", "tsgemm", "--variant", "tsm2r", "--m", "1", "--n", "16", "--k", "16", "--p",
      "1000000000"], 2, "argument --p: '1000000000': at most 1048576 ranks"),
    (["model", "tsgemm", "--variant", "atb", "--m", str(2**62), "--n", "16", "--k", "16",
      "--p", "4"], 2, "A, B and C take 1.18e+21 bytes, beyond the 2^62"),
    (["model", "tsgemm", "--variant", "atb", "--m", "1" + "0" * 30, "--n", "16", "--k", "16",
      "--p", "4"], 2, "argument --m: must be a positive integer up to 2^62"),
    (["model", "tsgemm", "--variant", "atb", "--m", str(2**60), "--n", "16", "--k", "16",
      "--p", "4:8", "--scan", "weak", "--out", "{records}"], 2, "beyond the 2^62"),
    (["model", "sptrsv", "--matrix", "lap2d:8", "--p", "1000000000"], 2,
     "argument --p: '1000000000': at most 1048576 ranks"),
    (["model", "sptrsv", "--matrix", "lap2d:100000000", "--p", "4"], 2,
     "needs at least 462 PiB in this process"),
    (["model", "sptrsv", "--matrix", "rand:100:0.1:5", "--seed", str(2**64), "--p", "4"], 2,
     "argument --seed: must be an integer in 0 .. 2^64-1"),
    # pingpong, calibrate, info: usage
    (["pingpong", "--max-bytes", "inf"], 2, "argument --max-bytes: must be a positive size"),
    (["pingpong", "--min-bytes", "0"], 2, "argument --min-bytes: must be a positive size"),
    (["calibrate", "--reps", "0"], 2, "argument --reps: must be a positive integer"),
    (["info", "--threads", "0"], 2, "argument --threads: must be a positive integer"),
    (["info", "--np", "-2"], 2, "argument --np: must be a positive integer"),
    # report
    (["report", "{tmp}/missing.jsonl", "--out", "{tmp}/report"], 2, "no such results file"),
    (["report", "{note}", "--out", "{tmp}/report"], 2, "no linalg-io records in it"),
    (["report", "{npy}", "--out", "{tmp}/report"], 2, "not UTF-8 text"),
    (["report", "{records}"], 2, "the following arguments are required: --out"),
    # sweep
    (["sweep", "{tmp}/none.yaml"], 2, "none.yaml: no such sweep file"),
    (["sweep", "{tmp}/bad.yaml", "--out", "{records}"], 2, "not valid YAML"),
    (["sweep", "{tmp}/ok.yaml", "--out", "{note}"], 2, "its first line is not a linalg-io record"),
    # slurm render
    (["slurm", "render", "no_such_template"], 2, "no_such_template"),
    (["slurm", "render", "single", "--nodes", "0"], 2, "argument --nodes: must be a positive"),
    (["slurm", "render", "single", "--time", "soon"], 2, "--time 'soon': expected minutes"),
    (["slurm"], 2, "the following arguments are required: slurm_command"),
]

# under the --np 2 launcher: errors the ranks find at start-up (exit code, one line)
MPI = [
    (["lu", "--n", "64", "--nb", "100"], 2, "--nb must lie in 1..N = 64, got 100"),
    (["lu", "--algo", "conflux", "--n", "64", "--grid", "3x3x1"], 2, "3x3x1"),
    (["lu", "--algo", "scalapack", "--n", "64", "--scalapack-lib",
      "/nonexistent/libscalapack.so"], None, "--scalapack-lib /nonexistent/libscalapack.so"),
    (["lu", "--algo", "conflux", "--n", "64", "--input-layout", "scalapack:0x16"], 2,
     "scalapack:0x16"),
    (["lu", "--dist", "file", "--file", "{tmp}/missing.npy"], 2, "missing.npy does not exist"),
    (["lu", "--dist", "file", "--file", "{note}"], 2, "unknown format '.txt'"),
    (["lu", "--n", "3000000"], 2, "needs at least"),
    (["lu", "--n", "64", "--out", "{note}"], 2, "its first line is not a linalg-io record"),
    (["lu", "--n", "64", "--out", "{tmp}"], 2, "not a file"),
    (["tsgemm", "--variant", "atb", "--m", str(10**12), "--n", "16", "--k", "16"], 2,
     "needs at least"),
    (["tsgemm", "--variant", "atb", "--m", "64", "--n", "4", "--k", "4", "--dist", "2d"], 2,
     "--dist 2d applies to tsm2r only"),
    (["sptrsv", "--matrix", "lap2d:0"], 2, "lap2d:0"),
    (["sptrsv", "--matrix", "{tmp}/missing.mtx"], 2, "missing.mtx"),
    (["pingpong", "--max-bytes", "1T"], 2, ("pingpong --max-bytes 1099511627776 needs at least "
                                           "17 TiB per rank")),
    (["calibrate", "--write", "/nonexistent/dir/p.json"], 2, ("--write /nonexistent/dir/p.json: "
                                                             "cannot write there")),
]
WITH_OUT = {"lu", "tsgemm", "sptrsv", "pingpong"}   # MPI commands that take --out


@pytest.fixture
def workspace(tmp_path):
    import numpy as np

    tmp = tmp_path
    records = tmp / "records.jsonl"
    records.write_text(json.dumps(RECORD) + "\n")
    (tmp / "note.txt").write_text("my notes about the runs\n")
    np.save(tmp / "a.npy", np.eye(4))
    (tmp / "bad.yaml").write_text("runs: [{command: lu\n  np: 2")
    (tmp / "ok.yaml").write_text("defaults: {np: 1, reps: 1}\nruns:\n  - command: lu\n"
                                 "    args: {n: 64}\n")
    return {"records": str(records), "note": str(tmp / "note.txt"), "npy": str(tmp / "a.npy"),
            "tmp": str(tmp)}


def _fill(argv: list[str], workspace: dict) -> list[str]:
    return [word.format(**workspace) for word in argv]


def _unchanged(workspace: dict) -> None:
    assert Path(workspace["records"]).read_text() == json.dumps(RECORD) + "\n"
    assert Path(workspace["note"]).read_text() == "my notes about the runs\n"


def _one_line(stderr: str, fragment: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], stderr


@pytest.mark.parametrize("argv,code,fragment", LOCAL, ids=[" ".join(c[0])[:60] for c in LOCAL])
def test_local_bad_input(argv, code, fragment, workspace, capsys):
    try:
        result = main(_fill(argv, workspace))
    except SystemExit as stop:
        result = stop.code
    captured = capsys.readouterr()
    assert result == code, captured
    _one_line(captured.err, fragment)
    _unchanged(workspace)


@pytest.mark.parametrize("argv,code,fragment", MPI, ids=[" ".join(c[0])[:60] for c in MPI])
def test_mpi_bad_input(argv, code, fragment, workspace):
    argv = _fill(argv, workspace)
    if argv[0] in WITH_OUT and "--out" not in argv:
        argv += ["--out", workspace["records"]]
    result = subprocess.run([sys.executable, "-m", "linalg_io", *argv, "--np", "2", "--quiet"],
                            capture_output=True, text=True, timeout=120, check=False)
    if code is None:   # scalapack: 2 (input) or 3 (no ScaLAPACK here: environment)
        assert result.returncode in (2, 3), result
    else:
        assert result.returncode == code, result
    _one_line(result.stderr, fragment)
    _unchanged(workspace)
