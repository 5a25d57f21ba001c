"""Proven lower bounds on the 2.5D LU model's time, in closed form: what the candidate
search (`linalg_io.lu.choice`) may skip without evaluating it.

`update_seconds(n, v, px, py, c, profile, placement)` bounds the `time_s` of
`linalg_io.models.conflux.conflux_plan_counts` from below by the trailing updates
alone. Step k (panel widths w_k = min(v, N - k v), R_k = N - w_0 - ... - w_k rows and
columns left after it) gives layer l a slice of s_{k,l} = w_k // c + (l < w_k mod c)
columns; a rank (l, x, y) with b_x of the R_k rows and t_y of the R_k columns runs the
update U_k(r): 2 b_x s_{k,l} t_y flops at gamma gemm(max(s, 1)) (the dgemm's efficiency
at its inner dimension, `MachineProfile.local`), no messages, so its work is that over
gamma. Summed over the P ranks (the rows and the
columns are each split among the process rows and columns):

    W = sum_k 2 R_k^2 sum_l s_{k,l} / (gamma gemm(max(s_{k,l}, 1)))

The model's time holds every rank's sum_k U_k(r) (`conflux._critical_path`): with a
core per rank and Py > 1 the busiest rank's own sum_k [S_k + U_k + F_{k+1}] >= its
sum_k U_k; otherwise sum_k M(U_k + F_{k+1}), each makespan M at least the busiest
rank's work and, where the P ranks share C cores, their work over C (fair sharing
runs a rank at most at one core's rate). So, every other term being >= 0,

    time_s >= W / P * max(1, P / C)   (C: no sharing, 1)

a bound per (N, v, c, P) and the machine's gamma and cores: it tells the tiles and
slices apart (a thin slice v/c runs the dgemm far from gamma), not the grids.

`time_seconds` adds the communication, per grid, in O(steps + Px) (the [step] arrays
of (N, v, c) and (N, v, Px) shared by the grids, cached; the pivot ids' broadcast once
per panel width, P and machine: O(log P), O(P) where the ranks share cores, cached).
The model's time is

    (a) Py > 1, a core per rank:  M(F_0) + sum_k M(I_k) + max_r sum_k X_k(r)
    (b) otherwise:                M(F_0) + sum_k [M(I_k) + M(S_k) + M(U_k + F_{k+1})]

with X_k(r) = S_k(r) + U_k(r) + F_{k+1}(r), each piece a rank's work + wait, and every
piece's seconds alpha msgs + beta serial (serial: the sum over its collectives of
max(sent, recv)) on each traffic key's link, + flops at their rates. Facts used:

  1. M >= every rank's work + wait (`waiting_makespans`: the makespan of the works is
     >= the largest work, then + the largest wait), and, with shared cores C, >= the
     sum of the works over C (each rank's share of the cores is <= 1: `makespans`).
     So a max over ranks is >= any mean over ranks, and in (a) max_r sum_k >= the mean
     over a fixed set of ranks of sum_k; in (b) M(S_k) + M(U_k + F_{k+1}) >= the same
     set's mean of X_k, and (shared cores) >= its mean of S_k + the works of all U_k
     over C.
  2. sum_k M(I_k) is the model's own: the binomial broadcast of w_k + 1 words over all
     P ranks timed as `_critical_path` times it, per width (`_ids_seconds`).
  3. The set: the layers and process rows of one process column y (those of the last
     two tiles, which hold the most trailing columns t_y: the larger bound is kept).
     Its means need only sums over the process rows: sum_x b_x >= R_k - Px DUST and
     sum_x a_x >= R_{k-1} - Px DUST (a_x: rows active before step k; the pivot model
     hands each step's w_k rows out, a process row at most once rounding its last
     DUST rows up, `conflux_pivots`), sum_x p_x >= w_k, sum_l s_l = w_k; t_y is the
     widths of the tiles J > k that `TileMap.col_owner` gives y.
  4. A collective's bytes: every member of a broadcast or a reduce over >= 2 ranks
     sends or receives the whole n bytes (chain or binomial tree, `schedules`), so its
     serial is >= n; a scatter's root sends what the others receive; the Bruck
     allgather's member receives every other member's block. Where a group's members
     share nodes its traffic is split into parts on and between nodes, each with its
     own serial; their sum is >= the whole's max(sent, recv). So each collective costs
     >= n times the least beta (and its messages the least alpha) of the links its key
     or its parts are timed on (`_rates`; a key of a group not split: its own link).
     A process column's members on shared nodes (`conflux_nodes.group_nodes`), at node
     slots of their own: the parts' betas apart, as a part's serial is >= its
     received bytes and, in a chain, >= n where the member has a hop of that part.
     The Bruck allgather: a member receives the m blocks of a round (h, m) from q + h,
     all of them between nodes in a round whose every exchange crosses nodes (M: the
     m of those rounds summed, `_bruck_across`; the blocks are the pivots p_x t_y,
     each in m windows of the round): sum over the members >= (Px - 1 at the least
     beta + M at net - node, if more) sum_x p_x t_y. The chain of the U slices (every
     layer's s_l t_y > SMALL_BYTES): member x receives from x - 1 and sends to x + 1,
     a hop on the node or between nodes (cross_in, cross_out), each part its own
     serial, but the root receives nothing and the last member sends nothing: over a
     set of the members, n (beta_node (members with a hop on the node - 2) +
     beta_hop (members with a hop between nodes - 2)) at least (`_chain_rate`; and n
     the least beta each, the larger kept).
  5. The look-ahead (c = 1, Px > 1) takes from S_k on column ky_k at most the pivot
     rows' allgather (`_overlapped`: work - its time on the node, wait - its time on
     the network, both >= what the other collectives and flops leave); so that
     allgather is counted on the steps where y is not ky_k only.
  6. Pivots "uniform" (the candidates' `conflux.candidate_row`), Px a power of two and
     every process row the same rows: every merge splits evenly (`conflux_pivots.
     _even_split`), so a_x and p_x are the same on every process row, b_x = (sum_x
     b_x) / Px, and the tournament's roles all send and merge log2 Px times. Then the
     mean over any set S of process rows takes the terms of the mean over all of them
     but for those only on row kx (kx = k mod Px: the U solve, L00 (c > 1) and the U
     scatter), weighted [kx in S] / |S| instead of 1 / Px, and the chain's over S. S:
     the members with a hop between nodes (c > 1, a column's members on shared nodes;
     `_Grid.row_sets`), whose chain costs n (beta_node + beta_hop) each.
  7. Where Px exceeds the tile rows N/v, the process rows x >= N/v own no row: their
     a_x, b_x and p_x are 0, so the sums over the rows x < N/v (the set B) are those
     over every row, and B holds the panel's row kx = k. The means are taken over B and
     the layers too (the larger bound kept): a sum's mean over |B| c, not Px c; every
     member's term of fact 4 as before (the allgather's member of B receives the
     others' blocks: (|B| - 1) sum_x p_x t_y over B, between nodes not counted apart);
     the tournament's sends and merges the |B| fewest of the roles (they turn with the
     root).
  8. Layers: the layer of step k's root is lk = (k // Py) mod c, so where the steps are
     few against Py c the first layers root most of them (layer 0 the first Py, with
     the widest slice). The set may be the rows of column y on layer 0 alone, each
     root-layer term (F_k's getrf, merges and sends; L00; the U solve; the panel's
     solve) weighted [lk = 0] instead of 1/c, each slice s_{k,0} instead of w_k / c,
     the scatters' w_k - s_{k,0} sent where layer 0 is the root and s_{k,0} received
     elsewhere (`_Layer`); the larger bound is kept. And M(F_0), a makespan of its
     own in (a) and (b), is at least the mean over the rows of column ky_0 on layer 0
     of F_0, whichever column the rest of the bound takes.
  9. Where the process rows' pivot counts differ (rows that own no tile, fact 7, or
     unequal rows; c = 1, a column's members on nodes of their own), a member q of the
     pivot rows' Bruck allgather forwards windows q .. q + m - 1 that may hold more
     pivots than those it receives: its serial max(sent, recv) is recv + max(sent -
     recv, 0). The mean over B (or every row) of that excess, from the
     pivot counts of the candidates' model itself ("uniform", `expected_pivots`), is
     added to the allgather's term (`_sends_more`; where those counts have
     BRUCK_CELLS cells or fewer, TIGHT_CELLS in `tighter_seconds`, and not where the
     model pools them into one group, every row alike: `conflux.pooled_rows`).
 10. Where the process rows' pivot counts differ ("uniform" run as a tournament: unequal
     rows, Px not a power of two, rows that own no tile), one process row x's own are a
     set of fact 1 too: the layers of x in column y, whose means take x's b_x, a_x and
     p_x in place of the means over the rows (its updates 2 b_x t_y s_l, the L
     broadcast's b_x s_l, the panel's solve b_x w_k^2, the candidates' getrf(a_x, w_k)
     and the panel's reduce a_x w_k, the pivot rows' reduce p_x t_y, the allgather's w_k
     - p_x others' rows at the least beta of the column's links), the terms of row kx
     weighted [kx = x], the roles' sends and merges the fewest of any one, and neither
     fact 6's sets, fact 8's layer 0 nor fact 9's sends. x: the row whose sum_k b_x R_k
     is the largest, in the counts as the model takes them (pooled into groups where it
     pools them), computed where the rows hold one to BUSIEST_TILES tiles each, the
     counts have HEAVY_CELLS cells or fewer and every step is walked (`_busiest`): a row
     with a tile more than others keeps more rows while the others run out, its updates
     up to half again the mean's at a few tiles a row. Not where the model samples the
     steps (`conflux.step_sample`): the sample's time may fall below the walk's by more
     than the gap of so close a bound.
 11. Where Px exceeds the process rows that hold rows (H: rows x >= H own none, their
     pivot counts not pooled with others', c = 1), the last member q = Px - 1 of a
     process column is idle at every step: a_x = 0, so the look-ahead hides none of its
     allgather (`conflux._overlapped`: its window R_{k-1} is 0 flops), and its S_k holds
     that allgather's serial on the column's link (between nodes: the part @net, where
     the column's members share nodes). In each Bruck round (h, m) with m - 1 >= H it
     forwards the window q .. q + m - 1, which holds rows 0 .. H - 1 and so every pivot
     row: sum_x p_x >= w_k blocks of t_y words, to q - h, on another node where the
     column is split (rounds whose exchange from q stays on its node left out). With R
     such rounds, S_k(q) >= beta R w_k t_y WORD, and the time is >= sum_k M(I_k) +
     sum_k S_k(q) in (a) (max_r sum_k X_k(r) >= q's sum) and in (b) (M(S_k) >= q's S_k,
     fact 1): `_idle_sends`, over the columns of the last two tiles, the largest kept.

Per step k, the means over column y's c Px ranks (`_Grid.column_seconds`; [y = ky_k] on the
panel's column; words of 8 bytes; rates of fact 4 on the key named; or the means over the
layers and a set S of fact 6; Px in a mean's divisor is |B| of fact 7, and the
allgather's Px - 1 is |B| - 1):

  U_k  2 (sum_x b_x) t_y sum_l s_l / eff(s_l) / (gamma c Px)
  S_k  row: L along the rows (sum_x b_x) w_k / (c Px) and L00 w_k^2 (c = 1; c > 1: over
       c Px), if Py > 1; col: the U slices down the columns w_k t_y / c (c > 1, Px > 1),
       the allgather (Px - 1) w_k t_y / Px (c = 1, Px > 1, y != ky_k); fibre: the pivot
       rows' reduce w_k t_y / Px (c > 1); the scatters' 2 (w_k - s_lk) (sum_x b_x [y =
       ky_k] + t_y) / (c Px) (c > 1); the solves w_k^2 t_y (c > 1: over c Px) + [y =
       ky_k] (sum_x b_x) w_k^2 / (c Px) flops at gamma panel_rate
  F_k  [y = ky_k] times: the panel's reduce (sum_x a_x) w_k / Px words (c > 1); the
       tournament's sends (summed over the roles, n_sent of `conflux`) / (c Px) times
       (alpha + beta w_k (w_k + 1) words) (Px > 1); getrf of the candidates
       getrf(sum_x a_x / Px, w_k) (getrf_flops is convex in the rows: Jensen) and of
       the merges' 2 w_k x w_k blocks, over c, at gamma panel_rate

and the bound is ids + F_0 + sum_k (S_k + max(U_k + F_{k+1}, shared_k)), shared_k = 0
but in (b) with shared cores: 2 (sum_x b_x) R_k sum_l s_l / eff(s_l) / (gamma C);
the larger of that, fact 10's and `update_seconds`, less ROUNDING for the sums' order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from linalg_io.models.conflux import link_keys, pooled_rows, step_sample
from linalg_io.models.conflux_nodes import HOP, NET, NODE, group_nodes
from linalg_io.models.conflux_pivots import (
    DUST,
    expected_pivots,
    pooled_tables,
    tournament_blocks,
    tournament_run,
)
from linalg_io.models.costs import link_split, waiting_makespans
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import DEFAULT_RATES, LocalRates, gemm_efficiency, getrf_flops

from linalg_io.layout.conflux_layout import StepPlan, butterfly_size, tournament_roles
from linalg_io.layout.schedules import SMALL_BYTES, allgatherv_bytes, bcast_costs, bruck_rounds
from linalg_io.layout.words import WORD

# relative: the bound's sums in another order than the model's, and `update_seconds`'
# R_k rows where the pivot model may leave Px DUST fewer (<= 3 Px DUST / N of it)
ROUNDING = 1e-6
# fact 9: the [step, process row] cells of the pivot counts, at most, whose allgather a
# grid's bound evaluates (O(cells log Px), STREAM_CELLS of them at a time); larger grids
# keep fact 4's term alone, but in `tighter_seconds` up to TIGHT_CELLS: there it costs
# 0.6-3 s (N = 1234567, Px = 8191, v = 512 .. 128), worth it only for a candidate about
# to be evaluated (`linalg_io.lu.choice.pruned_rows`), not for every grid's bound
BRUCK_CELLS = 1 << 20
TIGHT_CELLS = 1 << 26
STREAM_CELLS = 1 << 21
# fact 10: a grid's bound takes its busiest process row where the rows hold fewer than
# BUSIEST_TILES tiles each on average (a row with a tile more then holds a twelfth more
# rows or more; with many tiles a row, its own counts lift the bound by little) and the
# pivot counts have HEAVY_CELLS [step, process row] cells or fewer (the tournament run
# for them, before any candidate is evaluated: O(cells), 0.05 s and 64 MB at this many)
BUSIEST_TILES = 12
HEAVY_CELLS = 1 << 22


def update_work(n: int, v: int, c: int, local: LocalRates = DEFAULT_RATES) -> float:
    """W of the module doc in gamma-flops (seconds times gamma): every rank's updates, the
    dgemm's efficiency that of `local`."""
    return _widths(n, v, c, local.k_half).work


def update_seconds(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                   placement: Placement) -> float:
    """A lower bound on the 2.5D model's time_s of (Px, Py, c, v) (module doc)."""
    p = px * py * c
    cores = placement.shared_cores
    share = max(1.0, p / cores) if cores else 1.0
    return update_work(n, v, c, profile.local) / profile.gamma_flops / p * share


def time_seconds(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                 placement: Placement, bruck_cells: int = BRUCK_CELLS) -> float:
    """A lower bound on the 2.5D model's time_s of (Px, Py, c, v) with its communication
    (module doc): the largest of `update_seconds` and `_Grid.column_seconds` of the process
    columns of the last two tiles, over every process row or those that own a tile (fact
    7), less a relative ROUNDING; fact 9 where its counts have `bruck_cells` cells or
    fewer."""
    plan = StepPlan.create(n, v, px, py, c)
    owners = plan.tiles.col_owner(np.arange(plan.tiles.ntiles))
    widths = _widths(n, v, c, profile.local.k_half)
    ids = sum(count * _ids_seconds(px * py * c, float(width), profile, placement)
              for width, count in widths.counts)
    grids = [_Grid(plan, widths, profile, placement, busy, bruck_cells=bruck_cells)
             for busy in sorted({px, min(px, plan.tiles.ntiles)})]
    last = set(owners[-2:].tolist())
    columns = max(grid.column_seconds(owners, y, rows, layer) for grid in grids
                  for y in last for rows in grid.row_sets for layer in grid.layers)
    best = max(ids + columns, ids + _idle_sends(plan, widths, owners, last, profile, placement),
               update_seconds(n, v, px, py, c, profile, placement))
    member = _busiest(plan, profile, placement)
    if member is not None:      # fact 10
        grid = _Grid(plan, widths, profile, placement, 1, member)
        own = max(grid.column_seconds(owners, y, grid.row_sets[0]) for y in last)
        best = max(best, ids + own)
    return best * (1.0 - ROUNDING)


def tightens(n: int, v: int, px: int, c: int) -> bool:
    """Whether the search takes `tighter_seconds`: fact 9's counts over BRUCK_CELLS
    cells, TIGHT_CELLS or fewer (c = 1), and process rows that own no tile, where its
    excess sends are large (where every row owns one, the pass cost up to 10 CPU s a
    search at P = 2^20, N = 10^7, and ruled nothing out)."""
    steps = -(-n // v)
    return c == 1 and steps < px and BRUCK_CELLS < steps * px <= TIGHT_CELLS


def tighter_seconds(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                    placement: Placement) -> float:
    """`time_seconds` with fact 9 up to TIGHT_CELLS cells."""
    return time_seconds(n, v, px, py, c, profile, placement, TIGHT_CELLS)


def _idle_sends(plan: StepPlan, widths: _Widths, owners: np.ndarray, columns: set,
                profile: MachineProfile, placement: Placement) -> float:
    """Fact 11: sum_k beta R w_k t_y WORD of the last process row's Bruck allgather, the
    largest over the process `columns` (y), where it applies; else 0."""
    tiles = plan.tiles
    px, py = tiles.px, tiles.py
    if plan.c > 1 or px == 1:
        return 0.0
    holding = int(np.flatnonzero(tiles.rows_per_proc)[-1]) + 1
    if holding >= px or pooled_rows(tiles.n, tiles.v, px, py, 1, "uniform"):
        return 0.0
    spans = link_keys(px, py, 1, placement)
    members = group_nodes(py, px, placement)
    q = px - 1
    if members is None:             # the column's messages on its own link
        beta, apart = _rates(profile, placement, spans, "col")[1], None
    else:
        beta, apart = _beta(profile, placement, spans["col" + NET]), members.nodes
    rounds = sum(1 for h, m in bruck_rounds(px) if m - 1 >= holding and (
        apart is None or apart[q] != apart[(q - h) % px]))
    w = widths.w
    most = 0.0
    for y in columns:
        most = max(most, float(w @ _trailing(w, owners == y)))
    return beta * WORD * rounds * most


def _trailing(w: np.ndarray, panel: np.ndarray) -> np.ndarray:
    """[step] t_y: process column y's columns of the tiles after k (`panel`: the steps
    whose panel y owns)."""
    mine = np.where(panel, w, 0.0)
    return np.cumsum(mine[::-1])[::-1] - mine


@dataclass(frozen=True)
class _Member:
    """Fact 10: process row `x`'s own [step] counts in the candidates' pivot model as the
    model takes them (pooled where it pools): b, a and p; `root`, whether x is the
    panel's row kx = k mod Px."""

    x: int
    b: np.ndarray
    a: np.ndarray
    p: np.ndarray
    root: np.ndarray


def _busiest(plan: StepPlan, profile: MachineProfile, placement: Placement) -> _Member | None:
    """Fact 10's row of a grid: of the pivot counts' process rows the one with the most
    update work sum_k b_x R_k, where the counts differ along the rows ("uniform" run as
    a tournament, not pooled into one group), every row a tile or more (where some own
    none, the others are alike but for the tournament's roles: fact 7's means), fewer
    than BUSIEST_TILES, HEAVY_CELLS cells or fewer and every step walked; else None."""
    tiles = plan.tiles
    n, v, px = tiles.n, tiles.v, tiles.px
    if (not px <= tiles.ntiles < BUSIEST_TILES * px or px == 1
            or tiles.ntiles * px > HEAVY_CELLS or not tournament_run(n, v, px, "uniform")):
        return None
    pooled = pooled_rows(n, v, px, tiles.py, plan.c, "uniform")
    if (pooled == 1
            or step_sample(n, v, px, tiles.py, plan.c, placement, "uniform") is not None):
        return None
    x, b, a, p = _busiest_counts(n, v, px, pooled)
    return _Member(x=x, b=b, a=a, p=p, root=np.arange(len(b)) % px == x)


@lru_cache(maxsize=64)
def _busiest_counts(n: int, v: int, px: int, pooled: int) -> tuple:
    """(x, b_x, a_x, p_x) of `_busiest`: the [step] counts of the process row x whose
    sum_k b_x R_k is the largest, in "uniform"'s counts (pooled into `pooled` groups,
    `conflux_pivots.pooled_pivots`; 0: every row's own); not the tables kept."""
    tables = expected_pivots(n, v, px, "uniform")
    if pooled:
        for table in tables:
            table.flags.writeable = True        # fresh, its own data
        pooled_tables(n, v, px, pooled, tables)
    active, owned = tables
    left = _widths(n, v, 1).left
    x = int(np.argmax(left @ active - left @ owned))
    a, p = active[:, x].copy(), owned[:, x].copy()
    return x, a - p, a, p


@lru_cache(maxsize=64)
def _ids_seconds(p: int, width: float, profile: MachineProfile, placement: Placement) -> float:
    """M(I_k) of a panel `width` wide: the pivot ids' broadcast over all P ranks, as
    `conflux._critical_path` times it (the same every step of that width). Where the
    ranks do not share cores M is the largest rank's time, and a rank's (sent, received,
    messages) grow with its children in the tree, so that is at the root or at a
    position 2^j (of the positions of lowest bit 2^j, the one with the most children):
    those alone are timed."""
    positions = np.arange(p)
    if placement.shared_cores is None:
        positions = np.concatenate([[0], 1 << np.arange(max(0, p - 1).bit_length())])
    costs = bcast_costs(positions, p, (width + 1) * WORD)
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


@dataclass(frozen=True)
class _Widths:
    """[step] arrays of (N, v, c), shared by every grid: panel widths w, their squares,
    the columns left after each step (R_k), sum_l s_l / eff(s_l) over the layers'
    slices (`per_flop`), the merges' getrf(2 w, w), `update_work`'s W, the (width,
    steps) pairs and w // c, w mod c (the slices s_l = w // c + (l < w mod c))."""

    w: np.ndarray
    ww: np.ndarray
    left: np.ndarray
    per_flop: np.ndarray
    merge: np.ndarray
    work: float
    counts: tuple
    thin: np.ndarray
    odd: np.ndarray
    k_half: float


@lru_cache(maxsize=16)
def _widths(n: int, v: int, c: int, k_half: float = DEFAULT_RATES.k_half) -> _Widths:
    steps = -(-n // v)
    w = np.minimum(v, n - np.arange(steps) * v).astype(float)     # `panel_widths`
    left = n - np.cumsum(w)                                       # R_k
    s = _slices(w, c, np.arange(c)[None, :])
    per_flop = (s / gemm_efficiency(np.maximum(s, 1.0), k_half)).sum(axis=1)
    work = float((2.0 * left * left * per_flop).sum())
    return _Widths(w=w, ww=w * w, left=left, per_flop=per_flop,
                   merge=getrf_flops(2.0 * w, w), work=work,
                   counts=tuple(zip(*np.unique(w, return_counts=True))),
                   thin=w // c, odd=w % c, k_half=k_half)


def _slices(w: np.ndarray, c: int, layer: np.ndarray) -> np.ndarray:
    """Columns of the w-wide panels that layer `layer` takes (`slice_sizes`)."""
    return w[:, None] // c + (layer < w[:, None] % c)


def _active(n: int, v: int, px: int) -> np.ndarray:
    """[step]: active <= sum_x a_x, the rows active before step k (module doc, fact 3)."""
    widths = _widths(n, v, 1)
    return np.maximum(widths.left + widths.w - px * DUST, 0.0)


# the grids of one (N, v, Px) (one per c) are not evaluated one after the other: kept
# for a sweep of every Px at one c (an array of steps each)
@lru_cache(maxsize=32)
def _getrf(n: int, v: int, px: int, busy: int) -> np.ndarray:
    """[step]: the candidates' getrf flops getrf(active / busy, w) (module doc; busy: the
    process rows that own a tile, fact 7)."""
    return getrf_flops(_active(n, v, px) / busy, _widths(n, v, 1).w)


@dataclass(frozen=True)
class _Rows:
    """A set of process rows whose mean `_Grid.column_seconds` takes (module doc, facts
    3 and 6): `root` the weight of row kx in the mean over the set and the layers
    (1/(c Px) over every row; over a set S, [kx in S] / (c |S|), per step), and what
    depends on it: `solve_fixed` (the row broadcasts' seconds, None where Py = 1) and
    `spread` (the U scatter's 2 (w_k - s_lk) times it; None: every row's, `_Grid.spread`);
    `chain` the seconds per byte of the U slices' chain down the columns, a member of the
    set on average (fact 4; None: beta of the column's link)."""

    root: np.ndarray | float
    solve_fixed: np.ndarray | None
    spread: np.ndarray | None = None
    chain: float | None = None


@dataclass(frozen=True)
class _Layer:
    """Layer 0's own terms of `_Grid.column_seconds` (fact 8), [step] arrays: `on` c
    where layer 0 is the root (lk_k = 0: its terms weigh c times the layers' mean's),
    else 0; its slices s_{k,0} and s / eff(s); `spread` what it moves in the scatters
    of the panel's slices, w_k - s_{k,0} sent where it is the root, else s_{k,0}
    received; `factor` its F_k: the root's where it is one, else the panel's reduce."""

    on: np.ndarray
    slices: np.ndarray
    per_flop: np.ndarray
    spread: np.ndarray
    factor: np.ndarray

    @staticmethod
    def zero(widths: _Widths, py: int, c: int, root: np.ndarray,
              reduce: np.ndarray) -> _Layer:
        """Layer 0 of (N, v, c) and Py; `root` F_k on the root layer, `reduce` on
        another."""
        rooted = (np.arange(len(widths.w)) // py) % c == 0
        s = widths.thin + (widths.odd > 0)
        return _Layer(on=c * rooted.astype(float), slices=s,
                      per_flop=s / gemm_efficiency(np.maximum(s, 1.0), widths.k_half),
                      spread=np.where(rooted, widths.w - s, s),
                      factor=np.where(rooted, root, reduce))


class _Grid:
    """The terms of `column_seconds` that are the same for every process column y of
    one grid (Px, Py, c, v): [step] arrays, the links' rates and the sets of process
    rows whose means bound the time (`row_sets`)."""

    def __init__(self, plan: StepPlan, widths: _Widths, profile: MachineProfile,
                 placement: Placement, busy: int, member: _Member | None = None,
                 bruck_cells: int = BRUCK_CELLS) -> None:
        tiles, c = plan.tiles, plan.c
        px, py, n = tiles.px, tiles.py, tiles.n
        spans = link_keys(px, py, c, placement)
        self.px, self.py, self.c, self.n = px, py, c, n
        self.widths = widths
        self.gamma = gamma = profile.gamma_flops
        # getrf, the merges and the solves at the panel's share of gamma
        self.panel = panel = profile.local.panel
        self.cores = placement.shared_cores
        w, ww, v = widths.w, widths.ww, tiles.v
        every = np.maximum(widths.left - px * DUST, 0.0)         # <= sum_x b_x (fact 3)
        rows_, active = every, _active(n, v, px)
        if member is not None:
            # fact 10: the set of one process row, its own counts (busy = 1)
            rows_, active = member.b, member.a
        self.busy = busy        # the mean over rows 0 .. busy - 1: all, or fact 7's B
        self.twice = 2.0 * rows_ / busy
        self.scale = 1.0 if c == 1 else 1.0 / (c * busy)
        if member is not None and c > 1:
            self.scale = member.root / c        # the row's weight where it is kx
        beta_col = _rates(profile, placement, spans, "col")[1]
        # a process column's members on shared nodes: its messages on and between them
        # apart (fact 4)
        members = group_nodes(py, px, placement) if px > 1 else None
        self.panel_solve = rows_ * w * w / (busy * c)
        self.solve_fixed = None
        beta_row = _rates(profile, placement, spans, "row")[1]
        self.beta_row, self.rows_ = beta_row, rows_
        if py > 1:      # every member of a broadcast sends or receives its bytes
            self.solve_fixed = beta_row * WORD * (rows_ * w / (busy * c)
                                                  + (ww if c == 1 else ww * self.scale))
        self.gather = self.sends_more = None
        if c == 1 and px > 1 and member is not None:
            # the others' pivot rows, w - p_x per word of t_y, at the least beta of the
            # column's links (fact 4)
            self.gather = (min(_beta(profile, placement, spans["col" + part])
                               for part in (NODE, NET)) if members is not None
                           else beta_col) * WORD * (w - member.p)
        elif c == 1 and px > 1:   # the allgather of pivot rows, off the look-ahead's column
            if members is None:
                self.gather = beta_col * WORD * (busy - 1) * w
                # the model's counts differ along the rows (not where it pools them
                # into one group: every row alike)
                if ((busy < px or not _even_rows(tiles)) and len(w) * px <= bruck_cells
                        and pooled_rows(n, v, px, py, c, "uniform") != 1):
                    self.sends_more = beta_col * WORD * _sends_more(n, v, px, busy)
            else:
                node, net = (_beta(profile, placement, spans["col" + part])
                             for part in (NODE, NET))
                across = _bruck_across(members.nodes) if busy == px else 0
                self.gather = (min(node, net) * (busy - 1) + max(0.0, net - node)
                               * across) * WORD * w
        self.row_sets = [_Rows(self.scale, self.solve_fixed)]
        if c > 1:
            k = np.arange(len(w))
            s_lk = widths.thin + ((k // py) % c < widths.odd)         # s_l of layer lk
            # the pivot rows' reduce: p_x t_y each (w_k t_y / Px on average)
            self.fibre_w = _rates(profile, placement, spans, "fibre")[1] * (
                w if member is None else member.p)
            self.scatter_l = _rates(profile, placement, spans, "fibre@column")[1]
            self.scatter_u = _rates(profile, placement, spans, "fibre@row")[1]
            self.spread = 2.0 * (w - s_lk) / (c * busy)
            self.scatter_rows = self.scatter_l * rows_
            self.col_w = beta_col * WORD * w if px > 1 else None
            if members is not None:
                self.col_words, self.beta_col = WORD * w, beta_col
                node, hop = (_beta(profile, placement, spans["col" + part])
                             for part in (NODE, HOP))

                def chain(chosen: np.ndarray) -> float:
                    """`_chain_rate` over the members `chosen`, at least the least beta
                    (every member sends or receives n: fact 4)."""
                    return max(beta_col, _chain_rate(members.nodes, chosen, node, hop))

                self.row_sets = [_Rows(self.scale, self.solve_fixed,
                                       chain=chain(np.arange(px) < busy))]
                if _even_rows(tiles):
                    # fact 6: the mean over the members with a hop between nodes
                    crossing = _crossing(members.nodes)
                    root = crossing[k % px] / (c * crossing.sum())
                    fixed = (None if py == 1 else
                             beta_row * WORD * (rows_ * w / (px * c) + ww * root))
                    self.row_sets.append(_Rows(root, fixed, 2.0 * (w - s_lk) * root,
                                               chain(crossing)))
            if member is not None:
                # the row's U scatter where it is kx, its chain as any member's
                self.row_sets = [_Rows(self.scale, self.solve_fixed, 2.0 * (w - s_lk) * self.scale,
                                       None if members is None else beta_col)]
        candidates = (_getrf(n, v, px, busy) if member is None
                      else getrf_flops(member.a, widths.w))
        getrf = candidates / c
        if px > 1:
            # the roles turn with the root: the set's are any busy of them, the fewest
            sends, merges = _fewest_roles(px, busy)
            alpha, beta = _rates(profile, placement, spans, "col@column")
            merged = merges / busy * widths.merge
            getrf = getrf + merges / (busy * c) * widths.merge
            message = alpha + beta * w * (w + 1) * WORD
            tournament = sends / (busy * c) * message
            # layer lk's own: the candidates, merges and sends over its rows alone
            root = (candidates + merged) / (gamma * panel) + sends / busy * message
        else:
            tournament = 0.0
            root = candidates / (gamma * panel)
        factor = getrf / (gamma * panel) + tournament
        self.start = factor[0]
        self.layers = (None,)       # the layers' mean, and layer 0's own (fact 8)
        if c > 1:
            reduce = self.scatter_l * WORD * active * w / busy
            factor = factor + reduce
            self.layers = (None, _Layer.zero(widths, py, c, root + reduce, reduce))
            # M(F_0) >= the mean over the rows of column ky_0 on layer lk_0 (fact 8)
            self.start = root[0] + reduce[0]
        self.factor = factor
        self.shared = (0.0 if self.cores is None
                       else 2.0 * every * widths.left * widths.per_flop / gamma / self.cores)

    def column_seconds(self, owners: np.ndarray, y: int, rows: _Rows,
                       layer: _Layer | None = None) -> float:
        """M(F_0) + sum_k [...] of the model bounded from below by the mean, over the
        layers (or one `layer`, fact 8) and the process rows `rows` (one of `row_sets`),
        of process column y's F_k, S_k and U_k (module doc), per step."""
        py, c, gamma = self.py, self.c, self.gamma
        w = self.widths.w
        panel = owners == y
        at = np.flatnonzero(panel)                       # the steps of y's panels
        t = _trailing(w, panel)
        # each term as the module doc writes it, operation by operation (in place; a
        # division by c = 1 left out, terms only on y's panels added there alone); on
        # one layer, its slice for the layers' mean slice w / c and `on` (c where it is
        # the root) times each term of the root layer's
        update = self.twice * t
        if layer is None:
            update *= self.widths.per_flop
            if c > 1:
                update /= c
        else:
            update *= layer.per_flop
        update /= gamma
        solve = self.widths.ww * t
        if c > 1:
            solve *= rows.root
            if layer is not None:
                solve *= layer.on
        solve[at] += (self.panel_solve[at] if layer is None
                      else self.panel_solve[at] * layer.on[at])
        solve /= gamma * self.panel
        if rows.solve_fixed is not None:
            solve += (rows.solve_fixed if layer is None else self.beta_row * WORD * (
                self.rows_ * layer.slices / self.busy + self.widths.ww * rows.root * layer.on))
        if self.gather is not None:
            gather = self.gather * t
            gather /= self.busy
            if self.sends_more is not None:
                gather += self.sends_more * t
            gather[at] = 0.0
            solve += gather
        if c > 1:
            fibre = self.fibre_w * t
            fibre /= self.busy
            scatter = self.scatter_u * t
            spread = self.spread if layer is None else layer.spread / self.busy
            if rows.spread is None:
                scatter[at] += self.scatter_rows[at]
                scatter *= spread
            else:
                scatter *= (rows.spread if layer is None
                            else layer.spread * rows.root * c)
                scatter[at] += self.scatter_rows[at] * spread[at]
            fibre += scatter
            fibre *= WORD
            solve += fibre
            if rows.chain is not None:
                column = self.col_words * t
                # every layer's s_l t_y >= (w_k // c) t_y bytes a chain's, else a tree's
                column *= np.where(self.widths.thin * t * WORD > SMALL_BYTES, rows.chain,
                                   self.beta_col)
                column = column / c if layer is None else column * layer.slices / w
                solve += column
            elif self.col_w is not None:
                column = self.col_w * t
                column = column / c if layer is None else column * layer.slices / w
                solve += column
        factor = np.zeros(len(w))
        factor[at] = self.factor[at] if layer is None else layer.factor[at]
        # step 0's F: M(F_0), not y's (fact 8)
        factor[0] = self.start
        if py > 1 and self.cores is None:
            return float(factor.sum() + solve.sum() + update.sum())
        following = np.concatenate([factor[1:], [0.0]])
        return float(factor[0] + solve.sum() + np.maximum(update + following, self.shared).sum())


def _sends_more(n: int, v: int, px: int, busy: int) -> np.ndarray:
    """[step] fact 9: the mean over the process rows 0 .. busy - 1 of what a member's
    Bruck allgather of pivot rows sends beyond what it receives, max(sent - received,
    0) per word of t_y (`allgatherv_bytes` of the "uniform" pivot model's counts, the
    candidates')."""
    return _excess_means(n, v, px)[busy]


# [step] arrays: the grids of one (N, v, Px) share them
@lru_cache(maxsize=16)
def _excess_means(n: int, v: int, px: int) -> dict[int, np.ndarray]:
    """{busy: `_sends_more`} for the busy of `time_seconds`' grids (every process row,
    those that own a tile), from the pivot counts STREAM_CELLS at a time
    (`tournament_blocks`): a block's [step, Px] tables, not every step's."""
    steps = -(-n // v)
    means = {busy: np.empty(steps) for busy in {px, min(px, steps)}}
    for first, owned in tournament_blocks(n, v, px, STREAM_CELLS):
        sent, recv = allgatherv_bytes(owned)
        sent -= recv
        np.maximum(sent, 0.0, out=sent)
        for busy, mean in means.items():
            mean[first:first + len(owned)] = sent[:, :busy].mean(axis=1)
    for mean in means.values():
        mean.flags.writeable = False
    return means


def _beta(profile: MachineProfile, placement: Placement, key) -> float:
    """Seconds per byte of the link of a `Links` key."""
    span, active = _span_active(key)
    return profile.link(span, placement, active)[1]


def _even_rows(tiles) -> bool:
    """Fact 6: whether every process row holds the same rows and Px is a power of two
    (pivots "uniform": every process row the same a_x and p_x at every step)."""
    return butterfly_size(tiles.px) == tiles.px and tiles.even_rows


@lru_cache(maxsize=64)
def _fewest_roles(px: int, busy: int) -> tuple[float, float]:
    """(messages sent, merges) of the tournament summed over the `busy` roles that send
    and merge the fewest of a process column of px (fact 7; all of them: busy = px)."""
    return tuple(float(np.sort(count)[:busy].sum())
                 for count in tournament_roles(np.arange(px), px))


def _crossing(nodes: np.ndarray) -> np.ndarray:
    """[member] of a group whose members share nodes (node slots `nodes`): whether the
    member before or after it (cyclically) sits on another node."""
    return (nodes != np.roll(nodes, 1)) | (nodes != np.roll(nodes, -1))


def _chain_rate(nodes: np.ndarray, chosen: np.ndarray, node: float, hop: float) -> float:
    """Seconds per byte of a chain bcast down a group whose members share nodes (node
    slots `nodes`), on average over the `chosen` members (fact 4): a member receives from
    the one before and sends to the one after, each hop on the node (beta `node`) or
    between nodes (`hop`), each part its own serial, but the root receives nothing and
    the last sends nothing (two members at most lose a part)."""
    crossing = _crossing(nodes)
    staying = (nodes == np.roll(nodes, 1)) | (nodes == np.roll(nodes, -1))
    return (node * max(0, int((chosen & staying).sum()) - 2)
            + hop * max(0, int((chosen & crossing).sum()) - 2)) / int(chosen.sum())


def _bruck_across(nodes: np.ndarray) -> int:
    """Blocks that every member of a group whose members share nodes (node slots
    `nodes`) receives between nodes in the Bruck allgather, at least: m of each round
    (h, m) whose every exchange, q - h from q, crosses nodes (fact 4)."""
    return sum(m for h, m in bruck_rounds(len(nodes))
               if (nodes != np.roll(nodes, h)).all())
