"""The progress watchdog: a rank that sees no progress for longer than a deadline says
so in one line and ends, so that a lost node, link or rank ends the job instead of
hanging it until the allocation's time limit.

Progress is what the run already does: the runner's stages (set-up, each warm-up and
repetition, verification, the record: `stage`) and, inside a repetition, anything the
case's counters see change: the counting communicator's bytes and messages (every
family's messages) and the phase clock's phase changes (the LUs' steps). A library
that sends its messages straight to MPI (ScaLAPACK, HPL: the case's
`logical_unavailable`) passes none of those; its progress is what Open MPI's
monitoring sees it send (`WireCounter.moved`), where the wire counter is open. The
watchdog only reads those counters, from a daemon thread that wakes every `tick` (at
most 1 s): no call on the algorithms' paths, no MPI message, so the bytes, messages and
timings of a run are those without it. mpi4py releases the GIL in its blocking calls and the
package's polite waits sleep, so the thread runs while the rank waits in MPI.

Deadline of a stretch (`Deadline`): `--stall-timeout S` fixes it at S seconds;
otherwise max(`FLOOR_S`, `FACTOR` x the model's predicted time of one repetition)
once the first repetition has given the model its inputs (the LUs' pivots), `FLOOR_S`
before that, and `SETUP_FLOOR_S` for the set-up, which the model does not predict.
A stretch is the time since the last progress, so a repetition that keeps moving,
however slowly, is never ended.

On expiry the rank prints one line on stderr (its rank, host, stage and phase, the
silence and the deadline), marks its command finished for the --np launcher and exits
with `STALLED_EXIT_CODE` at once (`os._exit`: the main thread is stuck in MPI). The
launcher (mpiexec, srun with ``--kill-on-bad-exit``) then ends the other ranks; a rank
whose peers are gone stalls too and ends by its own deadline, whatever the launcher.
No record is written: rank 0 writes it only after every stage has passed.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

from linalg_io.errors import STALLED_EXIT_CODE
from linalg_io.launch.status import STALLED, mark_finished

FLOOR_S = 60.0         # no deadline is shorter: a slow step is not a stall
FACTOR = 20.0          # deadline = FACTOR x the predicted time of the stretch
SETUP_FLOOR_S = 300.0  # set-up (inputs, plan, pools): no prediction, a longer floor
TICK_S = 1.0           # the longest interval between two looks at the counters


class Deadline:
    """How long a stretch without progress may last: `fixed_s` (--stall-timeout) or
    the model's rule (module doc); `seconds(predicted_s, floor_s)` and `why` say it."""

    def __init__(self, fixed_s: float | None = None) -> None:
        self.fixed_s = fixed_s

    def seconds(self, predicted_s: float | None, floor_s: float = FLOOR_S) -> float:
        if self.fixed_s is not None:
            return self.fixed_s
        if predicted_s is None or not predicted_s > 0:
            return floor_s
        return max(floor_s, FACTOR * predicted_s)

    def why(self, predicted_s: float | None, floor_s: float = FLOOR_S) -> str:
        seconds = self.seconds(predicted_s, floor_s)
        if self.fixed_s is not None:
            return f"deadline {seconds:g} s, --stall-timeout"
        if predicted_s is None or not predicted_s > 0:
            return f"deadline {seconds:g} s, the floor before the model's prediction"
        return (f"deadline {seconds:.0f} s = max({floor_s:g} s, {FACTOR:g} x "
                f"{predicted_s:.3g} s predicted per repetition)")


def end_job(line: str) -> None:
    """The expiry: the one line, then this rank ends now (module doc)."""
    print(line, file=sys.stderr, flush=True)
    mark_finished(STALLED)
    os._exit(STALLED_EXIT_CODE)


class Watchdog:
    """One rank's watchdog (module doc). `watch` adds a progress source (a function
    whose value changes when the rank progresses, and one that names the phase);
    `stage` starts a stretch of the runner; `start`/`stop` run the thread."""

    def __init__(self, rank: int, host: str, deadline: Deadline,
                 expire: Callable[[str], None] = end_job, tick_s: float = TICK_S) -> None:
        self.rank, self.host, self.deadline = rank, host, deadline
        self.predicted_s: float | None = None
        self._predicted = False
        self._expire, self._tick_s = expire, tick_s
        self._sources: list[Callable[[], object]] = []
        self._phase: Callable[[], str] | None = None
        self._stages = 0
        self._where = "start"
        self._floor_s = FLOOR_S
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="linalg-io watchdog",
                                        daemon=True)

    def watch(self, progress: Callable[[], object],
              phase: Callable[[], str] | None = None) -> None:
        self._sources.append(progress)
        if phase is not None:
            self._phase = phase

    def stage(self, where: str, floor_s: float = FLOOR_S) -> None:
        """The runner enters `where` (progress itself); its deadline has `floor_s`."""
        self._where, self._floor_s = where, floor_s
        self._stages += 1

    def predict(self, model: Callable[[], dict | None]) -> None:
        """Once, after the first repetition, on a started watchdog with the model's
        deadline: the predicted seconds per repetition, the record's `model.time_s`."""
        if self._predicted or self.deadline.fixed_s is not None or not self._thread.is_alive():
            return
        self._predicted = True
        block = model()
        self.predicted_s = block.get("time_s") if block else None

    def limit_s(self) -> float:
        return self.deadline.seconds(self.predicted_s, self._floor_s)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join()

    def _mark(self) -> tuple:
        return (self._stages, *(source() for source in self._sources))

    def _watch(self) -> None:
        last, since = self._mark(), time.monotonic()
        while not self._stop.wait(min(self._tick_s, self.limit_s() / 10)):
            mark, now = self._mark(), time.monotonic()
            if mark != last:
                last, since = mark, now
            elif now - since > self.limit_s():
                self._expire(self.line(now - since))
                return

    def line(self, silent_s: float) -> str:
        """The expiry's one line."""
        phase = self._phase() if self._phase is not None else None
        where = self._where + (f", phase {phase}" if phase and phase != "other" else "")
        why = self.deadline.why(self.predicted_s, self._floor_s)
        return (f"linalg-io: error: stalled: rank {self.rank} on {self.host} saw no progress "
                f"for {silent_s:.1f} s in {where} ({why}): a rank, node or link of the job "
                f"stopped answering; ending the job (exit {STALLED_EXIT_CODE}), no record "
                "written")


def start_watchdog(stall_timeout: float | str | None, rank: int, host: str) -> Watchdog:
    """The watchdog of `--stall-timeout` (None: the model's deadline, "off": none),
    started unless off (an unstarted one takes the runner's calls and does nothing)."""
    dog = Watchdog(rank, host, Deadline(stall_timeout if isinstance(stall_timeout, float)
                                        else None))
    return dog if stall_timeout == "off" else dog.start()


def watch_case(dog: Watchdog, counter, clock, wire=None) -> None:
    """Progress inside a repetition: the counting communicator's `counter`, when the
    case has one its phase clock (whose phase then names where the rank is), and, for a
    library whose messages bypass the counter, the open `wire` counter (module doc)."""
    dog.watch(lambda: (counter.bytes_sent, counter.bytes_recv, counter.msgs_sent),
              lambda: counter.current_phase)
    if clock is not None:
        dog.watch(lambda: clock.switches, lambda: clock.current)
    if wire is not None and wire.available:
        dog.watch(wire.moved)
