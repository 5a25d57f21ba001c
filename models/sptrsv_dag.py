"""Critical path of the sparse triangular solve through its (rank, level) task graph.

Task (r, l): rank r solves its rows of level l, c(r, l) = their stream bytes / mem_bw,
then is held h(r, l) seconds by what it sends after them. A rank runs its tasks in level
order. A batch b (values of level l_b from rank s_b to rank r_b) leaves when task
(s_b, l_b) ends and gates task (r_b, g_b), d_b seconds later:

    finish(r, l) = max(finish(r, previous level of r),
                       max over batches b gating (r, l) of finish(s_b, l_b) + d_b)
                   + c(r, l) + h(r, l)
    critical path = max over tasks of finish(r, l)

The gated level g_b: level-set, the first level of r_b above l_b (the rank waits for a
level's messages before its next segment); sync-free, the first level of r_b whose rows
read a value of b (a task waits only for the flags it reads). With rows in contiguous
blocks the wavefront pipelines: a boundary's trip adds once per rank of the chain, not
once per level.

The edges' seconds are `SptrsvCosts.dag_time`'s (models/sptrsv.py): a message's link
latency plus its bytes at the link's seconds per byte; a sync-free push on a link with a
measured put-with-signal trip holds the sender that trip (its flushes wait for the
target's acknowledgement, which over TCP comes when the target next polls: the trip as
calibrated includes that poll) and arrives when the sender is released, d_b = 0; a
level-set batch holds its sender the executor's calls to send it and the task it gates
those to receive it, where the machine file has them (h on both tasks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TaskGraph:
    """Tasks sorted by (rank, level) and the batches between them."""

    rank: np.ndarray         # per task
    level: np.ndarray        # per task
    stream: np.ndarray       # per task: bytes its rows stream
    src: np.ndarray          # per batch: the task after which it leaves
    dst: np.ndarray          # per batch: the task it gates
    values: np.ndarray       # per batch: solved values it carries

    @property
    def ntasks(self) -> int:
        return self.rank.size


def task_graph(indptr: np.ndarray, indices: np.ndarray, levels: np.ndarray,
               owner: np.ndarray, algo: str, value_bytes: int) -> TaskGraph:
    """The (rank, level) tasks of a lower-triangular pattern under `owner` and its
    batches (one per (source, destination, level), as `needed_values` groups them); a
    row streams 12 bytes per stored nonzero and `value_bytes` twice (b and x)."""
    n = owner.size
    nlev = int(levels.max()) + 1 if levels.size else 1
    owner = owner.astype(np.int64)
    levels = levels.astype(np.int64)
    row_nnz = np.diff(indptr)
    nranks = int(owner.max(initial=0)) + 1
    task_keys, task_of_row = np.unique(owner * nlev + levels, return_inverse=True)
    rank, level = task_keys // nlev, task_keys % nlev
    stream = np.bincount(task_of_row, weights=12.0 * row_nnz + 2.0 * value_bytes,
                         minlength=task_keys.size)
    rows = np.repeat(np.arange(n, dtype=np.int64), row_nnz)
    cols = np.asarray(indices, dtype=np.int64)
    cross = owner[rows] != owner[cols]
    rows, cols = rows[cross], cols[cross]
    reader = owner[rows]
    # one entry per distinct (reader, value): the batch it belongs to and its first reader
    pair = reader * n + cols
    pairs, first = np.unique(pair, return_inverse=True)
    read_level = np.full(pairs.size, np.iinfo(np.int64).max)
    np.minimum.at(read_level, first, levels[rows])
    value_reader, value = pairs // n, pairs % n
    writer = owner[value]
    batch_key = (writer * nranks + value_reader) * nlev + levels[value]
    batches, batch_of_value = np.unique(batch_key, return_inverse=True)
    nb = batches.size
    values = np.bincount(batch_of_value, minlength=nb)
    b_level = batches % nlev
    b_reader = batches // nlev % nranks
    b_writer = batches // nlev // nranks
    if algo == "syncfree":
        gate = np.full(nb, np.iinfo(np.int64).max)
        np.minimum.at(gate, batch_of_value, read_level)
    else:
        gate = b_level + 1
    src = np.searchsorted(task_keys, b_writer * nlev + b_level)
    dst = np.searchsorted(task_keys, b_reader * nlev + gate)
    return TaskGraph(rank, level, stream, src, dst, values)


def critical_path(graph: TaskGraph, hold: np.ndarray, delay: np.ndarray,
                  compute: np.ndarray) -> float:
    """Longest path (module doc): `compute` and `hold` per task, `delay` per batch.
    Tasks run level by level: every edge goes to a higher level."""
    finish = np.zeros(graph.ntasks)
    same_rank = np.zeros(graph.ntasks, dtype=bool)
    same_rank[1:] = graph.rank[1:] == graph.rank[:-1]
    prev = np.where(same_rank, np.arange(graph.ntasks) - 1, -1)
    dst_level = graph.level[graph.dst]
    edge_order = np.argsort(dst_level, kind="stable")
    edge_bounds = np.searchsorted(dst_level[edge_order], np.arange(graph.level.max(initial=0) + 2))
    task_order = np.argsort(graph.level, kind="stable")
    task_bounds = np.searchsorted(graph.level[task_order],
                                  np.arange(graph.level.max(initial=0) + 2))
    start = np.zeros(graph.ntasks)
    for lev in range(edge_bounds.size - 1):
        tasks = task_order[task_bounds[lev]:task_bounds[lev + 1]]
        edges = edge_order[edge_bounds[lev]:edge_bounds[lev + 1]]
        np.maximum.at(start, graph.dst[edges], finish[graph.src[edges]] + delay[edges])
        before = np.where(prev[tasks] >= 0, finish[np.maximum(prev[tasks], 0)], 0.0)
        finish[tasks] = np.maximum(start[tasks], before) + compute[tasks] + hold[tasks]
    return float(finish.max(initial=0.0))
