"""Faults, with real mpiexec: signals to the `--np` launcher and to its mpiexec, a full
disk under a records file, and ranks started with different command lines.

Signals: a 2-rank LU is signalled in its warm-up; every rank must be gone within 2 s,
the launcher exits 128 + the signal with one line (no traceback) and the records file
stays empty. SIGKILL of the launcher must take the job with it (parent-death signal);
SIGKILL of mpiexec must end the launcher with one line and a non-zero exit.
Full disk: a 64 KiB tmpfs (root only). Command lines: an MPMD launch whose two ranks
differ in --reps must refuse in one line, exit 2, instead of hanging.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mpi_harness import run_cli, run_job

from linalg_io.launch.relaunch import (
    find_mpiexec,
    mpi_environment,
    mpiexec_command,
    mpiexec_flavour,
)
from linalg_io.records import append_record

PROGRESS = ("  set-up", "  warm-up", "  rep ")


def _children(pid: int) -> list[int]:
    """The live (not zombie) processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Launch:
    """`linalg-io lu --np 2 ...` in the background, its stderr collected line by line."""

    def __init__(self, out: Path) -> None:
        command = [sys.executable, "-m", "linalg_io", "lu", "--np", "2", "--n", "3072",
                   "--warmup", "1", "--reps", "10", "--out", str(out)]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def computing(self, timeout: float = 90) -> tuple[int, list[int]]:
        """Once both ranks have run 1 s of CPU time (past start-up, into the LU):
        (mpiexec's pid, the ranks' pids)."""
        end = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.lines
            assert time.monotonic() < end, "the ranks did not start computing"
            mpiexec = _children(self.process.pid)
            ranks = _children(mpiexec[0]) if mpiexec else []
            if len(ranks) == 2 and min(_cpu_seconds(pid) for pid in ranks) >= 1.0:
                return mpiexec[0], ranks
            time.sleep(0.05)

    def finish(self) -> tuple[int, list[str]]:
        code = self.process.wait(timeout=30)
        self.reader.join(timeout=10)
        return code, [line for line in self.lines if not line.startswith(PROGRESS)]


def _gone_within(pids: list[int], seconds: float) -> float:
    start = time.monotonic()
    while any(_alive(pid) for pid in pids):
        elapsed = time.monotonic() - start
        assert elapsed < seconds, [pid for pid in pids if _alive(pid)]
        time.sleep(0.02)
    return time.monotonic() - start


@pytest.mark.mpi   # through the --np launcher (Launch) or a sweep's points
@pytest.mark.alone   # the ranks gone within 2 s
@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                          (signal.SIGHUP, 129)])
def test_signal_to_launcher_ends_every_rank(tmp_path, signum, code):
    out = tmp_path / "r.jsonl"
    launch = Launch(out)
    mpiexec, ranks = launch.computing()
    launch.process.send_signal(signum)
    _gone_within(ranks + [mpiexec], 2.0)
    exit_code, lines = launch.finish()
    assert exit_code == code
    assert lines == [(f"linalg-io: interrupted by {signum.name}: the job's ranks were ended, "
                      "no record of the run written")], launch.lines
    assert not out.exists() or out.read_bytes() == b""


@pytest.mark.mpi   # through the --np launcher (Launch) or a sweep's points
@pytest.mark.alone   # the ranks gone within 2 s
def test_sigkill_of_launcher_takes_the_job(tmp_path):
    launch = Launch(tmp_path / "r.jsonl")
    mpiexec, ranks = launch.computing()
    launch.process.kill()
    _gone_within(ranks + [mpiexec], 2.0)
    assert launch.process.wait(timeout=10) == -signal.SIGKILL
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.mpi   # through the --np launcher (Launch) or a sweep's points
@pytest.mark.alone   # the ranks gone within 2 s
def test_sigkill_of_mpiexec_is_one_line(tmp_path):
    launch = Launch(tmp_path / "r.jsonl")
    mpiexec, ranks = launch.computing()
    os.kill(mpiexec, signal.SIGKILL)
    _gone_within(ranks, 2.0)
    exit_code, lines = launch.finish()
    assert exit_code == 128 + signal.SIGKILL
    assert lines == [("linalg-io: error: mpiexec was killed by SIGKILL before the ranks "
                      "finished (the job was killed or aborted)")], launch.lines
    assert not (tmp_path / "r.jsonl").exists()


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs holding one record in r.jsonl and a filler that takes every other
    free page (root only; skipped where mount fails). Yields (records file, its bytes)."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a 64 KiB tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                              str(mount_point)], capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"mount -t tmpfs failed here: {mounted.stderr.strip()}")
    try:
        records = mount_point / "r.jsonl"
        # an earlier record that all but fills its page: a new one cannot fit the rest
        records.write_text(json.dumps({"schema": 1, "note": "x" * 4000}) + "\n")
        filler = os.open(mount_point / "filler", os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):
            while os.write(filler, b"\0" * 512):
                pass
        os.close(filler)
        yield records, records.read_bytes()
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_failed_append_leaves_the_old_file(full_disk):
    records, before = full_disk
    with pytest.raises(OSError):
        append_record(records, {"schema": 1, "pad": "x" * 4096})
    assert records.read_bytes() == before


def test_run_onto_a_full_disk_exits_2_with_the_file_unchanged(full_disk):
    records, before = full_disk
    result = run_cli(1, ["tsgemm", "--variant", "tsm2r", "--m", "256", "--n", "4", "--k", "4",
                         "--reps", "1", "--warmup", "0", "--quiet", "--out", str(records)],
                     check=False)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"linalg-io: error: cannot append the record to {records}")
    assert records.read_bytes() == before


@pytest.mark.mpi   # through the --np launcher (Launch) or a sweep's points
def test_sweep_onto_a_full_disk_keeps_the_file(full_disk, tmp_path):
    records, before = full_disk
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"out: {records}\ndefaults: {{np: 1, reps: 1, warmup: 0}}\nruns:\n"
                     "  - command: tsgemm\n    args: {variant: tsm2r, m: 256, n: 4, k: 4}\n")
    result = subprocess.run([sys.executable, "-m", "linalg_io", "sweep", str(sweep)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result
    assert "cannot append the record" in result.stdout + result.stderr
    assert records.read_bytes() == before
    assert sorted(p.name for p in records.parent.iterdir()) == ["filler", "r.jsonl"]


def test_ranks_with_different_command_lines_refuse_in_one_line(tmp_path):
    """mpiexec -n 1 linalg-io lu ... --reps 1 : -n 1 linalg-io lu ... --reps 3 hung before."""
    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    out = tmp_path / "r.jsonl"
    common = ["-m", "linalg_io", "lu", "--n", "256", "--out", str(out)]
    command = (mpiexec_command(1, common + ["--reps", "1"], flavour, mpiexec)
               + [":", "-n", "1", sys.executable, "-m", "mpi4py"] + common + ["--reps", "3"])
    result = run_job(command, mpi_environment(1, flavour), timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    ours = [line for line in result.stderr.splitlines() if line.startswith("linalg-io")]
    assert ours == [(f"linalg-io: error: the ranks were started with different command lines "
                    f"(ranks 1 differ from rank 0's 'linalg-io lu --n 256 --out {out} --reps 1'"
                    "): give every rank the same arguments")], result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def test_the_teardown_pmix_line_is_dropped():
    """prterun's PMIx server may print PMIX_ERR_UNREACH while ranks leave after an agreed
    error: the launcher keeps the error line alone."""
    import io

    from linalg_io.launch.output import relay_stderr

    out = io.BytesIO()
    relay_stderr(io.BytesIO(b"linalg-io: error: --nb must lie in 1..N = 64, got 100\n"
                            b"[vm:11538] PMIX ERROR: PMIX_ERR_UNREACH in file "
                            b"src/server/pmix_server.c at line 3146\n  rep 1/5: 2.0 s\n"), out)
    assert out.getvalue() == (b"linalg-io: error: --nb must lie in 1..N = 64, got 100\n"
                              b"  rep 1/5: 2.0 s\n")
