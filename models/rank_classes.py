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
once: O(pairs of runs + P), not O(steps x P).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# the most values `spread` holds at once per array (pairs of runs x rows of values): a
# chunk's dozen temporaries stay in the caches and the allocator's heap (a larger one
# runs slower and pays the kernel for fresh pages each chunk)
CHUNK_ELEMENTS = 1 << 18
# the bits of a float's mantissa (float64)
MANTISSA_BITS = 52


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
    steps, n = features[0].shape
    features = [f for f in features if not (f == f[:, :1]).all()] or features[:1]
    weights = np.random.default_rng(0).random(len(features)) + 0.5
    order = np.argsort(sum(w * f for w, f in zip(weights, features)), axis=-1, kind="stable")
    new = np.zeros((steps, n), dtype=bool)
    new[:, 0] = True
    for feature in features:
        ranked = np.take_along_axis(feature, order, axis=-1)
        new[:, 1:] |= ranked[:, 1:] != ranked[:, :-1]
    in_order = np.cumsum(new, axis=1) - 1
    of = np.empty_like(in_order)
    np.put_along_axis(of, order, in_order, axis=1)
    size = int(in_order[:, -1].max()) + 1
    flat = np.arange(steps)[:, None] * size + of
    count = np.bincount(flat.reshape(-1), minlength=steps * size).reshape(steps, size)
    rep = np.zeros((steps, size), dtype=np.int64)
    step_of, position = np.nonzero(new)
    rep[step_of, in_order[step_of, position]] = order[step_of, position]
    return StepClasses(of=of, rep=rep, count=count)


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
    ranked = [key[order] for key in keys]
    steps_in_order = step[order]
    first = np.ones(len(order), dtype=bool)      # the first run of each class
    first[1:] = steps_in_order[1:] != steps_in_order[:-1]
    for key in ranked:
        first[1:] |= key[1:] != key[:-1]
    running = np.cumsum(first) - 1
    class_in_order = running - running[np.searchsorted(steps_in_order, steps_in_order)]
    of_run = np.empty_like(class_in_order)
    of_run[order] = class_in_order
    size = int(class_in_order.max()) + 1
    count = np.bincount(step * size + of_run, weights=end - start,
                        minlength=steps * size).astype(np.int64).reshape(steps, size)
    rep = np.zeros((steps, size), dtype=np.int64)
    rep[steps_in_order[first], class_in_order[first]] = start[order][first]
    # a run of the class of the run before it (a break where nothing changed) joins it
    kept = np.ones(len(step), dtype=bool)
    kept[1:] = (step[1:] != step[:-1]) | (of_run[1:] != of_run[:-1])
    end = np.append(start[kept][1:], n)
    end[np.append(step[kept][1:] != step[kept][:-1], True)] = n
    return RunClasses(n=n, step=step[kept], start=start[kept], end=end,
                      of_run=of_run[kept], rep=rep, count=count)


def run_classes(features: list[np.ndarray]) -> RunClasses:
    """`RunClasses` of the classes of every rank (`step_classes` of [step, rank]
    `features`): for an axis whose every rank may be a break, at less cost than
    `classes_at` with all of them; each class's representative is its lowest rank."""
    dense = step_classes(features)
    steps, n = dense.of.shape
    new = np.ones((steps, n), dtype=bool)
    new[:, 1:] = dense.of[:, 1:] != dense.of[:, :-1]
    step, start = np.nonzero(new)
    end = np.append(start[1:], n)
    end[np.append(step[1:] != step[:-1], True)] = n
    return RunClasses(n=n, step=step, start=start, end=end, of_run=dense.of[step, start],
                      rep=dense.rep, count=dense.count)


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
    difference array, summed up along x and y at the end. The sums are exact: each
    value splits into a multiple of a power of two u, whose sums stay below 2^52 u
    (exact in a float), and a remainder below u/2, whose sums' rounding is far below
    the totals' last bit."""
    *lead, steps, layers, nx, ny = values.shape
    px, py = xs.n, ys.n
    rows = np.moveaxis(values.reshape(-1, steps, layers, nx, ny), 2, 1).reshape(
        -1, steps, nx, ny)
    xruns, yruns = xs.runs_per_step(), ys.runs_per_step()
    pairs = xruns * yruns
    # a bound on the sum of |value| over every corner: the partial sums stay below it
    bound = 4.0 * (np.abs(rows).max(axis=(2, 3)) @ pairs.astype(float))
    exponent = np.ceil(np.log2(np.where(bound > 0, bound, 1.0))) - MANTISSA_BITS + 1
    unit = np.ldexp(1.0, exponent.astype(np.int64))[:, None]
    size = (px + 1) * (py + 1)
    sums = {}                    # "high", and "low" once some value has a remainder
    xfirst = np.concatenate([[0], np.cumsum(xruns)[:-1]])
    yfirst = np.concatenate([[0], np.cumsum(yruns)[:-1]])
    ends = np.cumsum(pairs)
    # pairs per chunk: CHUNK_ELEMENTS values, or more where each chunk's sums over every
    # rank (rows x size) would cost more than its pairs
    most = max(1, CHUNK_ELEMENTS // (4 * len(rows)), size // 4)
    begin = 0
    while begin < steps:
        # the steps of this chunk: up to `most` pairs (one step at least)
        stop = max(begin + 1, int(np.searchsorted(ends, ends[begin] - pairs[begin] + most,
                                                  side="right")))
        chunk = np.arange(begin, stop)
        step = np.repeat(chunk, pairs[chunk])
        within = np.arange(len(step)) - np.repeat(ends[chunk] - pairs[chunk] - (
            ends[begin] - pairs[begin]), pairs[chunk])
        xi = xfirst[step] + within // yruns[step]
        yi = yfirst[step] + within % yruns[step]
        x0, x1 = xs.start[xi] * (py + 1), xs.end[xi] * (py + 1)
        y0, y1 = ys.start[yi], ys.end[yi]
        corners = (np.concatenate([x0 + y0, x1 + y1, x0 + y1, x1 + y0])[None, :]
                   + (np.arange(len(rows)) * size)[:, None]).reshape(-1)
        value = rows[:, step, xs.of_run[xi], ys.of_run[yi]]
        high = np.round(value / unit) * unit
        low = value - high
        for part, weights in (("high", high), ("low", low)):
            if part == "low" and not low.any():
                continue
            signed = np.concatenate([weights, weights, -weights, -weights], axis=1)
            sums[part] = sums.get(part, 0.0) + np.bincount(
                corners, weights=signed.reshape(-1), minlength=len(rows) * size)
        begin = stop
    totals = sum(part.reshape(-1, px + 1, py + 1).cumsum(axis=1).cumsum(axis=2)
                 for part in sums.values())
    return totals[:, :px, :py].reshape(*lead, layers, px, py)
