"""Agreeing on errors across ranks, so every rank exits with the same one-line message."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mpi4py import MPI

from linalg_io.comm.waiting import BLOCKING, WaitPolicy
from linalg_io.errors import InputError, LinalgIOError, error_from_code

T = TypeVar("T")


def agreed(comm: MPI.Comm, action: Callable[[], T], waits: WaitPolicy = BLOCKING) -> T:
    """Run `action` on every rank; if any rank raises a LinalgIOError, all raise it.

    Collective over `comm` (a raw communicator: the check is not counted traffic).
    A rank that is done first waits for the others by `waits` (a polite policy: in a
    barrier that sleeps, so that it holds no core that a rank still at work needs).
    Every rank raises the same error (`agreed_message`), with the exit code of the
    lowest failing rank and `agreed = True`, so that one rank alone prints it. A
    MemoryError (inputs too large for this node) is bad input too.
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
    if waits.polite:
        waits.barrier(comm)
    failures = comm.allgather(failure)
    failed = [(rank, f) for rank, f in enumerate(failures) if f is not None]
    if failed:
        error = error_from_code(failed[0][1][0], agreed_message(
            [(rank, message) for rank, (_, message) in failed], comm.Get_size()))
        error.agreed = True
        raise error
    return result


def agreed_message(failed: list[tuple[int, str]], size: int, groups: int = 3) -> str:
    """One line for the failures [(rank, message)] of a job of `size` ranks: the message
    alone when every rank failed with it; else each distinct message after the ranks
    that raised it ('rank 2: ...; ranks 0, 3: ...'), the first `groups` of them."""
    ranks_of: dict[str, list[int]] = {}
    for rank, message in failed:
        ranks_of.setdefault(message, []).append(rank)
    if len(ranks_of) == 1 and len(failed) == size:
        return failed[0][1]
    parts = [f"rank{'s' if len(ranks) > 1 else ''} {rank_ranges(ranks)}: {message}"
             for message, ranks in list(ranks_of.items())[:groups]]
    if len(ranks_of) > groups:
        parts.append(f"and {len(ranks_of) - groups} other messages")
    return "; ".join(parts)


def rank_ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8' (ranks in increasing order)."""
    spans: list[list[int]] = []
    for rank in ranks:
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def exit_agreed(code: int) -> None:
    """Leave the job after an error every rank agreed on: finalize MPI, then exit.

    Under ``python -m mpi4py`` a SystemExit with a non-zero code calls
    MPI_Abort (and the launcher's abort banner); every rank reaching this point
    with the same error can instead finalize normally and exit with `code`.
    """
    import os
    import sys

    from mpi4py import MPI

    from linalg_io.launch.status import mark_finished

    sys.stdout.flush()
    sys.stderr.flush()
    if MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.Finalize()
    mark_finished()   # os._exit skips the atexit hook that says so
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


def agreed_on_root(comm: MPI.Comm, action: Callable[[], T]) -> T:
    """Run `action` on rank 0 only (a choice one rank makes for all: the model's search)
    and hand its result to every rank; if it raises a LinalgIOError, every rank raises
    the same one (`agreed = True`). Collective over `comm` (raw: uncounted)."""
    outcome = None
    if comm.Get_rank() == 0:
        try:
            outcome = (None, action())
        except LinalgIOError as error:
            outcome = ((error.exit_code, str(error)), None)
    failure, result = comm.bcast(outcome, root=0)
    if failure is not None:
        error = error_from_code(*failure)
        error.agreed = True
        raise error
    return result
