"""The pure loop's guard: under ``pytest -m "not mpi"`` (tests/conftest.py installs it in
pytest's process, and through PYTHONPATH and LINALG_IO_TEST_NO_LAUNCH in every Python
process the tests start) starting a process that would launch MPI ranks (mpiexec, mpirun,
srun, ... or `linalg-io ... --np P`, which relaunches itself under mpiexec) raises
`LaunchInPureLoop`, so a test the markers missed fails instead of launching."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

VARIABLE = "LINALG_IO_TEST_NO_LAUNCH"
GUARD_HELP = 'pytest -m "not mpi" launches no MPI'
LAUNCHERS = {"mpiexec", "mpirun", "orterun", "prterun", "srun", "sbatch", "salloc"}


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


if os.environ.get(VARIABLE):
    install()
