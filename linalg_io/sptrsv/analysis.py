"""Analysis of a lower-triangular system: levels, partition, communication plan, local layout.

Everything here is fixed before any byte moves, computed identically on every rank from
the replicated matrix (vectorized NumPy, the per-row recurrence in Cython):

* `levels`: level(i) = 1 + max level of the rows i depends on; the critical path is
  the number of levels;
* `partition_rows`: owner of every row, contiguous blocks balanced by nonzeros
  ("nnz") or each level split evenly by nonzeros over the ranks ("level");
* `CommPlan`: one entry per (solved value, rank that needs it): 8 bytes per entry
  per right-hand side move, in batches of one (source, destination, level);
* `LocalSystem`: one rank's rows in solve order, cut into segments after every
  level at which the rank sends or receives values, with its off-diagonal part in
  CSR over an extended vector [local rows | ghost values in plan order].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from linalg_io._kernels.sptrsv import levels_lower


def row_of_entry(matrix: sp.csr_matrix) -> np.ndarray:
    """Row index of every stored entry of a CSR matrix."""
    return np.repeat(np.arange(matrix.shape[0], dtype=np.int64), np.diff(matrix.indptr))


def levels(lower: sp.csr_matrix) -> np.ndarray:
    """Dependency level of every row (0-based) of a lower-triangular CSR matrix."""
    return levels_lower(lower.indptr.astype(np.int64), lower.indices.astype(np.int32))


def _balanced_owner(weights: np.ndarray, group_start: np.ndarray, group_total: np.ndarray,
                    nranks: int) -> np.ndarray:
    """Split consecutive weighted items into `nranks` pieces per group by cumulative weight."""
    before = np.cumsum(weights) - weights - group_start
    middle = before + 0.5 * weights
    owner = np.floor(nranks * middle / np.maximum(group_total, 1)).astype(np.int64)
    return np.clip(owner, 0, nranks - 1).astype(np.int32)


def partition_rows(lower: sp.csr_matrix, row_levels: np.ndarray, nranks: int,
                   how: str = "nnz") -> np.ndarray:
    """Owner rank of every row.

    nnz: contiguous row blocks with about nnz/P nonzeros each; level: the rows of each
    level, in index order, split into P pieces of about equal nonzeros (every rank
    gets a share of every level, so each level's work is balanced).
    """
    weights = np.diff(lower.indptr).astype(np.float64)
    if how == "nnz":
        total = np.full_like(weights, weights.sum())
        return _balanced_owner(weights, np.zeros_like(weights), total, nranks)
    if how != "level":
        raise ValueError(f"partition must be 'nnz' or 'level', got {how!r}")
    order = np.lexsort((np.arange(lower.shape[0]), row_levels))
    sorted_weights = weights[order]
    sorted_levels = row_levels[order]
    level_total = np.bincount(sorted_levels, weights=sorted_weights)
    level_start = np.concatenate([[0.0], np.cumsum(level_total)[:-1]])
    owner = np.empty(lower.shape[0], dtype=np.int32)
    owner[order] = _balanced_owner(sorted_weights, level_start[sorted_levels],
                                   level_total[sorted_levels], nranks)
    return owner


def _rank_within_groups(group: np.ndarray, ngroups: int) -> np.ndarray:
    """Position of each item among the items of its group, in the given order."""
    by_group = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=ngroups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.empty(group.size, dtype=np.int64)
    position[by_group] = np.arange(group.size) - np.repeat(starts, counts)
    return position


@dataclass
class CommPlan:
    """Which solved values move: one entry per (value row, destination rank).

    Sorted by (src, dst, level, row). `dst_pos` is the entry's slot in the destination's
    ghost vector; batches are runs of equal (src, dst, level) and `batch_slot` numbers a
    batch among its destination's incoming batches.
    """

    row: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    level: np.ndarray
    dst_pos: np.ndarray
    batch_start: np.ndarray
    batch_slot: np.ndarray
    nranks: int

    @property
    def nbatches(self) -> int:
        return self.batch_start.size - 1

    def batch_key(self, field: np.ndarray) -> np.ndarray:
        return field[self.batch_start[:-1]]


def comm_plan(lower: sp.csr_matrix, owner: np.ndarray, row_levels: np.ndarray,
              nranks: int) -> CommPlan:
    """The static plan: every off-rank value each rank reads, once, grouped in batches."""
    n = lower.shape[0]
    rows = row_of_entry(lower)
    cols = lower.indices.astype(np.int64)
    cross = owner[rows] != owner[cols]
    pairs = np.unique(owner[rows[cross]].astype(np.int64) * n + cols[cross])
    dst = (pairs // n).astype(np.int32)
    row = pairs % n
    src = owner[row]
    level = row_levels[row]
    order = np.lexsort((row, level, dst, src))
    row, src, dst, level = row[order], src[order], dst[order], level[order]
    dst_pos = _rank_within_groups(dst, nranks)
    new_batch = np.ones(row.size, dtype=bool)
    new_batch[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (level[1:] != level[:-1])
    batch_start = np.append(np.flatnonzero(new_batch), row.size)
    batch_slot = _rank_within_groups(dst[batch_start[:-1]], nranks)
    return CommPlan(row, src, dst, level, dst_pos, batch_start, batch_slot, nranks)


@dataclass
class Batch:
    """One message of the plan as seen by one rank."""

    peer: int          # destination (outgoing) or source (incoming)
    level: int         # level of the values it carries (message tag)
    segment: int       # sent after / awaited after this local segment
    local: np.ndarray  # outgoing: local indices to pack; incoming: ghost slots (contiguous)
    target_pos: int    # outgoing: first ghost slot at the destination
    target_slot: int   # outgoing: flag slot at the destination; incoming: own flag slot


@dataclass
class LocalSystem:
    """One rank's part: rows in solve order, off-diagonal CSR over [local | ghosts]."""

    rows: np.ndarray         # global row of each local row, in solve order
    ghosts: np.ndarray       # global row of each ghost value, in plan order
    indptr: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    diag: np.ndarray
    inv_diag: np.ndarray     # 1 / diag, what the CPU kernel multiplies by
    segment_ptr: np.ndarray  # local rows of segment k: segment_ptr[k]:segment_ptr[k+1]
    outgoing: list[Batch]
    incoming: list[Batch]
    rows_per_rank: np.ndarray  # local row count of every rank

    @property
    def n_local(self) -> int:
        return self.rows.size

    @property
    def n_ext(self) -> int:
        return self.rows.size + self.ghosts.size

    @property
    def nsegments(self) -> int:
        return self.segment_ptr.size - 1


def local_system(lower: sp.csr_matrix, owner: np.ndarray, row_levels: np.ndarray,
                 plan: CommPlan, rank: int) -> LocalSystem:
    """Rank `rank`'s rows, segments, local CSR and batches (see module doc)."""
    n = lower.shape[0]
    out_sel = plan.src == rank
    in_sel = plan.dst == rank
    event_levels = np.unique(np.concatenate([plan.level[out_sel], plan.level[in_sel]]))
    own_rows = np.flatnonzero(owner == rank)
    segment = np.searchsorted(event_levels, row_levels[own_rows], side="left")
    order = np.lexsort((own_rows, segment))
    rows = own_rows[order]
    segment_ptr = np.searchsorted(segment[order], np.arange(event_levels.size + 2))
    ghosts = plan.row[in_sel]
    to_ext = np.full(n, -1, dtype=np.int64)
    to_ext[rows] = np.arange(rows.size)
    to_ext[ghosts] = rows.size + np.arange(ghosts.size)

    sub = lower[rows]
    sub_rows = row_of_entry(sub)
    is_diag = sub.indices == rows[sub_rows]
    diag = np.zeros(rows.size)
    diag[sub_rows[is_diag]] = sub.data[is_diag]
    keep = ~is_diag
    cols = to_ext[sub.indices[keep]]
    if cols.size and cols.min() < 0:
        raise AssertionError("communication plan misses a value a local row reads")
    indptr = np.zeros(rows.size + 1, dtype=np.int64)  # int64/int32: the kernel's index types
    np.cumsum(np.bincount(sub_rows[keep], minlength=rows.size), out=indptr[1:])

    def batches(selected: np.ndarray, outgoing: bool) -> list[Batch]:
        ids = np.flatnonzero(selected[plan.batch_start[:-1]])
        result = []
        for b in ids:
            lo, hi = plan.batch_start[b], plan.batch_start[b + 1]
            level = int(plan.level[lo])
            seg = int(np.searchsorted(event_levels, level))
            if outgoing:
                result.append(Batch(int(plan.dst[lo]), level, seg, to_ext[plan.row[lo:hi]],
                                    int(plan.dst_pos[lo]), int(plan.batch_slot[b])))
            else:
                first = int(plan.dst_pos[lo])
                result.append(Batch(int(plan.src[lo]), level, seg,
                                    np.arange(first, first + hi - lo), first,
                                    int(plan.batch_slot[b])))
        return result

    return LocalSystem(rows, ghosts, indptr, cols.astype(np.int32), sub.data[keep].copy(), diag,
                       1.0 / diag,
                       segment_ptr, batches(out_sel, True), batches(in_sel, False),
                       np.bincount(owner, minlength=plan.nranks))


@dataclass
class TaskGraph:
    """A rank's non-empty segments as tasks of the ready pool.

    Task t solves local rows rows_ptr[t]:rows_ptr[t+1] (in order), may start once its
    pred_count[t] local predecessor tasks are done and the incoming batches with flag
    slots need[need_ptr[t]:need_ptr[t+1]] have arrived; afterwards it sends the
    outgoing batches of `segment[t]`.
    """

    rows_ptr: np.ndarray
    segment: np.ndarray
    pred_count: np.ndarray
    succ_ptr: np.ndarray
    succ: np.ndarray
    need_ptr: np.ndarray
    need: np.ndarray

    @property
    def ntasks(self) -> int:
        return self.segment.size


def _csr_from_pairs(first: np.ndarray, second: np.ndarray, nfirst: int,
                    nsecond: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (first, second) pairs as CSR (ptr over first, sorted second)."""
    keys = np.unique(first.astype(np.int64) * max(nsecond, 1) + second)
    ptr = np.zeros(nfirst + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // max(nsecond, 1), minlength=nfirst), out=ptr[1:])
    return ptr, keys % max(nsecond, 1)


def task_graph(local: LocalSystem) -> TaskGraph:
    """Local task dependencies and remote needs of `local` (see TaskGraph)."""
    sizes = np.diff(local.segment_ptr)
    segment = np.flatnonzero(sizes > 0)
    ntasks = segment.size
    rows_ptr = np.concatenate([[0], np.cumsum(sizes[segment])])
    task_of_row = np.repeat(np.arange(ntasks), sizes[segment])
    entry_task = task_of_row[np.repeat(np.arange(local.n_local), np.diff(local.indptr))]
    is_local = local.cols < local.n_local
    reader = entry_task[is_local]
    writer = task_of_row[local.cols[is_local]]
    cross = reader != writer
    succ_ptr, succ = _csr_from_pairs(writer[cross], reader[cross], ntasks, ntasks)
    pred_count = np.bincount(succ, minlength=ntasks).astype(np.int64)
    slot_of_ghost = np.zeros(local.ghosts.size, dtype=np.int64)
    for batch in local.incoming:
        slot_of_ghost[batch.local] = batch.target_slot
    ghost_entries = ~is_local
    need_ptr, need = _csr_from_pairs(entry_task[ghost_entries],
                                     slot_of_ghost[local.cols[ghost_entries] - local.n_local],
                                     ntasks, len(local.incoming))
    return TaskGraph(rows_ptr, segment, pred_count, succ_ptr, succ, need_ptr, need)
