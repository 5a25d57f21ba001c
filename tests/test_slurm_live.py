"""The Slurm path for real: a local one-node Slurm (tests/slurm/local_slurm.sh), every
template in slurm/ rendered, submitted with sbatch and checked, srun without PMIx,
scancel of a sweep and of a single run, --resume after resubmission, salloc + srun, the
time limit of a sweep and of a single run. (Two nodes: tests/test_slurm_two_nodes.py.)

The fixture starts the local Slurm where it can (root and apt-get, or Slurm already
installed) and stops it after this file; elsewhere every test here skips and says why,
unless LINALG_IO_REQUIRE_SLURM is set (the CI), where that is a failure.
The GPU templates run with ``--set backend=cpu``: their kernels on the CPU (a stand-in
where no GPU exists), Slurm's GPUs being the fixture's device-less ones.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_harness import ENV, SCRIPT, output, processes_of, records, render, submit, wait, wait_for


def _why_not() -> str | None:
    """Why the local Slurm cannot run here (None: it can)."""
    if not shutil.which("bash"):
        return "no bash"
    if os.geteuid() != 0:
        return "not root: the local Slurm runs its daemons as root"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "Slurm is not installed and there is no apt-get to install it"
    return None


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """The local Slurm: started for this module, unless it ran already (.ci/run starts
    it, and stops it when it ends), and stopped after it unless another module still
    uses it. The modules on it (this one, tests/test_reframe.py) may run at once on two
    pytest-xdist workers: each holds a shared lock on a file of the run's folder (the
    workers' parent) while it uses the Slurm, and the start and the stop take it
    exclusively; the one that ends last, the others gone, stops what the run started."""
    reason = _why_not()
    if reason:
        if os.environ.get("LINALG_IO_REQUIRE_SLURM"):
            pytest.fail(f"LINALG_IO_REQUIRE_SLURM is set but {reason}")
        pytest.skip(f"no local Slurm: {reason}")
    run_folder = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_folder = run_folder.parent
    started_here = run_folder / "local_slurm.started"
    with open(run_folder / "local_slurm.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        running = subprocess.run([str(SCRIPT), "status"], capture_output=True, timeout=60,
                                 check=False).returncode == 0
        if not running:
            started = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True,
                                     timeout=900, check=False)
            if started.returncode != 0:
                pytest.fail(f"local Slurm did not start: {started.stderr[-2000:]}")
            started_here.touch()
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield
        try:   # no other module on it now (else its own teardown stops it)
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        if started_here.exists():
            subprocess.run([str(SCRIPT), "stop"], capture_output=True, timeout=120, check=False)
            started_here.unlink()


def check_records(path: Path, job: str, count: int, tasks: str = "4") -> list[dict]:
    """`count` records, each PASSED and naming its Slurm job, node, tasks and CPUs."""
    found = records(path)
    assert len(found) == count, [r.get("command") for r in found]
    node = subprocess.run(["hostname", "-s"], capture_output=True, text=True,
                          check=True).stdout.strip()
    for record in found:
        assert record["verify"]["passed"], record["verify"]
        assert record["slurm"]["job_id"] == job
        assert (record["slurm"]["nodelist"], record["slurm"]["tasks_per_node"],
                record["slurm"]["cpus_per_task"]) == (node, tasks, 1)
        # 4 ranks on this machine's cores (fewer than 4 where the CI has 2)
        assert record["oversubscribed"] == (int(tasks) > (os.cpu_count() or 1))
    return found


def test_every_template_runs_to_completion(slurm, tmp_path):
    sweep = tmp_path / "points.yaml"
    sweep.write_text("defaults: {np: 2, reps: 1, warmup: 0}\nruns:\n"
                     "  - command: lu\n    args: {algo: 2d, n: [128, 192], nb: 32}\n")
    jobs = {
        "single": render("single", "--set",
                         "args=lu --algo 2d --n 256 --nb 32 --grid 2x2 --reps 1"),
        "lu_sweep": render("lu_sweep", "--set", "sizes=256", "--set", "reps=1"),
        # GPU templates: their kernels on the CPU (no GPU here), Slurm's GPUs the fixture's
        "gpu_tsgemm": render("gpu_tsgemm", "--set", "backend=cpu", "--set", "m=4096",
                             "--set", "reps=1"),
        "sptrsv_multigpu": render("sptrsv_multigpu", "--set", "backend=cpu",
                                  "--set", "matrix=lap2d:32", "--set", "reps=1"),
        "sweep": render("sweep", "--ntasks-per-node", "2", "--set", f"sweep={sweep}"),
        # one node: it runs, without the inter-node link (two nodes:
        # tests/test_slurm_two_nodes.py)
        "calibrate": render("calibrate", "--ntasks-per-node", "2", "--set", "reps=1"),
    }
    ids = {name: submit(script, tmp_path) for name, script in jobs.items()}
    expected = {"single": 1, "lu_sweep": 2, "gpu_tsgemm": 2, "sptrsv_multigpu": 2, "sweep": 2}
    for name, job in ids.items():
        fields = wait(job)
        assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), \
            (name, output(tmp_path, job))
        if name == "calibrate":
            machine = json.loads((tmp_path / "machine.json").read_text())
            assert machine["alpha_s"] > 0 and machine["beta_s_per_byte"] > 0, machine
            continue
        tasks = "2" if name == "sweep" else "4"
        check_records(tmp_path / "results" / f"{name}.jsonl", job, expected[name], tasks)


def test_srun_without_pmix_stops_with_one_line(slurm, tmp_path):
    done = subprocess.run(["srun", "--mpi=none", "-n", "4", sys.executable, "-m", "linalg_io",
                           "lu", "--n", "64", "--grid", "2x2"], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=120, check=False)
    ours = [line for line in done.stderr.splitlines() if line.startswith("linalg-io")]
    assert done.returncode == 3 and len(ours) == 1, done.stderr
    assert "one of 4 tasks" in ours[0] and "srun --mpi=pmix" in ours[0] \
        and "MpiDefault=pmix" in ours[0]
    assert "grid" not in done.stderr


def test_salloc_srun_and_info(slurm, tmp_path):
    command = ["salloc", "-n", "4", "--cpus-per-task", "1", "bash", "-c",
               (f"srun --mpi=pmix {sys.executable} -m linalg_io lu --n 128 --nb 32 --grid 2x2 "
                f"--reps 1 --out {tmp_path}/lu.jsonl && "
                f"srun --mpi=pmix {sys.executable} -m linalg_io info --json > {tmp_path}/info.json"
                " && echo job=$SLURM_JOB_ID")]
    done = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    job = done.stdout.split("job=")[1].split()[0]
    (record,) = check_records(tmp_path / "lu.jsonl", job, 1)
    assert record["nranks"] == 4 and record["params"]["grid"][:2] == [2, 2]
    info = json.loads((tmp_path / "info.json").read_text())
    assert info["ranks"] == 4 and info["slurm"]["job_id"] == job
    assert (info["slurm"]["nodes"], info["slurm"]["tasks_per_node"],
            info["slurm"]["cpus_per_task"]) == (1, "4", 1)


def test_scancel_of_a_sweep_then_resume(slurm, tmp_path):
    sweep = tmp_path / "points.yaml"
    sweep.write_text("defaults: {np: 4, reps: 2, warmup: 0}\nruns:\n"
                     "  - command: lu\n    args: {algo: 2d, n: [256, 288, 320, 640], nb: 32}\n")
    out = tmp_path / "results" / "sweep.jsonl"
    script = render("sweep", "--set", f"sweep={sweep}", "--set", f"out={out}")
    job = submit(script, tmp_path)
    # cancel while the last point (the long one) runs, after the others wrote their records
    wait_for(lambda: len(records(out)) == 3 and "[4/4]" in output(tmp_path, job), 200,
             "fourth point started")
    time.sleep(1.0)
    subprocess.run(["scancel", job], env=ENV, check=True)
    fields = wait(job)
    text = output(tmp_path, job)
    assert fields["JobState"] == "CANCELLED" and "[4/4]" in text and "interrupted" in text, text
    assert "4 points: 3 passed, 0 failed, 0 skipped" in text, text   # the sweep's summary
    assert fields["ExitCode"] == "143:0", fields["ExitCode"]
    check_records(out, job, 3)   # whole records, none of the cut point
    wait_for(lambda: not processes_of(str(sweep)) and not processes_of(str(out)), 30,
             "end of every rank")
    # resubmitted: only the point without a record runs
    again = submit(script, tmp_path)
    fields = wait(again)
    text = output(tmp_path, again)
    assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), text
    assert text.count("skipped (recorded in") == 3 and "4 points: 1 passed, 0 failed, 3 skipped" \
        in text, text
    found = records(out)
    assert sorted(r["params"]["n"] for r in found) == [256, 288, 320, 640]
    assert found[-1]["slurm"]["job_id"] == again


def test_scancel_of_a_single_run(slurm, tmp_path):
    out = tmp_path / "results" / "single.jsonl"
    script = render("single", "--set", "args=lu --algo 2d --n 1024 --nb 32 --grid 2x2 --reps 30",
                    "--set", f"out={out}")
    job = submit(script, tmp_path)
    # the 4 ranks running (a queue ahead of the job, or a fast set-up, do not matter)
    wait_for(lambda: len(processes_of(str(out))) >= 4, 180, "4 ranks running")
    time.sleep(2.0)
    subprocess.run(["scancel", job], env=ENV, check=True)
    fields = wait(job)
    assert (fields["JobState"], fields["ExitCode"]) == ("CANCELLED", "143:0"), fields
    assert records(out) == []   # no partial record
    wait_for(lambda: not processes_of(str(out)), 30,
             "end of every rank")


@pytest.fixture(scope="module")
def time_limited(slurm, tmp_path_factory):
    """The two jobs of the time-limit tests, submitted together: slurmctld sends --signal's
    signal (and ends jobs at their limit) on a timer of its own, every 30 s, so both
    wait for one tick instead of one each. The templates ask --exclusive, which would
    run them one after the other; sbatch's --oversubscribe (the command line wins)
    lets them share the node, 4 of its 8 CPUs each. Each job's folder, id and records
    file."""
    jobs = {}
    sweep_folder = tmp_path_factory.mktemp("limited_sweep")
    sweep = sweep_folder / "points.yaml"
    sizes = ", ".join(str(256 + i) for i in range(30))
    sweep.write_text("defaults: {np: 4, reps: 3, warmup: 0}\nruns:\n"
                     f"  - command: lu\n    args: {{algo: 2d, n: [{sizes}], nb: 32}}\n")
    out = sweep_folder / "results" / "sweep.jsonl"
    # a 1-minute limit, the sweep signalled 45 s ahead (Slurm may signal a little early)
    script = render("sweep", "--time", "1", "--set", "signal_s=45", "--set", f"sweep={sweep}",
                    "--set", f"out={out}")
    jobs["sweep"] = (sweep_folder, submit(script, sweep_folder, "--oversubscribe"), out)
    single_folder = tmp_path_factory.mktemp("limited_single")
    out = single_folder / "results" / "single.jsonl"
    # a run of minutes (1000 repetitions) with a 1-minute limit, its ranks signalled 45 s
    # ahead of it (Slurm may signal a little early)
    script = render("single", "--time", "1", "--set", "signal_s=45", "--set",
                    "args=lu --algo 2d --n 1024 --nb 32 --grid 2x2 --reps 1000",
                    "--set", f"out={out}")
    jobs["single"] = (single_folder, submit(script, single_folder, "--oversubscribe"), out)
    yield jobs
    subprocess.run(["scancel", *(job for _, job, _ in jobs.values())], env=ENV, check=False)


def test_time_limit_ends_a_sweep_like_scancel(time_limited):
    folder, job, out = time_limited["sweep"]
    fields = wait(job, timeout=120)
    text = output(folder, job)
    # the sweep ended itself before the limit: its summary, 143, whole records only
    assert (fields["JobState"], fields["ExitCode"]) == ("FAILED", "143:0"), (fields, text)
    assert "interrupted" in text and "30 points:" in text, text
    passed = int(text.split("30 points: ")[1].split()[0])
    check_records(out, job, passed)
    wait_for(lambda: not processes_of(str(out)), 30, "end of every rank")


def test_time_limit_ends_a_single_run_like_scancel(time_limited):
    folder, job, out = time_limited["single"]
    fields = wait(job, timeout=120)
    # ended by the signal before the limit (TIMEOUT had it not come): 143, no record
    assert (fields["JobState"], fields["ExitCode"]) == ("FAILED", "143:0"), \
        (fields, output(folder, job))
    assert records(out) == []
    wait_for(lambda: not processes_of(str(out)), 30, "end of every rank")
