"""Independent pure evaluations (the model's candidates) spread over this machine's cores.

`core_map()` is a context manager giving a `map(function, items) -> list` that runs in
forked worker processes, one per core this process may use, in the items' order, or
in this process where there is one core or one item. Only for code without MPI and
without threads of its own (a forked child would inherit their state): the `model`
commands. `function` must be picklable (a module-level function or a
functools.partial of one).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def core_map() -> Iterator[Callable[[Callable, Iterable], list]]:
    """A map over the usable cores (see the module doc); the workers end with the block."""
    workers = usable_cores()
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield lambda function, items: [function(item) for item in items]
        return
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        def mapped(function: Callable, items: Iterable) -> list:
            items = list(items)
            if len(items) < 2:
                return [function(item) for item in items]
            return pool.map(function, items, chunksize=1)

        yield mapped
