"""A sample of an LU model's steps, where walking every one costs too much.

An LU's steps differ smoothly in k (the trailing matrix shrinks) but for the residues of
its cyclic layouts (the root's process row k mod Px, column, layer). A sample every
s-th step, s prime to the layouts' period, meets every residue alike; its sum times s
is the rectangle rule, whose error on the smooth part a polynomial fitted to the
sampled terms corrects (`smooth_sum`). The last steps, where the trailing matrix runs
out and the terms turn fastest, are walked one by one. Used by the 2D LU's critical
path (`linalg_io.models.lu2d.sampled_steps`) and by the 2.5D LU's counts and critical
path (`StepSample`, `linalg_io.models.conflux`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from linalg_io._kernels.lu2d_points import shifted_means
from linalg_io.models.rates import BLAS

# `StepSample.midpoints` with this many cells or fewer samples the head's last steps, a
# block more (a polynomial through three or four blocks' means missed them by 8%; with
# more cells the fit extrapolates them)
FEW_CELLS = 12
# the columns of `_smooth_weights`' fit solved at once (a band of the identity: blocks x
# FIT_COLUMNS doubles)
FIT_COLUMNS = 64


def prime_stride(stride: int, period: int) -> int:
    """The least stride >= `stride` prime to `period`."""
    stride = max(1, stride)
    while np.gcd(stride, period) != 1:
        stride += 1
    return stride


def smooth_sum(sample: np.ndarray, terms: np.ndarray, stride: int, first: int, stop: int,
               degree: int) -> float:
    """The sum over the steps first .. stop-1 of a term known at the steps `sample`
    (every `stride`-th of them): `stride` times the sampled terms' sum, plus a Chebyshev
    polynomial of `degree` fitted to them summed over every step, less `stride` times
    its sum over the sample (the rectangle rule's error on the smooth part)."""
    every = np.arange(first, stop)
    poly = np.polynomial.Chebyshev.fit(sample, terms, degree, domain=[first, stop - 1])
    return float(stride * terms.sum() + poly(every).sum() - stride * poly(sample).sum())


def _smooth_weights(blocks: np.ndarray, width, first: int, stop: int,
                    degree: int) -> np.ndarray:
    """[block] weights W with sum over the blocks of W times the block's mean term =
    the sum over the steps first .. stop-1, for every polynomial term of `degree`:
    `width` (the steps a block stands for: one for all, or [block]) plus the correction
    of a least-squares fit of such a polynomial to the blocks' means (`smooth_sum`'s,
    linear in the terms: as weights). `blocks` [block, step]: the steps of each block."""
    half = (stop - 1 - first) / 2.0

    def vander(x: np.ndarray) -> np.ndarray:
        return np.polynomial.chebyshev.chebvander((x - first - half) / half, degree)

    means = vander(blocks).mean(axis=1)                          # [block, degree + 1]
    # the fit's matrix (the least-squares solutions of the identity's columns) a band of
    # columns at a time, on one BLAS thread: each column's solution is the same whatever
    # the band (LAPACK's gelsd treats the columns alike), the identity's B x B never
    # made, and a pool of threads would split the work where its rounding depends on
    # their number
    count = len(blocks)
    fit = np.empty((means.shape[1], count))
    with BLAS.limit(limits=1, user_api="blas"):
        for first_column in range(0, count, FIT_COLUMNS):
            band = np.arange(first_column, min(count, first_column + FIT_COLUMNS))
            unit = np.zeros((count, len(band)))
            unit[band, band - first_column] = 1.0
            fit[:, band] = np.linalg.lstsq(means, unit, rcond=None)[0]
    stood = width * means.sum(axis=0) if np.ndim(width) == 0 else width @ means
    error = vander(np.arange(first, stop)).sum(axis=0) - stood
    return width + error @ fit


@dataclass(frozen=True)
class StepSample:
    """The steps a model evaluates of `steps` (`rows`, ascending): step 0; of the head 1
    .. `stop`-1, in cells of `stride` x `block` steps, the `block` consecutive steps
    in the middle of each cell (`sampled`); and the tail `stop` .. steps-1. `weight`
    [row]: what each row's term counts for in a sum over every step: 1 walked, about
    `stride` sampled (the midpoint rule, its error on polynomials of `degree`
    corrected: `smooth_sum`, as weights); a per-rank total over the steps is the weighted
    sum of the rows (`weighed`), a per-step term's `total` the same. `shift`: where a
    step's costs on a grid of ranks [a, b, c] depend on a rank's place relative to the
    step's root, which moves by `shift` (cyclic, on each axis) from one block to the
    next, the sampled rows' per-rank totals are averaged over the `stride` places the
    cell's blocks put the roots at (`per_rank`): every rank takes each role about as
    often as walking every step makes it, not `stride` times as often or never.
    `arcs`: where the first ranks of an axis hold a tile more than the others (arc of
    them, per axis; 0: as many), each part is averaged on its own, so that a rank's
    trailing tiles stay its own (the place of a root is what moves; averaged across, the
    busiest rows, those of a tile more, took the load of rows of one less: 8% under on
    grids of one to three tiles a row). `counts_shift`: whether a model's counts (bytes,
    messages, flops per rank) are averaged so too, or only its times (`counted`)."""

    steps: int
    rows: np.ndarray
    sampled: np.ndarray
    stride: int
    block: int
    stop: int
    weight: np.ndarray
    shift: tuple | None = None
    arcs: tuple = (0, 0, 0)
    counts_shift: bool = True

    @classmethod
    def midpoints(cls, steps: int, period: int, samples: int, tail: int, degree: int,
                  block: int = 1, shift: tuple | None = None,
                  arcs: tuple = (0, 0, 0), counts_shift: bool = True) -> StepSample:
        """About `samples` steps of the head 1 .. steps-tail-1 in blocks of `block`, the
        cells' stride prime to `period`, and the last `tail` steps. The head's last
        steps, less than a cell, go in the polynomial's correction, or, where the cells
        are FEW_CELLS or fewer, are a block more near their middle (walked where fewer
        than a block: a polynomial through a few blocks' means missed them by 8% at
        three cells). `shift`, `arcs`, `counts_shift`: average the sampled rows'
        per-rank totals over the roots' places (class doc)."""
        head = max(1, steps - tail) - 1
        stride = prime_stride(head // max(1, samples), period)
        cells = head // (stride * block)
        start = 1 + stride // 2 * block + stride * block * np.arange(cells)
        width = stride * block
        rest = head - cells * width
        few = 0 < cells <= FEW_CELLS
        stop = 1 + cells * width if few and rest < block else head + 1
        if few and rest >= block:
            # the head's end, less than a cell: a block more near its middle (in the
            # others' phase), standing for its steps
            start = np.append(start, 1 + cells * width + (rest - block) // 2 // block * block)
            width = np.append(np.full(cells, width), rest)
        sample = (start[:, None] + np.arange(block)[None, :]).reshape(-1)
        rows = np.concatenate([[0], sample, np.arange(stop, steps)]).astype(np.int64)
        sampled = np.zeros(len(rows), dtype=bool)
        sampled[1:1 + len(sample)] = True
        weight = np.ones(len(rows))
        if cells:
            # one weight a block (each meets every role once), the correction of a low
            # degree (a polynomial through few clusters of steps would swing; through
            # FEW_CELLS or fewer, which cover the head, one below their count)
            weight[sampled] = np.repeat(_smooth_weights(
                sample.reshape(len(start), block), width, 1, stop,
                min(degree, len(start) - 1 if few else cells // 2)) / block, block)
        return cls(steps=steps, rows=rows, sampled=sampled, stride=stride, block=block,
                   stop=stop, weight=weight, shift=shift, arcs=arcs, counts_shift=counts_shift)

    def part(self, rows: slice) -> StepSample:
        """The same sample restricted to `rows` (a chunk of them: its per-rank totals
        add up to the whole's)."""
        return replace(self, rows=self.rows[rows], sampled=self.sampled[rows],
                       weight=self.weight[rows])

    def counted(self) -> StepSample:
        """The sample a model's counts take: this one, or, where they are not averaged
        over the roots' places (`counts_shift`), this one without its shift."""
        return self if self.counts_shift else replace(self, shift=None)

    def chunks(self, size: int) -> list[slice]:
        """The rows in slices of `size` at most, in order; with a `shift`, none mixing
        walked and sampled rows (step 0 one of its own)."""
        ends = [0, 1, 1 + int(self.sampled.sum()), len(self.rows)] if self.shift else [
            0, len(self.rows)]
        return [slice(at, min(at + size, stop)) for first, stop in itertools.pairwise(ends)
                for at in range(first, stop, size)]

    @property
    def tail(self) -> int:
        return self.steps - self.stop

    def weighed(self, values: np.ndarray, rows: np.ndarray | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
        """[..., row, a, b, c] values times each row's weight (0 but at `rows`), into
        `out` where given."""
        weight = self.weight if rows is None else self.weight * rows
        return np.multiply(values, weight[:, None, None, None], out=out)

    def per_rank(self, values: np.ndarray, spread: Callable) -> np.ndarray:
        """The per-rank totals over every step of `values` [..., row, a, b, c], given
        `spread` (values -> per-rank totals over the rows [..., a, x, y]): weighed,
        the sampled rows' averaged over the roots' places (`shift`)."""
        return self.finished(spread(self.stacked(values)))

    def stacked(self, values: np.ndarray) -> np.ndarray:
        """What `per_rank` spreads of `values`: weighed, and with a `shift` the walked
        and the sampled rows apart ([2, ..., row, a, b, c]); `finished` of the spread
        totals (those of several parts' summed) are the per-rank totals."""
        if self.shift is None:
            return self.weighed(values)
        out = np.empty((2, *values.shape))
        self.weighed(values, ~self.sampled, out[0])
        self.weighed(values, self.sampled, out[1])
        return out

    def finished(self, totals) -> np.ndarray:
        """The per-rank totals of spread `stacked` values (with a `shift`, the walked
        and the sampled rows' totals: stacked, or a pair)."""
        if self.shift is None:
            return totals
        walked, sampled = totals
        walked += self.smeared(sampled)
        return walked

    def smeared(self, totals: np.ndarray) -> np.ndarray:
        """`totals` [..., a, b, c] averaged over the cyclic shifts by m `shift`, m =
        -(stride // 2) .. stride // 2 (the blocks of a cell), in place; each part of
        the grid that `arcs` cut off (per axis, the ranks 0 .. arc-1 hold a tile more
        than the others: none where 0) averaged on its own, cyclic within it. Each mean
        a window's along the orbit of the shift (`shifted_means`): O(a b c) a figure,
        whatever the stride."""
        count = 2 * (self.stride // 2) + 1
        cuts = [[slice(0, arc), slice(arc, n)] if arc else [slice(0, n)]
                for arc, n in zip(self.arcs, totals.shape[-3:])]
        for part in itertools.product(*cuts):
            at = (Ellipsis, *part)
            grids = np.ascontiguousarray(totals[at])
            shifted_means(grids.reshape(-1, *grids.shape[-3:]), self.shift, count)
            if not np.shares_memory(grids, totals):
                totals[at] = grids
        return totals

    def total(self, terms: np.ndarray) -> float:
        """The sum over every step of a per-step term known at the rows."""
        return float(np.asarray(terms, dtype=float) @ self.weight)
