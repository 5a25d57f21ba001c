"""Ranks in symmetric positions, per step: one evaluation for each class of them.

A model that walks S steps over an axis of n ranks (a process row index, say) needs,
at step s, only the features of rank i that its costs depend on (its rows, its
position in a broadcast, ...). `step_classes` groups the ranks with equal features at
each step ([step, rank] arrays, each step's ranks sorted: `StepClasses`); a cost
evaluated at one member of a class (its representative, its lowest rank) is every
member's, so a model evaluates [step, class] arrays instead of [step, rank] ones.

Where the features turn with a cyclic layout's root, a step's ranks fall into few runs
of consecutive ranks with equal features (a broadcast's root, the ranks after it, the
ranks with one tile more, ...), however many ranks there are. `classes_at` takes the
ranks where a feature can change and classes the runs between them by sorting the
runs, not the ranks (`RunClasses`; `run_classes` makes them from every rank's classes,
for an axis where any rank may be a break); `spread` sums per-class values back to every
rank's total over the steps: each step's value on every pair of an x run and a y run,
a rectangle of ranks, goes in as its four corners of a difference array, summed up
once: O(pairs of runs + P), not O(steps x P) (a step whose pairs of runs are about as
many as its ranks goes onto every rank instead: O(P) for it; but for a row, a figure,
whose values there change at few of the runs: those runs merged, its corners).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
from linalg_io._kernels.compact import store_classes
from linalg_io._kernels.lu2d_points import (
    add_at,
    add_corners,
    add_dense,
    add_differences,
    add_product,
    changed_runs,
    mark_product,
    mark_terms,
    product_cells,
    running_sum,
)
from linalg_io._kernels.runs import feature_runs, residue_runs, sorted_classes

# the most values `spread` holds at once per array (pairs of runs x rows of values): a
# chunk's dozen temporaries stay in the caches and the allocator's heap (a larger one
# runs slower and pays the kernel for fresh pages each chunk)
CHUNK_ELEMENTS = 1 << 18
# `_differences` keeps only the pairs of edges with a term where they are fewer than
# 1/FEW_PAIRS of all (finding them costs a pass over the kinds of edges)
FEW_PAIRS = 4
# `_kinds` marks keys in a table up to this many times as long as the keys, else sorts
KIND_TABLE = 4
# an empty index array: "none" to the compiled kernels
NONE = np.zeros(0, dtype=np.int64)
# the bits of a float's mantissa (float64)
MANTISSA_BITS = 52
# `BlockSpread.totals` adds a step's values on every rank where its pairs of runs times
# this exceed the ranks: gathering a value to a rank (in order) costs a few times less
# than a pair's scattered corner, about as much as a corner skipped where its
# differences are 0 (1, 2 and 4 alike on the walks of `model lu` at P = 2^20)
DENSE_SHARE = 4
# the most offsets (steps x (Px + Py)) `BlockSpread.totals` hands `add_dense` at once
DENSE_OFFSETS = 1 << 22


@dataclass(frozen=True)
class StepClasses:
    """Classes of one axis at each step: `of` [step, rank] the class of each rank,
    `rep` [step, class] one member (0 for the padding of steps with fewer classes),
    `count` [step, class] how many ranks it holds (0 for padding)."""

    of: np.ndarray
    rep: np.ndarray
    count: np.ndarray

    @property
    def size(self) -> int:
        return self.rep.shape[1]


def step_classes(features: list[np.ndarray]) -> StepClasses:
    """Group the ranks of each step (row of every [step, rank] array in `features`) whose
    features are all equal: sorted by a random combination of the features (those equal
    on every rank of every step left out), then split wherever one of them changes
    (equal features sort together; a collision of unequal ones would only split a
    class)."""
    features = [f for f in features if not (f == f[:, :1]).all()] or features[:1]
    order = np.argsort(_combined(features), axis=-1, kind="stable")
    of, rep, count = sorted_classes(tuple(np.asarray(f, dtype=float) for f in features),
                                    order.astype(np.int64, copy=False))
    return StepClasses(of=of, rep=rep, count=count)


def _combined(features: list[np.ndarray]) -> np.ndarray:
    """The random combination of the features that `step_classes` and `run_classes` sort
    by (the same weights for as many features: the same order, the same numbers)."""
    weights = np.random.default_rng(0).random(len(features)) + 0.5
    return sum(w * f for w, f in zip(weights, features))


@dataclass(frozen=True)
class RunClasses:
    """Classes of one axis of n ranks at each step, held as runs of consecutive ranks:
    run i is ranks [start[i], end[i]) at step `step[i]`, in class `of_run[i]` of that
    step (runs ordered by step, then rank); `rep` [step, class] its lowest rank (0 for
    the padding of steps with fewer classes), `count` [step, class] how many ranks it
    holds (0 for padding)."""

    n: int
    step: np.ndarray
    start: np.ndarray
    end: np.ndarray
    of_run: np.ndarray
    rep: np.ndarray
    count: np.ndarray

    @property
    def size(self) -> int:
        return self.rep.shape[1]

    def runs_per_step(self) -> np.ndarray:
        return np.bincount(self.step, minlength=self.rep.shape[0])

    def classes_per_step(self) -> np.ndarray:
        """[step] the classes of each step (its runs' are the first ones)."""
        runs = self.runs_per_step()
        firsts = np.cumsum(runs) - runs
        return np.maximum.reduceat(self.of_run, firsts) + 1

    def narrowed(self, size: int) -> RunClasses:
        """These classes padded to `size` (at least each step's classes), not more."""
        return RunClasses(n=self.n, step=self.step, start=self.start, end=self.end,
                          of_run=self.of_run, rep=self.rep[:, :size],
                          count=self.count[:, :size])

    def block(self, first: int, stop: int) -> RunClasses:
        """The classes of the steps first .. stop-1 (steps from 0 again), as padded."""
        lo, hi = np.searchsorted(self.step, [first, stop])
        return RunClasses(n=self.n, step=self.step[lo:hi] - first, start=self.start[lo:hi],
                          end=self.end[lo:hi], of_run=self.of_run[lo:hi],
                          rep=self.rep[first:stop], count=self.count[first:stop])


def classes_at(steps: int, n: int, step: np.ndarray, start: np.ndarray,
               features_at: Callable[[np.ndarray, np.ndarray], list[np.ndarray]]
               ) -> RunClasses:
    """The classes of n ranks at each step given every rank (`step`, `start`: flat,
    in any order, repeats allowed) where some feature may differ from the rank before
    it (rank 0 of every step is added): the runs between them, classed by sorting the
    runs by their features (`features_at`(steps, ranks): their values at a run's first
    rank, each an array like those) and splitting wherever one of them changes."""
    first_ranks = np.arange(steps, dtype=np.int64) * n
    flat = np.sort(np.concatenate([first_ranks, np.asarray(step, dtype=np.int64) * n
                                   + np.asarray(start, dtype=np.int64)]))
    flat = flat[np.append(True, flat[1:] != flat[:-1])]
    step, start = flat // n, flat % n
    end = np.empty_like(start)
    end[:-1] = start[1:]
    end[np.append(step[1:] != step[:-1], True)] = n
    keys = features_at(step, start)
    order = np.lexsort((*keys[::-1], step))      # by step, then features, then rank
    of_run, rep, count = _numbered(steps, step, start, end, order, keys)
    # a run of the class of the run before it (a break where nothing changed) joins it
    kept = np.ones(len(step), dtype=bool)
    kept[1:] = (step[1:] != step[:-1]) | (of_run[1:] != of_run[:-1])
    end = np.append(start[kept][1:], n)
    end[np.append(step[kept][1:] != step[kept][:-1], True)] = n
    return RunClasses(n=n, step=step[kept], start=start[kept], end=end,
                      of_run=of_run[kept], rep=rep, count=count)


def run_classes(features: list[np.ndarray]) -> RunClasses:
    """`RunClasses` of the classes of every rank (`step_classes` of [step, rank]
    `features`, the same classes, numbered alike): for an axis whose every rank may be a
    break, at less cost than `classes_at` with all of them. The runs of equal features
    are found in one pass over the ranks (`feature_runs`), then the runs, not the ranks,
    sorted by `step_classes`' combination of the features: a run's ranks are
    consecutive in that order (equal keys keep the ranks' order), so its classes and
    their lowest ranks are `step_classes`' (a class split by a collision of keys too)."""
    steps, n = features[0].shape
    flat, at_starts, varying = feature_runs(tuple(np.asarray(f, dtype=float)
                                                  for f in features))
    values = [value for value, varies in zip(at_starts, varying) if varies] or [at_starts[0]]
    step, start = flat // n, flat % n
    order = np.lexsort((_combined(values), step))
    end = np.append(start[1:], n)
    end[np.append(step[1:] != step[:-1], True)] = n
    of_run, rep, count = _numbered(steps, step, start, end, order, values)
    return RunClasses(n=n, step=step, start=start, end=end, of_run=of_run, rep=rep,
                      count=count)


def _numbered(steps: int, step: np.ndarray, start: np.ndarray, end: np.ndarray,
              order: np.ndarray, keys: list[np.ndarray]) -> tuple:
    """(of_run, rep, count) of runs [start, end) at `step` taken in `order` (by step,
    then by some combination of their `keys`): a class begun wherever the step or a
    key changes in that order, numbered from 0 within each step; rep [step, class] the
    start of its first run in that order (0 for padding), count [step, class] its
    ranks."""
    steps_in_order = step[order]
    first = np.ones(len(order), dtype=bool)      # the first run of each class
    first[1:] = steps_in_order[1:] != steps_in_order[:-1]
    for key in keys:
        ranked = key[order]
        first[1:] |= ranked[1:] != ranked[:-1]
    running = np.cumsum(first) - 1
    class_in_order = running - running[np.searchsorted(steps_in_order, steps_in_order)]
    of_run = np.empty_like(class_in_order)
    of_run[order] = class_in_order
    size = int(class_in_order.max()) + 1
    count = np.bincount(step * size + of_run, weights=end - start,
                        minlength=steps * size).astype(np.int64).reshape(steps, size)
    rep = np.zeros((steps, size), dtype=np.int64)
    rep[steps_in_order[first], class_in_order[first]] = start[order][first]
    return of_run, rep, count


def stacked(blocks: list[RunClasses]) -> RunClasses:
    """One `RunClasses` of consecutive blocks of steps of the same axis (each block's
    steps after the one before's): the runs in order, `rep` and `count` padded to the
    widest block's classes (rep 0, count 0)."""
    size = max(block.size for block in blocks)
    offsets = np.cumsum([0] + [block.rep.shape[0] for block in blocks])

    def padded(table: np.ndarray) -> np.ndarray:
        return np.pad(table, ((0, 0), (0, size - table.shape[1])))

    return RunClasses(
        n=blocks[0].n,
        step=np.concatenate([block.step + first for block, first in zip(blocks, offsets)]),
        start=np.concatenate([block.start for block in blocks]),
        end=np.concatenate([block.end for block in blocks]),
        of_run=np.concatenate([block.of_run for block in blocks]),
        rep=np.concatenate([padded(block.rep) for block in blocks]),
        count=np.concatenate([padded(block.count) for block in blocks]))


def spread(values: np.ndarray, xs: RunClasses, ys: RunClasses) -> np.ndarray:
    """Totals over the steps per rank, [..., layer, x, y], of `values` [..., step, layer,
    x class, y class]: rank (l, x, y) adds values[s, l, class of x at s, class of y at s]
    at each step s. Each (x run, y run) pair of a step adds its value on a rectangle of
    ranks: +v at its corners (x0, y0) and (x1, y1), -v at (x0, y1) and (x1, y0) of a
    difference array (each pair its second difference at its first corner: the others
    are the first corners of the pairs after it), summed up along x and y at the end
    (or, a step of many pairs, its values added on every rank, but for the rows whose
    runs merged where their values do not change are few pairs). The sums are all but
    exact: each value splits into a multiple of a power of two u, whose sums stay below
    2^52 u (exact in a float, in any order), and a remainder below u/2, whose sums'
    rounding is far below u (it moves a total's last bit only where the total lies at a
    tie, and a total of 0 may keep a residue of that size). O(rows x (pairs of runs + P
    x (steps of many pairs + 1))) (`BlockSpread`, which takes the steps a block at a
    time)."""
    whole = BlockSpread(xs, ys)
    whole.add(values)
    return whole.totals()


class BlockSpread:
    """`spread` of values given a block of consecutive steps at a time (`add`, from step
    0 on; a walk's steps, whose [step, ...] arrays are too large to hold at once): each
    block's values kept as the fewer of its steps' class grids' cells (a step's own x
    classes by its own y classes, not the padding) and the values `spread` reads (a
    step's value at each pair of an x run and a y run: more than its cells where runs
    are many and classes few, fewer where classes hold several runs), and each step's
    largest |value| (which set u), so that `totals` are `spread`'s of every step at
    once, bit for bit. Either way a step's values lie in lines of `widths`[s] from
    `line_first`[s] on, a run's key (`x_key`, `y_key`: its class, or its place among
    its step's runs) its line and its place in a line."""

    def __init__(self, xs: RunClasses, ys: RunClasses) -> None:
        self.xs, self.ys = xs, ys
        self.xruns, self.yruns = xs.runs_per_step(), ys.runs_per_step()
        self.pairs = self.xruns * self.yruns
        self.ends = np.cumsum(self.pairs)
        self.xfirst = np.concatenate([[0], np.cumsum(self.xruns)[:-1]])
        self.yfirst = np.concatenate([[0], np.cumsum(self.yruns)[:-1]])
        self.xclasses, self.yclasses = xs.classes_per_step(), ys.classes_per_step()
        self.by_cells = self._keeps_cells()
        if self.by_cells:
            self.lines, self.widths = self.xclasses, self.yclasses
            self.x_key, self.y_key = xs.of_run, ys.of_run
        else:
            self.lines, self.widths = self.xruns, self.yruns
            self.x_key = np.arange(len(xs.step)) - np.repeat(self.xfirst, self.xruns)
            self.y_key = np.arange(len(ys.step)) - np.repeat(self.yfirst, self.yruns)
        sizes = self.lines * self.widths
        self.line_first = np.cumsum(sizes) - sizes
        self.done = 0             # the steps added
        self.shape: tuple = ()    # [..., layer] of the values
        self.stored = np.zeros((0, 0))          # [row, value] the steps' lines
        self.biggest = np.zeros((0, 0))         # [row, step] the largest |value|

    def _pairs(self, begin: int, stop: int) -> tuple:
        """(step, x run, y run) of each pair of the steps begin .. stop-1, in order."""
        chunk = slice(begin, stop)
        return (np.repeat(np.arange(begin, stop), self.pairs[chunk]),
                *_products(self.xfirst[chunk], self.xruns[chunk], self.yfirst[chunk],
                           self.yruns[chunk]))

    def _chunks(self, begin: int, stop: int, most: int):
        """(first, stop) of consecutive chunks of the steps begin .. stop-1 of up to
        `most` pairs each (one step at least)."""
        pairs, ends = self.pairs, self.ends
        while begin < stop:
            end = max(begin + 1, min(stop, int(np.searchsorted(
                ends, ends[begin] - pairs[begin] + most, side="right"))))
            yield begin, end
            begin = end

    def _index(self, step: np.ndarray, xi: np.ndarray, yi: np.ndarray, first: int,
               nx: int, ny: int) -> np.ndarray:
        """Each pair's place among the nx x ny cells of the steps from `first` on, flat."""
        return ((step - first) * nx + self.xs.of_run[xi]) * ny + self.ys.of_run[yi]

    def _keeps_cells(self) -> bool:
        """Whether the steps' cells of classes are no more than their pairs of runs."""
        return int((self.xclasses * self.yclasses).sum()) <= int(self.ends[-1])

    def add(self, values: np.ndarray) -> None:
        """The values [..., step, layer, x class, y class] of the next steps."""
        *lead, steps, layers, nx, ny = values.shape
        grouped = values.reshape(-1, steps, layers, nx, ny)
        first = self.done
        if not first:
            self.shape = (*lead, layers)
            count = len(grouped) * layers
            self.biggest = np.empty((count, len(self.pairs)))
            self.stored = np.empty((count, int(self.line_first[-1] + self.lines[-1]
                                               * self.widths[-1])))
        if (nx < self.xclasses[first:first + steps].max()
                or ny < self.yclasses[first:first + steps].max()):
            raise ValueError(f"steps of more classes than {nx} x {ny}")
        if self.by_cells:
            # each step's own classes' cells, in order: its lines
            store_classes(grouped, *(np.ascontiguousarray(classes[first:first + steps],
                                                          dtype=np.int64)
                                     for classes in (self.xclasses, self.yclasses)),
                          self.stored, int(self.line_first[first]), self.biggest, first)
        else:
            rows = np.moveaxis(grouped, 2, 1).reshape(-1, steps, nx * ny)
            self.biggest[:, first:first + steps] = np.abs(rows).max(axis=2)
            flat = rows.reshape(len(rows), -1)
            # a chunk of steps at a time: their index arrays within the caches
            for begin, stop in self._chunks(first, first + steps,
                                            max(1, CHUNK_ELEMENTS // len(rows))):
                index = self._index(*self._pairs(begin, stop), first, nx, ny)
                self.stored[:, self.ends[begin] - self.pairs[begin]:self.ends[stop - 1]] = \
                    flat[:, index]
        self.done = first + steps

    def totals(self) -> np.ndarray:
        """[..., layer, x, y] the per-rank sums over every step (`spread`): each value
        split into a multiple of u and a remainder (the multiples' sums exact), a step's
        values added as their second differences at their rectangles' first corners
        (`add_corners`), or, where its pairs of runs are
        more than the ranks over DENSE_SHARE, on every rank (its classes' values
        gathered to the ranks: cheaper than that many corners), but for a row whose
        runs merged where its values do not change (`_merged`) are few pairs again
        (where a figure does not move with the feature that splits every rank: the
        bytes received, the flops, at a binomial tree's steps), whose corners those of
        the merged runs are."""
        xs, ys = self.xs, self.ys
        px, py = xs.n, ys.n
        stored = self.stored
        count = len(stored)
        # a bound on the sum of |value| over every corner (a pair's second difference
        # adds four values at most): the partial sums stay below it
        bound = 4.0 * (self.biggest @ self.pairs.astype(float))
        exponent = np.ceil(np.log2(np.where(bound > 0, bound, 1.0))) - MANTISSA_BITS + 1
        unit = np.ldexp(1.0, exponent.astype(np.int64))
        # the rows of some value (of some cell: a row whose values are 0 adds zeros),
        # from each step's largest |value| (NaN where one is), not a pass over them all
        live = np.flatnonzero((self.biggest != 0).any(axis=1)).tolist()
        dense = self.pairs * DENSE_SHARE > px * py
        # the sums per rank [part, row, x, y] of the multiples of u (part 0) and of the
        # remainders (part 1): a difference array of the corner steps' corners, summed
        # up, then the dense steps' values added on every rank
        sums = np.zeros((2, count, px, py))
        flat = sums.reshape(2, count, px * py)
        corner_steps = np.flatnonzero(~dense)
        if len(corner_steps):
            add_corners(*flat, stored, np.array(live, dtype=np.int64), corner_steps,
                        *self._runs(), unit, px)
        # a row's dense steps where its values change at few of the runs (a figure the
        # fine classes do not move): its runs merged there, those steps as corners
        dense_steps = np.flatnonzero(dense)
        on_every_rank: dict[bytes, tuple] = {}
        for row in live if len(dense_steps) else ():
            merged, steps, runs = self._merged(row, dense_steps)
            if len(merged):
                add_corners(*flat, stored, np.array([row], dtype=np.int64), merged, *runs,
                            unit, px)
            on_every_rank.setdefault(steps.tobytes(), (steps, []))[1].append(row)
        if len(corner_steps) or any(len(steps) < len(dense_steps)
                                    for steps, _ in on_every_rank.values()):
            for part in sums:
                _summed_up(part)
        per_call = max(1, DENSE_OFFSETS // (px + py))
        for steps, rows in on_every_rank.values():
            for first in range(0, len(steps), per_call):
                offsets = self._offsets(steps[first:first + per_call])
                for row in rows:
                    add_dense(flat[0, row:row + 1], flat[1, row:row + 1],
                              stored[row:row + 1], *offsets, unit[row:row + 1])
        high, low = sums
        high += low
        return high.reshape(*self.shape, px, py)

    def _runs(self, x_kept: np.ndarray | None = None, y_kept: np.ndarray | None = None
              ) -> tuple:
        """The runs as `add_corners` takes them (x_first, x_runs, y_first, y_runs,
        line_first, widths, x_start, y_start, x_key, y_key): every one, or those
        `x_kept`, `y_kept` (a step's first run among them)."""
        xs, ys = self.xs, self.ys
        x_kept = np.ones(len(xs.step), dtype=bool) if x_kept is None else x_kept
        y_kept = np.ones(len(ys.step), dtype=bool) if y_kept is None else y_kept
        xruns = np.add.reduceat(x_kept.astype(np.int64), self.xfirst)
        yruns = np.add.reduceat(y_kept.astype(np.int64), self.yfirst)
        return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in (
            np.cumsum(xruns) - xruns, xruns, np.cumsum(yruns) - yruns, yruns,
            self.line_first, self.widths, xs.start[x_kept], ys.start[y_kept],
            self.x_key[x_kept], self.y_key[y_kept]))

    def _merged(self, row: int, steps: np.ndarray) -> tuple:
        """(the steps of `steps` whose pairs of runs, each run merged into the one before
        it where the row's values there are the same (its line, or its column of each
        line), are few enough for corners (DENSE_SHARE), the others, the merged runs
        as `_runs`): a merged run's corners are the original's but those whose
        differences are 0, which `add_corners` skips."""
        x_kept = np.ones(len(self.x_key), dtype=np.uint8)
        y_kept = np.ones(len(self.y_key), dtype=np.uint8)
        changed_runs(np.ascontiguousarray(self.stored[row]), steps,
                     *(np.ascontiguousarray(a, dtype=np.int64) for a in (
                         self.xfirst, self.xruns, self.x_key, self.yfirst, self.yruns,
                         self.y_key, self.line_first, self.lines, self.widths)),
                     x_kept, y_kept)
        kept = (x_kept.view(bool), y_kept.view(bool))
        runs = self._runs(*kept)
        few = runs[1][steps] * runs[3][steps] * DENSE_SHARE <= self.xs.n * self.ys.n
        return steps[few], steps[~few], runs

    def _offsets(self, steps: np.ndarray) -> tuple:
        """(x_line [step, px], lines [step, line], widths [step], y_off [step, py]) of
        `add_dense` for the steps `steps`: a rank's value of a step at lines[x_line[x]]
        + y_off[y] of a stored row, its process row's line of `widths` values and its
        column's place in that line (its runs' keys, each repeated over its ranks)."""
        xs, ys = self.xs, self.ys
        x_line = _over_ranks(self.x_key, xs, self.xfirst[steps], self.xruns[steps])
        y_off = _over_ranks(self.y_key, ys, self.yfirst[steps], self.yruns[steps])
        most = int(self.lines[steps].max())
        line = np.arange(most)
        lines = np.where(line < self.lines[steps, None], self.line_first[steps, None]
                         + line * self.widths[steps, None], 0)
        return x_line, lines, self.widths[steps].astype(np.int64), y_off


def _over_ranks(key: np.ndarray, runs: RunClasses, first: np.ndarray,
                count: np.ndarray) -> np.ndarray:
    """[step, rank] the `key` of each rank's run at the steps whose runs are first ..
    first + count - 1 (each step's runs cover its n ranks)."""
    run = np.repeat(first - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))
    return np.repeat(key[run], runs.end[run] - runs.start[run]).reshape(len(first), runs.n)


def _stretches(mask: np.ndarray):
    """(first, stop) of each stretch of consecutive True in `mask`."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return zip(edges[0::2].tolist(), edges[1::2].tolist())


class Spreading:
    """`spread` of several calls' values, each over its own steps' classes of the same
    two axes, summed (the sampled steps' chunks): each call's difference array
    (`_differences`, held at the ranks where its runs start or end) is added into one
    over every rank, summed up along x and y once (`totals`): O(pairs of runs' edges +
    Bx By) a call and O(P) once, not O(P) a call. The calls' arrays add in floats (not
    exact as `spread`'s: rounding in the totals' last bits). `period` d:
    where the x runs repeat every d ranks (each node's process rows, say), the ranks
    x = d q + r of each residue r are an axis of their own (`residues`), whose runs are
    few where those of x are many."""

    def __init__(self, period: int = 1) -> None:
        self.period = period
        self.diffs: dict[int, np.ndarray] = {}
        self.shape = None

    def add(self, values: np.ndarray, xs: RunClasses, ys: RunClasses) -> None:
        *lead, _, layers, _, ny = values.shape
        self.shape = (*lead, layers, xs.n, ys.n)
        count = int(np.prod(lead, dtype=np.int64)) * layers
        y_edges = _edges(ys, ny)
        yb = y_edges[0]
        biggest = _biggest(values)
        for r, axis in enumerate(residues(xs, self.period)):
            kept = values
            if self.period > 1:
                # the x classes this residue's runs hold, alone: a residue's are few of
                # the step's where the runs repeat every d ranks
                picked = np.unique(axis.of_run)
                axis = replace(axis, of_run=np.searchsorted(picked, axis.of_run))
                kept = values.take(picked, axis=-2)
            x_edges = _edges(axis, kept.shape[-2])
            xb = x_edges[0]
            live, cells, parts = _differences(kept, x_edges, y_edges, biggest)
            if r not in self.diffs:
                self.diffs[r] = np.zeros((count, axis.n + 1, ys.n + 1))
            diff = parts[0]
            for part in parts[1:]:
                diff += part
            # the live rows: where every rank is an edge and every cell comes, whole rows;
            # else at the cells (the others add 0), a flat index (`add_at`)
            rows = self.diffs[r].reshape(count, -1)
            if len(cells) == rows.shape[1]:
                rows[live] += diff
            else:
                add_at(rows, live.astype(np.int64), np.ascontiguousarray(diff),
                       (xb[cells // len(yb)] * (ys.n + 1) + yb[cells % len(yb)]).astype(np.int64))

    def totals(self) -> np.ndarray:
        """[..., layer, x, y] the sums over every call's steps (once: each residue's
        difference array is let go as it is summed up)."""
        rows = next(iter(self.diffs.values())).shape[0]
        out = np.empty((rows, *self.shape[-2:]))
        for r in list(self.diffs):
            diff = _summed_up(self.diffs.pop(r))
            out[:, r::self.period, :] = diff[:, :-1, :-1]
            del diff
        return out.reshape(self.shape)


def _summed_up(grid: np.ndarray) -> np.ndarray:
    """`grid` [row, x, y] (C-contiguous floats) cumsummed along x, then along y, in place:
    np.cumsum's additions in its order (`linalg_io._kernels.lu2d_points.running_sum`, a
    row's x by y plane at a time, then every line along y)."""
    for plane in grid:
        running_sum(plane, 0)
    running_sum(grid.reshape(-1, grid.shape[-1]), 1)
    return grid


def residues(xs: RunClasses, period: int) -> list[RunClasses]:
    """The runs of `xs` on the ranks x = d q + r of each residue r < d = min(`period`,
    n), each an axis of its own (rank q), the consecutive runs of a step in one class
    merged ([xs] where d = 1; `linalg_io._kernels.runs.residue_runs`)."""
    period = min(period, xs.n)
    if period == 1:
        return [xs]
    first, step, start, end, of_run = residue_runs(
        *(np.ascontiguousarray(runs, dtype=np.int64)
          for runs in (xs.step, xs.start, xs.end, xs.of_run)), period)
    return [RunClasses(n=-((r - xs.n) // period), step=step[lo:hi], start=start[lo:hi],
                       end=end[lo:hi], of_run=of_run[lo:hi], rep=xs.rep, count=xs.count)
            for r, (lo, hi) in enumerate(zip(first[:-1].tolist(), first[1:].tolist()))]


def _biggest(values: np.ndarray) -> np.ndarray:
    """[row, step] the largest |value| of `values` [..., step, layer, x class, y class],
    a row a lead index and a layer."""
    *_, steps, layers, nx, ny = values.shape
    grouped = values.reshape(-1, steps, layers, nx, ny)
    return np.moveaxis(np.maximum(grouped.max(axis=(3, 4)), -grouped.min(axis=(3, 4))),
                       2, 1).reshape(-1, steps)


def _differences(values: np.ndarray, x_edges: tuple, y_edges: tuple,
                 biggest: np.ndarray) -> tuple:
    """(the rows of some value; the cells some pair of edges touches, flat in [Bx,
    By], ascending; [row, cell] at them the difference
    arrays of `spread` on the grid of the x and y boundaries (`_edges` of the x and y
    runs: every rank where some run starts or ends, 0 and n among them; 0 at every
    other cell), whose sums are the full array's: the multiples of u, then the
    remainders where there are some). A step's corners at an x edge (a run's start, or
    n) and a y edge add up to the value's second difference
    there: v(right, above) - v(left, above) - v(right, below) + v(left, below) of the
    classes on either side (none past the axis' ends: 0), one term per pair of edges
    instead of four per pair of runs; the rows of no value are left out (their sums
    are 0). The values are taken a chunk of steps at a time (no copy of them all),
    each chunk's terms summed per cell it touches, then added to the totals: O(pairs
    of edges + cells the chunks touch) per row. `biggest` [row, step] the largest
    |value| (`_biggest`: of every class, where `values` are some of them)."""
    *_, steps, layers, nx, ny = values.shape
    grouped = values.reshape(-1, steps, layers, nx, ny)
    live = np.flatnonzero(biggest.max(axis=1) > 0)
    xb, x_step, x_at, x_left, x_right = x_edges
    yb, y_step, y_at, _, y_right = y_edges       # (left of a y edge: right of the one before)
    size = len(xb) * len(yb)
    if not len(live):
        return live, np.zeros(0, dtype=np.intp), [np.zeros((0, 0))]
    xedges = np.bincount(x_step, minlength=steps)
    yedges = np.bincount(y_step, minlength=steps)
    pairs = xedges * yedges
    # a bound on the sum of |second difference| over every pair of edges: the partial
    # sums stay below it
    bound = 4.0 * (biggest[live] @ pairs.astype(float))
    exponent = np.ceil(np.log2(np.where(bound > 0, bound, 1.0))) - MANTISSA_BITS + 1
    unit = np.ldexp(1.0, exponent.astype(np.int64))[:, None, None, None]
    xfirst = np.concatenate([[0], np.cumsum(xedges)[:-1]])
    yfirst = np.concatenate([[0], np.cumsum(yedges)[:-1]])
    ends = np.cumsum(pairs)
    # pairs per chunk: CHUNK_ELEMENTS values, or more where each chunk's sums would cost
    # more than its pairs; steps per chunk: their values within a few CHUNK_ELEMENTS
    most = max(1, CHUNK_ELEMENTS // len(live), size // 4)
    most_steps = max(1, 4 * CHUNK_ELEMENTS // (len(live) * (nx + 1) * (ny + 1)))
    # the chunks' first steps, and steps: up to `most` pairs (one step at least)
    chunks, begin = [], 0
    while begin < steps:
        stop = max(begin + 1, min(begin + most_steps, int(np.searchsorted(
            ends, ends[begin] - pairs[begin] + most, side="right"))))
        chunks.append((begin, stop))
        begin = stop

    def padded_values(begin: int, stop: int) -> np.ndarray:
        """[row, step, x class, y class] of the live rows, a class "none" (0) last on
        each axis."""
        padded = np.zeros((len(live), stop - begin, nx + 1, ny + 1))
        # a row (a lead index and a layer) at a time: one copy, not three
        steps_of = np.moveaxis(grouped[:, begin:stop], 2, 1)   # [lead, layer, step, x, y]
        for i, row in enumerate(live):
            padded[i, :, :nx, :ny] = steps_of[row // layers, row % layers]
        return padded

    # each chunk's pairs with a term, where few (`_weighted_pairs`; None: every pair)
    kept = [_weighted_pairs(partial(padded_values, begin, stop), unit, x_edges, y_edges, (
        slice(xfirst[begin], xfirst[stop - 1] + xedges[stop - 1]),
        slice(yfirst[begin], yfirst[stop - 1] + yedges[stop - 1])), begin,
        int(ends[stop - 1] - ends[begin] + pairs[begin])) for begin, stop in chunks]

    def chunk_pairs(index: int) -> tuple:
        """Chunk `index`'s pairs, each x edge's with its step's y edges in turn (or its
        `kept`, in the same order): (its x edges, their steps from the chunk's first,
        their pairs, each one's first pair; [pair] the y edge, the cell)."""
        begin, stop = chunks[index]
        if kept[index] is None:
            edges = slice(xfirst[begin], xfirst[stop - 1] + xedges[stop - 1])
            per_edge = yedges[x_step[edges]]
            first = np.cumsum(per_edge) - per_edge
            yi = np.arange(first[-1] + per_edge[-1]) + np.repeat(
                yfirst[x_step[edges]] - first, per_edge)
        else:
            xi, yi = kept[index]
            first = np.flatnonzero(np.diff(xi, prepend=-1))
            edges = xi[first]
            per_edge = np.diff(np.append(first, len(xi)))
        cell = np.repeat(x_at[edges] * len(yb), per_edge) + y_at[yi]
        return edges, x_step[edges] - begin, per_edge, first, yi, cell

    def product(index: int) -> tuple:
        """Chunk `index`'s pairs where every pair is kept (each x edge with every y edge of
        its step, `add_product`'s): (its x edges, their steps from the chunk's first;
        each edge's cell base, first y edge and y edges, the y edges' cells)."""
        begin, stop = chunks[index]
        edges = slice(xfirst[begin], xfirst[stop - 1] + xedges[stop - 1])
        step = x_step[edges]
        return edges, step - begin, (x_at[edges] * len(yb), yfirst[step], yedges[step], y_at)

    # the cells some chunk touches (those of the one chunk where there is one), and
    # each cell's column among them in the sums
    column = None
    if len(chunks) > 1:
        hit = np.zeros(size, dtype=bool)
        for index in range(len(chunks)):
            if kept[index] is None:
                mark_product(*product(index)[-1], hit.view(np.uint8))
            else:
                hit[chunk_pairs(index)[-1]] = True
        cells = np.flatnonzero(hit)
        column = np.zeros(size, dtype=np.intp)
        column[cells] = np.arange(len(cells))
    # the sums at those cells, [row, cell] ("high", then "low" once some value has a
    # remainder)
    totals: dict[str, np.ndarray] = {}
    # a chunk's cells' places among the cells it touches (0 between chunks), found from
    # a mark per cell (a byte: the scan for the marked reads an eighth of the memory)
    place = np.zeros(size, dtype=np.intp)
    marked = np.zeros(size, dtype=bool)
    y_class = np.ascontiguousarray(y_right, dtype=np.int64)
    for index, (begin, stop) in enumerate(chunks):
        padded = padded_values(begin, stop)
        high = np.round(padded / unit) * unit
        every = kept[index] is None
        if every:
            edges, on, product_of = product(index)
            pairs = int(product_of[2].sum())
        else:
            edges, on, per_edge, first, yi, cell = chunk_pairs(index)
            pairs = len(cell)
        if not pairs:
            continue        # no term in these steps (`_weighted_pairs`)
        # the cells the chunk touches, and each pair's among them (`place`, read by
        # `add_product`, else `local`): one step's pairs are distinct cells in ascending
        # order, already (`add_product` finds each one's place in `column`, or takes the
        # next)
        touched, local, mapped = None, None, NONE
        if stop - begin > 1:
            if every:
                mark_product(*product_of, marked.view(np.uint8))
            else:
                marked[cell] = True
            touched = np.flatnonzero(marked)
            marked[touched] = False
            place[touched] = np.arange(len(touched))
            local = place if every else place[cell]
        elif not every:
            touched = cell
        elif column is None:
            touched = product_cells(*product_of)
        else:
            mapped = column
        if column is None:
            cells, at = touched, NONE
        else:
            at = NONE if touched is None else column[touched]
        # where each pair's terms v(right, above), v(left, above) lie in `across` (the
        # first differences along x, taken once per x edge where there are fewer of
        # them than pairs), else in the values: per x edge (a product's), or per pair
        across = len(on) * (ny + 1) < pairs
        if across:
            on_line = on * (nx + 1)
            terms = (np.arange(len(on)) * (ny + 1), NONE)
        else:
            terms = tuple((on * (nx + 1) + x[edges]) * (ny + 1) for x in (x_right, x_left))
        if not every:
            terms = tuple(np.repeat(term, per_edge) + y_right[yi] if len(term) else NONE
                          for term in terms)
        local_of = NONE if local is None else local
        sums = pairs if touched is None else len(touched)
        for part, value in (("high", high), ("low", padded - high)):
            if part == "low" and not value.any():
                continue
            if across:
                # [row, step x class, y class]: one index along one axis (a take, several
                # times faster than a pair of index arrays)
                lines = value.reshape(len(live), -1, ny + 1)
                rows_of = (lines.take(on_line + x_right[edges], axis=1)
                           - lines.take(on_line + x_left[edges], axis=1)).reshape(len(live), -1)
            else:
                rows_of = value.reshape(len(live), -1)
            if part not in totals:
                totals[part] = np.zeros((len(live), len(cells)))
            total = totals[part]
            for row, of in zip(total, rows_of):
                # each weight (v(right, above) - v(left, above)) - (v(right, below) -
                # v(left, below)): the pair before's first difference is the one below
                # (an x edge's first pair: the class none's, 0); the chunk's sum per
                # cell (in the pairs' order), then added to the total: a cell's sum is
                # the same however the chunk's pairs of no value or other cells
                # interleave (compiled: `add_differences`, `add_product`)
                of = np.ascontiguousarray(of)
                if every:
                    cell_base, y_first, y_count, y_cell = product_of
                    add_product(of, *terms, y_first, y_count, y_class, cell_base, y_cell,
                                local_of, sums, row, at, mapped)
                else:
                    add_differences(of, *terms, first, per_edge, local_of, sums, row, at)
        if local is not None:
            place[touched] = 0
    return live, cells, list(totals.values())


def _weighted_pairs(padded_values: Callable[[], np.ndarray], unit: np.ndarray,
                    x_edges: tuple, y_edges: tuple, edges: tuple, begin: int,
                    pairs: int) -> tuple | None:
    """Of a chunk of steps (from `begin`; `padded_values()` [row, step, x class, y class]
    its live rows' values, the class "none" last on each axis, 0, taken only where the
    kinds of edges are few; `edges` the slices of its x and y edges; `pairs` its pairs
    of edges): the pairs of `_differences` whose term
    is not 0 in some row (of the multiples of `unit` or the remainders), where they are
    fewer than a FEW_PAIRS share of all: (x edge, y edge) of each in the order of all
    the pairs (by x edge, then y edge); else None (every pair). A pair's term is the
    second difference of the classes on either side of its edges, so it is found once
    per kind of x edge (its step and classes left and right) and kind of y edge, not
    per pair: where a step's few ranks take classes of their own on one axis alone (a
    binomial tree on one process column, say), most pairs of its many edges add 0. A
    pair of 0 leaves every cell's sum as it was (its x edge's next term is taken from a
    term equal to its own): the totals are the same, bit for bit."""
    x_on, y_on = edges
    _, x_step, _, x_left, x_right = x_edges
    _, y_step, _, y_left, y_right = y_edges
    steps = int(x_step[x_on.stop - 1]) - begin + 1
    nx, ny = int(x_right[x_on].max()), int(y_right[y_on].max())    # "none": the last
    x_kind, x_of = _kinds(((x_step[x_on] - begin) * (nx + 1) + x_left[x_on]) * (nx + 1)
                          + x_right[x_on], steps * (nx + 1) ** 2)
    y_kind, y_of = _kinds(((y_step[y_on] - begin) * (ny + 1) + y_left[y_on]) * (ny + 1)
                          + y_right[y_on], steps * (ny + 1) ** 2)
    x_kinds = np.bincount(x_kind // (nx + 1) ** 2, minlength=steps)
    y_kinds = np.bincount(y_kind // (ny + 1) ** 2, minlength=steps)
    if int(x_kinds @ y_kinds) * FEW_PAIRS * 4 > pairs:
        return None
    # every kind of x edge with every kind of y edge of its step, and its term: each x
    # kind's first difference along x (as `add_differences` takes it: v(right) -
    # v(left)) at every y class, then at a y kind's right class less at its left
    xk, yk = _products(np.cumsum(x_kinds) - x_kinds, x_kinds, np.cumsum(y_kinds) - y_kinds,
                       y_kinds)
    line = (x_kind // (nx + 1) ** 2) * (nx + 1)
    at = xk * (ny + 1)
    right, left = at + y_kind[yk] % (ny + 1), at + (y_kind[yk] // (ny + 1)) % (ny + 1)
    nonzero = np.zeros(len(xk), dtype=np.uint8)
    padded = padded_values()
    rows = len(padded)
    high = np.round(padded / unit) * unit
    for part in (high, padded - high):
        lines = part.reshape(rows, -1, ny + 1)
        across = (lines.take(line + x_kind % (nx + 1), axis=1)
                  - lines.take(line + (x_kind // (nx + 1)) % (nx + 1), axis=1)).reshape(rows, -1)
        mark_terms(across, right, left, nonzero)
    kinds = np.flatnonzero(nonzero)
    x_count = np.bincount(x_of, minlength=len(x_kind))
    y_count = np.bincount(y_of, minlength=len(y_kind))
    if int(x_count[xk[kinds]] @ y_count[yk[kinds]]) * FEW_PAIRS > pairs:
        return None
    # the edges of each kind (in edge order within a kind), paired kind by kind, then
    # put in the order of all the pairs
    xi, yi = _products(np.cumsum(x_count)[xk[kinds]] - x_count[xk[kinds]], x_count[xk[kinds]],
                       np.cumsum(y_count)[yk[kinds]] - y_count[yk[kinds]], y_count[yk[kinds]])
    pair_x = np.argsort(x_of, kind="stable")[xi]
    pair_y = np.argsort(y_of, kind="stable")[yi]
    # the keys are distinct (any sort gives this order) and come as sorted runs, one per
    # pair of kinds, which the stable sort merges (about half a quicksort's time)
    order = np.argsort(pair_x * len(y_of) + pair_y, kind="stable")
    return pair_x[order] + x_on.start, pair_y[order] + y_on.start


def _kinds(keys: np.ndarray, size: int) -> tuple:
    """np.unique(keys, return_inverse=True) of integer keys in [0, size): marked in a
    table where it is not much longer than the keys (O(keys + size), no sort: a step's
    edges on an axis of 10^6 ranks are that many keys of a few dozen kinds)."""
    if size > KIND_TABLE * len(keys):
        return np.unique(keys, return_inverse=True)
    seen = np.zeros(size, dtype=bool)
    seen[keys] = True
    return np.flatnonzero(seen), (np.cumsum(seen) - 1)[keys]


def _products(a_first: np.ndarray, a_count: np.ndarray, b_first: np.ndarray,
              b_count: np.ndarray) -> tuple:
    """Each a of a_first[i] .. + a_count[i] with each b of b_first[i] .. + b_count[i],
    for each i in turn (a, then b): (a, b) flat."""
    per = a_count * b_count
    total = int(per.sum())
    start = np.repeat(np.cumsum(per) - per, per)
    within = np.arange(total) - start
    b_of = np.repeat(b_count, per)
    return np.repeat(a_first, per) + within // b_of, np.repeat(b_first, per) + within % b_of


def _edges(runs: RunClasses, classes: int) -> tuple:
    """(every rank where some run starts or ends, ascending, 0 and n among them; per
    edge of a step (each run's start, and n), ordered by step: its step, its index in
    those, the classes on its left and right (`classes`: none)). The runs are in order
    (by step, then rank): each step's edge n goes after its runs, no sort."""
    steps = runs.rep.shape[0]
    edge = np.zeros(runs.n + 1, dtype=bool)
    edge[runs.start] = True
    edge[[0, runs.n]] = True
    edges = np.flatnonzero(edge)
    # the runs' places among the edges (each after its steps' edges n before it), the
    # edges n's after their steps' runs
    mine = np.arange(len(runs.step)) + runs.step
    last = np.cumsum(np.bincount(runs.step, minlength=steps)) + np.arange(steps)
    step = np.empty(len(runs.step) + steps, dtype=np.int64)
    at = np.empty_like(step)
    of = np.empty(len(step), dtype=runs.of_run.dtype)
    step[mine], step[last] = runs.step, np.arange(steps)
    at[mine], at[last] = runs.start, runs.n
    of[mine], of[last] = runs.of_run, classes
    left = np.empty_like(of)
    left[0] = classes
    left[1:] = np.where(step[1:] == step[:-1], of[:-1], classes)
    return edges, step, (np.cumsum(edge) - 1)[at], left, of
