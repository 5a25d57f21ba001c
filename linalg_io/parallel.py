"""Independent pure evaluations (the model's candidates) spread over this machine's cores.

`core_map()` is a context manager giving a `CoreMap`: called as `map(function, items)
-> list` it runs in forked worker processes, one per core this process may use, in the
items' order (in this process where there is one core or one item); `start` queues a
map and returns a function that waits for its list, so two maps can share the workers.
Only for code without MPI and without threads of its own (a forked child would inherit
their state): the `model` commands. `function` must be picklable (a module-level
function or a functools.partial of one).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class CoreMap:
    """map over the workers of `pool` (None: in this process)."""

    def __init__(self, pool, workers: int = 1) -> None:
        self.pool = pool
        self.workers = workers   # how many items run at once

    def start(self, function: Callable, items: Iterable) -> Callable[[], list]:
        items = list(items)
        if self.pool is None or len(items) < 2:
            results = [function(item) for item in items]
            return lambda: results
        pending = self.pool.map_async(function, items, chunksize=1)
        return pending.get

    def __call__(self, function: Callable, items: Iterable) -> list:
        return self.start(function, items)()


@contextmanager
def core_map() -> Iterator[CoreMap]:
    """A CoreMap over the usable cores (see the module doc); the workers end with the block."""
    workers = usable_cores()
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield CoreMap(None)
        return
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        yield CoreMap(pool, workers)
