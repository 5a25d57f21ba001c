"""Requests started before a long computation, moved during it by a thread that tests them.

Over TCP, Open MPI moves a large message only inside MPI calls on both ends (the
rendezvous: the sender's header, the receiver's acknowledgement, then the fragments,
each written to the socket by a call's progress), so requests started before a long
dgemm wait for the next call, and a few tests between chunks of the dgemm move little
more. `progressed(requests)` runs a block with a thread that tests the requests every
`interval_s` until they have completed or the block ends: the compiled kernels and
mpi4py's calls release the GIL, so the thread tests while the block computes. It
sleeps between tests, so it takes little of the rank's core: a test costs about 10-30
us of CPU (the interpreter's wake-up, one `Testall`), i.e. at most (test cost /
interval_s) of a core, a few per cent at 0.5 ms; and a message waits at most
`interval_s` for its next step, a small delay beside a transfer of milliseconds.

The block makes no MPI call of its own while the thread tests (the thread is then the
only caller: MPI_THREAD_SERIALIZED suffices); where MPI provides less, the block runs
without the thread and the requests wait for the next call. The messages, their order
and the bytes counted are those of the requests, whoever completes them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from mpi4py import MPI

# seconds between two tests of the progress thread (module docstring: the cost)
INTERVAL_S = 5e-4


def threads_allowed() -> bool:
    """Whether MPI lets a second thread call it while the main thread does not."""
    return MPI.Query_thread() >= MPI.THREAD_SERIALIZED


@contextmanager
def progressed(requests: Sequence[MPI.Request], interval_s: float = INTERVAL_S) -> Iterator[None]:
    """Run the block while a thread tests `requests` every `interval_s` (module docstring);
    the block must make no MPI call. The thread has ended when the block returns."""
    if not requests or not threads_allowed():
        yield
        return
    stop = threading.Event()

    def test() -> None:
        while not MPI.Request.Testall(requests) and not stop.wait(interval_s):
            pass

    thread = threading.Thread(target=test, name="mpi-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
