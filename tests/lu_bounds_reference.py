"""The reference the 2.5D LU's lower bound (`linalg_io.models.lu_bounds.time_seconds`) is
held to: `models/lu_bounds.py` at commit 13e1fc5, which evaluated every candidate's
[step] arrays from scratch (tests/test_lu_bounds_reference.py checks the new bounds equal
these bit for bit). Frozen: not edited with the model."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from linalg_io.models.conflux import link_keys
from linalg_io.models.conflux_classes import panel_widths
from linalg_io.models.conflux_nodes import HOP, NET, NODE
from linalg_io.models.conflux_pivots import DUST
from linalg_io.models.costs import link_split, waiting_makespans
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import PANEL_RATE, gemm_efficiency, getrf_flops

from linalg_io.layout.conflux_layout import StepPlan, butterfly_size
from linalg_io.layout.schedules import bcast_costs
from linalg_io.layout.words import WORD

# relative: the bound's sums in another order than the model's, and `update_seconds`'
# R_k rows where the pivot model may leave Px DUST fewer (<= 3 Px DUST / N of it)
ROUNDING = 1e-6


def update_work(n: int, v: int, c: int) -> float:
    """W of the module doc in gamma-flops (seconds times gamma): every rank's updates."""
    steps = -(-n // v)
    widths = np.minimum(v, n - v * np.arange(steps)).astype(float)
    left = n - np.cumsum(widths)                                  # R_k
    layer = np.arange(c)
    slices = widths[:, None] // c + (layer[None, :] < widths[:, None] % c)
    per_flop = slices / gemm_efficiency(np.maximum(slices, 1.0))
    return float((2.0 * left * left * per_flop.sum(axis=1)).sum())


def update_seconds(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                   placement: Placement) -> float:
    """A lower bound on the 2.5D model's time_s of (Px, Py, c, v) (module doc)."""
    p = px * py * c
    cores = placement.shared_cores
    share = max(1.0, p / cores) if cores else 1.0
    return update_work(n, v, c) / profile.gamma_flops / p * share


def time_seconds(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                 placement: Placement) -> float:
    """A lower bound on the 2.5D model's time_s of (Px, Py, c, v) with its communication
    (module doc): the largest of `update_seconds` and `_column_seconds` of the process
    columns of the last two tiles, less a relative ROUNDING."""
    plan = StepPlan.create(n, v, px, py, c)
    owners = plan.tiles.col_owner(np.arange(plan.tiles.ntiles))
    spans = link_keys(px, py, c, placement)
    ids = sum(count * _ids_seconds(px * py * c, float(width), profile, placement)
              for width, count in zip(*np.unique(panel_widths(plan.tiles),
                                                  return_counts=True)))
    columns = max(_column_seconds(plan, y, owners, profile, placement, spans)
                  for y in set(owners[-2:].tolist()))
    best = max(ids + columns, update_seconds(n, v, px, py, c, profile, placement))
    return best * (1.0 - ROUNDING)


@lru_cache(maxsize=64)
def _ids_seconds(p: int, width: float, profile: MachineProfile, placement: Placement) -> float:
    """M(I_k) of a panel `width` wide: the pivot ids' broadcast over all P ranks, as
    `conflux._critical_path` times it (the same every step of that width)."""
    costs = bcast_costs(np.arange(p), p, (width + 1) * WORD)
    inside, across = link_split({p: costs}, profile, placement)
    return float(waiting_makespans(inside, across, placement.shared_cores))


def _rates(profile: MachineProfile, placement: Placement, spans: dict,
           key: str) -> tuple[float, float]:
    """(alpha, beta): the least of the links a traffic key's messages are timed on (its
    own, or its parts' on and between nodes where its group's members share nodes)."""
    parts = [spans[key + part] for part in (NODE, HOP, NET) if key + part in spans]
    links = [profile.link(span, placement, active)
             for span, active in map(_span_active, parts or [spans[key]])]
    return min(a for a, _ in links), min(b for _, b in links)


def _span_active(key) -> tuple:
    """(span, active_per_node) of a `Links` key for `MachineProfile.link`."""
    return (key[0], key[1]) if isinstance(key, tuple) else (key, None)


def _column_seconds(plan: StepPlan, y: int, owners: np.ndarray, profile: MachineProfile,
                    placement: Placement, spans: dict) -> float:
    """M(F_0) + sum_k [...] of the model bounded from below by the mean, over the layers
    and process rows, of process column y's F_k, S_k and U_k (module doc), per step."""
    tiles, c = plan.tiles, plan.c
    px, py, n = tiles.px, tiles.py, tiles.n
    steps = tiles.ntiles
    k = np.arange(steps)
    w = panel_widths(tiles)
    lk = (k // py) % c
    s = w[:, None] // c + (np.arange(c)[None, :] < w[:, None] % c)
    s_lk = s[k, lk]
    done = np.cumsum(w)
    dust = px * DUST
    rows = np.maximum(n - done - dust, 0.0)              # <= sum_x b_x
    active = np.maximum(n - done + w - dust, 0.0)         # <= sum_x a_x
    mine = np.where(owners == y, w, 0.0)
    t = np.cumsum(mine[::-1])[::-1] - mine               # t_y: y's columns of tiles > k
    panel = owners == y
    gamma = profile.gamma_flops
    per_flop = (s / gemm_efficiency(np.maximum(s, 1.0))).sum(axis=1)
    update = 2.0 * rows / px * t * per_flop / c / gamma
    beta_row = _rates(profile, placement, spans, "row")[1]
    beta_col = _rates(profile, placement, spans, "col")[1]
    solve = (w * w * t * (1.0 if c == 1 else 1.0 / (c * px))
             + panel * rows * w * w / (px * c)) / (gamma * PANEL_RATE)
    if py > 1:      # every member of a broadcast sends or receives its bytes
        solve = solve + beta_row * WORD * (rows * w / (px * c)
                                           + w * w * (1.0 if c == 1 else 1.0 / (c * px)))
    if c == 1 and px > 1:   # the allgather of pivot rows, off the look-ahead's column
        solve = solve + beta_col * WORD * (~panel) * (px - 1) * w * t / px
    if c > 1:
        fibre = _rates(profile, placement, spans, "fibre")[1]
        scatter_l = _rates(profile, placement, spans, "fibre@column")[1]
        scatter_u = _rates(profile, placement, spans, "fibre@row")[1]
        solve = solve + WORD * (fibre * w * t / px
                                + 2.0 * (w - s_lk) / (c * px) * (scatter_l * panel * rows
                                                                 + scatter_u * t))
        if px > 1:
            solve = solve + beta_col * WORD * w * t / c
    getrf = getrf_flops(active / px, w) / c
    if px > 1:
        q = butterfly_size(px)
        rounds = q.bit_length() - 1
        roles = np.arange(px)
        sends = float(np.where(roles >= q, 1, rounds + (roles < px - q)).sum())
        merges = float(np.where(roles >= q, 0, rounds + (roles < px - q)).sum())
        alpha, beta = _rates(profile, placement, spans, "col@column")
        getrf = getrf + merges / (px * c) * getrf_flops(2.0 * w, w)
        tournament = sends / (px * c) * (alpha + beta * w * (w + 1) * WORD)
    else:
        tournament = 0.0
    factor = panel * (getrf / (gamma * PANEL_RATE) + tournament)
    if c > 1:
        factor = factor + panel * _rates(profile, placement, spans, "fibre@column")[1] \
            * WORD * active * w / px
    cores = placement.shared_cores
    if py > 1 and cores is None:
        return float(factor.sum() + solve.sum() + update.sum())
    shared = 0.0 if cores is None else 2.0 * rows * (n - done) * per_flop / gamma / cores
    following = np.concatenate([factor[1:], [0.0]])
    return float(factor[0] + solve.sum() + np.maximum(update + following, shared).sum())
