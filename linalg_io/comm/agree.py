"""Agreeing on errors across ranks, so every rank exits with the same one-line message."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mpi4py import MPI

from linalg_io.errors import InputError, LinalgIOError, error_from_code

T = TypeVar("T")


def agreed(comm: MPI.Comm, action: Callable[[], T]) -> T:
    """Run `action` on every rank; if any rank raises a LinalgIOError, all raise it.

    Collective over `comm` (a raw communicator: the check is not counted traffic).
    The error of the lowest failing rank wins, prefixed with that rank when the
    failure was not on every rank. A MemoryError (inputs too large for this node) is
    bad input too.
    """
    try:
        result = action()
        failure = None
    except LinalgIOError as error:
        result = None
        failure = (error.exit_code, str(error))
    except MemoryError as error:
        result = None
        failure = (InputError.exit_code, f"not enough memory on this node: {error}")
    failures = comm.allgather(failure)
    failed = [(rank, f) for rank, f in enumerate(failures) if f is not None]
    if failed:
        rank, (code, message) = failed[0]
        if len(failed) < comm.Get_size():
            message = f"rank {rank}: {message}"
        raise error_from_code(code, message)
    return result


def exit_agreed(code: int) -> None:
    """Leave the job after an error every rank agreed on: finalize MPI, then exit.

    Under ``python -m mpi4py`` a SystemExit with a non-zero code calls
    MPI_Abort (and the launcher's abort banner); every rank reaching this point
    with the same error can instead finalize normally and exit with `code`.
    """
    import os
    import sys

    from mpi4py import MPI

    sys.stdout.flush()
    sys.stderr.flush()
    if MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.Finalize()
    os._exit(code)


def abort_world(code: int = 1) -> None:
    """An exception that the ranks did not agree on (a bug, not bad input): print it on
    this rank and abort the whole job, since the other ranks may wait in a collective
    for this one (as `python -m mpi4py` does; a plain `srun linalg-io` would hang)."""
    import sys
    import traceback

    from mpi4py import MPI

    traceback.print_exc()
    sys.stderr.flush()
    if MPI.Is_initialized() and not MPI.Is_finalized() and MPI.COMM_WORLD.Get_size() > 1:
        MPI.COMM_WORLD.Abort(code)
