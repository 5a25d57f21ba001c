"""Wall time per phase of one rank's factorization: the record's `time_by_phase`.

A `PhaseClock` reads the clock once at each phase change and adds the interval since
the previous change to the phase that was running, so every second between `start()`
and `stop()` belongs to exactly one phase (time outside every named phase goes to
"other", the name the traffic counter gives unnamed traffic). Nesting restores the
outer phase (`with clock.phase("reduce_panel"):` inside the update of a look-ahead).
The cost is one `perf_counter` read and one dict update per change: a few phase
changes per step against the step's milliseconds of work.

Each `start()`/`stop()` pair is one run; `phase_time_summary` reduces the last
`reps` runs (the runner's timed repetitions) of every rank once, after the reps, to
the per-rank seconds per repetition.

An algorithm names its phases (`linalg_io.lu.conflux.CONFLUX_PHASES`,
`linalg_io.lu.lu2d.LU2D_PHASES`): those of its traffic phases plus the compute-only
ones. On a GPU the times are the host's (queued work is charged to the phase that
waits for it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

import numpy as np

OTHER = "other"


class PhaseClock:
    """Seconds per phase of each run (`runs`: one dict per start/stop, with `total`)."""

    def __init__(self, phases: tuple[str, ...]) -> None:
        self.phases = phases
        self.runs: list[dict[str, float]] = []
        self.switches = 0
        self._seconds: dict[str, float] = {}
        self._current = OTHER
        self._last = self._first = 0.0

    def start(self) -> None:
        self._seconds = dict.fromkeys((*self.phases, OTHER), 0.0)
        self._current = OTHER
        self._first = self._last = perf_counter()

    @property
    def current(self) -> str:
        """The running phase."""
        return self._current

    def switch(self, name: str) -> str:
        """Charge the time since the last change to the running phase, run `name`;
        returns the phase that was running."""
        now = perf_counter()
        self._seconds[self._current] += now - self._last
        self._last = now
        self.switches += 1
        previous, self._current = self._current, name
        return previous

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        previous = self.switch(name)
        try:
            yield
        finally:
            self.switch(previous)

    def stop(self) -> None:
        self.switch(OTHER)
        self.runs.append({**self._seconds, "total": self._last - self._first})


class Phases:
    """One switch for both of a rank's phase records: the time (`PhaseClock`) and the
    traffic (the counting communicator's `phase`), so that a phase's seconds and its
    bytes are named by one call. `phase(name)` runs a block in `name` for both (the
    clock's previous phase resumes after it); `switch(name)` changes the clock alone,
    for the compute phases that send nothing (the update)."""

    def __init__(self, clock: PhaseClock, comm) -> None:
        self.clock, self.comm = clock, comm

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        with self.clock.phase(name), self.comm.phase(name):
            yield

    def switch(self, name: str) -> str:
        return self.clock.switch(name)


def phase_time_summary(clock: PhaseClock | None, world, reps: int) -> dict | None:
    """Collective over `world` (raw, uncounted): every rank's mean seconds per phase
    over its last `reps` runs, on rank 0 (None elsewhere, and None without a clock).

    {"phases": names in order (then "other"), "per_rank": {phase: [seconds per rank]},
     "max": {phase: max over ranks}, "mean": {phase: mean over ranks},
     "total_per_rank": [seconds from start to stop per rank]}; a rank's phases add up
    to its total.
    """
    if clock is None:
        return None
    names = (*clock.phases, OTHER, "total")
    timed = clock.runs[-reps:] if reps > 0 else []
    mine = [float(np.mean([run[name] for run in timed])) if timed else 0.0 for name in names]
    everyone = world.gather(mine, root=0)
    if world.Get_rank() != 0:
        return None
    table = np.array(everyone, dtype=float)         # [rank, name]
    per_rank = {name: table[:, i].tolist() for i, name in enumerate(names[:-1])}
    return {"phases": list(names[:-1]),
            "per_rank": per_rank,
            "max": {name: float(max(values)) for name, values in per_rank.items()},
            "mean": {name: float(np.mean(values)) for name, values in per_rank.items()},
            "total_per_rank": table[:, -1].tolist()}
