"""Where the 2.5D LU's pivots come from: the pivot rows each process row owns, per step.

Only the pivots make the LU's traffic depend on the matrix (rows move, they are not
swapped). `pivot_counts` gives, per step k, the rows of each process row still active
before the step (a_x) and the pivots it owns (p_x), for `pivots` = "none" (the rows of
tile k: what a diagonally dominant matrix gives, exact there), the pivot ids of a run
(exact for that run), "uniform" (the expectation for a uniformly random matrix,
fractional rows; below) or "proportional" (in proportion to the active rows).

"uniform": the active rows of a random matrix are exchangeable, but the tournament
is not: each process row offers n_x = min(a_x, w) candidates, folds and butterfly
rounds merge two candidate sets into min(w, n_1 + n_2) winners, and two full sets
win about equally often however many rows each stands for. The model splits each
merge's winners in proportion to n (r/n)^TOURNAMENT_POOL_EXPONENT (r: the active rows
the set stands for), top-down over the step's merge tree (roles rotated by k as in
the code, a side never giving more than its n nor less than the winners minus the
other side's n). With Px a power of two and equal a_x every merge splits evenly:
w/Px each (computed so, without the tree). Otherwise (Px = 3, 5, 6, 7, or a process
row with one tile more) the proportional share is biased: an unpaired role of the
butterfly wins nearly w/q, a process row with more rows gives little more than
the others, so its rows go late, under narrow trailing matrices. How close this rule
comes to measured pivots, and the proportional share: docs/MEASUREMENTS.md#in-code
(`bench/bench_conflux.py --what seeds`). The merge trees of all steps are one compiled
loop (`linalg_io._kernels.conflux_pivots`), its powers NumPy's.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from linalg_io._kernels.conflux_pivots import changes, tournament_steps

from linalg_io.layout.conflux_layout import StepPlan, TileMap, butterfly_size

# A tournament merge of two candidate sets (n_i candidates standing for r_i active rows)
# keeps winners from each in proportion to n_i (r_i/n_i)^beta: beta = 1 would be the
# proportional share, beta = 0 a coin flip per set. Fitted on the pivots of random
# matrices (bench_conflux.py --what seeds: Px = 3, 5, 6, 7, v = 128 and 256, N = 2048
# and 4096, seeds 1-6): 0.2 to 0.3 leaves per-rank biases <= 2%, 1 gives up to 7%.
TOURNAMENT_POOL_EXPONENT = 0.25
PIVOT_MODELS = ("none", "uniform", "proportional")
# a share that leaves fewer active rows than this takes them all (a process row whose
# rows all became pivots keeps 0, not the rounding left by fractional shares, which
# would count messages of 1e-12 bytes)
DUST = 1e-9


def _even_split(rows: float, widths: np.ndarray, px: int) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_counts` "uniform" when Px is a power of two and every process row has the
    same rows: every merge splits evenly, each row gives min(w, Px min(a, w))/Px, a
    share that leaves less than DUST taking the rest. Wherever Px min(a, w) >= w and
    a - w/Px >= DUST, w/Px: the rows left after such a run of steps are one sequential
    subtraction of their shares (`np.subtract.accumulate`, the same roundings as step
    after step); the first step that breaks it is taken alone."""
    steps = len(widths)
    active, owned = np.zeros(steps), np.zeros(steps)
    even = widths / px
    k = 0
    while k < steps and rows > 0:       # none left: the rest of the steps 0 and 0
        left = np.subtract.accumulate(np.concatenate([[rows], even[k:]]))
        run = (px * np.minimum(left[:-1], widths[k:]) >= widths[k:]) & (left[1:] >= DUST)
        run = len(run) if run.all() else int(np.argmin(run))
        active[k:k + run], owned[k:k + run] = left[:run], even[k:k + run]
        rows, k = left[run], k + run
        if k < steps:
            w = widths[k]
            share = min(w, px * min(rows, w)) / px
            share = rows if rows - share < DUST else share
            active[k], owned[k] = rows, share
            rows, k = rows - share, k + 1
    # every process row alike: one column seen Px times, not Px copies of it
    return (np.broadcast_to(active[:, None], (steps, px)),
            np.broadcast_to(owned[:, None], (steps, px)))


def pivot_counts(plan: StepPlan, pivots: str | Sequence[np.ndarray] = "none",
                 pooled: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(a, p): arrays [step, process row] of the rows active before each step and the
    pivots each process row owns at that step (float for the expectations); a model's
    with `pooled` > 0, those of the process rows holding rows averaged over `pooled`
    groups of consecutive ones (`pooled_pivots`)."""
    t = plan.tiles
    if isinstance(pivots, str):
        if pivots not in PIVOT_MODELS:
            raise ValueError(f"pivots must be one of {PIVOT_MODELS} or the pivot ids, got "
                             f"{pivots!r}")
        if pooled:
            return pooled_pivots(t.n, t.v, t.px, pivots, pooled)
        return _expected_pivots(t.n, t.v, t.px, pivots)
    steps = np.concatenate([np.full(len(ids), k) for k, ids in enumerate(pivots)])
    owners = t.owner_row(np.concatenate([np.asarray(ids) for ids in pivots]))
    owned = np.bincount(steps * t.px + owners, minlength=t.ntiles * t.px)
    owned = owned.reshape(t.ntiles, t.px).astype(float)
    return t.rows_per_proc[None, :] - (np.cumsum(owned, axis=0) - owned), owned


def pivot_changes(plan: StepPlan, pivots: str | Sequence[np.ndarray] = "none",
                  pooled: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(step, process row), flat: where a or p of `pivot_counts` (`pooled` as there)
    differs from the process row before."""
    if isinstance(pivots, str):
        t = plan.tiles
        return _expected_changes(t.n, t.v, t.px, pivots, pooled)
    return changes(*pivot_counts(plan, pivots))


@lru_cache(maxsize=8)
def pooled_pivots(n: int, v: int, px: int, pivots: str, pooled: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_counts` of a model name with the process rows that hold rows cut into
    `pooled` groups of consecutive ones (ceil(rows / pooled) each, the last fewer), each
    group's a and p their mean over its process rows (each step's pivots and active
    rows in all kept; the rows holding none stay 0). Where a grid has more process rows
    than tiles, or unequal rows, the tournament's expected counts differ row by row
    (module doc), every row a class of its own at every step; pooled, a few classes:
    an approximation (`linalg_io.models.conflux.pooled_rows`)."""
    active, owned = _expected_pivots(n, v, px, pivots)
    holding = np.flatnonzero(TileMap(n, v, px, 1).rows_per_proc > 0)
    starts = np.arange(0, len(holding), -(-len(holding) // pooled))
    sizes = np.diff(np.append(starts, len(holding)))
    tables = []
    for table in (active, owned):
        means = np.add.reduceat(table[:, holding], starts, axis=1) / sizes
        pooled_table = np.zeros_like(table)
        pooled_table[:, holding] = np.repeat(means, sizes, axis=1)
        pooled_table.flags.writeable = False
        tables.append(pooled_table)
    return tables[0], tables[1]


@lru_cache(maxsize=64)
def _expected_changes(n: int, v: int, px: int, pivots: str, pooled: int = 0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_changes` of a model name; read-only, cached as `_expected_pivots`."""
    active, owned = (pooled_pivots(n, v, px, pivots, pooled) if pooled
                     else _expected_pivots(n, v, px, pivots))
    if active.strides[1] == owned.strides[1] == 0:      # alike on every process row
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    # compiled: comparing the tables whole takes three [step, Px] masks
    step, row = changes(active, owned)
    step.flags.writeable = row.flags.writeable = False
    return step, row


@lru_cache(maxsize=64)
def _expected_pivots(n: int, v: int, px: int, pivots: str) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_counts` of a model name; read-only, cached: every grid with this Px shares
    them."""
    return expected_pivots(n, v, px, pivots)


def expected_pivots(n: int, v: int, px: int, pivots: str) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_counts` of a model name (read-only arrays), not kept: for a caller that
    needs them once (`linalg_io.models.lu_bounds`), without filling the model's cache."""
    t = TileMap(n, v, px, 1)
    widths = np.minimum(v, n - np.arange(t.ntiles) * v).astype(float)
    rows = t.rows_per_proc.astype(float)
    if pivots == "none":
        owned = np.where(np.arange(px)[None, :] == (np.arange(t.ntiles) % px)[:, None],
                         widths[:, None], 0.0)
        active = rows[None, :] - (np.cumsum(owned, axis=0) - owned)
    elif pivots == "uniform" and butterfly_size(px) == px and (rows == rows[0]).all():
        active, owned = _even_split(rows[0], widths, px)
    elif pivots == "uniform":
        # the merge trees step after step, compiled: O(Px) per step without NumPy's
        # per-call overhead (tests/conflux_pivots_loop.py: the NumPy loop it matches)
        active, owned = np.empty((t.ntiles, px)), np.empty((t.ntiles, px))
        tournament_steps(rows, widths, TOURNAMENT_POOL_EXPONENT, DUST, active, owned)
    else:
        active, owned = np.zeros((t.ntiles, px)), np.zeros((t.ntiles, px))
        for k, w in enumerate(widths):
            share = rows / rows.sum() * w
            share = np.where(rows - share < DUST, rows, share)
            active[k], owned[k] = rows, share
            rows = rows - share
    active.flags.writeable = owned.flags.writeable = False
    return active, owned
