"""How a rank waits for its messages: MPI's blocking calls, or polite waits on a crowded node.

Open MPI's blocking calls (Recv, Wait, Waitall, Barrier) poll until the message has
come, with ``mpi_yield_when_idle`` by sched_yield between polls: a waiting rank stays
runnable and may take its share of a core (how much it took here depended on the
launch: docs/MEASUREMENTS.md, "Waiting ranks on crowded nodes"). Where a node's ranks
outnumber its cores, the ranks that wait so take core time from the ranks they wait
for. A `WaitPolicy` is chosen once per rank (`wait_policy`, from
`linalg_io.launch.node.kernel_crowded`) and handed to the counting communicator, which
routes every wait of the algorithms through it:

* blocking (a rank per core): MPI's own calls, exactly as without a policy;
* polite (more ranks than cores): ``Test`` the requests for `spin_s`, then sleep
  between tests, the sleep doubling from `first_sleep_s` to `longest_sleep_s`. A
  sleeping rank holds no core; it answers a message at most `longest_sleep_s` late,
  and over TCP a message moves only inside MPI calls, so a sleeping receiver also
  slows the transfer. The spin budget is therefore long, 5 ms, about a scheduler time
  slice: the LUs' many short waits (the 2D panel's exchange per column, a broadcast
  that the partner is about to send) spin as MPI's own wait does (Open MPI's test
  yields the core when ``mpi_yield_when_idle`` is set), and only the long ones sleep
  (a rank done long before the others, calibrate's ranks that only keep the
  barriers); a short budget slows the LUs several times over on a crowded node
  (docs/MEASUREMENTS.md#in-code). The process's timer
  slack is set to 1 ns (prctl PR_SET_TIMERSLACK) so that a 100 us sleep is not 50 us
  longer;
* idle (`IDLE`, a rank that has nothing to do but wait, as calibrate's ranks that
  keep the barriers while others measure): sleep at once.

Every polite wait completes the same requests as the blocking call would, so the
messages, their order and the bytes counted are the same. Python's sleep returns
to the interpreter, so a signal's handler runs during a polite wait.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mpi4py import MPI

PR_SET_TIMERSLACK = 29


@dataclass(frozen=True)
class WaitPolicy:
    """Blocking MPI waits (`polite` False) or test, then sleep (module docstring)."""

    polite: bool = False
    spin_s: float = 5e-3
    first_sleep_s: float = 100e-6
    longest_sleep_s: float = 1e-3

    def wait(self, request: MPI.Request, status: MPI.Status | None = None) -> None:
        """Complete one request (`status`, if given, gets its status)."""
        if not self.polite:
            request.Wait(status)
            return
        self._until(lambda: request.Test(status))

    def waitall(self, requests: Sequence[MPI.Request],
                statuses: list[MPI.Status] | None = None) -> None:
        """Complete every request (`statuses`, if given, one per request)."""
        if not self.polite:
            MPI.Request.Waitall(requests, statuses)
            return
        if requests:
            self._until(lambda: MPI.Request.Testall(requests, statuses))

    def barrier(self, comm: MPI.Comm) -> None:
        """A barrier over the raw communicator `comm` that waits by this policy."""
        if not self.polite:
            comm.Barrier()
            return
        self.wait(comm.Ibarrier())

    def _until(self, done) -> None:
        spin_end = time.perf_counter() + self.spin_s
        while time.perf_counter() < spin_end:
            if done():
                return
        sleep = self.first_sleep_s
        while not done():
            time.sleep(sleep)
            sleep = min(2 * sleep, self.longest_sleep_s)


BLOCKING = WaitPolicy()
POLITE = WaitPolicy(polite=True)
IDLE = WaitPolicy(polite=True, spin_s=0.0)


def short_timer_slack() -> bool:
    """Ask the kernel to wake this process's sleeps on time (Linux; False elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def wait_policy(crowded: bool) -> WaitPolicy:
    """The policy of a rank whose kernel's ranks outnumber its cores (`crowded`) or not;
    a polite one also shortens this process's timer slack."""
    if not crowded:
        return BLOCKING
    short_timer_slack()
    return POLITE
