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
    delta[i] from rank at[i] on (no zero deltas; sorted by step where `of_runs` makes
    them, in the parts' order where `join` does: `outer_sum` needs the order of its
    columns only)."""

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
        """The sum of several functions (none: zero): their jumps, one part's after the
        other's (not sorted by step: the rows of `outer_sum`)."""
        if not parts:
            return Jumps(step=np.zeros(0, dtype=np.int64), at=np.zeros(0, dtype=np.int64),
                         delta=np.zeros(0))
        return Jumps(step=np.concatenate([j.step for j in parts]),
                     at=np.concatenate([j.at for j in parts]),
                     delta=np.concatenate([j.delta for j in parts]))


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
    difference array, a chunk of PAIR_CHUNK pairs at a time. `columns` sorted by step,
    `rows` in any order."""
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


def run_of(starts: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """[step, i]: the run ([step, run] `starts`, sorted) holding rank ranks[step, i] in
    0..p-1: the last run that starts at or before it (a run of no rank starts where the
    next one does, so it is never the last)."""
    steps, runs = starts.shape
    width = int(max(starts.max(initial=0), ranks.max(initial=0))) + 1
    offset = np.arange(steps)[:, None] * width        # each step's runs after the last's
    found = np.searchsorted((starts + offset).reshape(-1), (ranks + offset).reshape(-1),
                            side="right").reshape(ranks.shape)
    return found - 1 - np.arange(steps)[:, None] * runs


def piece_ends(firsts: list[np.ndarray], p: int) -> np.ndarray:
    """[step, i]: the first and last rank of every piece into which the ranks
    0..p-1 fall when a piece starts at each of `firsts` ([step, j] arrays, taken mod p),
    sorted, each once; a step with fewer repeats its last. A function linear (or convex)
    on each piece has its largest value at one of them."""
    first = np.concatenate([f % p for f in firsts], axis=1)
    ends = np.concatenate([first, (first - 1) % p, np.zeros((len(first), 1), dtype=first.dtype),
                           np.full((len(first), 1), p - 1, dtype=first.dtype)], axis=1)
    ends.sort(axis=1)
    repeat = np.zeros(ends.shape, dtype=bool)
    repeat[:, 1:] = ends[:, 1:] == ends[:, :-1]
    width = int((~repeat).sum(axis=1).max())
    ends = np.sort(np.where(repeat, p, ends), axis=1)[:, :width]   # each once, then p
    last = np.where(ends < p, ends, -1).max(axis=1, keepdims=True)
    return np.where(ends < p, ends, last)


def bruck_at(starts: np.ndarray, counts: np.ndarray, blocks: np.ndarray, ranks: np.ndarray,
             p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`linalg_io.layout.schedules.allgatherv_costs` (sent, received, messages) of the
    Bruck allgatherv over p ranks of blocks given as runs ([step, run] `starts`,
    `counts` and `blocks`: each of the run's ranks' block), at the ranks `ranks` [step,
    i] only: O(steps x i x (rounds + log runs)), whatever p. A rank's window q .. q+m-1
    in round (h, m) is a difference of the cyclic prefix sums P(q + m) - P(q), P linear
    between the runs' starts; its messages are the rounds whose window reaches the next
    non-empty block (at distance dist: the rounds m > dist)."""
    blocks = np.asarray(blocks, dtype=float)
    steps = len(blocks)
    mass = blocks * counts
    cum = np.concatenate([np.zeros((steps, 1)), np.cumsum(mass, axis=1)[:, :-1]], axis=1)
    total = mass.sum(axis=1, keepdims=True)
    run = run_of(starts, ranks)
    own = np.take_along_axis(blocks, run, axis=1)
    # P of every step at once: its runs' starts, twice (cyclic), and 2p, the steps 2p + 1
    # apart on one axis; P is linear between them (runs of no rank left out)
    offset = np.arange(steps)[:, None] * (2 * p + 1)
    real = np.concatenate([counts > 0, counts > 0, np.ones((steps, 1), dtype=bool)], axis=1)
    at = np.concatenate([starts, starts + p, np.full((steps, 1), 2 * p)], axis=1) + offset
    value = np.concatenate([cum, cum + total, 2 * total], axis=1)
    at, value = at[real], value[real]

    def prefix(x: np.ndarray) -> np.ndarray:     # blocks of the ranks 0..x-1, x <= 2p
        return np.interp(x + offset, at, value)

    rounds = bruck_rounds(p)
    here = prefix(ranks)
    sent = sum((prefix(ranks + m) - here for _, m in rounds), np.zeros(ranks.shape))
    held = np.where(counts > 0, blocks, np.nan)
    first = np.take_along_axis(held, np.argmax(counts > 0, axis=1)[:, None], axis=1)
    equal = ((held == first) | (counts == 0)).all(axis=1, keepdims=True)
    sent = np.where(equal, own * float(sum(m for _, m in rounds)), sent)   # m blocks each
    nonempty = (blocks > 0) & (counts > 0)
    later = np.minimum.accumulate(np.where(nonempty, starts, 2 * p)[:, ::-1], axis=1)[:, ::-1]
    reach = np.where(later < 2 * p, later, later[:, :1] + p)   # next non-empty block's start
    dist = np.take_along_axis(reach, run, axis=1) - ranks
    sizes = np.sort([m for _, m in rounds])
    msgs = len(sizes) - np.searchsorted(sizes, np.maximum(dist, 0), side="right")
    return sent, total - own, msgs.astype(float)
