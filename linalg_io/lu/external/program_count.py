"""One factorization's traffic of a library run as its own MPI program.

The program runs twice on the same ranks under Open MPI's monitoring
(`monitoring_dump`): once with one factorization, once with two of the same problem.
Everything else it does (start-up, reading its input, making its grid, finalizing) is
the same in both, so the difference is one factorization with what the program does
around each one (HPL: generating the matrix, timing, the residual check). Only Open
MPI's mpiexec writes the dump.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass

from linalg_io.errors import EnvironmentProblem
from linalg_io.launch.relaunch import find_mpiexec, mpi_environment, mpiexec_flavour
from linalg_io.lu.external.adapter import ProgramLU, ProgramRun
from linalg_io.lu.external.monitoring_dump import RankTraffic, monitoring_options, read_dump


@dataclass(frozen=True)
class CountedProgram:
    """Traffic per rank of one factorization, and the program's runs of both launches."""

    traffic: RankTraffic
    once: list[ProgramRun]
    twice: list[ProgramRun]


def launch(adapter: ProgramLU, program: str, nranks: int, n: int, nb: int, p: int, q: int,
           factorizations: int, workdir: str, timeout: float = 600
           ) -> tuple[RankTraffic, list[ProgramRun]]:
    """Run the program once in `workdir` under monitoring: its traffic and its runs."""
    mpiexec = find_mpiexec()
    if mpiexec_flavour(mpiexec) != "openmpi":
        raise EnvironmentProblem(f"{mpiexec} is not Open MPI's: no monitoring dump to count")
    for name, text in adapter.input_files(n, nb, p, q, factorizations).items():
        with open(os.path.join(workdir, name), "w") as handle:
            handle.write(text)
    prefix = os.path.join(workdir, "monitoring")
    env = mpi_environment(1, "openmpi")
    env.pop("OMPI_MCA_pml_monitoring_enable", None)   # the options below set it
    command = [mpiexec, "-n", str(nranks), "--oversubscribe", "--bind-to", "none",
               *monitoring_options(prefix),
               *adapter.command(program, n, nb, p, q, factorizations)]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    runs = adapter.parse(workdir, done.stdout)
    if len(runs) != factorizations:
        raise RuntimeError(f"{adapter.label} reported {len(runs)} factorizations, "
                           f"expected {factorizations}:\n{done.stdout[-2000:]}")
    return read_dump(prefix, nranks), runs


def count_one_factorization(adapter: ProgramLU, program: str, nranks: int, n: int, nb: int,
                            p: int, q: int, timeout: float = 600) -> CountedProgram:
    """Two launches (one factorization, then two): the difference of their traffic."""
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        traffic_1, runs_1 = launch(adapter, program, nranks, n, nb, p, q, 1, one, timeout)
        traffic_2, runs_2 = launch(adapter, program, nranks, n, nb, p, q, 2, two, timeout)
    return CountedProgram(traffic_2 - traffic_1, runs_1, runs_2)
