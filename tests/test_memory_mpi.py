"""Memory refusals on real mpiexec jobs: every rank refuses a size that cannot fit, at
once (the closed forms and the model commands: test_memory.py)."""

import time

import pytest
from linalg_io.models.memory import (
    format_bytes,
    physical_memory,
)
from mpi_harness import run_cli


@pytest.mark.parametrize("args, start", [
    (["lu", "--algo", "conflux", "--n", "10000000"],
     "lu --algo conflux N=10000000 on 2 ranks needs at least 1.07 PiB per rank"),
    (["tsgemm", "--variant", "atb", "--m", "10000000000000", "--n", "16", "--k", "16"],
     ("tsgemm --variant atb m=10000000000000 n=16 k=16 float64 on 2 ranks needs at least "
     "1.14 PiB per rank")),
    (["sptrsv", "--matrix", "lap3d:5000"],
     ("sptrsv --matrix lap3d:5000 (n=125000000000, nnz=499925000000) needs at least 7.28 TiB "
     "per rank"))])
@pytest.mark.alone   # refused within 20 s
def test_runs_refuse_at_once_on_every_rank(args, start):
    began = time.monotonic()
    result = run_cli(2, args, timeout=60, check=False)
    assert time.monotonic() - began < 20   # conflux's grid search alone took 63-90 s
    assert result.returncode == 2
    (line,) = [line for line in result.stderr.splitlines() if "error" in line]
    assert line.startswith(f"linalg-io: error: {start}"), line
    per_rank = format_bytes(physical_memory() // 2)
    assert line.endswith(f"but {per_rank} per rank are available (this node's memory over its "
                         "2 ranks" + ("; --mem sets it)" if args[0] == "lu" else ")")), line
