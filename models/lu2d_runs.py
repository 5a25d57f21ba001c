"""Per-step functions of the 2D LU's process rows and columns as runs of equal ranks, and
the sums over the steps of their products, without [step, rank] arrays.

At block column k (its end e_k = j0 + kb), a process row's factors in
`linalg_io.models.lu2d` (its rows below the block, whether it is the diagonal row, the
pivot rows it owns, ...) depend on the row r only through numroc's comparisons of r with
(e_k // NB) mod Pr and (N // NB) mod Pr and through r == k mod Pr; a process column's
trailing columns through the same comparisons mod Pc. So at each step the ranks of an
axis fall into a few runs of consecutive ranks with equal factors (`run_starts`: cut
wherever one of the comparisons changes), and a per-step function of an axis is a few
jumps (`Jumps`: a value added from a rank on, in a few slots per step). A sum over the
steps of products f_k(r) g_k(c) is then a sum of products of jumps: each pair adds f's
jump times g's at the corner (r, c) of a (Pr + 1) x (Pc + 1) difference array, whose
sums along both axes are the totals (`outer_sum`); where g_k is one column (c == k mod
Pc: the panel's), the rows' jumps go to that column alone (`column_sum`).

The block-cyclic plan repeats: the ranks where a slot's jumps fall depend on k mod Pr
(rows) and k mod Pc (columns) alone, but at a few steps (the last, a partial block), so
every pair of slots lands on the same corner at the steps of one residue k mod
lcm(Pr, Pc), and their products are summed along those steps first (a product of
[residue, slot, step] matrices) before they go to the difference array: where there are
at least two steps per residue, O(steps x slots^2) arithmetic and O(lcm(Pr, Pc) x
slots^2 + P) memory; else, or at the steps off the period, every pair goes to the array
(its slots of zero jumps left out). Whole numbers stay exact (float64 sums of integers
below 2^53); others to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import lcm

import numpy as np
from linalg_io._kernels.lu2d_points import (
    bruck_points,
    distinct_ends,
    last_at_or_before,
    running_sum,
)
from linalg_io.models.rates import BLAS

from linalg_io.layout.schedules import bruck_rounds

# the most (row jump, column jump) pairs `outer_sum` adds at once (32 MiB of each array)
PAIR_CHUNK = 1 << 22
# `bruck_misses`' runs per block
MISS_CHUNK = 1 << 15
# `_corners` kept for the pairs of at most this many (8 MiB each)
CORNERS_KEPT = 1 << 20


@dataclass(frozen=True)
class Block:
    """Jumps at some steps: at step step[i] (step i where `step` is None) a rise by
    delta[i, j] from rank at[i, j] on, for each slot j ([row, slot] arrays; zero deltas
    allowed; a rank at the axis' size adds nothing)."""

    step: np.ndarray | None
    at: np.ndarray
    delta: np.ndarray

    def every_step(self) -> bool:
        return self.step is None

    def at_steps(self, values: np.ndarray) -> np.ndarray:
        """Per-step `values` at the steps of the rows."""
        return values if self.step is None else values[self.step]

    # a column block's properties, kept for its every use (`_add_pairs`)
    @cached_property
    def alike(self) -> np.ndarray:
        """[row]: whether the row's jumps all lie at rank 0 (its ranks all alike)."""
        return ((self.at == 0) | (self.delta == 0)).all(axis=1)

    @cached_property
    def level(self) -> np.ndarray:
        """[row]: the value the row's jumps reach."""
        return self.delta.sum(axis=1)

    @cached_property
    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """(at, delta) in the fewest slots (`_nonzero_slots`)."""
        return _nonzero_slots(self.at, self.delta)

    def merged(self, size: int) -> Block:
        """A column block (whole numbers) in fewer slots: the jumps at one rank of a row
        (its ranks sorted) added into its first slot of that rank, those at `size` or
        beyond (they add nothing) dropped, and the slots left zero at every step
        removed; kept for every use."""
        memo = self.__dict__.setdefault("_merged", {})
        if size not in memo:
            at, delta = self.at, np.where(self.at < size, self.delta, 0.0)
            if self.step is None and (np.diff(at, axis=1) >= 0).all():
                for j in range(at.shape[1] - 1, 0, -1):
                    same = at[:, j] == at[:, j - 1]
                    delta[same, j - 1] += delta[same, j]
                    delta[same, j] = 0.0
            used = (delta != 0).any(axis=0)
            used[0] |= not used.any()
            memo[size] = Block(self.step, np.ascontiguousarray(at[:, used]),
                               np.ascontiguousarray(delta[:, used]))
        return memo[size]

    def off_period(self, period: int) -> np.ndarray:
        """`_off_period` of the block's ranks."""
        memo = self.__dict__.setdefault("_off", {})
        if period not in memo:
            memo[period] = _off_period(self.at, period)
        return memo[period]


@dataclass(frozen=True)
class Jumps:
    """A per-step function of the ranks 0..n-1 of an axis: the sum of its blocks'
    jumps (`Block`)."""

    blocks: tuple[Block, ...]

    @staticmethod
    def of_runs(starts: np.ndarray, values, memo: dict | None = None) -> Jumps:
        """The jumps of runs: [step, run] first ranks (sorted along the runs, a run of no
        rank starts where the next does) and their values (or [step, 1]: one run).
        `memo`: a dict that every block of these starts shares (`Block.off_period`)."""
        values = np.asarray(values, dtype=float)
        if values.shape[1] == 1:
            starts = np.zeros((values.shape[0], 1), dtype=np.int64)
            memo = None
        # the differences along the flat array (its rows are short: one long loop), each
        # row's first then set to its value
        flat = np.ascontiguousarray(values).reshape(-1)
        delta = np.empty(values.shape)
        delta.reshape(-1)[0] = flat[0]
        np.subtract(flat[1:], flat[:-1], out=delta.reshape(-1)[1:])
        delta[:, 0] = values[:, 0]
        block = Block(None, np.asarray(starts), delta)
        if memo is not None:
            block.__dict__["_off"] = memo
        return Jumps((block,))

    @staticmethod
    def join(*parts: Jumps) -> Jumps:
        """The sum of several functions: their blocks."""
        return Jumps(tuple(block for part in parts for block in part.blocks))

    def scaled(self, weight: np.ndarray) -> Jumps:
        """The function times a per-step weight [step]."""
        return Jumps(tuple(Block(b.step, b.at, b.delta * (weight if b.step is None
                                                          else weight[b.step])[:, None])
                           for b in self.blocks))


def at_column(column: np.ndarray) -> Jumps:
    """The per-step function that is 1 from column column[k] on (`column_sum`'s)."""
    return Jumps((Block(None, np.asarray(column)[:, None], np.ones((len(column), 1))),))


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
    """[Pr, Pc]: sum over the steps k of f_k(r) g_k(c) (module doc); `columns` one block
    of every step."""
    total = _difference(rows, columns, pr, pc)
    return _running_sum(_running_sum(total, 0), 1)[:pr, :pc]


def column_sum(rows: Jumps, column: np.ndarray | Jumps, pr: int, pc: int) -> np.ndarray:
    """[Pr, Pc]: sum over the steps k of f_k(r) in column column[k] (in 0..Pc-1) alone
    (`column`: those, or their `at_column`, kept for its every use)."""
    total = _difference(rows, column if isinstance(column, Jumps) else at_column(column),
                        pr, pc)
    return _running_sum(total, 0)[:pr, :pc]


def _running_sum(total: np.ndarray, axis: int) -> np.ndarray:
    """np.cumsum of the 2D `total` along `axis`, in place, the same additions in the same
    order: C-contiguous floats by `linalg_io._kernels.lu2d_points.running_sum` (numpy's
    cumsum strides through memory down the rows, and along a row waits on each
    addition), others (whole numbers of a problem without a float term) by numpy's."""
    if total.dtype == np.float64 and total.flags.c_contiguous:
        return running_sum(total, axis)
    return np.cumsum(total, axis=axis, out=total)


class _Entries:
    """A difference array's entries (flat index, value), added by one bincount per
    PAIR_CHUNK of them (a P-sized array each: few for P = 2^20); a part as large as the
    array on its own (copying it into one would cost more)."""

    def __init__(self, size: int) -> None:
        self.size, self.total, self.parts, self.pending = size, None, [], 0

    def add(self, flat: np.ndarray, weight: np.ndarray) -> None:
        if flat.size >= self.size:
            self._flush()
        self.parts.append((flat.reshape(-1), weight.reshape(-1)))
        self.pending += flat.size
        if self.pending >= min(PAIR_CHUNK, self.size):
            self._flush()

    def _flush(self) -> None:
        if not self.parts:
            return
        flat, weight = ((np.concatenate(a) if len(a) > 1 else a[0]) for a in zip(*self.parts))
        added = np.bincount(flat, weight, minlength=self.size)
        if self.total is None:
            self.total = added
        else:
            self.total += added
        self.parts, self.pending = [], 0

    def array(self) -> np.ndarray:
        self._flush()
        return np.zeros(self.size) if self.total is None else self.total


def _difference(rows: Jumps, columns: Jumps, pr: int, pc: int) -> np.ndarray:
    """The (Pr + 1) x (Pc + 1) difference array of `outer_sum`: the steps of every
    residue k mod lcm(Pr, Pc) summed first where each has two or more (module doc)."""
    col = columns.blocks[0].merged(pc)
    entries = _Entries((pr + 1) * (pc + 1))
    period = lcm(pr, pc)
    for block in rows.blocks:
        if block.every_step() and len(block.at) >= 2 * period:
            off = _add_by_period(entries, block, col, period, pc)
            block = Block(off, block.at[off], block.delta[off])
        _add_pairs(entries, block, col, pc)
    return entries.array().reshape(pr + 1, pc + 1)


def _add_by_period(entries: _Entries, rows: Block, columns: Block, period: int,
                   pc: int) -> np.ndarray:
    """Add to `entries` the pairs of `rows` and `columns` (blocks of every step, at least
    `period` steps) at the steps whose slots' ranks are those of the first step of their
    residue k mod `period`; return the others (sorted)."""
    steps = len(rows.at)
    members = -(-steps // period)
    off = rows.off_period(period) | columns.off_period(period)
    row_delta = np.where(off[:, None], 0.0, rows.delta) if off.any() else rows.delta
    with BLAS.limit(limits=1, user_api="blas"):
        weight = np.matmul(_folded(row_delta, period, members).transpose(1, 2, 0),
                           _folded(columns.delta, period, members).transpose(1, 0, 2))
    entries.add(_corners(rows, columns, period, pc), weight)
    return np.flatnonzero(off)


def _corners(rows: Block, columns: Block, period: int, pc: int) -> np.ndarray:
    """[residue, row slot, column slot]: the flat (Pc + 1 wide) index of the pairs of the
    first `period` steps' ranks; kept with the rows' `Block.off_period` memo (every block
    of those starts shares it) for these columns."""
    def corners() -> np.ndarray:
        return (rows.at[:period] * (pc + 1))[:, :, None] + columns.at[:period][:, None, :]

    if period * rows.at.shape[1] * columns.at.shape[1] > CORNERS_KEPT:
        return corners()        # the memory of two grids' would be too much
    memo = rows.__dict__.setdefault("_off", {})
    key = ("corners", period, pc, id(columns))
    if key not in memo or memo[key][0] is not columns:
        memo[key] = (columns, corners())
    return memo[key][1]


def _off_period(at: np.ndarray, period: int) -> np.ndarray:
    """[step]: whether a step's slots' ranks differ from those of step k mod `period`."""
    steps, whole = len(at), len(at) // period * period
    off = np.zeros(steps, dtype=bool)
    off[:whole] = (at[:whole].reshape(-1, period, at.shape[1]) != at[:period]).any(axis=2
                                                                                   ).reshape(-1)
    off[whole:] = (at[whole:] != at[:steps - whole]).any(axis=1)
    return off


def _folded(delta: np.ndarray, period: int, members: int) -> np.ndarray:
    """[member, residue, slot]: delta [step, slot] by k // period, k mod period (zeros
    after the last step)."""
    if len(delta) < members * period:
        delta = np.concatenate([delta, np.zeros((members * period - len(delta),
                                                 delta.shape[1]))])
    return delta.reshape(members, period, -1)


def _add_pairs(entries: _Entries, rows: Block, columns: Block, pc: int) -> None:
    """Add to `entries` every pair of a jump of `rows` and one of `columns` (a block of
    every step) at its step, PAIR_CHUNK pairs at a time; where a step's columns are all
    alike (every jump at column 0), its rows' jumps times their value go to column 0."""
    if not len(rows.at):
        return
    alike = rows.at_steps(columns.alike)
    # an alike step's jumps go to column 0 as they are (zero ones add nothing: no
    # compacting copy of the large rows' arrays)
    if alike.all():
        entries.add(rows.at * (pc + 1), rows.delta * rows.at_steps(columns.level)[:, None])
        return
    if alike.any():
        level = rows.at_steps(columns.level)[alike][:, None]
        entries.add(rows.at[alike] * (pc + 1), rows.delta[alike] * level)
    # the slots zero at every such step left out (cheap: compacting each step's
    # non-zero jumps costs more than the pairs of its zero ones)
    row_at, row_delta = ((rows.at[~alike], rows.delta[~alike]) if alike.any()
                         else (rows.at, rows.delta))
    used = (row_delta != 0).any(axis=0)
    if not used.all():
        row_at, row_delta = row_at[:, used], row_delta[:, used]
    steps = rows.at_steps(np.arange(len(columns.at)))[~alike]
    col_at, col_delta = (a[steps] for a in columns.nonzero)
    chunk = max(1, PAIR_CHUNK // max(1, row_at.shape[1] * col_at.shape[1]))
    for first in range(0, len(row_at), chunk):
        part = slice(first, first + chunk)
        entries.add((row_at[part] * (pc + 1))[:, :, None] + col_at[part][:, None, :],
                    row_delta[part][:, :, None] * col_delta[part][:, None, :])


def _nonzero_slots(at: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same jumps in the fewest slots: each row's non-zero ones first, in order."""
    nonzero = delta != 0
    width = int(nonzero.sum(axis=1).max(initial=0))
    if width == at.shape[1]:
        return at, delta
    out_at = np.zeros((len(at), width), dtype=np.int64)
    out_delta = np.zeros((len(at), width))
    filled = np.zeros(len(at), dtype=np.int64)     # a slot at a time: rows are short
    for slot in range(at.shape[1]):
        row = np.flatnonzero(nonzero[:, slot])
        out_at[row, filled[row]] = at[row, slot]
        out_delta[row, filled[row]] = delta[row, slot]
        filled[row] += 1
    return out_at, out_delta


def bruck_misses(starts: np.ndarray, counts: np.ndarray, nonempty: np.ndarray,
                 p: int) -> Jumps:
    """Minus the rounds of a Bruck allgatherv over p ranks in which a rank's window holds
    no non-empty block, per step: the ranks' blocks are runs ([step, run] starts, counts
    and `nonempty`). A rank q sends in round (h, m) unless its window q .. q+m-1 is
    empty, that is unless the next non-empty block at or after q (cyclically) starts at
    B >= q + m: in an empty run [lo, hi) followed by a non-empty block at B, the ranks
    lo .. min(hi, B - m + 1) - 1 miss the round. Every step needs a non-empty block."""
    rounds = bruck_rounds(p)
    if not rounds:          # one rank: no round to miss
        return Jumps(())
    # only the steps with an empty run can miss a round
    some = np.flatnonzero((~nonempty & (counts > 0)).any(axis=1))
    starts, counts, nonempty = starts[some], counts[some], nonempty[some]
    nonempty = nonempty & (counts > 0)
    start_if = np.where(nonempty, starts, 2 * p)
    # the first non-empty start after each run, else the first one plus p (wrapped)
    later = np.minimum.accumulate(start_if[:, ::-1], axis=1)[:, ::-1]
    after = np.concatenate([later[:, 1:], np.full((len(starts), 1), 2 * p)], axis=1)
    nxt = np.where(after < 2 * p, after, later[:, :1] + p)
    # each empty run: -1 from its start and +1 from its stop, per round it misses (a
    # block of one row per run, a slot per round)
    row, run = np.nonzero(~nonempty & (counts > 0))
    lo, reach = starts[row, run], nxt[row, run]
    hi = lo + counts[row, run]
    # [lo, stop per round] and [-missed rounds, 1 per round missed]: a block per
    # MISS_CHUNK runs (the [run, round] arrays are the large ones here: memory the
    # allocator reuses)
    sizes = np.array([m for _, m in rounds], dtype=np.int64)
    blocks = []
    for first in range(0, len(row), MISS_CHUNK):
        part = slice(first, first + MISS_CHUNK)
        lo_part = lo[part, None]
        stop = (reach[part] + 1)[:, None] - sizes[None, :]
        np.maximum(stop, lo_part, out=stop)
        np.minimum(stop, hi[part, None], out=stop)
        at = np.concatenate([lo_part, stop], axis=1)
        delta = (at > lo_part).astype(float)          # slot 0 (at lo) none
        delta[:, 0] = -delta.sum(axis=1)
        blocks.append(Block(some[row[part]], at, delta))
    return Jumps(tuple(blocks))


def window_holds(roots: np.ndarray, p: int) -> list[tuple[int, int, Jumps]]:
    """Per Bruck round (h, m) over p ranks: (h, m, jumps) of whether the window q ..
    q+m-1 of rank q holds the block of rank roots[k] (one per step): the ranks roots[k]
    - m + 1 .. roots[k], cyclically."""
    out = []
    for h, m in bruck_rounds(p):
        lo = roots - m + 1
        wrap = lo < 0
        # [lo, root] or, wrapped, [0, root] and [lo + p, p)
        at = np.stack([np.where(wrap, 0, lo), roots + 1, np.where(wrap, lo + p, p),
                       np.full_like(roots, p)], axis=1)
        delta = np.stack([np.ones(len(roots)), -np.ones(len(roots)), wrap * 1.0,
                          -(wrap * 1.0)], axis=1)
        out.append((h, m, Jumps((Block(None, at, delta),))))
    return out


def window_sums(weight: np.ndarray, roots: np.ndarray, column: np.ndarray, p: int,
                pc: int) -> np.ndarray:
    """[p, Pc]: sum over the steps k, in column column[k] alone, of weight[k] times the
    number of Bruck rounds over p ranks whose window r .. r+m-1 (cyclic) holds rank
    roots[k] (`window_holds`). Per column c the steps' weights by root, A_c[s], give rank
    r sum over the rounds m of A_c[r] + .. + A_c[r+m-1]: differences of the cyclic
    prefix sums of A_c, O(P x rounds) whatever the steps (whole weights: exact)."""
    by_root = np.bincount(column * p + roots, weight, minlength=pc * p).reshape(pc, p)
    prefix = np.zeros((pc, 2 * p))                  # A_c[0] + .. + A_c[j - 1], j < 2p
    np.cumsum(by_root, axis=1, out=prefix[:, 1:p + 1])
    prefix[:, p + 1:] = prefix[:, p:p + 1] + prefix[:, 1:p]
    out = np.zeros((pc, p))
    for _, m in bruck_rounds(p):
        out += prefix[:, m:m + p]
    out -= len(bruck_rounds(p)) * prefix[:, :p]
    return out.T


def run_of(starts: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """[step, i]: the run ([step, run] `starts`, sorted) holding rank ranks[step, i] in
    0..p-1: the last run that starts at or before it (a run of no rank starts where the
    next one does, so it is never the last)."""
    return last_at_or_before(np.ascontiguousarray(starts, dtype=np.int64),
                             np.ascontiguousarray(ranks, dtype=np.int64))


def piece_ends(firsts: list[np.ndarray], p: int, shifted: np.ndarray | None = None,
               sizes=()) -> np.ndarray:
    """[step, i]: the first and last rank of every piece into which the ranks
    0..p-1 fall when a piece starts at each of `firsts` ([step, j] arrays, taken mod p)
    and at each of `shifted` [step, j] less each of `sizes` and less it plus one, each
    once, in no particular order; a step with fewer repeats one of them
    (`linalg_io._kernels.lu2d_points.distinct_ends`). A function linear (or convex) on
    each piece has its largest value at one of them."""
    first = np.concatenate([np.asarray(f, dtype=np.int64) for f in firsts], axis=1)
    more = np.zeros((len(first), 0), dtype=np.int64) if shifted is None else shifted
    return distinct_ends(np.ascontiguousarray(first), p,
                         np.ascontiguousarray(more, dtype=np.int64),
                         np.asarray(sizes, dtype=np.int64))


def bruck_at(starts: np.ndarray, counts: np.ndarray, blocks: np.ndarray, ranks: np.ndarray,
             p: int, run: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`linalg_io.layout.schedules.allgatherv_costs` (sent, received, messages) of the
    Bruck allgatherv over p ranks of blocks given as runs ([step, run] `starts`,
    `counts` and `blocks`: each of the run's ranks' block), at the ranks `ranks` [step,
    i] only: O(steps x i x (rounds + log runs)), whatever p. A rank's window q .. q+m-1
    in round (h, m) is a difference of the cyclic prefix sums P(q + m) - P(q), P linear
    between the runs' starts; its messages are the rounds whose window reaches the next
    non-empty block (at distance dist: the rounds m > dist). `run`: `run_of(starts,
    ranks)`, where the caller has it."""
    blocks = np.asarray(blocks, dtype=float)
    steps = len(blocks)
    mass = blocks * counts
    cum = np.concatenate([np.zeros((steps, 1)), np.cumsum(mass, axis=1)[:, :-1]], axis=1)
    total = mass.sum(axis=1, keepdims=True)
    run = run_of(starts, ranks) if run is None else run
    # P of each step: its runs' starts, twice (cyclic), and 2p; P is linear between them
    # (runs of no rank left out)
    real = np.concatenate([counts > 0, counts > 0, np.ones((steps, 1), dtype=bool)], axis=1)
    at = np.concatenate([starts, starts + p, np.full((steps, 1), 2 * p)], axis=1)
    value = np.concatenate([cum, cum + total, 2 * total], axis=1)
    held = np.where(counts > 0, blocks, np.nan)
    first = np.take_along_axis(held, np.argmax(counts > 0, axis=1)[:, None], axis=1)
    equal = ((held == first) | (counts == 0)).all(axis=1)
    nonempty = (blocks > 0) & (counts > 0)
    later = np.minimum.accumulate(np.where(nonempty, starts, 2 * p)[:, ::-1], axis=1)[:, ::-1]
    reach = np.where(later < 2 * p, later, later[:, :1] + p)   # next non-empty block's start
    sizes = np.array([m for _, m in bruck_rounds(p)], dtype=np.int64)
    sent, own, msgs = bruck_points(
        at.astype(float), value, real.view(np.uint8), np.ascontiguousarray(ranks, dtype=np.int64),
        sizes, np.ascontiguousarray(run, dtype=np.int64), np.ascontiguousarray(blocks),
        np.ascontiguousarray(reach, dtype=np.int64), equal.view(np.uint8), float(sizes.sum()))
    return sent, total - own, msgs
