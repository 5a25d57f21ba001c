"""Independent pure evaluations (the model's candidates) spread over this machine's cores.

`core_map()` is a context manager giving a `CoreMap` over forked worker processes, one
per core this process may use (in this process where there is one core). Its calls queue
evaluations, and a dispatcher hands the next queued one to a worker as soon as one is
free, the highest priority first (`CoreMap.at`; equal priorities in the order queued):
- called as `map(function, items) -> list`: in the items' order;
- `start(function, items)`: queues that map and returns a function that waits for its list;
- `window(function, items)`: an iterator over function(item) in the items' order that
  keeps one of its items evaluating, and up to `workers` while a worker is free with
  nothing else queued: the next queued as soon as any one finishes (no worker waits for
  the slowest of a batch); leaving it early cancels the items not started, and those
  running finish unused (a branch and bound's stop);
- `together(calls)`: runs the calls (functions of nothing that use this CoreMap) at once,
  in threads of this process, so that their evaluations share the workers; an iterator
  over their results in order, each as soon as it and those before it are done (an
  error in any call raised as soon as it happens).
With one core the same calls evaluate in this process, one after the other, in order.
Only for code without MPI and without threads of its own (a forked child would inherit
their state): the `model` commands. `function` must be picklable (a module-level
function or a functools.partial of one).
"""

from __future__ import annotations

import heapq
import itertools
import multiprocessing
import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import partial


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _ended() -> RuntimeError:
    return RuntimeError("the model's worker processes ended")


class _Dispatcher:
    """The evaluations queued for `pool`, at most `workers` handed to it at once: the
    highest priority first, then the first queued."""

    def __init__(self, pool, workers: int) -> None:
        self.pool = pool
        self.workers = workers
        self.lock = threading.Lock()
        self.queued: list = []          # heap of (-priority, order, future, function, item)
        self.order = itertools.count()
        self.running: set[Future] = set()
        self.closed = False
        self.on_idle: set[Callable] = set()   # called when a worker has nothing to do

    def submit(self, function: Callable, item, priority: float) -> Future:
        future: Future = Future()
        with self.lock:
            if not self.closed:
                heapq.heappush(self.queued, (-priority, next(self.order), future, function,
                                             item))
        if self.closed:
            future.set_exception(_ended())
        self._hand_on()
        return future

    def _hand_on(self) -> None:
        with self.lock:
            while not self.closed and len(self.running) < self.workers and self.queued:
                *_, future, function, item = heapq.heappop(self.queued)
                if not future.set_running_or_notify_cancel():
                    continue     # cancelled while queued
                self.running.add(future)
                self.pool.apply_async(function, (item,),
                                      callback=partial(self._finished, future, True),
                                      error_callback=partial(self._finished, future, False))
            calls = list(self.on_idle) if self._idle() else []
        for call in calls:
            call(None)

    def _idle(self) -> bool:
        return not self.closed and not self.queued and len(self.running) < self.workers

    def idle(self) -> bool:
        """Whether a worker is free with nothing queued for it."""
        with self.lock:
            return self._idle()

    def _finished(self, future: Future, ok: bool, value) -> None:
        with self.lock:
            if future not in self.running:
                return           # failed by `close`
            self.running.discard(future)
        self._hand_on()          # the freed worker takes the next before anyone reads this
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def close(self) -> None:
        """End: the queued evaluations cancelled, those running failed, so that no thread
        waits for workers that are about to end (an error or an interrupt elsewhere)."""
        with self.lock:
            self.closed = True
            for *_, future, _function, _item in self.queued:
                future.cancel()
            self.queued.clear()
            running, self.running = self.running, set()
        for future in running:
            future.set_exception(_ended())


class CoreMap:
    """map over the workers of `pool` (None: in this process), see the module doc."""

    def __init__(self, pool, workers: int = 1, priority: float = 0,
                 dispatcher: _Dispatcher | None = None) -> None:
        self.pool = pool
        self.workers = workers   # how many items run at once
        self.priority = priority
        self._dispatcher = dispatcher or (None if pool is None else _Dispatcher(pool, workers))

    def at(self, priority: float) -> CoreMap:
        """This CoreMap, its evaluations queued at `priority` (higher: handed on first)."""
        return CoreMap(self.pool, self.workers, priority, self._dispatcher)

    def _submit(self, function: Callable, item) -> Future:
        return self._dispatcher.submit(function, item, self.priority)

    def start(self, function: Callable, items: Iterable) -> Callable[[], list]:
        items = list(items)
        if self.pool is None:
            results = [function(item) for item in items]
            return lambda: results
        futures = [self._submit(function, item) for item in items]
        return lambda: [future.result() for future in futures]

    def __call__(self, function: Callable, items: Iterable) -> list:
        return self.start(function, items)()

    def window(self, function: Callable, items: Iterable) -> Iterator:
        """function(item) of each item, in order, the workers kept busy (module doc)."""
        if self.pool is None:
            return map(function, items)
        return self._window(function, iter(items))

    def _window(self, function: Callable, items: Iterator) -> Iterator:
        # One item of its own always evaluating; more, up to `workers`, only while a
        # worker would otherwise wait: evaluations that the stop may leave unused are
        # then never in the way of other calls' (the model's 2D and 2.5D at once).
        wake: queue.SimpleQueue = queue.SimpleQueue()   # a put per item finished, idle
        futures: deque[Future] = deque()                # in the items' order
        dispatcher = self._dispatcher

        def queue_next() -> bool:
            for item in items:
                future = self._submit(function, item)
                future.add_done_callback(wake.put)
                futures.append(future)
                return True
            return False

        def wanted() -> bool:
            unfinished = sum(not future.done() for future in futures)
            return unfinished == 0 or (unfinished < self.workers and dispatcher.idle())

        idle = wake.put
        with dispatcher.lock:
            dispatcher.on_idle.add(idle)
        try:
            while True:
                while wanted():
                    if not queue_next():
                        break
                if not futures:
                    return
                if futures[0].done():
                    yield futures.popleft().result()
                else:
                    wake.get()
        finally:
            with dispatcher.lock:
                dispatcher.on_idle.discard(idle)
            for future in futures:
                future.cancel()

    def together(self, calls: Iterable[Callable[[], object]]) -> Iterator:
        """The calls' results, in order, the calls run at once (module doc)."""
        calls = list(calls)
        if self.pool is None or len(calls) < 2:
            return (call() for call in calls)
        return self._together(calls)

    @staticmethod
    def _together(calls: list[Callable[[], object]]) -> Iterator:
        threads = ThreadPoolExecutor(len(calls))
        try:
            futures = [threads.submit(call) for call in calls]
            pending = set(futures)
            for future in futures:
                while not future.done():
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for other in done:
                        if other.exception() is not None:
                            other.result()   # an error in any call ends them all now
                yield future.result()
        finally:   # after an error, not waiting: `core_map`'s end fails what they wait for
            threads.shutdown(wait=False, cancel_futures=True)


@contextmanager
def core_map() -> Iterator[CoreMap]:
    """A CoreMap over the usable cores (see the module doc); the workers end with the block."""
    workers = usable_cores()
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield CoreMap(None)
        return
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        mapper = CoreMap(pool, workers)
        try:
            yield mapper
        finally:
            mapper._dispatcher.close()
