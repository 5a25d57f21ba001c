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
loop (`linalg_io._kernels.conflux_pivots`), its fourth roots two square roots (the same
bits on every CPU).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np
from linalg_io._kernels.conflux_pivots import changes, tournament_steps
from linalg_io.models.conflux_classes import panel_widths

from linalg_io.layout.conflux_layout import StepPlan, TileMap, butterfly_size

# A tournament merge of two candidate sets (n_i candidates standing for r_i active rows)
# keeps winners from each in proportion to n_i (r_i/n_i)^beta: beta = 1 would be the
# proportional share, beta = 0 a coin flip per set. Fitted on the pivots of random
# matrices (bench_conflux.py --what seeds: Px = 3, 5, 6, 7, v = 128 and 256, N = 2048
# and 4096, seeds 1-6): 0.2 to 0.3 leaves per-rank biases <= 2%, 1 gives up to 7%. A
# quarter: the compiled loop takes the fourth root (`tournament_steps`).
TOURNAMENT_POOL_EXPONENT = 0.25
PIVOT_MODELS = ("none", "uniform", "proportional")
# a share that leaves fewer active rows than this takes them all (a process row whose
# rows all became pivots keeps 0, not the rounding left by fractional shares, which
# would count messages of 1e-12 bytes)
DUST = 1e-9
# a sampled model's tournament (`pivots_at`): the steps between two kept states, a rerun
# to a sampled step starting fewer steps before it (`state_steps`): as few as STATE_STEPS
# while the states take at most STATE_BYTES, never more than STATE_STEPS_MOST
STATE_STEPS, STATE_STEPS_MOST, STATE_BYTES = 16, 256, 1 << 23


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


def pivots_at(plan: StepPlan, pivots: str | Sequence[np.ndarray], pooled: int,
              steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
    """(a, p, changes) at the steps `steps` (ascending): `pivot_counts`' rows there
    ([len(steps), Px]: where every process row is alike, a view of one column) and
    `pivot_changes`' there as (row of `steps`, process row). The tournament of
    "uniform" on unequal rows is rerun from its kept states (`_tournament_states`) to
    the steps wanted, not kept at every step: a sample of a large LU's steps needs
    its rows at a few steps, not a [step, Px] table of GB."""
    t = plan.tiles
    if not from_states(t.n, t.v, t.px, pivots, pooled):
        active, owned = pivot_counts(plan, pivots, pooled)
        if active.strides[1] == owned.strides[1] == 0:
            shape = (len(steps), t.px)
            return (np.broadcast_to(active[steps, :1], shape),
                    np.broadcast_to(owned[steps, :1], shape),
                    (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)))
        active, owned = active[steps], owned[steps]
        return active, owned, changes(active, owned)
    states, _ = _tournament_states(t.n, t.v, t.px)
    widths = panel_widths(t)
    # the process rows holding rows (tiles dealt cyclically: the first ones), the
    # states and the tournament's tables as wide (the others' counts 0)
    holding = states.shape[1]
    active, owned = np.zeros((len(steps), t.px)), np.zeros((len(steps), t.px))
    every = state_steps(t.ntiles, holding)
    block = steps // every
    rows = np.zeros(t.px)
    for b in np.unique(block):
        wanted = np.flatnonzero(block == b)
        first = int(b) * every
        count = int(steps[wanted[-1]]) - first + 1
        run_active, run_owned = np.empty((count, holding)), np.empty((count, holding))
        rows[:holding] = states[b]
        tournament_steps(rows, widths, first, DUST, run_active, run_owned)
        active[wanted, :holding] = run_active[steps[wanted] - first]
        owned[wanted, :holding] = run_owned[steps[wanted] - first]
    if pooled:
        active, owned = pooled_tables(t.n, t.v, t.px, pooled, (active, owned))
    return active, owned, changes(active, owned)


def most_changes(plan: StepPlan, pivots: str | Sequence[np.ndarray]) -> int:
    """The most process rows at one step whose a or p of `pivot_counts` differs from
    the process row before's (`pivot_changes` counted per step): of "uniform" on
    unequal rows counted as the tournament runs (`_tournament_states`), no table kept."""
    t = plan.tiles
    if isinstance(pivots, str) and tournament_run(t.n, t.v, t.px, pivots):
        return int(_tournament_states(t.n, t.v, t.px)[1].max(initial=0))
    step, _ = pivot_changes(plan, pivots)
    return int(np.bincount(step).max()) if len(step) else 0


def near_even_rows(tiles: TileMap) -> bool:
    """Whether every process row holds as many tiles, Px a power of two, but the rows
    are not all equal: the last tile short (N not a multiple of v). The tournament's
    counts then differ row by row, by less than the short tile's missing rows."""
    px = tiles.px
    return butterfly_size(px) == px and tiles.ntiles % px == 0 and not tiles.even_rows


def from_states(n: int, v: int, px: int, pivots, pooled: int) -> bool:
    """Whether `pivots_at` reruns the tournament from its kept states to the steps
    wanted (a model name's counts from the tournament, not one group's closed form),
    where `pivot_counts` would make two [step, Px] tables."""
    return isinstance(pivots, str) and tournament_run(n, v, px, pivots) and pooled != 1


def tournament_run(n: int, v: int, px: int, pivots: str) -> bool:
    """Whether a model name's counts come from the tournament's steps run one after the
    other ("uniform" but where every process row is alike: `_even_split`)."""
    return pivots == "uniform" and not (butterfly_size(px) == px
                                        and TileMap(n, v, px, 1).even_rows)


def state_steps(steps: int, holding: int) -> int:
    """The steps between two of `_tournament_states`' kept states of `holding` process
    rows each (STATE_STEPS .. STATE_STEPS_MOST: the fewest whose states fit in
    STATE_BYTES)."""
    size = np.dtype(float).itemsize
    return min(STATE_STEPS_MOST, max(STATE_STEPS, -(-steps * holding * size // STATE_BYTES)))


# a search's every (v, Px) kept (STATE_BYTES and a [step] count each): a run again where
# it fell out of the cache cost more than all of them held
@lru_cache(maxsize=16)
def _tournament_states(n: int, v: int, px: int) -> tuple[np.ndarray, np.ndarray]:
    """([state, H] the active rows of the H = min(tiles, Px) process rows holding rows
    (the first ones; the others' stay 0) before steps 0, s, 2 s, ... (s:
    `state_steps`); [step] the process rows whose a or p differs from the row before)
    of "uniform"'s tournament, run s steps at a time; read-only. H wide, not Px: where
    Px is far more than the tiles (a prime P's P x 1 x 1), Px-wide states took GB."""
    t = TileMap(n, v, px, 1)
    widths, rows = panel_widths(t), t.rows_per_proc.astype(float)
    holding = min(t.ntiles, px)
    every = state_steps(t.ntiles, holding)
    states = np.empty((-(-t.ntiles // every), holding))
    differing = np.zeros(t.ntiles, dtype=np.int64)
    for b, first in enumerate(range(0, t.ntiles, every)):
        states[b] = rows[:holding]
        tournament_steps(rows, widths, first, DUST, None, None,
                         differing[first:first + every])
    states.flags.writeable = differing.flags.writeable = False
    return states, differing


@lru_cache(maxsize=2)
def pooled_pivots(n: int, v: int, px: int, pivots: str, pooled: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_counts` of a model name with the process rows that hold rows cut into
    `pooled` groups of consecutive ones (`pool_starts`: none mixes rows of unequal
    rows), each group's a and p their mean over its process rows (each step's pivots
    and active rows in all kept; the rows holding none stay 0). Where a grid has more process rows
    than tiles, or unequal rows, the tournament's expected counts differ row by row
    (module doc), every row a class of its own at every step; pooled, a few classes:
    an approximation (`linalg_io.models.conflux.pooled_rows`). One group (where every
    process row holds rows, as `pooled_rows` gives it): each step's mean a and p over
    all of them, whose sums are the N rows and each step's w pivots, in closed form:
    `_even_split` of N / Px rows (the tournament not run)."""
    if pooled == 1:
        return _even_split(n / px, panel_widths(TileMap(n, v, px, 1)), px)
    # every row's own tables of this call (not the cache's: pooled, they are not wanted
    # again), pooled in place
    tables = expected_pivots(n, v, px, pivots)
    for table in tables:
        table.flags.writeable = True        # fresh, its own data
    pooled_tables(n, v, px, pooled, tables)
    for table in tables:
        table.flags.writeable = False
    return tables


def pooled_tables(n: int, v: int, px: int, pooled: int, tables: tuple) -> tuple:
    """`pooled_pivots`' means of the [step, Px] tables (a, p), row by row, in place. The
    process rows holding rows are the first ones (tiles dealt cyclically; the others'
    a and p are 0): each group's mean of a slice of each table, written over its rows
    (`pool_starts`)."""
    starts, holding = pool_starts(n, v, px, pooled)
    sizes = np.diff(np.append(starts, holding))
    for table in tables:
        means = np.add.reduceat(table[:, :holding], starts, axis=1) / sizes
        for group, (start, size) in enumerate(zip(starts, sizes)):
            table[:, start:start + size] = means[:, group, None]
    return tables


def pool_starts(n: int, v: int, px: int, pooled: int) -> tuple[np.ndarray, int]:
    """(the first process row of each group of `pooled_pivots`, the rows holding rows):
    the holding rows cut where their tiles change (the first ntiles mod Px rows hold a
    tile more), each such stretch into groups of consecutive rows as even as can be,
    `pooled` groups in all, each stretch at least one and the others in proportion to
    its rows: a group never mixes rows of a tile more with rows of one less (a few such
    rows, averaged with many of one less, would lose the work they keep the longest).
    The short last tile's row, the last of a tile more, goes with the stretch whose rows
    it is nearer (a group of its own would add a class at every step)."""
    tiles = TileMap(n, v, px, 1)
    holding = int((tiles.rows_per_proc > 0).sum())
    more = tiles.ntiles % px if tiles.ntiles > px else 0     # rows of a tile more
    if more and tiles.ntiles * v - n > v / 2:
        more -= 1                                           # the short row: one less
    edges = np.array([more] if 0 < more < holding else [], dtype=np.int64)
    first = np.concatenate([[0], edges])
    length = np.diff(np.append(first, holding))
    groups = np.ones(len(first), dtype=np.int64)
    spare = max(0, pooled - len(first))
    # the spare groups to the stretches in proportion to their rows, the largest
    # remainders first, never more groups than rows
    share = spare * length / holding
    whole = np.floor(share)
    groups += whole.astype(np.int64)
    for i in np.argsort(whole - share, kind="stable")[:spare - int(whole.sum())]:
        groups[i] += 1
    groups = np.minimum(groups, length)
    starts = [start + np.arange(count) * size // count
              for start, size, count in zip(first, length, groups)]
    return np.concatenate(starts), holding


@lru_cache(maxsize=4)
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


@lru_cache(maxsize=4)
def _expected_pivots(n: int, v: int, px: int, pivots: str) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_counts` of a model name; read-only, cached: every grid with this Px shares
    them (the last few only: two [step, Px] tables each, hundreds of MB at large N and
    Px)."""
    return expected_pivots(n, v, px, pivots)


def tournament_blocks(n: int, v: int, px: int, cells: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first step, owned [step, Px]) of the "uniform" pivots run as a tournament, the
    rows of `expected_pivots`' owned table bit for bit, a block of `cells` cells or
    fewer (a step at least) at a time: the merge trees' state carried from block to
    block (`tournament_steps`), memory a block's. Each block is a view of one buffer,
    overwritten by the next."""
    t = TileMap(n, v, px, 1)
    widths, rows = panel_widths(t), t.rows_per_proc.astype(float)
    steps = max(1, cells // px)
    active, owned = np.empty((steps, px)), np.empty((steps, px))
    for first in range(0, t.ntiles, steps):
        count = min(steps, t.ntiles - first)
        tournament_steps(rows, widths, first, DUST, active[:count], owned[:count])
        yield first, owned[:count]


def expected_pivots(n: int, v: int, px: int, pivots: str) -> tuple[np.ndarray, np.ndarray]:
    """`pivot_counts` of a model name (read-only arrays), not kept: for a caller that
    needs them once (`linalg_io.models.lu_bounds`), without filling the model's cache."""
    t = TileMap(n, v, px, 1)
    widths, rows = panel_widths(t), t.rows_per_proc.astype(float)
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
        tournament_steps(rows, widths, 0, DUST, active, owned)
    else:
        active, owned = np.zeros((t.ntiles, px)), np.zeros((t.ntiles, px))
        for k, w in enumerate(widths):
            share = rows / rows.sum() * w
            share = np.where(rows - share < DUST, rows, share)
            active[k], owned[k] = rows, share
            rows = rows - share
    active.flags.writeable = owned.flags.writeable = False
    return active, owned
