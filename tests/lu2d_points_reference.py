"""The reference the 2D critical path's row points and Bruck windows are held to:
`run_of`, `piece_ends` and `bruck_at` of `models/lu2d_runs.py` at commit 0895aec (NumPy:
two sorts of every step's candidates, one np.interp per Bruck round), before the compiled
`linalg_io._kernels.lu2d_points`. tests/test_lu2d_points.py checks the critical path
gives the same seconds with these, bit for bit. Frozen: not edited with the model."""

from __future__ import annotations

import numpy as np

from linalg_io.layout.schedules import bruck_rounds


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
