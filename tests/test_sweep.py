"""Sweep: YAML checked against the CLI, cartesian expansion, failures, --resume, summary."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from synthetic_records import make_record

from linalg_io.cli import build_parser, main
from linalg_io.errors import InputError
from linalg_io.records import append_record, read_records
from linalg_io.sweep import (
    Launched,
    SweepPoint,
    launch_subprocess,
    load_sweep,
    point_key,
    record_key,
    run_sweep,
    words_key,
)

BENCH = Path(__file__).resolve().parent.parent / "bench" / "default.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def sweep_args(path: Path, out: Path | None = None, resume: bool = False,
               report: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(file=str(path), out=str(out) if out else None, resume=resume,
                              report=str(report) if report else None)


class FakeLauncher:
    """Stands in for `python -m linalg_io ...`: appends a record as rank 0 would.

    `exit_codes` maps a substring of the command line to the exit code of points
    whose command contains it; code 2 writes no record (bad input), 1 a failed one.
    """

    def __init__(self, exit_codes: dict[str, int] | None = None):
        self.exit_codes = exit_codes or {}
        self.commands: list[list[str]] = []

    def __call__(self, command: list[str], timeout: float | None) -> Launched:
        assert command[:3] == [sys.executable, "-m", "linalg_io"]
        argv = command[3:]
        self.commands.append(argv)
        line = " ".join(argv)
        code = next((c for text, c in self.exit_codes.items() if text in line), 0)
        if code in (0, 1):
            out = argv[argv.index("--out") + 1]
            nranks = int(argv[argv.index("--np") + 1])
            n = int(argv[argv.index("--n") + 1]) if "--n" in argv else 64
            params = {"n": n, "grid": [2, nranks // 2, 1], "derived": 0.123456789}
            append_record(out, make_record(
                kernel=argv[0], algo=argv[argv.index("--algo") + 1] if "--algo" in argv else "x",
                params=params, nranks=nranks, per_rank_sent=[n * 1e3] * nranks,
                model_per_rank=[n * 2e3] * nranks, per_rank_recv=[n * 1e3] * nranks,
                model_per_rank_recv=[n * 2e3] * nranks,
                wire_per_rank=([n * 1.5e3] * nranks, [n * 1.5e3] * nranks), passed=code == 0,
                command=["linalg-io"] + argv, run_id=f"run{len(self.commands)}"))
        return Launched(code, f"output of {line}\nlinalg-io: error: broken {code}\n")


GRID = """\
    out: {out}
    defaults: {{np: 2, reps: 2, warmup: 0}}
    runs:
      - command: lu
        np: [2, 4]
        args: {{algo: [2d, conflux], n: [64, 128], grid: auto}}
      - command: sptrsv
        reps: 1
        args: {{matrix: "lap2d:8", upper: true, tril: false}}
"""


def test_lists_expand_to_a_cartesian_grid_in_order(tmp_path):
    out, points = load_sweep(write(tmp_path, GRID.format(out="r.jsonl")))
    assert out == "r.jsonl"
    assert len(points) == 2 * 2 * 2 + 1
    assert points[0].argv == ("lu", "--algo", "2d", "--n", "64", "--grid", "auto",
                              "--reps", "2", "--warmup", "0", "--np", "2")
    assert points[0].label == "lu algo=2d n=64 grid=auto P=2"
    assert [(p.argv[2], p.argv[4], p.argv[-1]) for p in points[:8]] == [
        ("2d", "64", "2"), ("2d", "128", "2"), ("conflux", "64", "2"), ("conflux", "128", "2"),
        ("2d", "64", "4"), ("2d", "128", "4"), ("conflux", "64", "4"), ("conflux", "128", "4")]
    assert points[8].argv == ("sptrsv", "--matrix", "lap2d:8", "--upper",
                              "--reps", "1", "--warmup", "0", "--np", "2")
    assert points[8].label == "sptrsv matrix=lap2d:8 upper P=2"
    assert points[8].timeout is None


@pytest.mark.parametrize("text, message", [
    ("runs: []", "runs must be a non-empty list"),
    ("outt: x\nruns: [{command: lu, np: 2}]", r"unknown key\(s\) outt"),
    ("runs: [{command: lu, np: 2, nn: 3}]", r"runs\[0\]: unknown key\(s\) nn"),
    ("defaults: {np: 2, algo: 2d}\nruns: [{command: lu}]", r"defaults: unknown key\(s\) algo"),
    ("runs: [{command: qr, np: 2}]", "command must be one of lu, tsgemm, sptrsv"),
    ("runs: [{command: lu, np: 2, args: {nbb: 3}}]", "lu has no option --nbb"),
    ("runs: [{command: lu, np: 2, args: {algo: 3d}}]", "algo='3d' is not one of 2d, conflux"),
    ("runs: [{command: lu, np: 2, args: {n: -4}}]", "args.n=-4 is not valid"),
    ("runs: [{command: lu, np: 2, args: {n: abc}}]", "args.n='abc' is not valid"),
    ("runs: [{command: lu, np: 0}]", "np=0 is not valid"),
    ("runs: [{command: lu, np: 2, args: {n: true}}]", "must be a single number or string"),
    ("runs: [{command: sptrsv, np: 2, args: {matrix: a.mtx, upper: 1}}]", "upper is a flag"),
    ("runs: [{command: tsgemm, np: 2, args: {variant: atb, m: 8}}]", "needs --n, --k"),
    ("runs: [{command: lu, args: {n: 8}}]", "no np"),
    ("runs: [{command: lu, np: 2, args: {out: x.jsonl}}]", "sweep sets --out itself"),
    ("runs: [{command: lu, np: 2, args: {reps: 3}}]", "give reps beside args"),
    ("runs: [{command: lu, np: 2, timeout: -1}]", "timeout must be a positive number"),
    ("runs: [{command: lu, np: [], args: {n: 8}}]", r"runs\[0\]: np: an empty list"),
    ("runs: [{command: lu, np: 2, args: [n, 8]}]", "args: expected a mapping"),
    ("runs: [{command: lu\n  np: 2", "not valid YAML"),
    ("- just a list", "expected a mapping"),
])
def test_bad_sweep_files_are_input_errors(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        load_sweep(write(tmp_path, text))


def test_missing_sweep_file_exits_2(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: no such sweep file" in capsys.readouterr().err


def test_records_file_is_required(tmp_path):
    path = write(tmp_path, "runs: [{command: lu, np: 2}]")
    with pytest.raises(InputError, match="no records file"):
        run_sweep(sweep_args(path), launch=FakeLauncher())


def test_ranks_threads_suite_pairs_every_problem_on_two_cores():
    out, points = load_sweep(BENCH.with_name("ranks_threads.yaml"))
    assert out == "results/ranks_threads.jsonl"
    parser = build_parser()
    splits: dict[tuple, set] = {}
    for point in points:
        args = vars(parser.parse_args(list(point.argv) + ["--out", "x.jsonl"]))
        split = (args.pop("np"), args.pop("threads"))
        assert split[0] * split[1] == 2
        splits.setdefault(tuple(sorted((k, str(v)) for k, v in args.items())), set()).add(split)
    assert len(splits) == 6   # LU 2d and conflux at two N, TS-GEMM atb and tsm2l
    assert all(pair == {(2, 1), (1, 2)} for pair in splits.values())


def test_default_bench_suite_matches_the_command_line():
    out, points = load_sweep(BENCH)
    assert out == "results/default.jsonl"
    assert len(points) == 12
    parser = build_parser()
    for point in points:
        args = parser.parse_args(list(point.argv) + ["--out", "x.jsonl"])
        assert args.np == 4 and args.reps == 3 and args.warmup == 1
    kernels = [p.argv[0] for p in points]
    assert kernels == ["lu"] * 5 + ["tsgemm"] * 3 + ["sptrsv"] * 4
    assert ("--grid", "2x2x1") == points[2].argv[5:7] and "--nb" in points[3].argv
    assert [p.argv[p.argv.index("--objective") + 1] for p in points[3:5]] == ["time", "volume"]
    assert {p.argv[p.argv.index("--variant") + 1] for p in points if p.argv[0] == "tsgemm"} == \
        {"atb", "ab", "tsm2r"}


def test_sweep_runs_every_point_and_summarises(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    launcher = FakeLauncher()
    assert run_sweep(sweep_args(write(tmp_path, GRID.format(out=out))), launch=launcher) == 0
    assert len(launcher.commands) == 9
    # each point writes into a file of its own beside OUT; the sweep appends it to OUT
    point_file = str(tmp_path / f".r.jsonl.{os.getpid()}.point")
    assert all(c[-2:] == ["--out", point_file] for c in launcher.commands)
    assert not Path(point_file).exists()
    records = read_records([out])
    assert all(r["command"][-2:] == ["--out", str(out)] for r in records)
    assert [r["command"][1:-2] for r in records] == [list(p.argv) for p in
                                                     load_sweep(tmp_path / "sweep.yaml")[1]]
    text = capsys.readouterr().out
    assert "[1/9] lu algo=2d n=64 grid=auto P=2 ... PASSED" in text
    assert "[9/9] sptrsv matrix=lap2d:8 upper P=2 ... PASSED" in text
    assert "9 points: 9 passed, 0 failed, 0 skipped" in text
    summary = [line for line in text.splitlines() if line.startswith("lu ")]
    assert len(summary) == 8
    # n=128 on 4 ranks: received 128 kB per rank, model 256 kB; wire 192 kB each way
    # (the model's 4.5 and 4 MB); sent 128 kB; gflops = 1e9 / 0.5 s; the parameters as
    # asked, with the grid the run chose for 'auto'
    # (one number format per column: 4 significant digits for its smallest value)
    assert summary[5].split() == ["lu", "2d", "n=128", "grid=auto(2x2)", "4", "1", "0.5000",
                                  "2.000", "0.12800", "0.2560", "0.19200", "4.500", "0.19200",
                                  "4.000", "0.12800", "hpl_residual=0.25", "PASSED"]
    (last,) = [line for line in text.splitlines() if line.startswith("sptrsv ")]
    assert last.split()[:5] == ["sptrsv", "x", "matrix=lap2d:8", "upper", "2"]


def test_failures_do_not_stop_the_sweep_and_set_its_exit_code(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    launcher = FakeLauncher({"conflux --n 128": 1, "--np 4": 2})
    code = run_sweep(sweep_args(write(tmp_path, GRID.format(out=out))), launch=launcher)
    assert code == 2  # the worst: bad input (2) over verification failed (1)
    assert len(launcher.commands) == 9
    text = capsys.readouterr().out
    assert "[4/9] lu algo=conflux n=128 grid=auto P=2 ... FAILED" in text
    assert "[5/9] lu algo=2d n=64 grid=auto P=4 ... ERROR (exit 2: bad input)" in text
    assert "    | linalg-io: error: broken 2" in text
    assert "9 points: 4 passed, 5 failed, 0 skipped" in text
    assert "[8/9] lu algo=conflux n=128 grid=auto P=4 ... FAILED" in text
    assert len(read_records([out])) == 6  # 4 passed + 2 failed verification

    only_crash = tmp_path / "crash.jsonl"
    path = write(tmp_path, "runs: [{command: lu, np: 4, args: {n: 8}}]")

    def crash(command, timeout):  # exit 1 but no record: the run died before writing
        return Launched(1, "Traceback ...\nModuleNotFoundError: no module\n")

    assert run_sweep(sweep_args(path, out=only_crash), launch=crash) == 1
    assert "ERROR (exit 1, no record written)" in capsys.readouterr().out


def test_resume_skips_recorded_points_only(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    path = write(tmp_path, GRID.format(out=out))
    run_sweep(sweep_args(path), launch=FakeLauncher({"--np 4": 2}))
    capsys.readouterr()
    again = FakeLauncher()
    assert run_sweep(sweep_args(path, resume=True), launch=again) == 0
    assert [c[-3] for c in again.commands] == ["4"] * 4  # only the 4 points that failed
    text = capsys.readouterr().out
    assert f"[1/9] lu algo=2d n=64 grid=auto P=2 ... skipped (recorded in {out})" in text
    assert "9 points: 4 passed, 0 failed, 5 skipped" in text
    assert len([line for line in text.splitlines() if line.startswith("lu ")]) == 8
    third = FakeLauncher()
    assert run_sweep(sweep_args(path, resume=True), launch=third) == 0
    assert third.commands == []
    without_resume = FakeLauncher()
    run_sweep(sweep_args(path), launch=without_resume)
    assert len(without_resume.commands) == 9


def test_interrupt_stops_the_sweep_after_a_summary(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    path = write(tmp_path, "runs: [{command: lu, np: [2, 3, 4], args: {n: 8}}]")
    launcher = FakeLauncher()

    def interrupted_at_second(command, timeout):
        if launcher.commands:
            raise KeyboardInterrupt
        return launcher(command, timeout)

    assert run_sweep(sweep_args(path, out=out), launch=interrupted_at_second) == 130
    text = capsys.readouterr().out
    assert "[2/3] lu n=8 P=3 ... interrupted" in text and "[3/3]" not in text
    assert "3 points: 1 passed, 0 failed, 0 skipped" in text


def test_a_signal_between_points_says_interrupted(tmp_path, capsys):
    """A stop signal that lands while no point runs (a Slurm job signalled before its
    sweep started one, or between two) stops the sweep before the next point, and the
    output says so as it does for a point cut short."""
    from linalg_io.sweep import STOP

    out = tmp_path / "r.jsonl"
    path = write(tmp_path, "runs: [{command: lu, np: [2, 3, 4], args: {n: 8}}]")
    launcher = FakeLauncher()

    def signalled_after_first(command, timeout):
        launched = launcher(command, timeout)
        STOP.note(15)                       # SIGTERM, noted once the point had ended
        return launched

    assert run_sweep(sweep_args(path, out=out), launch=signalled_after_first) == 128 + 15
    text = capsys.readouterr().out
    assert "[2/3] lu n=8 P=3 ... interrupted before it started" in text, text
    assert "[3/3]" not in text and len(launcher.commands) == 1
    assert "3 points: 1 passed, 0 failed, 0 skipped" in text


def key_of(argv: list[str]) -> str:
    return point_key(SweepPoint(tuple(argv), " ".join(argv), None))


def test_resume_compares_the_options_a_record_holds(tmp_path):
    # the options a line sets, not its words: order and written-out defaults aside
    same = [["lu", "--n", "8", "--np", "2"], ["lu", "--np", "2", "--n", "8"],
            ["lu", "--n", "8", "--np", "2", "--algo", "2d", "--reps", "5"]]
    assert len({key_of(argv) for argv in same}) == 1
    assert key_of(["lu", "--n", "8", "--np", "2", "--reps", "4"]) != key_of(same[0])
    ran = make_record(command=["linalg-io", "lu", "--n", "8", "--np", "2", "--out", "x"],
                      nranks=2)
    assert ran["options"]["n"] == 8 and ran["options"]["nb"] == "auto"
    assert record_key(ran) == key_of(same[0])
    assert record_key({**ran, "nranks": 4}) != key_of(same[0])
    # a record without options (an older version's) compares by its words less --out
    older = {k: v for k, v in ran.items() if k not in ("options", "auto")}
    assert record_key(older) == words_key(same[0]) != key_of(same[0])
    out = tmp_path / "r.jsonl"
    append_record(out, make_record(command=["linalg-io", "lu", "--n", "8", "--np", "2",
                                            "--out", "/elsewhere/r.jsonl"], nranks=2))
    append_record(out, {**make_record(command=["linalg-io", "lu", "--n", "8", "--np", "3",
                                               "--out", str(out)], nranks=3),
                        "options": None})
    path = write(tmp_path, "runs: [{command: lu, np: [2, 3, 4], args: {n: 8}}]")
    launcher = FakeLauncher()
    run_sweep(sweep_args(path, out=out, resume=True), launch=launcher)
    assert [c[:5] for c in launcher.commands] == [["lu", "--n", "8", "--np", "4"]]


def test_report_after_the_sweep(tmp_path, monkeypatch):
    from linalg_io.report import plots

    monkeypatch.setattr(plots, "kernel_figures", lambda frame, kernel: {})  # tables only
    out = tmp_path / "r.jsonl"
    path = write(tmp_path, "runs: [{command: lu, np: [2, 4], args: {algo: 2d, n: 8}}]")
    assert run_sweep(sweep_args(path, out=out, report=tmp_path / "rep"),
                     launch=FakeLauncher()) == 0
    assert (tmp_path / "rep" / "index.html").exists()
    assert (tmp_path / "rep" / "lu.csv").read_text().count("\n") == 3
    nothing = tmp_path / "none.jsonl"
    failing = FakeLauncher({"lu": 2})
    assert run_sweep(sweep_args(path, out=nothing, report=tmp_path / "rep2"),
                     launch=failing) == 2
    assert not (tmp_path / "rep2").exists()


def test_subprocess_launcher_passes_exit_codes_and_kills_on_timeout():
    done = launch_subprocess([sys.executable, "-c", "print('hello'); raise SystemExit(3)"], 30)
    assert (done.returncode, done.output, done.timed_out) == (3, "hello\n", False)
    start = time.monotonic()
    child = ("import subprocess; print('started', flush=True); "
             "subprocess.run(['sleep', '30'])")
    slow = launch_subprocess([sys.executable, "-c", child], 1.0)
    assert slow.timed_out and "started" in slow.output
    assert time.monotonic() - start < 10  # the grandchild `sleep` died with its group


def test_resume_keeps_a_recorded_failure_and_the_table_shows_this_sweeps_records(tmp_path,
                                                                                  capsys):
    out = tmp_path / "r.jsonl"
    path = write(tmp_path, "runs: [{command: lu, np: [2, 4], args: {n: 8}}]")
    launcher = FakeLauncher({"--np 4": 1})
    assert run_sweep(sweep_args(path, out=out), launch=launcher) == 1
    capsys.readouterr()
    assert run_sweep(sweep_args(path, out=out, resume=True), launch=FakeLauncher()) == 1
    text = capsys.readouterr().out
    assert f"[2/2] lu n=8 P=4 ... skipped (recorded in {out}, FAILED there)" in text
    assert "2 points: 0 passed, 0 failed, 2 skipped" in text
    # a point that now fails without a record: no row from an older run stands for it
    launcher.exit_codes = {"--np 4": 2}   # (one launcher: its run ids stay distinct)
    assert run_sweep(sweep_args(path, out=out), launch=launcher) == 2
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("lu ")]
    assert len(rows) == 1 and " 2 " in rows[0]


def test_points_differing_beside_args_get_their_own_labels(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    path = write(tmp_path, "runs: [{command: lu, np: 2, threads: [1, 2], args: {n: 8}}]")
    assert run_sweep(sweep_args(path, out=out), launch=FakeLauncher()) == 0
    text = capsys.readouterr().out
    assert "[1/2] lu n=8 threads=1 P=2 ... PASSED" in text
    assert "[2/2] lu n=8 threads=2 P=2 ... PASSED" in text


def test_sigterm_ends_the_sweep_and_kills_the_running_point(tmp_path):
    """`timeout`, scancel or kill send SIGTERM: the point's whole session must die with
    the sweep (it used to run on and append records after the sweep had gone)."""
    marker, started = tmp_path / "still_running", tmp_path / "started"
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"out: {tmp_path / 'r.jsonl'}\n"
                     "runs: [{command: lu, np: 1, args: {n: 8}}]\n")
    child = (f"import subprocess, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
             "import test_sweep as t, linalg_io.sweep as s; "
             f"sys.exit(s.run_sweep(t.sweep_args({str(sweep)!r}), launch=lambda c, to: "
             f"s.launch_subprocess(['sh', '-c', 'touch {started}; sleep 3; touch {marker}'], "
             "None)))")
    process = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60   # the sweep's handler is up once its point runs
    while not started.exists():
        assert time.monotonic() < deadline and process.poll() is None, "the point never started"
        time.sleep(0.05)
    process.terminate()
    output, _ = process.communicate(timeout=30)
    time.sleep(3)
    assert process.returncode == 143, output
    assert "[1/1] lu n=8 P=1 ... interrupted" in output, output
    assert "1 points: 0 passed, 0 failed, 0 skipped" in output
    assert not marker.exists()
