"""Where a level-set solve's time goes, rank by rank: when each rank starts after the
repetition's barrier, how long it solves, sends and waits, and how late each batch
reaches its receiver.

    .venv/bin/mpiexec -n 4 --oversubscribe .venv/bin/python bench/bench_levelset_timeline.py \\
        --matrix lap3d:48 --reps 30 [any other option of `linalg-io sptrsv`]
    sudo bench/emulated_cluster.sh run 4 -- .venv/bin/python bench/bench_levelset_timeline.py ...

Runs `linalg-io sptrsv --algo levelset` with those options (its summary line as
usual) and times, on every rank, each call of the level-set executor
(`linalg_io.sptrsv.levelset.LevelSet.run`): its local solves, its Isends (tag: the
batch's level) and its Waitalls (the levels they complete), by one clock per node
(perf_counter: CLOCK_MONOTONIC; across nodes the starts compare only within a node).
Rank 0 prints, for the repetition of median span (the first call on any rank to the
last on any): per rank its start after the earliest rank's, its seconds solving,
sending and waiting, its end; per pair of ranks that exchange batches, the median
delay from the sender's Isend to the receiver's Waitall returning. Where ranks share
cores, a rank whose core-mate holds the core starts late and stays behind: the lags
are the scheduler's turns, not the network's. The timing wraps each call in Python
(a few microseconds each): the spans are longer than the plain run's, most where ranks
share cores; compare ranks and calls within one run.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

from linalg_io.cli import main
from linalg_io.comm.counting import CountedComm
from linalg_io.sptrsv.levelset import LevelSet

_runs: list[list[tuple]] = []     # [repetition] its events (kind, tags, start, end)
_timing = False                   # inside a level-set run
_tags: dict[int, tuple] = {}      # an Irecv request's handle: (its source, its tag)


def _timed(kind: str, call, tags=lambda args, kwargs: ()):
    """`call` recording (kind, tags, start, end) while a level-set run is timed (the
    tags read before the call: a completed request's handle is freed)."""
    def timed(*args, **kwargs):
        if not _timing:
            return call(*args, **kwargs)
        labels = tags(args, kwargs)
        start = time.perf_counter()
        out = call(*args, **kwargs)
        _runs[-1].append((kind, labels, start, time.perf_counter()))
        return out
    return timed


def _instrument() -> None:
    """Time the executor's solves, Isends and Waitalls inside `LevelSet.run`."""
    run, irecv = LevelSet.run, CountedComm.Irecv

    def timed_run(self) -> None:
        global _timing
        _runs.append([])
        self.local.solve = _timed("solve", self.local.solve)
        _timing = True
        try:
            run(self)
        finally:
            _timing = False
            del self.local.solve

    def tagged_irecv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, op="Irecv"):
        request = irecv(self, buf, source, tag, op)
        _tags[request.py2f()] = (source, tag)
        return request

    LevelSet.run = timed_run
    CountedComm.Irecv = tagged_irecv
    CountedComm.Isend = _timed("send", CountedComm.Isend,
                               lambda args, kwargs: ((args[2], kwargs.get("tag", 0)),))
    # a handle read once: MPI hands a completed request's handle to later requests
    CountedComm.Waitall = _timed("wait", CountedComm.Waitall, lambda args, kwargs: tuple(
        _tags.pop(request.py2f()) for request in args[1] if request.py2f() in _tags))


def _report(runs: list[list[list[tuple]]]) -> None:
    """Rank 0: the median repetition's table (module doc). `runs` [rank][repetition]."""
    reps = min(len(r) for r in runs)
    spans = []
    for rep in range(reps):
        events = [runs[rank][rep] for rank in range(len(runs))]
        spans.append(max(e[-1][3] for e in events if e) - min(e[0][2] for e in events if e))
    rep = int(np.argsort(spans)[len(spans) // 2])
    events = [runs[rank][rep] for rank in range(len(runs))]
    first = min(e[0][2] for e in events if e)
    print(f"level-set timeline: repetition {rep + 1} of {reps} (median span "
          f"{spans[rep] * 1e3:.3f} ms, least {min(spans) * 1e3:.3f} ms)")
    print(" rank  start ms  solve ms  send ms (n)  wait ms (n)  end ms")
    for rank, e in enumerate(events):
        if not e:
            continue
        seconds = {kind: [end - start for k, _, start, end in e if k == kind]
                   for kind in ("solve", "send", "wait")}
        (solve, _), (send, sends), (wait, waits) = ((sum(s) * 1e3, len(s))
                                                   for s in seconds.values())
        print(f" {rank:>4} {(e[0][2] - first) * 1e3:>9.3f} {solve:>9.3f} {send:>8.3f} "
              f"({sends:>3}) {wait:>8.3f} ({waits:>3}) {(e[-1][3] - first) * 1e3:>7.3f}")
    for sender, e in enumerate(events):
        sent = {label: end for kind, labels, _, end in e if kind == "send" for label in labels}
        for receiver, other in enumerate(events):
            delays = [end - sent[(receiver, tag)] for kind, labels, _, end in other
                      if kind == "wait" for source, tag in labels
                      if source == sender and (receiver, tag) in sent]
            if delays:
                print(f"  {sender} -> {receiver}: {len(delays)} batches, Isend to Waitall's "
                      f"return median {np.median(delays) * 1e6:.1f} us "
                      f"(90th percentile {np.percentile(delays, 90) * 1e6:.1f})")


if __name__ == "__main__":
    _instrument()
    status = main(["sptrsv", "--algo", "levelset", *sys.argv[1:]])
    everyone = MPI.COMM_WORLD.gather(_runs, root=0)
    if MPI.COMM_WORLD.Get_rank() == 0:
        _report(everyone)
    raise SystemExit(status)
