"""The "uniform" and "proportional" pivots as `linalg_io.models.conflux_pivots` computed
them before its compiled kernel (`linalg_io._kernels.conflux_pivots`): a NumPy loop over
the steps, one tournament merge tree per step, level by level, and where the tables
change along the process rows from whole-table masks. The oracle the kernel must match
bit for bit (tests/test_conflux_pivots.py)."""

from __future__ import annotations

import numpy as np
from linalg_io.models.conflux_pivots import DUST, TOURNAMENT_POOL_EXPONENT

from linalg_io.layout.conflux_layout import TileMap, butterfly_size


def _weight(n, r):
    """n (r/n)^TOURNAMENT_POOL_EXPONENT (a quarter: two square roots), 0 where n = 0."""
    assert TOURNAMENT_POOL_EXPONENT == 0.25
    return np.where(n > 0, n * np.sqrt(np.sqrt(np.divide(r, n, out=np.ones_like(r),
                                                         where=n > 0))), 0.0)


def _split(winners, n1, r1, n2, r2):
    """Winners the first of two merged sets keeps (the model's module doc)."""
    w1, w2 = _weight(n1, r1), _weight(n2, r2)
    total = w1 + w2
    first = np.where(total > 0, winners * w1 / np.where(total > 0, total, 1.0), 0.0)
    return np.minimum(np.maximum(first, winners - n2), n1)


def tournament_pivots(active: np.ndarray, w: int, k: int) -> np.ndarray:
    """Expected pivots per process row at step k of a random matrix.

    The merge tree at step k: roles r = (x - k) mod Px; r >= q (q the largest power of
    two <= Px) folds onto r - q, then the butterfly pairs neighbouring sets, level by
    level, up to one set."""
    active = np.asarray(active, dtype=float)
    px = len(active)
    q = butterfly_size(px)
    candidates = np.minimum(active, float(w))
    roles = (np.arange(q) + k) % px
    partners = (np.arange(q) + q + k) % px
    folds = np.arange(q) + q < px
    n = np.where(folds, np.minimum(w, candidates[roles] + candidates[partners]), candidates[roles])
    r = np.where(folds, active[roles] + active[partners], active[roles])
    levels = [(n, r)]
    while len(levels[-1][0]) > 1:
        n, r = levels[-1]
        levels.append((np.minimum(w, n[0::2] + n[1::2]), r[0::2] + r[1::2]))
    winners = np.minimum(float(w), levels[-1][0])
    for n, r in reversed(levels[:-1]):
        first = _split(winners, n[0::2], r[0::2], n[1::2], r[1::2])
        winners = np.stack([first, winners - first], axis=1).reshape(-1)
    owned = np.zeros(px)
    first = _split(winners, candidates[roles], active[roles], candidates[partners],
                   active[partners])
    owned[roles] = np.where(folds, first, winners)
    owned[partners[folds]] = (winners - first)[folds]
    return owned


def expected_pivots(n: int, v: int, px: int, pivots: str) -> tuple[np.ndarray, np.ndarray]:
    """(active, owned) [step, process row] of `pivots` = "uniform" or "proportional",
    step by step."""
    t = TileMap(n, v, px, 1)
    widths = np.minimum(v, n - np.arange(t.ntiles) * v).astype(float)
    rows = t.rows_per_proc.astype(float)
    active = np.zeros((t.ntiles, px))
    owned = np.zeros((t.ntiles, px))
    for k, w in enumerate(widths):
        share = (tournament_pivots(rows, int(w), k) if pivots == "uniform"
                 else rows / rows.sum() * w)
        share = np.where(rows - share < DUST, rows, share)
        active[k], owned[k] = rows, share
        rows = rows - share
    return active, owned


def changes(active: np.ndarray, owned: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(step, process row), flat: where active or owned differs from the process row
    before."""
    moved = (active[:, 1:] != active[:, :-1]) | (owned[:, 1:] != owned[:, :-1])
    step, row = np.nonzero(moved)
    return step, row + 1
