"""A user's own Open MPI monitoring (`--mca pml_monitoring_enable 1 --mca
pml_monitoring_enable_output 3 --mca pml_monitoring_filename F`) is left as it was: `lu`
leaves Open MPI's per-rank dump files F.<rank>.prof, as `info` does, and its record
says why it has no wire counts of its own."""

import pytest
from mpi4py import MPI
from mpi_harness import run_job

from linalg_io.launch.relaunch import (
    find_mpiexec,
    mpi_environment,
    mpiexec_command,
    mpiexec_flavour,
)
from linalg_io.records import read_records


@pytest.mark.skipif(MPI.get_vendor()[0] != "Open MPI", reason="Open MPI's monitoring only")
def test_lu_keeps_the_users_whole_run_dump(tmp_path):
    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    dump, out = tmp_path / "dump", tmp_path / "r.jsonl"
    command = mpiexec_command(2, ["-m", "linalg_io", "lu", "--n", "128", "--reps", "1",
                                  "--warmup", "0", "--quiet", "--out", str(out)],
                              flavour, mpiexec)
    command[1:1] = ["--mca", "pml_monitoring_enable", "1", "--mca",
                    "pml_monitoring_enable_output", "3", "--mca", "pml_monitoring_filename",
                    str(dump)]
    run_job(command, mpi_environment(1, flavour), timeout=120)
    dumps = sorted(p.name for p in tmp_path.glob("dump.*.prof"))
    assert dumps == ["dump.0.prof", "dump.1.prof"]
    assert "# POINT TO POINT" in (tmp_path / "dump.0.prof").read_text()
    (record,) = read_records([out])
    assert record["verify"]["passed"] and record["traffic"]["wire"] is None
    assert "pml_monitoring_enable_output=3" in record["traffic"]["wire_unavailable"]
