"""The pure loop's guard: under ``pytest -m "not mpi"`` (tests/conftest.py installs it in
pytest's process, and through PYTHONPATH and LINALG_IO_TEST_NO_LAUNCH in every Python
process the tests start) starting a process that would launch MPI ranks (mpiexec, mpirun,
srun, ... or `linalg-io ... --np P`, which relaunches itself under mpiexec) raises
`LaunchInPureLoop`, so a test the markers missed fails instead of launching.

A launch that no Python process of the tests starts (a shell script calling mpiexec,
as ReFrame's job scripts do) still starts Python ranks with this environment: a Python
process that finds itself an MPI rank (`RANK_VARIABLES`) exits at once with
`RANK_EXIT` and one line, so the job fails and the test with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

VARIABLE = "LINALG_IO_TEST_NO_LAUNCH"
GUARD_HELP = 'pytest -m "not mpi" launches no MPI'
LAUNCHERS = {"mpiexec", "mpirun", "orterun", "prterun", "srun", "sbatch", "salloc"}
# set in the ranks by Open MPI, MPICH/Hydra (PMI) and Slurm
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
RANK_EXIT = 97
# those already set where pytest started (pytest itself run as a Slurm task, say)
OUTER_RANK = "LINALG_IO_TEST_OUTER_RANK"


class LaunchInPureLoop(RuntimeError):
    """A test of the pure loop started MPI ranks (it wants the mpi marker)."""


def launches(args) -> bool:
    """Whether a Popen command line starts MPI ranks."""
    words = (args.split() if isinstance(args, str)
             else [os.fsdecode(w) if isinstance(w, (bytes, os.PathLike)) else str(w)
                   for w in args])
    if not words:
        return False
    if Path(words[0]).name in LAUNCHERS:
        return True
    return "--np" in words and any(w == "linalg_io" or Path(w).name == "linalg-io"
                                   for w in words)


def install() -> None:
    """Make every `subprocess.Popen` of this process refuse a command that `launches`."""
    if getattr(subprocess.Popen, "guarded_for_the_pure_loop", False):
        return
    original = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        if launches(args):
            raise LaunchInPureLoop(f"{GUARD_HELP}, but this would: {args!r} (mark it mpi)")
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = guarded
    subprocess.Popen.guarded_for_the_pure_loop = True


def refuse_to_be_a_rank() -> None:
    """Exit (RANK_EXIT) where this process is an MPI rank: something launched it."""
    outer = os.environ.get(OUTER_RANK, "").split(",")
    found = [name for name in RANK_VARIABLES if name in os.environ and name not in outer]
    if found:
        sys.stderr.write(f"{GUARD_HELP}, but this process is an MPI rank ({found[0]} is set): "
                         "the test that launched it wants the mpi marker\n")
        sys.stderr.flush()
        os._exit(RANK_EXIT)


if os.environ.get(VARIABLE):
    refuse_to_be_a_rank()
    install()
