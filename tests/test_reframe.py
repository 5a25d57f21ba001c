"""The ReFrame checks (linalg_io/reframe_checks, docs/REFRAME.md) run by ReFrame itself:
on the local scheduler with the venv's mpiexec, on the local one-node Slurm with
`srun --mpi=pmix` (4 tasks), and with a reference ten times tighter than the model,
which must fail and print the ratio. The Slurm test skips where the local Slurm cannot
run, unless LINALG_IO_REQUIRE_SLURM is set (the CI), where that is a failure
(the fixture of tests/test_slurm_live.py). The helpers of the checks' sanity are tested
on made-up records first: a rank one message off is found.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from slurm_harness import ENV
from test_slurm_live import slurm  # noqa: F401  (the fixture)

from linalg_io.reframe_checks import FILES

REFRAME = Path(sys.executable).parent / "reframe"
# the default parameters: LU 2d/auto, conflux/auto, conflux/2x1x2; TS-GEMM atb; SpTRSV x2
CASES = {"LinalgIOLU": 3, "LinalgIOTSGEMM": 1, "LinalgIOSpTRSV": 2}
PERF_VARS = ("time", "gflops", "recv_MB", "wire_sent_MB", "wire_recv_MB", "time_over_model",
             "recv_over_lower_bound")


def run_reframe(tmp_path: Path, config: str, *options: str, env=None, timeout=900,
                action: str = "-r"):
    if not REFRAME.exists():
        pytest.fail(f"no {REFRAME}: reframe-hpc is in the test extra (pip install -e '.[test]')")
    prefix = tmp_path / "rfm"
    # ReFrame polls its jobs ten times a second at first, then ever less often (down to
    # once in 10 s): at least twice a second here, so that no case waits long on a poll
    env = dict(env or os.environ, TMPDIR=str(tmp_path), RFM_POLL_RATE_MIN="2")
    return subprocess.run([str(REFRAME), "-C", str(FILES[config]), "-c", str(FILES["checks"]),
                           "--prefix", str(prefix), "--report-file", str(tmp_path / "report.json"),
                           *options, action],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def perflog(tmp_path: Path, system: str, partition: str) -> dict[str, list[dict]]:
    """Each check's performance log as rows {column: value}."""
    folder = tmp_path / "rfm" / "perflogs" / system / partition
    rows = {}
    for path in sorted(folder.glob("*.log")):
        header, *lines = path.read_text().splitlines()
        rows[path.stem] = [dict(zip(header.split("|"), line.split("|"), strict=True))
                           for line in lines]
    return rows


def check_passed(done, tmp_path: Path, system: str, partition: str) -> dict[str, list[dict]]:
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    total = sum(CASES.values())
    assert f"Ran {total}/{total} test case(s)" in out and "0 failure(s)" in out, out[-3000:]
    rows = perflog(tmp_path, system, partition)
    assert {name: len(found) for name, found in rows.items()} == CASES
    for found in rows.values():
        for row in found:
            assert row["result"] == "pass", row
            assert row["num_tasks"] == "4" and row["partition"] == partition
            for var in PERF_VARS:
                assert float(row[f"{var}_value"]) > 0, (var, row)
            ratio = float(row["time_over_model_value"])
            assert ratio == pytest.approx(float(row["time_value"]) / float(row["time_ref"]),
                                          rel=1e-3)
            # the wire figures are the model's to the byte (sanity) and so to its reference
            assert float(row["wire_recv_MB_value"]) == pytest.approx(
                float(row["wire_recv_MB_ref"]), abs=1e-6)
    return rows


@pytest.mark.mpi     # ReFrame's job script runs mpiexec
def test_checks_pass_on_the_local_scheduler_with_mpiexec(tmp_path):
    done = run_reframe(tmp_path, "local")
    rows = check_passed(done, tmp_path, "linalgio_local", "mpiexec")
    assert {row["algo"] for row in rows["LinalgIOSpTRSV"]} == {"levelset", "syncfree"}
    assert {(row["algo"], row["grid"]) for row in rows["LinalgIOLU"]} == \
        {("2d", "auto"), ("conflux", "auto"), ("conflux", "2x1x2")}


def test_checks_pass_on_the_local_slurm_with_srun(slurm, tmp_path):  # noqa: F811
    done = run_reframe(tmp_path, "slurm", env=ENV)
    rows = check_passed(done, tmp_path, "linalgio_slurm", "debug")
    # every case ran as a Slurm job of its own (the sanity matched the record's job id)
    jobs = {row["jobid"] for found in rows.values() for row in found}
    assert len(jobs) == sum(CASES.values()) and all(job.isdigit() for job in jobs)
    script = next((tmp_path / "rfm" / "output").rglob("rfm_job.sh")).read_text()
    assert "#SBATCH --ntasks=4" in script and "srun --cpus-per-task=1 --mpi=pmix" in script


@pytest.mark.mpi     # ReFrame's job script runs mpiexec
def test_a_reference_ten_times_tighter_fails_and_prints_the_ratio(tmp_path):
    """The LU 2D check with its time reference a tenth of the model's and no tolerance:
    a run slower than that fails, and ReFrame's message gives time / model."""
    done = run_reframe(tmp_path, "local", "-n", "LinalgIOLU.*algo=2d",
                       "-S", "reference_scale=0.1", "-S", "time_tolerance=0")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-3000:]
    assert "Ran 1/1 test case(s)" in out and "1 failure(s)" in out, out[-3000:]
    # the run itself was sound: only the performance stage failed
    assert "Failing phase: performance" in out and "failed to meet reference(s)" in out
    found = re.search(r"time_over_model=([0-9.]+) x, expected 0\.1 \(l=-inf, u=0\.1\)", out)
    assert found, out[-3000:]
    [row] = perflog(tmp_path, "linalgio_local", "mpiexec")["LinalgIOLU"]
    assert row["result"] == "fail" and row["time_over_model_ref"] == "0.1"
    assert float(found.group(1)) == float(row["time_over_model_value"]) > 0.1



def test_one_file_covers_a_scaling_study_through_parameters(tmp_path):
    """-P sets the parameters: ranks per node x N gives every LU case, and a grid that is
    not the ranks' is left out."""
    done = run_reframe(tmp_path, "local", "-n", "LinalgIOLU", "-P", "ranks_per_node=2,4",
                       "-P", "n=1024,2048", action="-l")
    assert done.returncode == 0, done.stderr[-2000:]
    cases = sorted(re.findall(r"^- LinalgIOLU %nodes=1 %ranks_per_node=(\d) "
                              r"%threads_per_rank=1 %algo=(\w+) %n=(\d+) %grid=(\S+) ",
                              done.stdout, flags=re.MULTILINE))
    expected = [(str(r), algo, str(n), grid) for r in (2, 4) for algo in ("2d", "conflux")
                for n in (1024, 2048) for grid in ("auto", "2x1x2")
                if not (grid == "2x1x2" and (algo == "2d" or r == 2))]
    assert cases == sorted(expected) and len(cases) == 10

# The sanity's helpers on a record made up here: what they find and what they let pass.
RECORD = {
    "nranks": 2, "verify": {"passed": True},
    "traffic": {"wire": {"per_rank_bytes_sent": [800.0, 400.0],
                         "per_rank_bytes_recv": [400.0, 800.0]}},
    "model": {"wire": {"per_rank_bytes_sent": [810.5, 400.0],
                       "per_rank_bytes_recv": [400.0, 810.5]},
              "given_pivots": {"wire": {"per_rank_bytes_sent": [800.0, 400.0],
                                        "per_rank_bytes_recv": [400.0, 800.0]}}},
}


def test_the_wire_sanity_takes_the_run_pivots_model_and_finds_a_rank_off():
    from linalg_io.reframe_checks import checks
    assert checks.wire_mismatches(RECORD) == []
    expected = copy.deepcopy(RECORD)
    del expected["model"]["given_pivots"]   # the expected-pivots model differs: found
    assert checks.wire_mismatches(expected) == ["rank 0 sent 800 B, model 810 B",
                                                "rank 1 recv 800 B, model 810 B"]
    off = copy.deepcopy(RECORD)
    off["traffic"]["wire"]["per_rank_bytes_recv"][1] = 808.0
    assert checks.wire_mismatches(off) == ["rank 1 recv 808 B, model 800 B"]
    none = copy.deepcopy(RECORD)
    none["traffic"] = {"wire": None, "wire_unavailable": "MPICH: no MPI_T counters"}
    assert checks.wire_mismatches(none) == ["no wire count: MPICH: no MPI_T counters"]


def test_the_record_reader_wants_exactly_one_record(tmp_path):
    from reframe.core.exceptions import SanityError

    from linalg_io.reframe_checks import checks
    with pytest.raises(SanityError, match="wrote no record"):
        checks.read_record(str(tmp_path))
    (tmp_path / checks.RECORD).write_text(json.dumps(RECORD) + "\n")
    assert checks.read_record(str(tmp_path)) == RECORD
    (tmp_path / checks.RECORD).write_text((json.dumps(RECORD) + "\n") * 2)
    with pytest.raises(SanityError, match="has 2 records, not 1"):
        checks.read_record(str(tmp_path))
