"""The plan of a redistribution between two layouts, and its cost model (pure math, no MPI).

A redistribution moves the entries of some rectangular regions of a matrix (the whole
matrix by default) from layout `src` to layout `dst` (`linalg_io.layout.layouts`).
Both layouts are separable, so the entries rank s sends to rank d in a region are a
rectangle: the region's rows that src row-process a(s) and dst row-process a'(d) share,
times the columns that src column-process b(s) and dst column-process b'(d) share.
Per axis and region one sort groups the indices by (src process, dst process); the
volume matrix V[s, d] (entries s holds that d needs) follows as
V = sum over regions of rows[a, a'] cols[b, b'] - O(M + N) work per region, nothing
per entry.

Model: every entry whose owner changes is sent once and received once, nothing
else: rank s sends sum_{d != s} V[s, d] entries and receives sum_{d != s} V[d, s].
That count is also the lower bound of any redistribution between the two layouts (an
entry that changes owner must cross the network at least once).

Relabelling (COSTA's optimal reordering): dst's ranks are names, so the processes may
take them in any order. `relabelling(V)` picks the assignment that keeps the most
entries in place (maximum trace of V with permuted columns: an assignment problem,
`scipy.optimize.linear_sum_assignment`); the moved volume is then minimal over all
rank orders.

Rounds (Rink et al., memory-efficient redistribution): with a budget of B_r entries per rank
(`_budget`: a fraction of the local size less the index lists), the exchange is cut into
pieces (sub-rectangles of at most min(B_s, B_d) entries) packed first-fit-decreasing into
rounds so that in every round each rank's send plus receive buffers hold at most its B_r
entries; each round is one Alltoallv. `schedule` is walked both by the executor
(`linalg_io.comm.redistribute`) and by `costs` (the dry run the model reports), so the
executed and the predicted messages are the same list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from linalg_io.errors import InputError
from linalg_io.layout.layouts import Layout


@dataclass(frozen=True)
class Region:
    """Rows r0..r1-1 times columns c0..c1-1."""

    r0: int
    r1: int
    c0: int
    c1: int


@dataclass(frozen=True)
class Piece:
    """Entries src sends dst in one round: rows [i0, i1) x columns [j0, j1) of the
    pair's rectangle in `region` (positions in its sorted global index lists)."""

    src: int
    dst: int
    region: int
    i0: int
    i1: int
    j0: int
    j1: int

    @property
    def size(self) -> int:
        return (self.i1 - self.i0) * (self.j1 - self.j0)


class _AxisPairs:
    """The indices lo..hi-1 of one axis grouped by (src process, dst process), ascending
    within a group."""

    def __init__(self, src_axis, dst_axis, lo: int, hi: int) -> None:
        g = np.arange(lo, hi, dtype=np.int64)
        key = src_axis.owner(g) * dst_axis.nprocs + dst_axis.owner(g)
        self.sorted = g[np.argsort(key, kind="stable")]
        flat = np.bincount(key, minlength=src_axis.nprocs * dst_axis.nprocs)
        self.counts = flat.reshape(src_axis.nprocs, dst_axis.nprocs)
        self.starts = np.concatenate(([0], np.cumsum(flat)))
        self.ndst = dst_axis.nprocs

    def get(self, sp: int, dp: int) -> np.ndarray:
        key = sp * self.ndst + dp
        return self.sorted[self.starts[key]:self.starts[key + 1]]


def split_rectangle(nr: int, nc: int, cap: int):
    """Cut an nr x nc rectangle into sub-rectangles (i0, i1, j0, j1) of <= cap entries:
    whole columns when a column fits, else pieces of one column."""
    if nr == 0 or nc == 0:
        return
    if nr <= cap:
        step = cap // nr
        for j0 in range(0, nc, step):
            yield 0, nr, j0, min(j0 + step, nc)
    else:
        for j in range(nc):
            for i0 in range(0, nr, cap):
                yield i0, min(i0 + cap, nr), j, j + 1


def relabelling(volume: np.ndarray) -> np.ndarray:
    """process_of[r]: the process that takes destination rank r so that the entries that
    stay in place, sum_r V[process_of[r], r], are as many as possible."""
    processes, ranks = linear_sum_assignment(volume, maximize=True)
    process_of = np.empty(volume.shape[1], dtype=np.int64)
    process_of[ranks] = processes
    return process_of


class RedistPlan:
    """Who sends what to whom when moving `regions` of a matrix from `src` to `dst`."""

    def __init__(self, src: Layout, dst: Layout, regions: list[Region] | None = None,
                 mem_fraction: float | None = None, process_of: np.ndarray | None = None) -> None:
        if src.shape != dst.shape or src.nprocs != dst.nprocs:
            raise InputError(f"redistribution between a {src.shape} matrix on {src.nprocs} "
                             f"ranks and a {dst.shape} one on {dst.nprocs}")
        # process_of[r]: the process that takes dst's rank r (identity unless relabelled)
        self.process_of = np.arange(src.nprocs) if process_of is None else process_of
        self.src = src
        self.dst = dst if process_of is None else dst.relabelled(process_of)
        m, n = src.shape
        self.regions = regions if regions is not None else [Region(0, m, 0, n)]
        self._rows = [_AxisPairs(src.rows, dst.rows, r.r0, r.r1) for r in self.regions]
        self._cols = [_AxisPairs(src.cols, dst.cols, r.c0, r.c1) for r in self.regions]
        p = src.nprocs
        self.volume = np.zeros((p, p), dtype=np.int64)
        s_index = src.ranks[:, :, None, None]
        d_index = self.dst.ranks[None, None, :, :]
        for rows, cols in zip(self._rows, self._cols):
            np.add.at(self.volume, (s_index, d_index),
                      np.einsum("ad,be->abde", rows.counts, cols.counts))
        self.mem_fraction = mem_fraction
        self.budget = self._budget(mem_fraction)
        self._schedules: dict[int | None, list[list[Piece]]] = {}

    @classmethod
    def create(cls, src: Layout, dst: Layout, regions: list[Region] | None = None,
               relabel: bool = False, mem_fraction: float | None = None) -> RedistPlan:
        """The plan; with `relabel`, dst's ranks go to the processes `relabelling` picks
        (`process_of`; the plan's `dst` is then the relabelled layout); with `mem_fraction`, rounds
        whose buffers hold at most that fraction of a rank's local size (`budget`)."""
        plan = cls(src, dst, regions, mem_fraction)
        if not relabel:
            return plan
        return cls(src, dst, regions, mem_fraction, relabelling(plan.volume))

    # --- the model ------------------------------------------------------------
    def sent(self) -> np.ndarray:
        """Entries each rank sends (= the entries it holds whose owner changes)."""
        return self.volume.sum(axis=1) - np.diag(self.volume)

    def received(self) -> np.ndarray:
        return self.volume.sum(axis=0) - np.diag(self.volume)

    def moved(self) -> int:
        """Entries that change owner: the model's and the lower bound's total."""
        return int(self.volume.sum() - np.trace(self.volume))

    def _budget(self, fraction: float | None) -> np.ndarray | None:
        """Per rank, the entries its round buffers may hold, None without a fraction:
        fraction x S (S the larger of its source and destination local sizes) less a
        reserve for the index lists and bookkeeping of a round, 4 (rows + columns) + 512
        entries (rows, columns: its larger local counts), so that all the extra memory
        of the exchange stays within fraction x S. A fraction too small to leave one
        entry on a rank that moves data is an InputError."""
        if fraction is None:
            return None
        if not fraction > 0:
            raise InputError(f"redistribution memory fraction must be > 0, got {fraction}")
        p = self.src.nprocs
        shapes = np.array([[self.src.local_shape(r), self.dst.local_shape(r)] for r in range(p)])
        sizes = shapes.prod(axis=2).max(axis=1)
        reserve = 4 * shapes.max(axis=1).sum(axis=1) + 512
        budget = np.floor(fraction * sizes).astype(np.int64) - reserve
        moving = (self.sent() + self.received()) > 0
        short = moving & (budget < 1)
        if short.any():
            r = int(np.flatnonzero(short)[0])
            need = float(((reserve + 1) / np.maximum(sizes, 1))[moving].max())
            raise InputError(f"redistribution memory fraction {fraction}: rank {r} holds "
                             f"{sizes[r]} entries, too few for the round's index lists "
                             f"({reserve[r]} entries); use at least {np.ceil(need * 1e3) / 1e3:g}")
        return np.maximum(budget, 1)

    def costs(self) -> dict:
        """Dry run of `schedule`: per rank entries sent and received, messages (the
        logical count of docs/records.md#counting: rounds in which it sends), wire
        messages (one per peer it sends to in a round: Open MPI's Alltoallv sends
        nothing for a zero count, measured), and peak buffer entries (send + receive in
        one round)."""
        p = self.src.nprocs
        msgs = np.zeros(p, dtype=np.int64)
        wire_msgs = np.zeros(p, dtype=np.int64)
        peak = np.zeros(p, dtype=np.int64)
        rounds = self._rounds(None)
        for pieces in rounds:
            use = np.zeros(p, dtype=np.int64)
            pairs = set()
            for piece in pieces:
                use[piece.src] += piece.size
                use[piece.dst] += piece.size
                pairs.add((piece.src, piece.dst))
            senders = [s for s, _ in pairs]
            np.add.at(wire_msgs, senders, 1)
            msgs[list(set(senders))] += 1
            peak = np.maximum(peak, use)
        return {"sent": self.sent(), "received": self.received(), "msgs": msgs,
                "wire_msgs": wire_msgs, "peak_buffer": peak, "rounds": len(rounds)}

    # --- the exchange -----------------------------------------------------------
    def indices(self, s: int, d: int, region: int) -> tuple[np.ndarray, np.ndarray]:
        """Global rows and columns (ascending) of the entries s sends d in `region`."""
        a, b = self.src.grid_coords(s) or (None, None)
        a2, b2 = self.dst.grid_coords(d) or (None, None)
        if a is None or a2 is None:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        return self._rows[region].get(a, a2), self._cols[region].get(b, b2)

    def schedule(self, rank: int) -> list[list[Piece]]:
        """The rounds, each the list of pieces `rank` sends or receives (src != dst); every
        rank gets the same number of rounds. Without a budget: one round, whole pairs.
        Computed once per rank and kept (the plan is data, fixed before bytes move)."""
        if rank not in self._schedules:
            self._schedules[rank] = self._rounds(rank)
        return self._schedules[rank]

    def _pair_sizes(self, rank: int | None):
        """(s, d, region, rows, cols) of every pair with entries to move (involving `rank`)."""
        p = self.src.nprocs
        for k in range(len(self.regions)):
            for s in range(p):
                a = self.src.grid_coords(s)
                if a is None:
                    continue
                for d in (range(p) if rank is None or s == rank else (rank,)):
                    b = self.dst.grid_coords(d)
                    if d == s or b is None:
                        continue
                    nr = int(self._rows[k].counts[a[0], b[0]])
                    nc = int(self._cols[k].counts[a[1], b[1]])
                    if nr and nc:
                        yield s, d, k, nr, nc

    def _rounds(self, rank: int | None) -> list[list[Piece]]:
        budget = self.budget
        if budget is None:
            pieces = [Piece(s, d, k, 0, nr, 0, nc)
                      for s, d, k, nr, nc in self._pair_sizes(rank)]
            return [pieces]
        pieces = [Piece(s, d, k, i0, i1, j0, j1)
                  for s, d, k, nr, nc in self._pair_sizes(None)
                  for i0, i1, j0, j1 in split_rectangle(nr, nc, int(min(budget[s], budget[d])))]
        pieces.sort(key=lambda piece: -piece.size)
        rounds: list[list[Piece]] = []
        use: list[np.ndarray] = []
        for piece in pieces:
            for r, used in enumerate(use):
                if (used[piece.src] + piece.size <= budget[piece.src]
                        and used[piece.dst] + piece.size <= budget[piece.dst]):
                    break
            else:
                rounds.append([])
                use.append(np.zeros(len(budget), dtype=np.int64))
                r, used = len(use) - 1, use[-1]
            rounds[r].append(piece)
            used[piece.src] += piece.size
            used[piece.dst] += piece.size
        if not rounds:
            rounds = [[]]
        if rank is None:
            return rounds
        return [[p for p in pieces if rank in (p.src, p.dst)] for pieces in rounds]
