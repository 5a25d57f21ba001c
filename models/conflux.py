"""Model of the 2.5D LU with tournament pivoting (linalg_io/lu/conflux.py).

`conflux_plan_counts` follows the same `StepPlan` the code executes (panel k: w
columns, roots ky = y(k), the tile columns' order (`TileMap.col_owner`), lk = (k div
Py) mod c, kx = k mod Px; layer l takes s_l of the panel's columns) and adds, per rank,
the bytes and messages of the point-to-point schedules the code runs
(`linalg_io.layout.schedules`: binomial or pipelined-chain bcast and reduce, Bruck
allgatherv, linear gatherv and scatterv). Every byte the code sends is in such a message, so
the counts are the logical and the wire traffic at once. With a_x the active rows of process
row x before step k, p_x the pivots it owns, b_x = a_x - p_x, t_y the trailing columns of
process column y:

reduce_panel         (c > 1) the fibre (x, ky, *) sums its a_x w panel rows onto lk
                     (a chain lk+1 -> ... -> lk: every layer but lk+1 receives a_x w)
tournament_pivoting  (Px > 1) (x, ky, lk): w (w+1) words per butterfly round
                     (log2 q, q the largest power of two <= Px), one fold and unfold
                     message each for roles r >= q and r < Px - q (r = (x - k) mod Px)
push_pivots          ids: w+1 words from (kx, ky, lk) to all (binomial tree); L00: w^2
                     words along the process rows of layer lk that solve for U (c = 1:
                     every row; c > 1: row kx); pivot rows: p_x t_y summed over each
                     fibre onto lk, then allgathered in each process column of layer lk
                     (c = 1) or gathered on (kx, y, lk) (c > 1, see StepPlan.redundant_u)
scatter_slices       L: (c > 1) (x, ky, lk) sends b_x s_l to each (x, ky, l), then every
                     layer broadcasts its b_x s_l along its process rows from ky; U:
                     (c > 1) (kx, y, lk) sends s_l t_y to each (kx, y, l), then every
                     layer broadcasts it down its process columns from kx

Only a_x, p_x depend on the matrix: `pivots` is "none", the pivot ids of a run,
"uniform" or "proportional" (`linalg_io.models.conflux_pivots`).

Rank classes: at step k a rank (l, x, y) costs what its features make it cost: for
its process row x, a_x, p_x, its position (x - kx) mod Px in the chains and trees
down the columns and its tournament roles at steps k and k+1 (and, c = 1, its Bruck
windows of the pivot counts); for its process column y, t_y and its position
(y - ky) mod Py along the rows (and whether it is step k+1's panel column); where a
row's or a column's members share nodes, which of its messages cross them; for its
layer, everything. Ranks of equal features form a class (`linalg_io.models.
rank_classes`, found at the ranks where a feature can change: `linalg_io.models.
conflux_classes`); each step is evaluated once per (layer, x class, y class), at a
representative of each class, with the schedules' own cost functions, and the
totals are spread back to every rank. Only the pivot ids' broadcast, a binomial tree
over all P ranks, depends on the world rank itself: its counts per rank are the
cyclic convolution of the roots' step counts with the tree's per-position costs
(exact integers: sums folded mod 2^i where P is a power of two, else by FFT;
`_tree_sums`), its time the same every step but the last. The result is
the per-rank walk of every step (tests/conflux_walk.py), to rounding, in
O(steps x classes) instead of O(steps x P).

Closed form of the words received (= sent, on average) per rank: `FORMULA` (the sums
over the panels of m w and of w t_y Py are N^2/2), evaluated by `closed_form_words`.
Flops per rank: 2 N^3/(3P) (dgemm) + N^2 v/(2 Py c) (U solves on layer lk, c = 1:
every rank of the layer solves w^2 t_y, redundant over the Px process rows; c > 1:
N^2 v/(2 Py c Px), row kx only; each layer is lk for 1/c of the panels) + panels and
tournament.
"""


from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial

import numpy as np
from linalg_io._kernels.compact import add_masked, same_along
from linalg_io.models.conflux_classes import (
    BUTTERFLY,
    ColumnRole,
    StepRanks,
    panel_widths,
    step_ranks,
)
from linalg_io.models.conflux_nodes import (
    HOP,
    NET,
    NODE,
    across_part,
    bcast_across,
    node_groups,
    reduce_across,
    split_keys,
    timed_links,
)
from linalg_io.models.conflux_pivots import (
    from_states,
    most_changes,
    near_even_rows,
    pivot_changes,
    pivot_counts,
    pivots_at,
)
from linalg_io.models.costs import (
    RankCosts,
    crossing_links,
    link_span,
    link_split,
    waiting_makespans,
)
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rank_classes import BlockSpread, RunClasses, Spreading, spread
from linalg_io.models.rates import DEFAULT_RATES, getrf_flops
from linalg_io.models.step_sample import StepSample

from linalg_io.layout.conflux_layout import (
    PHASES,
    StepPlan,
    TileMap,
    butterfly_size,
    reflect_columns,
    tournament_roles,
)
from linalg_io.layout.schedules import (
    SMALL_BYTES,
    bcast_costs,
    bcast_node_costs_counted,
    binomial_children,
    chunk_count,
    cyclic_convolution,
    reduce_costs,
    scatterv_costs,
    spectrum_of,
)
from linalg_io.layout.words import WORD

# the communicators whose bytes the inter-node split follows (the pivot ids' go to the
# whole world and are split by their roots)
COMM_GROUPS = ("row", "col", "fibre")
# a group's collectives that only one process column (@column: y = ky) or row (@row:
# x = kx) of each layer runs: a node's ranks share its links only as far as they run them
# (`link_keys`)
ALONG = ("", "@column", "@row")
# the "by_group" entry of a group's bytes between nodes, where its members share nodes
ACROSS = "@across"
# the most cells of classes (`class_cells`) the sampled steps take at once (memory)
CHUNK_CELLS = 1 << 20
# the most cells of classes the walk of every step takes at once: its pieces' dozens of
# [step, layer, x class, y class] arrays stay small (memory), and within the caches (1
# MB an array, a core's L2 here: 2^18 cells took 10-20% more CPU on walks of P = 2^20)
WALK_CELLS = 1 << 17
# `step_sample`: the most cells (steps x layers x x classes x y classes, `class_cells`)
# walked one by one; beyond, about SAMPLE_CELLS cells of steps (SAMPLE_LEAST steps at
# least), a TAIL_SHARE of them the last steps, the sample's time sums corrected by a
# polynomial of degree SAMPLE_DEGREE. A sampled step costs two to three times a walked
# one (its spreading by pairs of edges, the average over the roots' places), and the
# error falls slowly with more: at P = 2^20 a quarter of 2^22 cells' steps moved the
# time of grids with c > 1 by 0.04-0.1% from the walk's (they sample 600-1400 steps),
# while grids of many cells a step (c = 1), at the least, lose most: 80 steps put the
# time 1.9% under the walk's, 165 steps 1.1% (docs/MEASUREMENTS.md)
EXACT_CELLS = 1 << 23
# ... and the most cells (steps x Px) of the tournament's two [step, process row] tables
# of pivot counts a walk of every step holds whole; beyond, the steps are sampled, whose
# tables `pivots_at` makes at those steps alone from the tournament's kept states
# (`from_states`; a grid of few classes but many process rows, 65521x1x2 of P = 2 x
# 65521, N = 1234567, would hold two tables of 9646 x 65521 cells, 5 GB each), a chunk
# of them at a time (`_chunked`: the 179 sampled steps of 524287x1x2 at once, 1.5 GB)
TABLE_CELLS = 1 << 24
SAMPLE_CELLS = 1 << 20
SAMPLE_LEAST = 160
# ... but on more than MANY_RANKS ranks, where `model lu` weighs a dozen grids of 10^4 to
# 10^6 classes a step, it walks MANY_EXACT_CELLS at most and samples MANY_SAMPLE_CELLS'
# worth, MANY_SAMPLE_LEAST steps at least: the search then takes half to two thirds of
# the CPU (N = 333333 and 1234567 at P near 2^20), and the 19 grids of those tables
# walked came within 1.9% of the walk's time (1.0% with the budget above), 0.9% of its
# bytes received, 1.4% of its flops (docs/MEASUREMENTS.md, "sampling sooner
# beyond 2^18 ranks"); at 2^16, a grid of three tiles a row lost 6.3% so (1024x32x2 v=128,
# N = 400000), hence not below
MANY_RANKS = 1 << 18
MANY_EXACT_CELLS, MANY_SAMPLE_CELLS, MANY_SAMPLE_LEAST = 1 << 20, 1 << 18, 80
# ... but a Px x Py x 1 grid (Py <= COLUMN_PY) of more process rows than tiles, every
# one a class of its own (a P with a large prime factor), samples COLUMN_CELLS / (Px Py)
# steps where that is fewer, SAMPLE_FEWEST at least, in blocks of its columns' roles
# alone: a sampled step costs O(Px Py) there (a million process rows: half a second),
# and its terms vary smoothly (the root's process row walks the rows that hold rows one
# by one): at Px = 32749 to 131071, 40 to 128 steps put the time and the per-rank
# maxima of bytes and flops within 3e-3 of the walk's, the messages within 2e-2; blocks
# of a node's 64 process rows (Py = 2) clustered 160 steps in few cells, 1-3% off
# (docs/MEASUREMENTS.md, "A prime P of a million: fewer steps of its P x 1 x 1 grids",
# "... of its P/2 x 2 x 1 grids, a chunk's pivot tables alone"); at Py = 4 fewer steps
# were no closer
COLUMN_CELLS, SAMPLE_FEWEST, COLUMN_PY = 1 << 22, 40, 2
# ... and takes COLUMN_CHUNK of its sampled steps at once, not the one step that its
# cells of classes allow (`class_cells`: every process row a class, Px a step): its
# classes are far fewer than its rows (23500 of 1048573 a step at N = 1234567), and a
# chunk's spreading walks its node's residues once (`Spreading`: 128 of them on the
# example's nodes). 4 steps a chunk took a fifth less CPU than 1, 0.1 GB more (8: no
# less CPU, 0.25 GB more; docs/MEASUREMENTS.md)
COLUMN_CHUNK = 4
SAMPLE_ROWS = 64
TAIL_SHARE = 8
SAMPLE_DEGREE = 6
SAMPLE_BLOCKS = 4
# `step_sample`: the sampled ranks' totals averaged apart on the process rows of a tile
# more and those of one less (`StepSample.arcs`) where a process row holds fewer tiles
# than this; with more, one tile's difference is small beside a row's trailing tiles
# (0.1% at most on the sampled grids of N = 1234567 at P = 2^18 with 9 to 300 tiles a
# row). (The columns
# are averaged apart at any count: 2048x64x2 v=512 there, 38 tiles a column, -1.9%
# without, -1.25% with.)
ARC_TILES = 8
# steps no more than SAMPLE_SHARE times SAMPLE_ROWS are walked: so few, a sample's
# blocks meet too few of the roots' places and rows (N = 24576, 8192x64x2 v=128: 75 of
# 192 steps, received bytes 9% over the walk's, flops 14%), and walking them costs
# about as much
SAMPLE_SHARE = 4
# `pooled_rows`: where the pivot counts differ along more than POOLED_GROUPS process
# rows at some step and steps x P reach POOLED_CELLS (each row a class and a run of its
# own at such steps: the walk's or the sample's cells and spreading scale with Px), the
# rows' counts averaged over POOLED_GROUPS groups
POOLED_GROUPS = 16
POOLED_CELLS = 1 << 25
# ... at c = 1 (each process row's own pivot rows allgathered in its process column) only
# where every process row holds this many tiles or more: with fewer, a row of one tile
# next to rows of two stands out (time up to 0.6% off every row's own on grids of 64 to
# 512 rows; with two or more, 0.3% at most, docs/MEASUREMENTS.md "2.5D model: pooled
# process rows")
POOLED_ALLGATHER_TILES = 2
# ... and where the rows are as even as the tiles allow (the last one short), one group
# of all the process rows, from this many tiles on: fewer, the short tile's row stands
# out more (128 tiles: time 1.2% off every row's own; 512 and more: 0.26% at most,
# docs/MEASUREMENTS.md "2.5D model: pooled process rows")
EVEN_POOL_TILES = 512
# a process row's or column's classes at a step where its members do not share nodes,
# at most (`class_cells`): the ends of its chains and trees and the pivots' changes
FEW_CLASSES = 16


def link_keys(px: int, py: int, c: int, placement: Placement | None) -> dict:
    """{traffic key: the `Links` key it is timed on}: a group's span (a process row Py
    ranks, a layer's column Px Py, a fibre and the world all P) and, for the @column and
    @row keys, (span, the ranks of a node that use its links at once): of a node's r
    consecutive ranks of a layer, max(1, r // Py) lie in one process column and min(r,
    Py) in one process row. Where a group's members share nodes on a grid aligned with
    them, its traffic is kept in parts on the node and between nodes, each with its key
    (`linalg_io.models.conflux_nodes`)."""
    p = c * px * py
    r = placement.ranks_per_node if placement is not None else p
    keys = {"row": py, "col": px * py, "fibre": p, "world": p}
    for group in COMM_GROUPS:
        keys[group + "@column"] = (keys[group], max(1, r // py))
        keys[group + "@row"] = (keys[group], min(r, py))
    return {**keys, **split_keys(keys, px, py, node_groups(px, py, c, placement))}


def _compact(values):
    """`values` [step, layer, x class, y class] cut to length 1 along each of its last
    three axes whose entries are all the same, bit for bit (zeros where a group has no
    traffic, a collective on one column): elementwise operations broadcast it back to
    the same values, and a piece holds it at that size."""
    if np.ndim(values) < 4:
        return values
    for axis in (3, 2, 1):
        if values.shape[axis] > 1 and same_along(values, axis):
            values = values.take([0], axis=axis)
    return values


def _masked_sums(old: tuple | None, mask, costs: tuple) -> tuple:
    """`old` (sent, recv, msgs, serial; None: zeros) plus (s, r, g, max(s, r)), (s, r, g)
    = `mask` * `costs`: NumPy's sums bit for bit, in one pass (`linalg_io._kernels.compact.
    add_masked`) where the mask is boolean and the arrays [step, layer, x class, y
    class], into `old`'s arrays of the sums' shape (a `_Piece`'s own)."""
    mask = np.asarray(mask)
    costs = tuple(np.asarray(c, dtype=float) for c in costs)
    shape = np.broadcast_shapes(mask.shape, *(c.shape for c in costs),
                                *(np.shape(o) for o in old or ()))
    if mask.dtype != bool or len(shape) != 4:
        sent, recv, msgs = (mask * c for c in costs)
        added = (sent, recv, msgs, np.maximum(sent, recv))
        return added if old is None else tuple(o + a for o, a in zip(old, added))
    outs = tuple(o if isinstance(o, np.ndarray) and o.shape == shape else np.empty(shape)
                 for o in old or (None,) * 4)
    add_masked(outs, None if old is None else tuple(np.broadcast_to(o, shape) for o in old),
               np.broadcast_to(mask, shape).view(np.uint8),
               tuple(np.broadcast_to(c, shape) for c in costs))
    return outs


def _summed(total, added):
    """total + added, bit for bit, into `total` where it is an array of the sum's shape
    (a `_Piece`'s own: each array it holds is one it made)."""
    if isinstance(total, np.ndarray) and total.shape == np.broadcast_shapes(total.shape,
                                                                          np.shape(added)):
        total += added
        return total
    return total + added


@dataclass
class _Piece:
    """Bytes and messages per communicator group ((sent, recv, msgs, serial): `add`),
    flops and their time-equivalent
    (flops at the rate they run, in gamma-flops) of one piece of every step, arrays
    [step, layer, x class, y class] (each held cut along the axes it is constant
    along, `_compact`); `phases` the same per phase of the code
    (`PHASES`), for the counts by phase (the time takes the piece whole)."""

    shape: tuple
    traffic: dict = field(default_factory=dict)
    flops: np.ndarray | float = 0.0
    slow: np.ndarray | float = 0.0
    phases: dict | None = None   # None: not kept

    def add(self, group: str, mask, costs: tuple, phase: str | None = None,
            across: tuple | None = None) -> None:
        """One collective's (sent, recv, msgs) on `group`, after those added before:
        the group's traffic keeps their sum and serial, the sum of max(sent, recv) of
        each (`linalg_io.models.costs.link_terms`). `across`: (HOP or NET, the part of
        `costs` between nodes) where the group's members share nodes: the two parts
        kept apart (`linalg_io.models.conflux_nodes`)."""
        if across is not None:
            part, between = across
            self.add(group + part, mask, between, phase)
            self.add(group + NODE, mask, tuple(np.asarray(c, dtype=float) - b
                                               for c, b in zip(costs, between)), phase)
            return
        self.traffic[group] = tuple(_compact(total) for total in
                                    _masked_sums(self.traffic.get(group), mask, costs))
        if self.phases is not None and phase is not None:
            self._phase(phase).add(group, mask, costs)

    def work(self, flops, rate: float = 1.0, phase: str | None = None) -> None:
        self.flops = _compact(_summed(self.flops, flops))
        self.slow = _compact(_summed(self.slow, flops * (1.0 / rate - 1.0)))
        if self.phases is not None and phase is not None:
            self._phase(phase).work(flops, rate)

    def _phase(self, phase: str) -> _Piece:
        assert phase in PHASES, phase
        return self.phases.setdefault(phase, _Piece(self.shape))

    def totals(self) -> np.ndarray:
        """[sent, recv, msgs, flops] summed over the groups, full shape."""
        parts = [sum((t[i] for t in self.traffic.values()), 0.0) for i in range(3)]
        return np.stack([np.broadcast_to(a, self.shape) for a in parts + [self.flops]])

    def add_totals(self, into: np.ndarray) -> None:
        """Adds `totals` to `into` [4, step, layer, x class, y class], in place (no
        full-shape copy of them)."""
        for i in range(3):
            parts = [t[i] for t in self.traffic.values()]
            # as sum(parts, 0.0), which only a -0.0 tells apart: `into` adds it to +0.0
            total = parts[0] if len(parts) == 1 else parts[0] + parts[1] if parts else 0.0
            for part in parts[2:]:
                total = _summed(total, part)
            into[i] += total
        into[3] += self.flops

    def seconds(self, profile: MachineProfile, placement: Placement,
                spans: dict) -> tuple[np.ndarray, np.ndarray]:
        """(work, wait) per rank: its flops and on-node messages, which take its core,
        and its messages on the network, which do not (`link_split`); each traffic key
        on its link (`timed_links`). Timing is the last use of a piece (`_seconds`): its
        traffic, summed onto the links, is let go."""
        links = timed_links(self.traffic, spans)
        self.traffic = {}
        inside, across = link_split(links, profile, placement) if links else (0.0, 0.0)
        return (np.broadcast_to(inside + (self.flops + self.slow) / profile.gamma_flops,
                                self.shape), np.broadcast_to(across, self.shape))


def conflux_plan_counts(n: int, v: int, px: int, py: int, c: int,
                        pivots: str | Sequence[np.ndarray] = "none",
                        profile: MachineProfile | None = None,
                        placement: Placement | None = None, by_phase: bool = False,
                        by_group: bool = False) -> dict:
    """Per-rank totals, arrays [layer, x, y]: "sent", "recv" (bytes), "msgs", "flops";
    "sample": the steps evaluated (`step_sample`, None: every one); with a profile also
    "time_s", the critical path of the code's schedule on the profile's machine
    (`placement`: where the P ranks sit, default the profile's); with
    `by_phase`, "by_phase": {phase: the same four arrays, "gamma_flops" and "links"
    (`_by_phase`)} for the `PHASES` of `ConfluxLU.step` in its order (they sum to the
    totals, but for the panel rows' solve with Px = 1, which the code does not run: the
    getrf of the panel gives L; the pivot ids' broadcast is push_pivots', the local
    getrf and merges tournament_pivoting's; with a profile, c = 1 and Px > 1, push_pivots'
    "overlapped_s": per rank the seconds of it the look-ahead hides, `_overlapped`); with
    `by_group`,
    "by_group": {group: (sent, recv) arrays [layer, x, y]} of the row, column and fibre
    communicators, and "id_roots" (the pivot ids' root and bytes per step), for the
    inter-node split (`node_traffic`).

    A rank's time for a piece of work is the sum over its collectives, one after
    another, of alpha msgs + beta max(sent, recv) (a rank sends while it receives only
    inside one collective: a chain, a Bruck round), at the rates of the link each
    crosses (`MachineProfile.link`; a row's, column's or fibre's messages within a node
    and between nodes apart where its members share nodes, `linalg_io.models.
    conflux_nodes`), + flops/gamma, the trailing update's
    flops at gamma times `profile.local.gemm(s_l)`, getrf and trsm at gamma times
    `profile.local.panel` (`linalg_io.models.rates`). Per step k and rank r, four
    pieces, in the order `ConfluxLU.step` runs them:

      F_k(r)  panel phase: reduce_panel, local getrf of the a_x x w candidates, the
              tournament's log2 q merges (getrf of 2w x w) and its messages; only on
              process column ky_k (getrf and merges on layer lk_k);
      I_k(r)  the pivot ids' broadcast, a binomial tree over all P ranks: every rank
              waits for it, its slowest rank is its root, whose ceil(log2 P) sends are
              the tree's depth;
      S_k(r)  L00, pivot rows (Reduce + Allgatherv or Gatherv), solve_panel (column
              ky_k, layer lk_k), solve_row (layer lk_k), the L and U scatters;
      U_k(r)  trailing update (dgemm b_x x s_l x t_y).

    The look-ahead runs F_{k+1} inside U_k on column ky_{k+1} (after that column's
    first w columns); the root of the ids of step k+1 sends them only after its whole
    U_k and F_{k+1}; the L broadcast of step k waits for solve_panel on column ky_k.
    So, with one core per rank, step_k = max_r I_k(r) + max_r S_k(r) + max_r [U_k(r) +
    F_{k+1}(r)]: with Py = 1 every rank carries F (and solve_row over all N trailing
    columns), with Py > 1 only the ranks of one column carry F, the others wait at the
    Bcast. When the P ranks share fewer cores (`Placement.shared_cores`; a waiting
    rank yields its core, `linalg_io.comm.launch`), each max_r is the makespan of
    those per-rank works under fair sharing of the cores, where a rank waiting on the
    network holds no core (`waiting_makespans`: the longer of the slowest rank's work +
    wait and the works' makespan alone). Then

      time_s = M(F_0) + sum_k [M(I_k) + M(S_k) + M(U_k + F_{k+1})],  M = waiting_makespans.

    With Py > 1 and a core per rank, the ranks of column ky_{k+1} start step k+1's
    sends (ids, L00, L) right after F_{k+1}, inside U_k (`linalg_io.lu.conflux`), so no
    rank waits for the panel's column, and a rank that fell behind in one step (the
    busier column) catches up in the next: each rank's own pieces add up,

      time_s = M(F_0) + sum_k M(I_k) + max_r sum_k [S_k(r) + U_k(r) + F_{k+1}(r)]
      (each piece its work and its wait).

    With c = 1 and Px > 1 the ranks of column ky_k (k >= 1) start step k's pivot rows'
    allgather G_k inside U_{k-1}, after F_k, and a thread moves it while the rest of
    U_{k-1} (R_{k-1} = 2 a_x w_{k-1} t_y, a_x and t_y of step k) computes
    (`ConfluxLU._start_pivot_rows`). Where its links move messages during computation
    (`MachineProfile.overlaps`: on a node, and across nodes where `inter_node.overlap`),
    R_{k-1} + G_k^o becomes max(R_{k-1}, G_k^o) on those ranks: S_k(r) loses
    min(R_{k-1}(r) x max(1, P / cores), G_k^o(r)) (`_overlapped`); G_k on links without
    overlap, the other columns' allgathers and step 0's stay in S_k whole.
    """
    plan = StepPlan.create(n, v, px, py, c)
    tiles = plan.tiles
    steps, p = tiles.ntiles, c * px * py
    every_w = panel_widths(tiles)
    layer = np.arange(c)
    every_slice = (every_w[:, None] // c + (layer[None, :] < every_w[:, None] % c)).astype(float)
    if profile is not None:
        placement = placement or profile.placement(p)
    # the local work's rates relative to gamma (the counts alone: any, unread)
    local = DEFAULT_RATES if profile is None else profile.local
    # classes of the process rows and columns at each step (module doc); where a group's
    # members share nodes, the time and the inter-node bytes take its messages on and
    # between nodes apart: members that differ in them are different classes
    # (`linalg_io.models.conflux_nodes`)
    groups = node_groups(px, py, c, placement)
    # every step, or a sample of them where that costs too much (`step_sample`): the
    # [step, ...] arrays below hold the steps k evaluated, one row each
    sample = step_sample(n, v, px, py, c, placement, pivots)
    k = np.arange(steps) if sample is None else sample.rows
    # the rows' pivot counts pooled where every row's own cost too much; at the steps k
    # (a row each, as the classes' tables) and where they change along the process rows
    pooled = _pooled(plan, pivots)

    def ranks_at(rows: slice | None) -> StepRanks:
        """The classes at the steps k[rows] (None: every step). A sample's pivot counts
        are made at those steps alone: [rows, Px] tables, not [sampled steps, Px] ones
        (1.5 GB where Px is far more than the tiles, a prime P's)."""
        if rows is None:
            return step_ranks(plan, every_slice, *pivot_counts(plan, pivots, pooled),
                              pivot_changes(plan, pivots, pooled), groups)
        return step_ranks(plan, every_slice, *pivots_at(plan, pivots, pooled, k[rows]),
                          groups, k[rows])

    # c = 1: a fibre is one rank, its reduces move nothing (their zeros kept where the
    # counts by group or by phase list the fibre's traffic)
    fibres = c > 1 or by_group or by_phase

    def pieces_at(k: np.ndarray, ranks: StepRanks) -> tuple:
        """The class grid's shape and the pieces F, S, U, F_{k+1} and the look-ahead's
        (or None) at the steps k, whose classes are `ranks` (module doc)."""
        w = every_w[k]
        lk = (k // py) % c
        nxt = np.minimum(k + 1, steps - 1)                   # step k+1 (the last: unused)
        lk_next = (nxt // py) % c
        slices = every_slice[k]
        xs, ys = ranks.xs, ranks.ys

        def per_x(name: str) -> np.ndarray:                # [step, class] -> [step, 1, class, 1]
            return ranks.x[name][:, None, :, None]

        def per_y(name: str) -> np.ndarray:
            return ranks.y[name][:, None, None, :]

        def per_l(values: np.ndarray) -> np.ndarray:
            return values[:, :, None, None]

        def per_step(values: np.ndarray) -> np.ndarray:
            return values[:, None, None, None]

        # the crossings of a column's and a row's members at the classes' representatives
        col_hops = ranks.x_hops.at(lambda a: a[:, None, :, None]) if "col" in groups else None
        row_hops = ranks.y_hops.at(lambda a: a[:, None, None, :]) if "row" in groups else None

        shape = (len(k), c, xs.size, ys.size)
        a, p_x = per_x("active"), per_x("owned")
        b = a - p_x
        x_pos = per_x("role")                                # (x - kx) mod Px
        t = per_y("trailing")
        y_pos = per_y("along")                               # (y - ky) mod Py
        sl = per_l(slices)
        wk = per_step(w)
        on_fibre = per_l((layer[None, :] - lk[:, None]) % c)
        layer_root = per_l(layer[None, :] == lk[:, None])
        on_panel = y_pos == 0

        def between(group: str, part: str, costs):
            """(part, costs()) of a collective of a group whose members share nodes: its
            messages between nodes (`_Piece.add`); None for the other groups."""
            return (part, costs()) if group in groups else None

        def panel_phase(a_rows, roles, panel_column, layer_is_root, fibre_pos, width, turn):
            """F: reduce_panel, tournament and the panel's getrf on the class grid (turn 0:
            step k's, 1: step k+1's)."""
            piece = _Piece(shape, phases={} if by_phase else None)
            if fibres:
                piece.add("fibre@column", panel_column,
                          reduce_costs(fibre_pos, c, a_rows * width * WORD),
                          "reduce_panel",
                          between("fibre", HOP, lambda: reduce_across(
                              groups["fibre"].hops((lk, lk_next)[turn]).at(per_l), fibre_pos,
                              c, a_rows * width * WORD)))
            players = panel_column & layer_is_root
            block = width * (width + 1) * WORD
            n_sent, merges = tournament_roles(roles, px)
            if px > 1:
                piece.add("col@column", players, (n_sent * block, n_sent * block, n_sent),
                          "tournament_pivoting",
                          between("col", NET, lambda: (per_x(BUTTERFLY[turn]) * block,) * 2
                                  + (per_x(BUTTERFLY[turn]),)))
            piece.work(players * (getrf_flops(a_rows, width) + merges * getrf_flops(2 * width,
                                                                                      width)),
                       local.panel, "tournament_pivoting")
            return piece

        panel = panel_phase(a, x_pos, on_panel, layer_root, on_fibre, wk, 0)
        panel_next = panel_phase(b, (x_pos - 1) % px, per_y("code") & ColumnRole.NEXT_PANEL > 0,
                                 per_l(layer[None, :] == lk_next[:, None]),
                                 per_l((layer[None, :] - lk_next[:, None]) % c),
                                 per_step(every_w[nxt]), 1)

        layer_hops = groups["fibre"].hops(lk) if "fibre" in groups else None
        solve = _Piece(shape, phases={} if by_phase else None)
        players = on_panel & layer_root
        solvers = layer_root & (True if plan.redundant_u else x_pos == 0)
        solve.add("row", solvers, bcast_costs(y_pos, py, wk * wk * WORD), "push_pivots",
                  between("row", HOP, lambda: bcast_across(row_hops, y_pos, py,
                                                           wk * wk * WORD)))
        solve.work(players * b * wk * wk, local.panel, "solves" if px > 1 else None)
        if fibres:
            solve.add("fibre", True, reduce_costs(on_fibre, c, p_x * t * WORD), "push_pivots",
                      between("fibre", HOP, lambda: reduce_across(layer_hops.at(per_l), on_fibre,
                                                                  c, p_x * t * WORD)))
        ahead = None
        if plan.redundant_u:
            # the pivot rows' Bruck allgather in the process columns of layer lk (S_k's
            # and the look-ahead's: the same costs)
            gather = (t * WORD * per_x("bruck_sent"), t * WORD * per_x("others"),
                      (t > 0) * per_x("bruck_msgs"))
            gather_across = between("col", NET, lambda: (
                t * WORD * per_x("bruck_across_sent"), t * WORD * per_x("bruck_across_recv"),
                (t > 0) * per_x("bruck_across_msgs")))

            def pivot_rows(piece: _Piece, mask, phase: str | None = None) -> None:
                """The pivot rows' allgather, where `mask`."""
                piece.add("col", mask, gather, phase, gather_across)

            pivot_rows(solve, layer_root, "push_pivots")
            if px > 1 and profile is not None:
                # the look-ahead's (`_critical_path`): column ky_k's allgather, started in
                # update k-1 (k >= 1), and the rest of that update beside it, 2 a_x w_{k-1} t_y
                ahead = _Piece(shape)
                started = on_panel & layer_root & per_step(k > 0)
                pivot_rows(ahead, started)
                before = per_step(every_w[np.maximum(k - 1, 0)])
                ahead.work(started * 2.0 * a * before * t, local.gemm(before))
        else:
            def gathered(name: str) -> tuple:
                """A gatherv of p_x t_y words onto row kx: the costs of p_x words (`name`:
                "gather" all of them, "gather_across" those from another node), times t_y."""
                sent, recv, msgs = (per_x(f"{name}_{cost}") for cost in ("sent", "recv", "msgs"))
                return sent * t, recv * t, msgs * (t > 0)

            solve.add("col", layer_root, gathered("gather"), "push_pivots",
                      between("col", NET, lambda: gathered("gather_across")))
        solve.work(solvers * wk * wk * t, local.panel, "solves")
        if c > 1:
            solve.add("fibre@column", on_panel, _scatter(b * WORD, slices, lk),
                      "scatter_slices", between("fibre", NET, lambda: _scatter(
                          b * WORD, slices * layer_hops.from_root, lk)))
            solve.add("fibre@row", x_pos == 0, _scatter(t * WORD, slices, lk),
                      "scatter_slices", between("fibre", NET, lambda: _scatter(
                          t * WORD, slices * layer_hops.from_root, lk)))
        solve.add("row", True, bcast_costs(y_pos, py, b * sl * WORD), "scatter_slices",
                  between("row", HOP, lambda: bcast_across(row_hops, y_pos, py,
                                                           b * sl * WORD)))
        if c > 1:
            solve.add("col", True, bcast_costs(x_pos, px, sl * t * WORD), "scatter_slices",
                      between("col", HOP, lambda: bcast_across(col_hops, x_pos, px,
                                                               sl * t * WORD)))

        update = _Piece(shape, phases={} if by_phase else None)
        update.work(2.0 * b * sl * t, local.gemm(np.maximum(sl, 1.0)), "update")
        return shape, (panel, solve, update, panel_next), ahead

    ids = _ids_broadcast(plan, every_w, p)
    spans = link_keys(px, py, c, placement)
    # with `by_group`, what the inter-node split reads besides the groups' bytes
    # (`_node_traffic`)
    split_inputs = {"id_roots": (ids["roots"], (every_w + 1) * WORD),
                "placement": placement} if by_group else {}
    counted = None if sample is None else sample.counted()
    if sample is not None and not by_phase:
        # where a column's members share nodes, the process rows' runs repeat with the
        # nodes' rows (`Spreading`)
        period = max(1, placement.ranks_per_node // py) if "col" in groups else 1
        dense = dense_pivots(n, v, px, py, c, pivots)
        per_chunk = max(1, CHUNK_CELLS // class_cells(px, py, c, groups, dense))
        if _class_a_row(n, v, px, py, c, dense):
            per_chunk = max(per_chunk, COLUMN_CHUNK)
        if from_states(n, v, px, pivots, pooled):    # a chunk's [step, Px] tables
            per_chunk = min(per_chunk, max(1, TABLE_CELLS // px))
        return {**_chunked(pieces_at, ranks_at, sample, counted, ids, spans, profile,
                           placement, per_chunk, period, c, groups if by_group else None),
                **split_inputs, "sample": sample, "pooled": pooled}
    ranks = ranks_at(None if sample is None else slice(0, len(k)))
    # a block of steps at a time (but by phase, which takes the pieces whole)
    bounds = [(0, len(k))] if by_phase else _walk_bounds(ranks, c)
    out = _walked(pieces_at, ranks, k, sample, counted, ids, spans, profile, placement,
                  bounds, groups if by_group else None, by_phase)
    return {**out, **split_inputs, "sample": sample, "pooled": pooled}


def _per_rank(sample: StepSample | None, xs: RunClasses, ys: RunClasses,
              values: np.ndarray) -> np.ndarray:
    """Per-rank totals over every step [..., layer, x, y] of `values` [..., step, layer,
    x class, y class] (`spread`; the steps of `sample`: `StepSample.per_rank`)."""
    if sample is None:
        return spread(values, xs, ys)
    return sample.per_rank(values, partial(spread, xs=xs, ys=ys))


def class_cells(px: int, py: int, c: int, groups: dict, dense_rows: bool = False) -> int:
    """Cells of one step's class grid, about: layers x process row classes (every row
    where a column's members share nodes or `dense_rows`, `dense_pivots`; else
    FEW_CLASSES at most) x process column classes (FEW_CLASSES and a row's node
    boundaries). The [step, ...] arrays of the walk pad every step to the most classes
    of any step: this many cells a step."""
    xs = px if "col" in groups or dense_rows else min(px, FEW_CLASSES)
    ys = min(py, FEW_CLASSES + (len(groups["row"].boundaries()) if "row" in groups else 0))
    return c * xs * ys


def dense_pivots(n: int, v: int, px: int, py: int, c: int, pivots: str) -> bool:
    """Whether every process row is a class of its own at the steps whose pivot counts
    differ along the process rows (c = 1: the Bruck windows of the pivot rows'
    allgatherv, `linalg_io.models.conflux_classes`): some step's do but where the
    process rows hold as many rows and the pivots split evenly among them ("uniform"
    on a power of two, "proportional"; `linalg_io.models.conflux_pivots`), or pooled
    into one group (`pooled_rows`)."""
    plan = StepPlan.create(n, v, px, py, c)
    if not plan.redundant_u or px == 1 or _pooled(plan, pivots) == 1:
        return False
    return not plan.tiles.even_rows or pivots == "none" or (
        pivots == "uniform" and butterfly_size(px) != px)


def pooled_rows(n: int, v: int, px: int, py: int, c: int, pivots) -> int:
    """POOLED_GROUPS where `conflux_plan_counts` averages a pivot model's counts over
    that many groups of consecutive process rows (`linalg_io.models.conflux_pivots.
    pooled_pivots`), else 0: where steps x P >= POOLED_CELLS and at some step the counts
    differ along more than POOLED_GROUPS process rows (more process rows than tiles, or
    unequal rows: every row a class of its own, at every step walked or sampled), and,
    where c = 1 (each row's own pivot rows allgathered in its process column), every
    process row holds POOLED_ALLGATHER_TILES tiles or more. Pooled, those steps have few
    classes of process rows in few runs; each rank's figures move by its group's spread
    (`POOLED_ERROR`). 1 (any c) where every process row holds as many tiles but the last
    is short (`conflux_pivots.near_even_rows`; EVEN_POOL_TILES tiles or more, Px >
    POOLED_GROUPS, "uniform"): their counts differ row by row by less than the missing
    rows, and one group's means, the even split, need no tournament run (its [step, Px]
    work: the most of `model lu` at N = 2^24 - 1, P = 2^20)."""
    return _pooled(StepPlan.create(n, v, px, py, c), pivots)


def _pooled(plan: StepPlan, pivots) -> int:
    """`pooled_rows` of a plan."""
    tiles = plan.tiles
    if (not isinstance(pivots, str)
            or tiles.ntiles * tiles.px * tiles.py * plan.c < POOLED_CELLS):
        return 0
    if (pivots == "uniform" and tiles.px > POOLED_GROUPS and tiles.ntiles >= EVEN_POOL_TILES
            and near_even_rows(tiles)):
        return 1
    if plan.redundant_u and tiles.ntiles < POOLED_ALLGATHER_TILES * tiles.px:
        return 0
    return POOLED_GROUPS if most_changes(plan, pivots) > POOLED_GROUPS else 0


def step_sample(n: int, v: int, px: int, py: int, c: int, placement: Placement | None,
                pivots) -> StepSample | None:
    """None where `conflux_plan_counts` walks every step (steps x `class_cells` <=
    EXACT_CELLS, MANY_EXACT_CELLS beyond MANY_RANKS ranks, and, where its counts come
    from kept states (`from_states`), steps x Px <= TABLE_CELLS; a sample of half the
    steps, SAMPLE_SHARE SAMPLE_ROWS steps or fewer, or a run's pivots), else the steps
    it evaluates (`StepSample`): step 0, the last steps and, of the others, blocks of B
    consecutive steps at a stride prime to Px Py c, SAMPLE_CELLS cells of steps in all
    (SAMPLE_LEAST at least; beyond MANY_RANKS ranks MANY_SAMPLE_CELLS and
    MANY_SAMPLE_LEAST; more to make SAMPLE_BLOCKS blocks; a Px x Py x 1 grid, Py <=
    COLUMN_PY, of more process rows than tiles, a class each, COLUMN_CELLS / (Px Py)
    where fewer, SAMPLE_FEWEST at least, in blocks of its columns' roles). A rank's
    costs at step k depend on its place relative to the root (kx, ky, lk) and, where a
    group's members share nodes, on its node: from one block to the next the root moves by (B /
    Py mod c, B mod Px, 0) (B a multiple of Py, whose process columns' roles each block
    meets in turn, 2 Py where the columns go reflected: a column's trailing columns
    depend on where it sits, not only relative to ky; where no such block fits, B = 1 or
    a node's process rows: (0, B mod Px, 0)), and where every process row holds as many rows, the
    sampled per-rank totals are averaged over the places of the roots of the steps
    each block stands for (`StepSample.shift`). B is also a multiple of the nodes'
    period along the axes it shifts (where SAMPLE_BLOCKS blocks of that fit), so that
    the time, whose costs depend on the nodes, is shifted with them; else only the
    counts keep to it (theirs do not depend on the nodes). Where process rows hold
    unequal rows: blocks of the period of ky and lk (and of the nodes), shifted along
    the process rows alone where every process row holds as many tiles (the last one
    short: without it, a row that is the root of a sampled step kept that root's work
    for every step the block stands for, the time 8% over the walk's at N = 1024 v - 1,
    Px = 1024 .. 4096; `conflux_plan_counts` averages the ranks' times so, not their
    counts); where rows hold a tile more than others, not shifted (averaging across
    blends them: 8% under at N = 400000, 1024x32x2 v=128), but for blocks shorter than
    that period, shifted along the rows and columns with the rows of a tile more apart
    (`StepSample.arcs`; unshifted, the roots of such blocks took 25% too much at N =
    400000, 512x16x8 v=512), the counts too (SAMPLED_UNEQUAL_ERROR). Blocks shorter
    than Py are shifted along the columns too (the panel's column of a sampled step
    kept its work for the block's every step: 15% over at N = 262144, P = 2^18)."""
    steps = -(-n // v)
    groups = node_groups(px, py, c, placement)
    if not isinstance(pivots, str):
        return None
    dense = dense_pivots(n, v, px, py, c, pivots)
    cells = class_cells(px, py, c, groups, dense)
    tables = steps * px > TABLE_CELLS and from_states(
        n, v, px, pivots, _pooled(StepPlan.create(n, v, px, py, c), pivots))
    exact, budget, least = ((MANY_EXACT_CELLS, MANY_SAMPLE_CELLS, MANY_SAMPLE_LEAST)
                            if px * py * c > MANY_RANKS
                            else (EXACT_CELLS, SAMPLE_CELLS, SAMPLE_LEAST))
    if steps * cells <= exact and not tables:
        return None
    a_row = _class_a_row(n, v, px, py, c, dense)
    if a_row:       # fewer steps, Px large
        least = max(SAMPLE_FEWEST, min(least, COLUMN_CELLS // cells))
    samples = max(least, budget // cells)
    if tables:      # the sampled steps' tables within TABLE_CELLS too
        samples = max(least, min(samples, TABLE_CELLS // px))
    reflected = reflect_columns(n, v, py, c)
    r = placement.ranks_per_node
    rows_apart = r // py if "col" in groups else 1      # a node's process rows
    nodes = [rows_apart, r if "row" in groups else 1, py * c if "fibre" in groups else 1]
    even = TileMap(n, v, px, 1).even_rows
    roles = py * (2 if reflected else 1) * (1 if even else c)
    choices = [roles] if a_row else [int(np.lcm.reduce([roles] + nodes)), roles, rows_apart]
    block = next((b for b in choices if SAMPLE_BLOCKS * b <= 2 * samples
                  and 2 * SAMPLE_BLOCKS * b < steps), 1)
    samples = max(samples, SAMPLE_BLOCKS * block)
    tail = max(SAMPLE_ROWS // 4, samples // TAIL_SHARE)
    if 2 * (samples + tail) >= steps or SAMPLE_SHARE * SAMPLE_ROWS >= steps:
        return None
    shift, arcs = None, (0, 0, 0)
    as_many = even or steps % px == 0
    if block % rows_apart == 0 and (as_many or block % roles):
        # the roots' places averaged along the process rows (and along the columns where
        # a block is shorter than Py, the columns not reflected); rows of a tile more
        # apart from those of one less, and so columns (`StepSample.arcs`)
        dy = 0 if block % py == 0 or reflected else block % py
        shift = ((block // py) % c if block % py == 0 else 0, block % px, dy)
        shift = shift if any(shift) else None
        arcs = (0, 0 if as_many or steps >= ARC_TILES * px else steps % px,
                steps % py if dy else 0)
    # unequal rows in tiles of as many: the counts not averaged over the roots' places,
    # the times alone (a row's bytes would blend with its neighbours'); with rows of a
    # tile more apart (`StepSample.arcs`), both
    sample = StepSample.midpoints(steps, 2 * px * py * c, samples, tail, SAMPLE_DEGREE,
                                  block, shift, arcs, even or any(arcs))
    # the head's last steps walked (few cells) may make it half the steps
    return None if 2 * len(sample.rows) >= steps else sample


def _class_a_row(n: int, v: int, px: int, py: int, c: int, dense: bool) -> bool:
    """Whether a grid is a Px x Py x 1 one, Py <= COLUMN_PY, of more process rows than
    tiles whose pivot counts differ along the rows (`dense`, `dense_pivots`): every row a
    class of its own at every step (SAMPLE_FEWEST, COLUMN_CHUNK)."""
    return dense and c == 1 and py <= COLUMN_PY and px > -(-n // v)


def _group_parts(pieces, groups: dict) -> dict:
    """{"by_group" name: (group, whether its part between nodes)} of the communicator
    groups the pieces' traffic uses: COMM_GROUPS in that order, then the ACROSS parts
    of those whose members share nodes (`groups`)."""
    used = {key.split("@")[0] for piece in pieces for key in piece.traffic}
    return {**{group: (group, False) for group in COMM_GROUPS if group in used},
            **{group + ACROSS: (group, True) for group in groups if group in used}}


def _group_bytes(pieces, shape: tuple, group: str, between_nodes: bool) -> np.ndarray:
    """[2, step, layer, x class, y class] (sent, recv) of a group's traffic keys in the
    pieces (their parts between nodes: `across_part`)."""
    return sum(np.stack([np.broadcast_to(piece.traffic[key][i], shape) for i in (0, 1)])
               for piece in pieces for key in piece.traffic
               if key.split("@")[0] == group and (across_part(key) or not between_nodes))


def _chunked(pieces_at: Callable, ranks_at: Callable, sample: StepSample,
             counted: StepSample, ids: dict, spans: dict, profile, placement,
             per_chunk: int, period: int, layers: int, groups: dict | None = None) -> dict:
    """`conflux_plan_counts`' totals and time (no phases) from the sampled rows
    `per_chunk` at a time (`ranks_at`: the classes at a slice of them; `pieces_at`: the
    pieces there, evaluated a block of WALK_CELLS cells of classes at a time, c = `layers`,
    `_blocks`): each chunk's critical-path parts (`_path_parts`) add up, and its values
    go into one spreading of the counts and one of the ranks' own times (`Spreading`:
    summed up over every rank once, not once a chunk; the process rows' runs repeating
    every `period` rows), the counts' as `counted` samples them, the times' as
    `sample`. With the node groups (`groups`, not None), "by_group" as
    `conflux_plan_counts`', each group's (sent, recv) two more rows of the counts'
    spreading."""
    counts, own, parts = _Weighed(counted, period), _Weighed(sample, period), []
    steps = sample.steps
    names = {}
    for chunk in sample.chunks(per_chunk):
        first = chunk.start
        part = sample.part(chunk)
        ranks = ranks_at(chunk)
        rows = len(part.rows)
        values = mine = None
        per_block = max(1, WALK_CELLS // (layers * ranks.xs.size * ranks.ys.size))
        for begin, stop, block, shape, pieces, ahead in _blocks(
                pieces_at, ranks, part.rows, [(at, min(at + per_block, rows))
                                             for at in range(0, rows, per_block)]):
            figures, names = _counts(pieces, shape, groups)
            if values is None:
                values = np.empty((len(figures), rows) + shape[1:])
            values[:, begin:stop] = figures
            if profile is None:
                continue
            seconds, _ = _seconds(profile, placement, pieces, ahead, spans)
            *path, own_part = _path_parts(placement, seconds, block.xs, block.ys, spans,
                                          first == begin == 0,
                                          part.rows[-1] == steps - 1 and stop == rows)
            parts.append(path)
            if own_part is not None:
                mine = np.empty((rows,) + shape[1:]) if mine is None else mine
                mine[begin:stop] = own_part
        counts.add(chunk, values, ranks.xs, ranks.ys)
        if mine is not None:
            own.add(chunk, mine, ranks.xs, ranks.ys)
    totals = counts.totals()
    c, px, py = totals.shape[1:]
    for i, key in enumerate(("sent", "recv", "msgs")):
        totals[i] += ids[key].reshape(c, px, py)
    out = {"sent": totals[0], "recv": totals[1], "msgs": totals[2], "flops": totals[3]}
    if groups is not None:
        out["by_group"] = {name: totals[4 + 2 * i: 6 + 2 * i] for i, name in enumerate(names)}
    if profile is not None:
        out["time_s"] = _critical_path(profile, placement, parts,
                                       own.totals() if own.added else None,
                                       ids, spans, sample)
    return out


class _Weighed:
    """`_chunked`'s spreading of a sample's rows' values, weighed (in place): where the
    sample averages its sampled rows' totals over the roots' places (`StepSample.
    shift`), its walked and its sampled rows in two spreadings (`StepSample.chunks`
    never mixes them), the sampled ones' totals averaged once at the end, not a
    stacked copy of every chunk's values."""

    def __init__(self, sample: StepSample, period: int) -> None:
        self.sample = sample
        self.parts = [Spreading(period) for _ in range(2 if sample.shift else 1)]

    def add(self, rows: slice, values: np.ndarray, xs: RunClasses, ys: RunClasses) -> None:
        part = self.sample.part(rows)
        spreading = self.parts[-1] if part.sampled[0] else self.parts[0]
        spreading.add(part.weighed(values, out=values), xs, ys)

    @property
    def added(self) -> bool:
        return any(part.diffs for part in self.parts)

    def totals(self) -> np.ndarray:
        totals = [part.totals() for part in self.parts if part.diffs]
        return self.sample.finished(totals) if len(totals) == 2 else totals[0]


def _walked(pieces_at: Callable, ranks: StepRanks, k: np.ndarray, sample: StepSample | None,
            counted: StepSample | None, ids: dict, spans: dict, profile, placement,
            bounds: list, groups: dict | None = None, by_phase: bool = False) -> dict:
    """`conflux_plan_counts`' totals and time (with the node groups, `groups` not None,
    "by_group"; with `by_phase`, "by_phase") from the steps k (every step, or the rows
    of `sample`), whose classes are `ranks`, a block of them at a time (`bounds`, each
    block's classes as many as its steps': `_blocks`),
    each block's pieces let go before the next's: each figure's values over
    every step go into one `BlockSpread` (`spread` of them all, bit for bit, without
    their [step, ...] arrays), the critical path's per-step parts (`_path_parts`) follow
    one another. By phase, one block (`_by_phase` takes the pieces whole). The counts as
    `counted` samples them, the ranks' times as `sample` (None: every step)."""
    xs, ys = ranks.xs, ranks.ys
    stacked, finished = _stacking(sample)
    count_stacked, count_finished = _stacking(counted)
    counts, own, by_group, parts, out = BlockSpread(xs, ys), None, {}, [], {}
    for first, stop, block, shape, pieces, ahead in _blocks(pieces_at, ranks, k, bounds,
                                                            narrowed=True):
        grid = (shape[1], xs.n, ys.n)                  # (c, Px, Py)
        figures, names = _counts(pieces, shape, groups)
        counts.add(count_stacked(figures[:4]))
        for i, name in enumerate(names):
            by_group.setdefault(name, BlockSpread(xs, ys)).add(
                count_stacked(figures[4 + 2 * i:6 + 2 * i]))
        del figures
        if by_phase:
            spread_steps = partial(_per_rank, counted, xs, ys)
            out["by_phase"] = _by_phase(pieces[:3], xs, ys, ids, grid, spread_steps)
        if profile is None:
            continue
        seconds, whole = _seconds(profile, placement, pieces, ahead, spans)
        if by_phase and ahead is not None:
            # the seconds of push_pivots the look-ahead hides per rank, for the phase times
            out["by_phase"]["push_pivots"]["overlapped_s"] = spread_steps(
                sum(np.broadcast_to(a - b, shape) for a, b in zip(whole, seconds[1])))
        *path, mine = _path_parts(placement, seconds, block.xs, block.ys, spans, first == 0,
                                  stop == len(k))
        parts.append(path)
        if mine is not None:
            own = own or BlockSpread(xs, ys)
            own.add(stacked(mine))
    totals = count_finished(counts.totals())
    for i, key in enumerate(("sent", "recv", "msgs")):
        totals[i] += ids[key].reshape(grid)
    out.update(sent=totals[0], recv=totals[1], msgs=totals[2], flops=totals[3])
    if groups is not None:
        out["by_group"] = {name: count_finished(spreading.totals())
                           for name, spreading in by_group.items()}
    if profile is not None:
        out["time_s"] = _critical_path(profile, placement, parts,
                                       None if own is None else finished(own.totals()),
                                       ids, spans, sample)
    return out


def _stacking(sample: StepSample | None) -> tuple[Callable, Callable]:
    """(stacked, finished) of `sample`: its rows' values to the spreading's, its totals
    to every step's; each as it is where every step is walked (None)."""
    if sample is None:
        return (lambda values: values), (lambda totals: totals)
    return sample.stacked, sample.finished


def _blocks(pieces_at: Callable, ranks: StepRanks, k: np.ndarray, bounds: list,
            narrowed: bool = False):
    """(first, stop, classes, shape, pieces, look-ahead's piece) of each block (first,
    stop) of `bounds` of the steps k (rows first .. stop-1 of `ranks`, their classes),
    in order (`pieces_at`: the pieces at some steps, given their classes; the classes
    padded as `ranks`, or, `narrowed`, to the most of the block's steps: a padded
    class is rank 0's, whose values are its class's)."""
    for first, stop in bounds:
        block = _block(ranks, first, stop, narrowed)
        shape, pieces, ahead = pieces_at(k[first:stop], block)
        yield first, stop, block, shape, list(pieces), ahead


def _walk_bounds(ranks: StepRanks, layers: int) -> list:
    """(first, stop) of the walk's blocks of consecutive steps of `ranks`: each within
    WALK_CELLS cells of classes (its steps x `layers` x its steps' most x classes x most
    y classes), one step at least."""
    xs, ys = ranks.xs.classes_per_step(), ranks.ys.classes_per_step()
    bounds, first, wide_x, wide_y = [], 0, 0, 0
    for step, (x, y) in enumerate(zip(xs.tolist(), ys.tolist())):
        wide_x, wide_y = max(wide_x, x), max(wide_y, y)
        if step > first and (step + 1 - first) * layers * wide_x * wide_y > WALK_CELLS:
            bounds.append((first, step))
            first, wide_x, wide_y = step, x, y
    return bounds + [(first, len(xs))]


def _counts(pieces: list, shape: tuple, groups: dict | None) -> tuple:
    """([sent, recv, msgs, flops, then each group's (sent, recv)] of the pieces F, S,
    U, each [step, layer, x class, y class]; {"by_group" name: (group, between nodes)}
    of those groups, `_group_parts`, none where `groups` is None)."""
    values = np.zeros((4,) + shape)
    for piece in pieces[:3]:
        piece.add_totals(values)
    names = {} if groups is None else _group_parts(pieces[:2], groups)
    if names:
        values = np.concatenate([values] + [_group_bytes(pieces[:2], shape, *group)
                                            for group in names.values()])
    return values, names


def _block(ranks: StepRanks, first: int, stop: int, narrowed: bool = False) -> StepRanks:
    """The classes of the steps first .. stop-1 of `ranks` (the rows of its tables;
    `narrowed`: the columns of their most classes)."""
    xs, ys = ranks.xs.block(first, stop), ranks.ys.block(first, stop)
    if narrowed:
        xs, ys = (axis.narrowed(int(axis.classes_per_step().max())) for axis in (xs, ys))

    def x_rows(table: np.ndarray) -> np.ndarray:
        return table[first:stop, :xs.size]

    def y_rows(table: np.ndarray) -> np.ndarray:
        return table[first:stop, :ys.size]

    return StepRanks(xs=xs, ys=ys,
                     x={name: x_rows(table) for name, table in ranks.x.items()},
                     y={name: y_rows(table) for name, table in ranks.y.items()},
                     x_hops=None if ranks.x_hops is None else ranks.x_hops.at(x_rows),
                     y_hops=None if ranks.y_hops is None else ranks.y_hops.at(y_rows))


def _by_phase(pieces, xs: RunClasses, ys: RunClasses, ids: dict, shape: tuple,
              spread_steps: Callable | None = None) -> dict:
    """{phase: {"sent", "recv", "msgs", "flops", "gamma_flops", "links"}} per rank
    ([layer, x, y]), in PHASES order (one `spread` for all of them): "gamma_flops" the
    flops as the time counts them (at the rate each kernel runs, in flops at gamma),
    "links" {key: (sent, recv, msgs, serial)} of each communicator group the phase
    uses (COMM_GROUPS, with their ALONG variants, and "world" for the pivot ids'
    broadcast; serial as `_Piece.add`), for its time on the links they cross
    (`link_keys`, `linalg_io.models.phase_time`)."""
    groups = list(dict.fromkeys(key for piece in pieces for part in piece.phases.values()
                                for key in part.traffic))
    full = pieces[0].shape

    def rows(part: _Piece) -> np.ndarray:
        """[sent, recv, msgs, flops, gamma flops, per group (sent, recv, msgs)]."""
        arrays = [*part.totals(), np.broadcast_to(part.flops + part.slow, full)]
        for group in groups:
            arrays += [np.broadcast_to(a, full) for a in part.traffic.get(group, (0.0,) * 4)]
        return np.stack(arrays)

    zero = np.zeros((5 + 4 * len(groups),) + full)
    per_phase = np.stack([sum((rows(piece.phases[phase]) for piece in pieces
                               if phase in piece.phases), zero) for phase in PHASES])
    totals = (spread_steps or partial(spread, xs=xs, ys=ys))(per_phase)
    id_costs = tuple(ids[key].reshape(shape) for key in ("sent", "recv", "msgs"))
    push = PHASES.index("push_pivots")
    for i, cost in enumerate(id_costs):
        totals[push, i] += cost
    out = {}
    for j, phase in enumerate(PHASES):
        used = {g for piece in pieces if phase in piece.phases
                for g in piece.phases[phase].traffic}
        links = {g: tuple(totals[j, 5 + 4 * i: 9 + 4 * i]) for i, g in enumerate(groups)
                 if g in used}
        if phase == "push_pivots":
            links["world"] = (*id_costs, np.maximum(id_costs[0], id_costs[1]))
        out[phase] = {**dict(zip(("sent", "recv", "msgs", "flops", "gamma_flops"), totals[j])),
                      "links": links}
    return out


def _scatter(rows_bytes, slices, lk) -> tuple:
    """(sent, received, messages), [step, layer, x, y], of the scatterv of a panel's
    column slices over each fibre from layer lk (`scatterv_costs`): layer l gets
    `slices`[step, l] columns of `rows_bytes` [step, 1, x, y] bytes."""
    counts = rows_bytes[..., None] * slices[:, None, None, None, :]      # layer axis last
    costs = scatterv_costs(counts[:, 0], lk[:, None, None, None])
    return tuple(np.moveaxis(cost, -1, 1) for cost in costs)


def _ids_broadcast(plan: StepPlan, w: np.ndarray, p: int) -> dict:
    """The pivot ids' binomial broadcast from (kx, ky, lk) to all P ranks, every step:
    per world rank its sent, received bytes and messages over all steps (the cyclic
    convolution of the roots' counts with the per-position costs: exact integers,
    `_tree_sums`, `_chain_sums`) and, per step, each position's (sent, received,
    messages). The widths that take the tree are convolved together: its costs are the
    bytes times the children (sent) or times 1 but at the root (received), and the
    children (messages), so two convolutions serve every width (counts weighed by their
    bytes, and not), not three transforms each."""
    t = plan.tiles
    k = np.arange(t.ntiles)
    roots = ((k // t.py) % plan.c * t.px + k % t.px) * t.py + t.col_owner(k)
    per_width = {}
    totals = {key: np.zeros(p) for key in ("sent", "recv", "msgs")}
    by_bytes, tree_count = np.zeros(p), np.zeros(p)
    for width in np.unique(w):
        nbytes = int(width + 1) * WORD
        per_width[width] = _tree_costs(p, nbytes)
        count = np.bincount(roots[w == width], minlength=p).astype(float)
        if nbytes <= SMALL_BYTES:
            by_bytes += nbytes * count
            tree_count += count
        else:
            _add_to(totals, _chain_sums(count, nbytes))
    if tree_count.any():
        _add_to(totals, _tree_sums(by_bytes, tree_count, p))
    return {**totals, "per_width": per_width, "widths": w, "roots": roots}


def _add_to(totals: dict, sums: tuple) -> None:
    """(sent, received, messages) per world rank added into `totals`."""
    for key, values in zip(("sent", "recv", "msgs"), sums):
        totals[key] += values


def _tree_sums(by_bytes: np.ndarray, count: np.ndarray, p: int) -> tuple:
    """(sent, received, messages) per world rank over binomial broadcasts rooted
    count[s] times at rank s, by_bytes[s] their bytes summed: position q sends its
    bytes to each of its children and receives them but at the root, so sent and
    messages are by_bytes and count convolved with the children (`_children_sums`),
    received every root's bytes but the rank's own."""
    return _children_sums(by_bytes, p), by_bytes.sum() - by_bytes, _children_sums(count, p)


def _chain_sums(count: np.ndarray, nbytes: int) -> tuple:
    """(sent, received, messages) per world rank over chain broadcasts of `nbytes`
    rooted count[s] times at rank s: every position sends but the last, (r - s) mod P =
    P - 1 where s = r + 1, and receives but the root."""
    total = count.sum()
    senders = total - np.roll(count, -1)
    return (nbytes * senders, nbytes * (total - count),
            float(chunk_count(nbytes)) * senders)


def _children_sums(count: np.ndarray, p: int) -> np.ndarray:
    """Per world rank r the sum over the roots s of count[s] times the binomial tree's
    children of position (r - s) mod P (exact integers). P a power of two: position q
    has tz(q) children (trailing zeros; the root log2 P), so the sum is over i = 1 ..
    log2 P of C_i[r mod 2^i], C_i[s] the counts of the roots s mod 2^i (folded halves,
    exact); else the spectra's product (`_children_spectrum`, `cyclic_convolution`),
    rounded."""
    if p < 2:
        return np.zeros(p)
    if p & (p - 1):
        spectrum = spectrum_of(count, p) * _children_spectrum(p)
        return np.rint(cyclic_convolution(spectrum, p))
    folds = [count]                                  # C_L, C_{L-1}, ..., C_1
    while len(folds[-1]) > 2:
        half = len(folds[-1]) // 2
        folds.append(folds[-1][:half] + folds[-1][half:])
    sums = folds[-1]                                 # sum_i C_i[r mod 2^i], from i = 1 up
    for fold in reversed(folds[:-1]):
        sums = np.tile(sums, 2) + fold
    return sums


@lru_cache(maxsize=4)
def _tree_costs(p: int, nbytes: int) -> tuple:
    """The binomial broadcast's (sent, received, messages) per position of P ranks for
    messages of `nbytes`: the same for every candidate of a P and tile (kept for the
    next ones: P floats each)."""
    costs = bcast_costs(np.arange(p), p, nbytes)
    for array in costs:
        array.flags.writeable = False
    return costs


@lru_cache(maxsize=2)
def _children_spectrum(p: int) -> np.ndarray:
    """The spectrum (`transform_size` long) of the binomial tree's children per position
    of P ranks: the same for every candidate of a P (kept as it is)."""
    spectrum = spectrum_of(binomial_children(np.arange(p), p).astype(float), p)
    spectrum.flags.writeable = False
    return spectrum


def _critical_path(profile, placement, parts: list, own: np.ndarray | None, ids: dict,
                   spans: dict, sample: StepSample | None) -> float:
    """time_s of `conflux_plan_counts`: M(F_0) + sum_k [M(I_k) + M(S_k) + M(U_k + F_{k+1})]
    from `_path_parts` of consecutive blocks of the steps of `sample` (every step where
    None: the sums over k its `total`, the ranks' own sums its weights): `parts` their
    (M(F_0) or 0, [step] M(S_k) or None, M(U_k + F_{k+1}) or None), `own` the ranks' own
    sums over every step (None where not used)."""
    start, solve, update = zip(*parts)
    total = sum(start) + _ids_seconds(profile, placement, ids, spans)
    if own is not None:
        return float(total + own.max())
    solve, update = np.concatenate(solve), np.concatenate(update)
    if sample is not None:
        return float(total + sample.total(solve + update))
    return float(total + solve.sum() + update.sum())


def _seconds(profile, placement, pieces: list, ahead: _Piece | None, spans: dict) -> tuple:
    """([(work, wait)] per rank of the pieces F, S, U, F_{k+1} (`_Piece.seconds`), S_k with
    the look-ahead's allgather overlapped (`ahead`, `_overlapped`); S_k's without.
    `pieces` is emptied: each piece is let go once timed (their traffic arrays, full
    [step, layer, x class, y class] shape, are the most memory a block of steps holds)."""
    seconds = []
    while pieces:
        seconds.append(pieces.pop(0).seconds(profile, placement, spans))
    whole = seconds[1]
    if ahead is not None:
        seconds[1] = _overlapped(profile, placement, whole, ahead, spans)
    return seconds, whole


def _ids_seconds(profile, placement, ids: dict, spans: dict) -> float:
    """sum_k M(I_k): the pivot ids' broadcast, every step."""
    ids_time = {}
    for width, costs in ids["per_width"].items():
        inside, across = link_split({spans["world"]: costs}, profile, placement)
        ids_time[width] = float(waiting_makespans(inside, across, placement.shared_cores))
    return sum(ids_time[width] for width in ids["widths"])


def _path_parts(placement, seconds: list, xs: RunClasses, ys: RunClasses, spans: dict,
                first: bool = True, last: bool = True) -> tuple:
    """(M(F_0) where the rows start at step 0 (`first`), else 0; [step] M(S_k) and
    M(U_k + F_{k+1}), or None, None; [step, layer, x class, y class] S_k + U_k + F_{k+1}
    (Py > 1, a core per rank: each rank's own sum over the steps, `_per_rank`), or
    None) of `_critical_path`; `last`: whether
    the rows end at the last step (which has no F_{k+1}); `seconds` the pieces' (work,
    wait), `_seconds`."""
    panel, solve, update, panel_next = seconds
    steps = panel[0].shape[0]
    weights = (xs.count[:, None, :, None] * ys.count[:, None, None, :]
               * np.ones(panel[0].shape[1])[None, :, None, None]).reshape(steps, -1)
    cores = placement.shared_cores

    def makespan(work: np.ndarray, wait: np.ndarray) -> np.ndarray:
        return waiting_makespans(work.reshape(steps, -1), wait.reshape(steps, -1), cores,
                                 weights)

    following = ([np.concatenate([part[:-1], np.zeros_like(part[-1:])]) for part in panel_next]
                 if last else panel_next)
    start = makespan(*panel)[0] if first else 0.0
    if spans["row"] == 1 or cores is not None:
        # Py = 1: every rank is on the panel's column (the tournament couples them each
        # step); shared cores: the ranks that do not wait take the cores, step by step
        return (start, makespan(*solve),
                makespan(update[0] + following[0], update[1] + following[1]), None)
    # Py > 1, a core per rank: the look-ahead starts step k+1's sends right after
    # F_{k+1}, so no rank waits for the panel's column (nor, stepping on, for the busier
    # column of a step): each rank's own S, U and F (work and wait) add up; the busiest
    # total is the time
    own = sum(part[0] + part[1] for part in (solve, update, following))
    return start, None, None, np.broadcast_to(own, panel[0].shape)


def _overlapped(profile, placement, solve: tuple, ahead: _Piece, spans: dict) -> tuple:
    """S_k's (work, wait) with the look-ahead (c = 1, Px > 1): on column ky_k (k >= 1)
    the pivot rows' allgather G_k was started inside update k-1, after that column's
    first w_k columns, and moves while the rest of it, R_{k-1} = 2 a_x w_{k-1} t_y flops
    (`ahead`'s work; times P / cores where the ranks share cores), computes. The part of
    G_k on links whose messages move meanwhile (`MachineProfile.overlaps`), G_k^o, costs
    max(R_{k-1}, G_k^o) instead of R_{k-1} + G_k^o: S_k loses min(R_{k-1}, G_k^o), what
    it keeps of G_k^o (the excess over R_{k-1}) a wait on the network; the part on links
    without overlap stays in S_k whole. (As the host's `ConfluxLU` runs: on a GPU, whose
    matrix has no `rows_t_updated`, nothing starts early and the time saved here is not.)"""
    links = timed_links(ahead.traffic, spans)
    moving = {key: costs for key, costs in links.items()
              if profile.overlaps(link_span(key), placement)}
    inside, across = link_split(moving, profile, placement) if moving else (0.0, 0.0)
    cores = placement.shared_cores
    window = (ahead.flops + ahead.slow) / profile.gamma_flops * (
        max(1.0, spans["world"] / cores) if cores else 1.0)
    excess = np.maximum(inside + across - window, 0.0)
    work, wait = solve
    return work - inside, np.maximum(wait - across, 0.0) + excess


def closed_form_words(n: int, v: int, px: int, py: int, c: int) -> float:
    """Leading terms of the words received (= sent, on average) per rank (module doc)."""
    p = px * py * c
    half = n * n / (2.0 * p)
    tournament = px * np.log2(px)
    if c == 1:
        return half * ((px - 1) + (py - 1)) + n * v * (tournament + px * (py - 1)) / p + n
    brackets = 2 * (c - 1) + (px - 1) / px + 2 * (c - 1) / c + (py - 1) + (px - 1)
    return half * brackets + n * v * (tournament + py - 1) / p + n


FORMULA = ("2.5D LU (COnfLUX, tournament pivoting, own point-to-point collectives: wire = "
           "logical), words received (= sent) per rank on average ~ c = 1: N^2/(2P) "
           "(Px-1 + Py-1) + N v Px (log2 Px + Py-1)/P; c > 1: N^2/(2P) [2(c-1) reduce panel "
           "and pivot rows + (Px-1)/Px gather pivot rows + 2(c-1)/c scatter L and U slices + "
           "Py-1 L along rows + Px-1 U down columns] + N v (Px log2 Px + Py-1)/P; + N pivot "
           "ids; exact counts from the step plan")


def conflux_costs(n: int, v: int, px: int, py: int, c: int,
                  pivots: str | Sequence[np.ndarray] = "none") -> RankCosts:
    """Per-rank costs (world rank = layer Px Py + x Py + y), see the module doc."""
    return _costs(conflux_plan_counts(n, v, px, py, c, pivots), pivots)


def _costs(counts: dict, pivots) -> RankCosts:
    label = pivots if isinstance(pivots, str) else "as measured"
    node_traffic = partial(_node_traffic, counts) if "by_group" in counts else None
    return RankCosts(bytes_sent=counts["sent"].reshape(-1), bytes_recv=counts["recv"].reshape(-1),
                     msgs_sent=counts["msgs"].reshape(-1), flops=counts["flops"].reshape(-1),
                     formula=f"{FORMULA} (pivots: {label})", node_traffic=node_traffic)


def _node_traffic(counts: dict, placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """Inter-node (sent, received) bytes per rank: every byte of a process row (Py
    consecutive ranks), column (a layer, Px Py) or fibre (all P, stride Px Py) that
    crosses nodes (`crossing_links`; exact where such a communicator's members sit on
    distinct nodes), but a group whose members share nodes on a grid aligned with them:
    its messages between nodes (`linalg_io.models.conflux_nodes`, the counts' ACROSS
    entries, for the placement the counts were made for); and the pivot ids' tree
    edges between nodes."""
    if placement != counts["placement"]:
        raise ValueError(f"the 2.5D counts' inter-node split is for {counts['placement']}, "
                         f"not {placement}")
    c, px, py = counts["sent"].shape
    p = c * px * py
    spans = {"row": py, "col": px * py, "fibre": p}
    groups = counts["by_group"]
    sent, recv = np.zeros(p), np.zeros(p)
    for group in COMM_GROUPS:
        if group + ACROSS in groups:
            group_sent, group_recv = groups[group + ACROSS]
        elif group in groups and crossing_links(spans[group], placement):
            group_sent, group_recv = groups[group]
        else:
            continue
        sent, recv = sent + group_sent.reshape(-1), recv + group_recv.reshape(-1)
    roots, sizes = counts["id_roots"]
    nodes = np.arange(p) // placement.ranks_per_node
    for size in np.unique(sizes):
        ids_sent, ids_recv = bcast_node_costs_counted(
            p, size, np.bincount(roots[sizes == size], minlength=p), nodes)
        sent, recv = sent + ids_sent, recv + ids_recv
    return sent, recv


MEMORY = "the 2.5D layout's memory per rank (memory_words)"


def memory_words(n: int, v: int, px: int, py: int, c: int) -> float:
    """Per-rank words of the busiest rank: the local block, the copy of A it restarts
    each repetition from (layer 0) and checks the residual with, the factors kept for
    verification (on the layer that computed them: 1/c of the steps), and the
    panel/row buffers of one step."""
    rows = -(-n // (v * px)) * v
    cols = -(-n // (v * py)) * v
    return rows * cols * (2 + 1 / c) + 4 * (rows + cols) * v


TIME_FORMULA = ("critical path M(F_0) + sum_k [M(I_k) + M(S_k) + M(U_k + F_{k+1})] of "
                "per-rank pieces: sum over their collectives of alpha msgs + beta max(sent, "
                "recv) + flops / gamma' (panel, pivot ids, solves, update; the node's or the "
                "network's alpha and beta per communicator, per message where a row's, "
                "column's or fibre's members share nodes; M = "
                "slowest rank, or the makespan when ranks share cores; with Py > 1 and a "
                "core per rank, the "
                "look-ahead's sends started early: M(F_0) + sum_k M(I_k) + max over ranks of "
                "sum_k [S_k + U_k + F_{k+1}]; c = 1, Px > 1: the panel column's pivot-row "
                "allgather G_k, started inside U_{k-1}, costs max(rest of U_{k-1}, G_k) on "
                "links that overlap; conflux_plan_counts)")


SAMPLED_FORMULA = ("; sampled: of {steps} steps the first, the last {tail} and {blocks} blocks "
                   "of {block} consecutive steps, one in {stride} of the others, walked{shift}, "
                   "their sums weighted by the steps each stands for (midpoint rule, "
                   "corrected by a degree-{degree} polynomial fit) (approximate: relative "
                   "error of the time and of the per-rank maxima of bytes and flops within "
                   "{error:g}, of messages within {msgs_error:g}, of walking every step "
                   "where measured)")
SHIFTED = (", each sampled rank's totals averaged over the places of the roots of the "
           "steps its block stands for")
# the largest relative error of the sampled time and per-rank maxima of bytes (received,
# sent) and flops, and of messages (a step's count jumps where a message's size crosses
# a chunk or the binomial tree's threshold), against walking every step, measured on
# the grids of docs/MEASUREMENTS.md ("2.5D model: sampled steps") and pinned by
# tests/test_conflux_sampled.py
SAMPLED_ERROR = 0.03
SAMPLED_MSGS_ERROR = 0.1
# the same where the process rows hold unequal rows (rows of a tile more next to rows
# of one less: docs/MEASUREMENTS.md, "2.5D model: sampled steps", and tests/
# test_conflux_sampled.py): 6.0% (time) and 3.8% (bytes received) at most on the 106
# such grids of ten problems at P = 2^14 to 2^18 (docs/MEASUREMENTS.md, "`model lu` to
# P = 2^20: fewer sampled steps"), on grids of one or two tiles a row (the roots of a
# sampled block's process rows take its work `stride` times)
SAMPLED_UNEQUAL_ERROR = 0.07


POOLED_FORMULA = ("; pooled: the expected pivot counts of the process rows holding rows "
                  "averaged over {groups} groups of consecutive ones (approximate: relative "
                  "error of the time and of the per-rank maxima of bytes and flops within "
                  "{error:g}, of messages within {msgs_error:g}, of every row's own counts "
                  "where measured)")
# the largest relative error of the pooled rows' time and per-rank maxima of bytes and
# flops, and of messages, against every row's own counts, measured on the grids of
# docs/MEASUREMENTS.md ("2.5D model: pooled process rows": every pooled grid of six
# problems at P = 2^14 to 2^19, 1.3% at most, on grids of many idle process rows) and
# pinned by tests/test_conflux_pooled.py
POOLED_ERROR = 1.5e-2
POOLED_MSGS_ERROR = 0.02


POOLED_ONE_FORMULA = ("; pooled: the expected pivot counts of every process row averaged "
                      "over all of them (each holds as many tiles, the last one short: "
                      "the rows and each step's pivots split evenly; approximate: relative "
                      "error of the time and of the per-rank maxima of bytes and flops "
                      "within {error:g}, of messages within {msgs_error:g}, of every row's "
                      "own counts where measured)")


def sampled_note(sample: StepSample | None, pooled: int, even: bool = True) -> str:
    """"" where `conflux_plan_counts` walks every step with every row's own pivot
    counts, else how it pools the rows (`POOLED_FORMULA`) and samples the steps
    (`SAMPLED_FORMULA`), with their errors (`even`: every process row holds as many
    rows), for the record's formulas (its "sample" and "pooled")."""
    formula = POOLED_ONE_FORMULA if pooled == 1 else POOLED_FORMULA
    note = formula.format(groups=pooled, error=POOLED_ERROR,
                          msgs_error=POOLED_MSGS_ERROR) if pooled else ""
    if sample is None:
        return note
    return note + SAMPLED_FORMULA.format(
        steps=sample.steps, tail=sample.tail, blocks=int(sample.sampled.sum()) // sample.block,
        block=sample.block, stride=sample.stride, shift=SHIFTED if sample.shift else "",
        degree=SAMPLE_DEGREE, error=SAMPLED_ERROR if even else SAMPLED_UNEQUAL_ERROR,
        msgs_error=SAMPLED_MSGS_ERROR)


def record_block(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                 pivots: str | Sequence[np.ndarray] = "uniform",
                 placement: Placement | None = None, per_rank: bool = True) -> dict:
    """The record's `model` block, its time from the critical-path prediction (where
    the steps are sampled, both formulas say so: `sampled_note`); `per_rank`: with
    every rank's bytes (`RankCosts.record_block`)."""
    placement = placement or profile.placement(px * py * c)
    counts = conflux_plan_counts(n, v, px, py, c, pivots, profile, placement, by_group=True)
    note = sampled_note(counts["sample"], counts["pooled"], TileMap(n, v, px, 1).even_rows)
    block = _costs(counts, pivots).record_block(profile, placement, per_rank)
    block["time_s"] = counts["time_s"]
    block["time_formula"] = TIME_FORMULA + note
    block["formula"] += note
    return block


def candidate_row(n: int, mem_bytes: float, profile: MachineProfile, placement: Placement,
                  config: tuple[int, int, int, int]) -> dict:
    """The predicted costs of config = (Px, Py, c, v) for a 2.5D LU of order n, pivots
    uniform: bytes per rank (received, wire sent and received, logical sent; `wire_max`
    is the busiest rank's larger wire direction, max over ranks of max(sent, received)),
    messages, flops, memory (and whether it is within `mem_bytes`) and time (`placement`:
    where the ranks sit). One candidate of `linalg_io.lu.plan.candidates`."""
    px, py, c, v = config
    counts = conflux_plan_counts(n, v, px, py, c, "uniform", profile, placement)
    costs = _costs(counts, "uniform")
    sample = counts["sample"]
    wire_sent, wire_recv, _ = costs.wire()
    mem = memory_words(n, v, px, py, c) * WORD
    return {"px": px, "py": py, "c": c, "v": v,
            "bytes_recv_max": float(costs.bytes_recv.max()),
            "bytes_recv_mean": float(costs.bytes_recv.mean()),
            "wire_sent_max": float(wire_sent.max()),
            "wire_recv_max": float(wire_recv.max()),
            "wire_max": float(np.maximum(wire_sent, wire_recv).max()),
            "wire_mean": float(np.maximum(wire_sent, wire_recv).mean()),
            "bytes_sent_max": float(costs.bytes_sent.max()),
            "bytes_sent_mean": float(costs.bytes_sent.mean()),
            "msgs_max": float(costs.msgs_sent.max()),
            "msgs_mean": float(costs.msgs_sent.mean()),
            "flops_max": float(costs.flops.max()),
            "mem_bytes": mem, "fits": mem <= mem_bytes,
            "time_s": counts["time_s"],
            "sampled_steps": None if sample is None else (len(sample.rows), sample.steps),
            "pooled_rows": counts["pooled"] or None}
