"""Per-step functions of the 2D LU's process rows and columns as runs of equal ranks, and
the sums over the steps of their products, without [step, rank] arrays.

At block column k (its end e_k = j0 + kb), a process row's factors in
`linalg_io.models.lu2d` (its rows below the block, whether it is the diagonal row, the
pivot rows it owns, ...) depend on the row r only through numroc's comparisons of r with
(e_k // NB) mod Pr and (N // NB) mod Pr and through r == k mod Pr; a process column's
(its trailing columns, its position (c - k) mod Pc) through the same comparisons mod Pc
and c == k, k - 1 mod Pc. So at each step the ranks of an axis fall into a few runs of
consecutive ranks with equal factors (`run_starts`: cut wherever one of the comparisons
changes), and a per-step function of an axis is a few jumps (`Jumps`: a value added
from a rank on). A sum over the steps of products f_k(r) g_k(c) is then a sum of
products of jumps: each pair adds f's jump times g's at the corner (r, c) of a
(Pr + 1) x (Pc + 1) difference array, whose sums along both axes are the totals
(`outer_sum`). Time and memory O(sum over the steps of jumps(f) x jumps(g) + P), not
O(steps x Pr); whole numbers stay exact (float64 sums of integers below 2^53).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from linalg_io.layout.schedules import bruck_rounds

# the most (row jump, column jump) pairs `outer_sum` adds at once (32 MiB of each array)
PAIR_CHUNK = 1 << 22


@dataclass(frozen=True)
class Jumps:
    """A per-step function of the ranks 0..n-1 of an axis: at step step[i] it rises by
    delta[i] from rank at[i] on (sorted by step; no zero deltas)."""

    step: np.ndarray
    at: np.ndarray
    delta: np.ndarray

    @staticmethod
    def of_runs(starts: np.ndarray, values: np.ndarray) -> Jumps:
        """The jumps of runs: [step, run] first ranks (sorted along the runs, a run of no
        rank starts where the next does) and their values (or [step, 1]: one run)."""
        values = np.asarray(values, dtype=float)
        if values.shape[1] == 1:
            starts = np.zeros((values.shape[0], 1), dtype=np.int64)
        delta = np.diff(values, axis=1, prepend=0.0)
        step, run = np.nonzero(delta)
        return Jumps(step=step, at=starts[step, run], delta=delta[step, run])

    @staticmethod
    def join(*parts: Jumps) -> Jumps:
        """The sum of several functions (none: zero): their jumps, sorted by step."""
        if not parts:
            return Jumps(step=np.zeros(0, dtype=np.int64), at=np.zeros(0, dtype=np.int64),
                         delta=np.zeros(0))
        step = np.concatenate([j.step for j in parts])
        order = np.argsort(step, kind="stable")
        return Jumps(step=step[order], at=np.concatenate([j.at for j in parts])[order],
                     delta=np.concatenate([j.delta for j in parts])[order])


def run_starts(cuts: list[np.ndarray], size: int) -> np.ndarray:
    """[step, run] first rank of each run of ranks 0..size-1: 0 and the `cuts` (each
    [step]: a rank where a factor may change), sorted, clipped to size (duplicates:
    runs of no rank)."""
    starts = np.stack([np.zeros_like(cuts[0])] + list(cuts), axis=1)
    return np.sort(np.clip(starts, 0, size), axis=1)


def run_counts(starts: np.ndarray, size: int) -> np.ndarray:
    """[step, run] ranks in each run."""
    return np.diff(starts, axis=1, append=size)


def outer_sum(rows: Jumps, columns: Jumps, pr: int, pc: int) -> np.ndarray:
    """[Pr, Pc]: sum over the steps k of f_k(r) g_k(c) (module doc): every pair of a row
    jump and a column jump of one step adds delta_f delta_g at (at_f, at_g) of the
    difference array, a chunk of PAIR_CHUNK pairs at a time."""
    size = (pr + 1) * (pc + 1)
    total = np.zeros(size)
    steps = int(max(rows.step.max(initial=-1), columns.step.max(initial=-1))) + 1
    first = np.searchsorted(columns.step, np.arange(steps))
    count = np.searchsorted(columns.step, np.arange(steps), side="right") - first
    pairs = count[rows.step]                                  # per row jump
    ends = np.cumsum(pairs)
    begin = 0
    while begin < len(pairs):
        stop = max(begin + 1, int(np.searchsorted(ends, ends[begin] - pairs[begin]
                                                  + PAIR_CHUNK, side="right")))
        each = pairs[begin:stop]
        row = np.repeat(np.arange(begin, stop), each)
        offset = np.arange(len(row)) - np.repeat(np.cumsum(each) - each, each)
        col = first[rows.step[row]] + offset
        flat = rows.at[row] * (pc + 1) + columns.at[col]
        total += np.bincount(flat, rows.delta[row] * columns.delta[col], minlength=size)
        begin = stop
    return total.reshape(pr + 1, pc + 1).cumsum(axis=0).cumsum(axis=1)[:pr, :pc]


def bruck_misses(starts: np.ndarray, counts: np.ndarray, nonempty: np.ndarray,
                 p: int) -> Jumps:
    """Minus the rounds of a Bruck allgatherv over p ranks in which a rank's window holds
    no non-empty block, per step: the ranks' blocks are runs ([step, run] starts, counts
    and `nonempty`). A rank q sends in round (h, m) unless its window q .. q+m-1 is
    empty, that is unless the next non-empty block at or after q (cyclically) starts at
    B >= q + m: in an empty run [lo, hi) followed by a non-empty block at B, the ranks
    lo .. min(hi, B - m + 1) - 1 miss the round. Every step needs a non-empty block."""
    nonempty = nonempty & (counts > 0)
    start_if = np.where(nonempty, starts, 2 * p)
    # the first non-empty start after each run, else the first one plus p (wrapped)
    later = np.minimum.accumulate(start_if[:, ::-1], axis=1)[:, ::-1]
    after = np.concatenate([later[:, 1:], np.full((len(starts), 1), 2 * p)], axis=1)
    nxt = np.where(after < 2 * p, after, later[:, :1] + p)
    ends = starts + counts
    parts = []
    for _, m in bruck_rounds(p):
        stop = np.minimum(ends, nxt - m + 1)
        missing = ~nonempty & (stop > starts)
        step, run = np.nonzero(missing)
        parts.append(Jumps(step=np.repeat(step, 2),
                           at=np.stack([starts[step, run], stop[step, run]], 1).reshape(-1),
                           delta=np.tile([-1.0, 1.0], len(step))))
    return Jumps.join(*parts)


def window_holds(roots: np.ndarray, p: int) -> list[tuple[int, int, Jumps]]:
    """Per Bruck round (h, m) over p ranks: (h, m, jumps) of whether the window q ..
    q+m-1 of rank q holds the block of rank roots[k] (one per step): the ranks roots[k]
    - m + 1 .. roots[k], cyclically."""
    out = []
    steps = np.arange(len(roots))
    for h, m in bruck_rounds(p):
        lo = roots - m + 1
        wrap = lo < 0
        # [lo, root] or, wrapped, [0, root] and [lo + p, p)
        at = np.stack([np.where(wrap, 0, lo), roots + 1, np.where(wrap, lo + p, p),
                       np.full_like(roots, p)], axis=1)
        delta = np.stack([np.ones(len(roots)), -np.ones(len(roots)), wrap * 1.0,
                          -(wrap * 1.0)], axis=1)
        keep = delta != 0
        step = np.broadcast_to(steps[:, None], at.shape)[keep]
        out.append((h, m, Jumps(step=step, at=at[keep], delta=delta[keep])))
    return out
