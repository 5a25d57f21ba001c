"""Independent pure evaluations (the model's candidates) spread over this machine's cores.

`core_map()` is a context manager giving a `CoreMap` over forked worker processes, one
per core this process may use (in this process where there is one core):
- called as `map(function, items) -> list`: function(item) of each item, in order;
- `window(function, items)`: a generator of function(item) of each item in order that
  keeps one of its items evaluating, and more (up to a worker each) while a worker would
  otherwise wait with nothing queued (`eager`: up to a worker each, queued ahead of
  another window's run-ahead): a branch and bound that stops early (closing it)
  is not held up by the slowest of a batch; of its evaluations left unused, those
  queued are dropped, one running finishes unread. A window that is not eager keeps
  the worker its last unfinished item frees for its next one (`_Workers`), ahead of
  another window's queued items;
- `together(calls, at_once)`: runs the calls (functions of nothing that use this
  CoreMap) at once, up to `at_once` at a time, in threads of this process, so that their
  evaluations share the workers (the 2.5D and the 2D candidates; a scan's next P while
  the last one's records are made); their results in order, each as soon as it and
  those before it are done.
With one core the same calls evaluate in this process, one after the other.

Each worker has a pipe of its own (`_Workers`): one that is killed (the block's end, or
from outside) takes nothing down with it, and the block ends at once, its workers killed.
The workers are forked once, as the block starts, before this process runs threads of
its own: one forked while a thread held a lock would find it held for ever. Only for code
without MPI and without threads of its own (a forked child would inherit their state):
the `model` commands. `function` must be picklable (a module-level function or a
functools.partial of one).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait

PR_SET_PDEATHSIG = 1   # prctl: the signal a child gets when its parent ends


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _ended() -> RuntimeError:
    return RuntimeError("a model worker process ended before its result")


def _serve(conn: Connection, parent: int) -> None:
    """A worker's life: (function, item) in, (ok, result or error) out, until its pipe
    closes; it ends with its parent (killed, or ^C: the parent ends the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        return
    while True:
        try:
            function, item = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = (True, function(item))
        except Exception as error:  # noqa: BLE001 - raised again in the parent
            reply = (False, error)
        conn.send(reply)


class _Group:
    """A window's evaluations (`_Workers.submit`): those unfinished, and whether it takes
    no more."""

    def __init__(self) -> None:
        self.unfinished: set = set()
        self.closed = False


class _Workers:
    """Forked worker processes, each on its own pipe, and the evaluations queued for
    them (first queued, first handed on, but those `submit`ted to the front); a
    dispatcher thread reads the results. The worker that finishes an evaluation of a
    `_Group` takes the group's next queued one, or, where none of the group's is
    unfinished, stays idle for its next one (`kept`), until the group submits it (to
    the front) or lets the worker go (`release`)."""

    def __init__(self, count: int) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)   # a result in, a worker freed
        self.queued: deque = deque()                     # (future, function, item)
        self.idle: list = []                             # (pid, conn)
        self.busy: dict = {}                             # conn -> (pid, future)
        self.group_of: dict = {}                         # future -> its _Group
        self.kept: dict = {}                             # _Group -> the future whose
                                                         # worker it keeps idle
        self.closed = False
        self.wake_in, self.wake_out = Pipe(duplex=False)
        self.count = count
        for _ in range(count):
            self.idle.append(self._spawn())
        self.thread = threading.Thread(target=self._dispatch, daemon=True)
        self.thread.start()

    def _spawn(self) -> tuple[int, Connection]:
        ours, theirs = Pipe()
        parent = os.getpid()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:     # the worker: serves its pipe, never returns into the caller
            try:
                ours.close()
                _serve(theirs, parent)
            finally:
                os._exit(0)
        theirs.close()
        return pid, ours

    def submit(self, function: Callable, item, group: _Group | None = None,
               front: bool = False) -> Future:
        """function(item) queued, last or (`front`: on the worker `group` keeps, if it
        keeps one) next."""
        future: Future = Future()
        with self.lock:
            if self.closed:
                future.set_exception(_ended())
                return future
            if group is not None:
                group.unfinished.add(future)
                self.group_of[future] = group
            if front:
                self._let_go(group)
                self.queued.appendleft((future, function, item))
            else:
                self.queued.append((future, function, item))
            self._hand_on()
        return future

    def spare(self) -> bool:
        """Whether a worker is free with nothing queued for it (under the lock)."""
        return not self.closed and not self.queued and len(self.idle) > len(self.kept)

    def release(self, group: _Group) -> None:
        """`group` takes no more evaluations: the worker it keeps let go, none kept for
        it again."""
        with self.lock:
            group.closed = True
            self._let_go(group)
            if not self.closed:
                self._hand_on()

    def _let_go(self, group: _Group | None) -> None:
        """The worker `group` keeps, if any, no longer kept (under the lock)."""
        self.kept.pop(group, None)

    def _hand_on(self) -> None:
        """The queued evaluations to the free workers (under the lock)."""
        sent = False
        while len(self.idle) > len(self.kept) and self.queued:
            future, function, item = self.queued.popleft()
            if not future.set_running_or_notify_cancel():
                self._ungrouped(future)
                continue            # dropped while queued
            pid, conn = self.idle.pop()
            self.busy[conn] = (pid, future)
            sent = True
            try:
                conn.send((function, item))
            except OSError:         # the worker died idle: the dispatcher reaps it
                future.set_exception(_ended())
        if sent:
            self.wake_out.send_bytes(b"")     # the dispatcher waits on the new pipes too

    def drop(self, futures: Iterable[Future]) -> None:
        """Evaluations no longer wanted: cancelled if queued; one that runs finishes, its
        result unread (no worker is killed and forked anew while threads of this process
        run: a lock one of them held at the fork would stay held in the new worker)."""
        with self.lock:
            for future in futures:
                future.cancel()

    def _dispatch(self) -> None:
        while True:
            with self.lock:
                if self.closed:
                    return
                conns = [*self.busy, self.wake_in]
            for conn in wait(conns):
                if conn is self.wake_in:
                    conn.recv_bytes()
                    continue
                try:
                    ok, value = conn.recv()
                    ended = False
                except (EOFError, OSError):           # the worker died (killed from outside)
                    ok, value, ended = False, _ended(), True
                with self.lock:
                    pid, future = self.busy.pop(conn)
                    group = self._ungrouped(future)
                    if ended or self.closed:    # closed: in neither list `close` reaps
                        self._reap(pid, conn)
                    else:
                        self.idle.append((pid, conn))
                        if group is not None and not group.closed:
                            self._follow(group, future)
                    if not future.done():
                        (future.set_result if ok else future.set_exception)(value)
                    if not self.idle and not self.busy:       # none left to run the queue
                        self._fail_queued()
                    if not self.closed:
                        self._hand_on()
                    self.changed.notify_all()

    def _ungrouped(self, future: Future) -> _Group | None:
        """`future`'s group, which it leaves, done or dropped (under the lock)."""
        group = self.group_of.pop(future, None)
        if group is not None:
            group.unfinished.discard(future)
        return group

    def _follow(self, group: _Group, future: Future) -> None:
        """The worker `future` of `group` freed takes the group's next queued one ahead of
        the others, or, none of the group's unfinished, is kept for its next (under the
        lock)."""
        mine = next((entry for entry in self.queued if entry[0] in group.unfinished), None)
        if mine is not None:
            self.queued.remove(mine)
            self.queued.appendleft(mine)
        elif not group.unfinished:
            self.kept[group] = future      # its next one goes here

    def _fail_queued(self) -> None:
        for future, _, _ in self.queued:
            if not future.done():
                future.set_exception(_ended())
        self.queued.clear()

    @staticmethod
    def _reap(pid: int, conn: Connection) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        conn.close()

    def close(self) -> None:
        """Every worker killed and reaped, the queued and running evaluations failed."""
        with self.lock:
            self.closed = True
            self.wake_out.send_bytes(b"")
            self.changed.notify_all()
        self.thread.join()
        with self.lock:
            waiting = [future for future, _, _ in self.queued]
            waiting += [future for _, future in self.busy.values()]
            for pid, conn in self.idle + [(pid, conn) for conn, (pid, _) in self.busy.items()]:
                self._reap(pid, conn)
            self.queued.clear()
            self.idle, self.busy = [], {}
            for future in waiting:
                if not future.done():
                    future.set_exception(_ended())
            self.changed.notify_all()
        self.wake_in.close()
        self.wake_out.close()


class CoreMap:
    """map, window and together over `workers` (None: in this process), see the module
    doc."""

    def __init__(self, workers: _Workers | None = None) -> None:
        self._workers = workers
        self.workers = workers.count if workers else 1   # how many items run at once

    def __call__(self, function: Callable, items: Iterable) -> list:
        items = list(items)
        if self._workers is None or len(items) < 2:
            return [function(item) for item in items]
        futures = [self._workers.submit(function, item) for item in items]
        try:
            return [future.result() for future in futures]
        finally:
            self._workers.drop(futures)

    def window(self, function: Callable, items: Iterable, eager: bool = False) -> Generator:
        """function(item) of each item, in order, the workers kept busy (module doc);
        `eager`: up to a worker's worth of its items queued whether or not a worker is
        free (another window's run-ahead then waits behind them)."""
        if self._workers is None:
            return (function(item) for item in items)
        return self._window(function, iter(items), eager)

    def _window(self, function: Callable, items: Iterator, eager: bool) -> Generator:
        workers = self._workers
        futures: deque[Future] = deque()      # in the items' order
        left = True
        # not eager, its items a group: the worker that finishes its last unfinished one
        # waits while the caller takes the result, for its next one (no other of its
        # own unfinished), queued ahead of another window's run-ahead: the chain of
        # results of a search, each deciding the next, is not held up behind the other
        # window's items, which fill around it
        group = None if eager else _Group()

        def unfinished() -> int:
            """How many of ours are queued or running (under the lock)."""
            return sum(not future.done() for future in futures)

        def wanted() -> bool:
            """Whether to queue the next item: none of ours unfinished, or (`eager`, or
            a worker free with nothing queued) fewer than the workers (under the
            lock)."""
            running = unfinished()
            return left and (running == 0 or (running < workers.count
                                               and (eager or workers.spare())))

        try:
            while True:
                with workers.lock:
                    workers.changed.wait_for(lambda: not futures or futures[0].done()
                                             or wanted() or workers.closed)
                    # a result in hand first: the caller may stop on it
                    ready = bool(futures) and futures[0].done()
                    grow = not ready and wanted()
                    sole = grow and unfinished() == 0
                if grow:
                    item = next(items, _END)
                    if item is _END:
                        left = False
                        if group is not None:
                            workers.release(group)
                    else:
                        futures.append(workers.submit(function, item, group,
                                                      front=sole and group is not None))
                    continue
                if not futures:
                    return
                yield futures.popleft().result()
        finally:
            if group is not None:
                workers.release(group)
            workers.drop(futures)

    def together(self, calls: Iterable[Callable[[], object]],
                 at_once: int | None = None) -> Iterator:
        """The calls' results, in order, each as soon as it and those before it are
        done; up to `at_once` calls running at a time (None: all) (module doc)."""
        calls = list(calls)
        if self._workers is None or len(calls) < 2:
            return (call() for call in calls)
        return self._together(calls, min(at_once or len(calls), len(calls)))

    @staticmethod
    def _together(calls: list[Callable[[], object]], at_once: int) -> Generator:
        threads = ThreadPoolExecutor(at_once)
        try:
            for future in [threads.submit(call) for call in calls]:
                yield future.result()
        finally:
            # after an error, not waiting for the others: `core_map`'s end fails what
            # they wait for
            threads.shutdown(wait=False, cancel_futures=True)


_END = object()


@contextmanager
def core_map() -> Iterator[CoreMap]:
    """A CoreMap over the usable cores (see the module doc); the workers end with the
    block. A worker is one core's: its BLAS and OpenMP pools run one thread (forked
    while this process's pools are held to one, which the block's end gives back), so
    that no pool's threads spin on the cores the other workers compute on."""
    count = usable_cores()
    if count < 2 or not hasattr(os, "fork"):
        yield CoreMap(None)
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        workers = _Workers(count)
        try:
            yield CoreMap(workers)
        finally:
            workers.close()
