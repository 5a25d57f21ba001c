"""Ranks in symmetric positions, per step: one evaluation for each class of them.

A model that walks S steps over an axis of n ranks (a process row index, say) needs,
at step s, only the features of rank i that its costs depend on (its rows, its
position in a broadcast, ...). `step_classes` groups the ranks with equal features at
each step; a cost evaluated at one member of a class (its representative) is every
member's, so a model evaluates [step, class] arrays instead of [step, rank] ones.
`spread` sums such per-class values back to every rank's total over the steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from linalg_io.models.rates import BLAS
from scipy import sparse

# the most values `spread` gathers at once (a chunk of the steps: 128 MiB of floats)
CHUNK_ELEMENTS = 1 << 24
# `spread`'s estimates of its ways, in values touched: a turned axis's work costs this
# many times a summed one's, and each of its rolled positions this many values more
TURN_WEIGHT = 4
TURN_OVERHEAD = 1 << 16


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

    @cached_property
    def groups(self) -> tuple[np.ndarray, int]:
        """(group of each step, number of groups): steps whose ranks fall into the same
        classes (equal rows of `of`) share a group."""
        signature = self.of @ np.random.default_rng(0).random(self.of.shape[1])
        _, first, group = np.unique(signature, return_index=True, return_inverse=True)
        if not (self.of == self.of[first][group]).all():   # signatures collide: no groups
            return np.arange(self.of.shape[0]), self.of.shape[0]
        return group, len(first)

    @cached_property
    def rotations(self) -> tuple[np.ndarray, np.ndarray]:
        """(pattern of each step, patterns [pattern, position]): the classes of step s as
        seen from rank s mod n (position j: rank (s + j) mod n), steps with equal ones
        sharing a pattern; where the classes turn with the root of a cyclic layout (the
        ranks' roles depend on (rank - s) mod n), there are few patterns."""
        steps, n = self.of.shape
        ranks = (np.arange(n)[None, :] + np.arange(steps)[:, None]) % n
        turned = np.take_along_axis(self.of, ranks, axis=1)
        signature = turned @ np.random.default_rng(1).random(n)
        _, first, pattern = np.unique(signature, return_index=True, return_inverse=True)
        if not (turned == turned[first][pattern]).all():    # signatures collide
            return np.arange(steps), turned
        return pattern, turned[first]


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


def spread(values: np.ndarray, xs: StepClasses, ys: StepClasses) -> np.ndarray:
    """Totals over the steps per rank, [..., layer, x, y], of `values` [..., step, layer,
    x class, y class]: rank (l, x, y) adds values[s, l, xs.of[s, x], ys.of[s, y]] at each
    step s. One axis is expanded by indexing; for the other the steps that class its
    ranks alike are summed first, then spread by a matrix product with the class
    indicators (BLAS). The axis expanded is the one that makes less work."""
    *lead, steps, layers, nx, ny = values.shape
    px, py = xs.of.shape[1], ys.of.shape[1]
    q = int(np.prod(lead, dtype=np.int64)) * layers
    gathered = {"x": steps * px * ny * q, "y": steps * py * nx * q}
    # expand one axis, sum the other's groups: a product [lead x, group class] @ [.., y]
    costs = {("sum", "y"): gathered["x"] + ys.groups[1] * ny * py * px * q,
             ("sum", "x"): gathered["y"] + xs.groups[1] * nx * px * py * q}
    # or expand one, turn the other (`_expand_then_turn`): a rolled copy per position off
    # its pattern's largest class; counted at TURN_WEIGHT (no BLAS, a copy per position);
    # its patterns (O(steps x ranks) to find) only looked for where the expanding alone
    # would not already cost more than the best way so far
    for name, classes, other in (("y", ys, px), ("x", xs, py)):
        expanding = TURN_WEIGHT * gathered["x" if name == "y" else "y"]
        if expanding < min(costs.values()):
            costs[("turn", name)] = expanding + TURN_WEIGHT * _turn_positions(classes) * (
                classes.of.shape[1] * other * q + TURN_OVERHEAD)
    how, axis = min(costs, key=costs.get)
    work = _expand_then_sum if how == "sum" else _expand_then_turn
    if axis == "y":
        return work(values, xs.of, ys)
    return np.swapaxes(work(np.swapaxes(values, -1, -2), ys.of, xs), -1, -2)


def _turn_positions(classes: StepClasses) -> int:
    """Positions, summed over the patterns of `StepClasses.rotations`, off the largest
    class of their pattern."""
    _, patterns = classes.rotations
    largest = np.array([np.bincount(row).max() for row in patterns])
    return int((patterns.shape[1] - largest).sum())


def _expand_then_turn(values: np.ndarray, expand_of: np.ndarray,
                      turned: StepClasses) -> np.ndarray:
    """`spread` with the classes on axis -2 expanded (`expand_of`) and those on the last
    axis (n ranks) turned with the steps (`StepClasses.rotations`): the steps of one
    pattern and one residue s mod n summed (A[pattern, s mod n, class, x]), then rank y
    adds A[pattern, r, class of position (y - r) mod n, x] over r: the pattern's largest
    class d at every position, and at each position j of another class c, A[.., c] -
    A[.., d] rolled by j."""
    *lead, steps, layers, n_expand, n_turn = values.shape
    ranks_expanded, n = expand_of.shape[1], turned.of.shape[1]
    q = int(np.prod(lead, dtype=np.int64))
    pattern, patterns = turned.rotations
    residue = np.arange(steps) % n
    group = pattern * n + residue
    # rows (step, expanded class), columns (lead, layer, turned class)
    rows = np.moveaxis(values.reshape(q, steps, layers, n_expand, n_turn), (1, 3), (0, 1))
    rows = np.ascontiguousarray(rows).reshape(steps * n_expand, q * layers * n_turn)
    sums = np.zeros((len(patterns) * n, ranks_expanded, rows.shape[1]))
    # blocks of consecutive steps, at most n (their residues differ): one add each
    block = max(1, min(n, CHUNK_ELEMENTS // max(1, ranks_expanded * rows.shape[1])))
    for begin in range(0, steps, block):
        chosen = np.arange(begin, min(steps, begin + block))
        index = chosen[:, None] * n_expand + expand_of[chosen]             # [block, x]
        sums[group[chosen]] += rows.take(index.reshape(-1), axis=0).reshape(
            len(chosen), ranks_expanded, -1)
    sums = sums.reshape(len(patterns), n, ranks_expanded, q, layers, n_turn)
    total = np.zeros((q, layers, ranks_expanded, n))
    for a, positions in enumerate(patterns):
        part = np.moveaxis(sums[a], (2, 3, 1, 0), (0, 1, 2, 3))        # [q, l, x, r, class]
        largest = np.bincount(positions).argmax()
        base = part[..., largest]
        total += base.sum(axis=-1, keepdims=True)
        for j in np.flatnonzero(positions != largest):
            total += np.roll(part[..., positions[j]] - base, j, axis=-1)
    return total.reshape(*lead, layers, ranks_expanded, n)


def _expand_then_sum(values: np.ndarray, expand_of: np.ndarray,
                     summed_classes: StepClasses) -> np.ndarray:
    """`spread` with the classes on axis -2 expanded (`expand_of`) and those on the last
    axis summed (`summed_classes`): each rank's class row summed over the steps of each
    group (a sparse product, `_selection`), then spread over the summed axis by a matrix
    product with the classes' indicators."""
    *lead, steps, layers, n_expand, n_sum = values.shape
    sum_of = summed_classes.of
    ranks_expanded, ranks_summed = expand_of.shape[1], sum_of.shape[1]
    q = int(np.prod(lead, dtype=np.int64))
    # rows (step, class) of the expanded axis, columns (lead, layer, summed class)
    rows = np.moveaxis(values.reshape(q, steps, layers, n_expand, n_sum), (1, 3), (0, 1))
    rows = np.ascontiguousarray(rows).reshape(steps * n_expand, q * layers * n_sum)
    group, count = summed_classes.groups
    order = np.argsort(group, kind="stable")
    starts = np.searchsorted(group[order], np.arange(count))
    # summed[g, x] = the sum over the steps s of group g, in order, of rows[s, class of x
    # at s]: a sparse product, row (g, x) holding (s, class of x at s) for each s of g
    summed = _selection(order, group, expand_of, n_expand) @ rows
    firsts = order[starts]
    onehot = (sum_of[firsts][:, None, :] == np.arange(n_sum)[None, :, None])  # [g, n, y]
    lhs = np.asarray(summed).reshape(count, ranks_expanded, q, layers, n_sum)
    lhs = np.ascontiguousarray(lhs.transpose(2, 3, 1, 0, 4)).reshape(-1, count * n_sum)
    with BLAS.limit(limits=1, user_api="blas"):
        total = lhs @ onehot.reshape(count * n_sum, ranks_summed).astype(float)
    return total.reshape(*lead, layers, ranks_expanded, ranks_summed)


def _selection(order: np.ndarray, group: np.ndarray, expand_of: np.ndarray,
               n_expand: int) -> sparse.csr_matrix:
    """[group x rank, step x class] 0/1: row (g, x) selects (s, expand_of[s, x]) for the
    steps s of group g, ascending (`order`: the steps sorted by group, stably), so that a
    product sums them in the steps' order. Built in place, O(steps x ranks), no sort."""
    steps, ranks = expand_of.shape
    sizes = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    in_order = np.arange(steps)                       # position of each step in `order`
    size, start = sizes[group[order]], starts[group[order]]
    # entry (position i, rank x) goes to start ranks + x size + (i - start)
    where = (start * ranks + (in_order - start))[:, None] + np.arange(ranks)[None, :] * \
        size[:, None]
    columns = np.empty(steps * ranks, dtype=np.int64)
    columns[where.reshape(-1)] = (order[:, None] * n_expand + expand_of[order]).reshape(-1)
    indptr = np.concatenate([[0], np.cumsum(np.repeat(sizes, ranks))])
    return sparse.csr_matrix((np.ones(steps * ranks), columns, indptr),
                             shape=(len(sizes) * ranks, steps * n_expand))
