"""The 2.5D (COnfLUX) model as it was before its spread and classes were made faster
(`models/conflux.py` and `models/rank_classes.py` at commit 31c85bb, verbatim but for
this paragraph and the imports; its time and its counts by link take a row's, column's
or fibre's messages on and between nodes apart where its members share nodes, as the
model does since, `linalg_io.models.conflux_nodes`): the
reference tests/test_model_identity.py holds the model to, at sizes the per-rank walk
(tests/conflux_walk.py) cannot reach.

Model of the 2.5D LU with tournament pivoting (linalg_io/lu/conflux.py).

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
(y - ky) mod Py along the rows (and whether it is step k+1's panel column); for its
layer, everything. Ranks of equal features form a class (`linalg_io.models.
rank_classes`); each step is evaluated once per (layer, x class, y class), at a
representative of each class, with the schedules' own cost functions, and the
totals are spread back to every rank. Only the pivot ids' broadcast, a binomial tree
over all P ranks, depends on the world rank itself: its counts per rank are the
cyclic convolution of the roots' step counts with the tree's per-position costs
(exact integers, by FFT), its time the same every step but the last. The result is
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

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
from linalg_io.models.conflux_nodes import (
    HOP,
    NET,
    NODE,
    across_part,
    bcast_across,
    bruck_across,
    node_groups,
    reduce_across,
    split_keys,
    timed_links,
)
from linalg_io.models.conflux_pivots import pivot_counts
from linalg_io.models.costs import (
    RankCosts,
    crossing_links,
    link_split,
    waiting_makespans,
)
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import BLAS, PANEL_RATE, gemm_efficiency

from linalg_io.layout.conflux_layout import StepPlan, butterfly_size
from linalg_io.layout.schedules import (
    SMALL_BYTES,
    allgatherv_costs,
    bcast_costs,
    bcast_node_costs,
    binomial_children,
    reduce_costs,
)

WORD = 8
# the phases of `ConfluxLU.step`, in the order it runs them (the names of its
# `comm.phase` regions, plus "solves" and "update": local work only)
PHASES = ("reduce_panel", "tournament_pivoting", "push_pivots", "solves", "scatter_slices",
          "update")
# the communicators whose bytes the inter-node split follows (the pivot ids' go to the
# whole world and are split by their roots)
COMM_GROUPS = ("row", "col", "fibre")
# a group's collectives that only one process column (@column: y = ky) or row (@row:
# x = kx) of each layer runs: a node's ranks share its links only as far as they run them
# (`link_keys`)
ALONG = ("", "@column", "@row")


def link_keys(px: int, py: int, c: int, placement: Placement | None) -> dict:
    """{traffic key: the `Links` key it is timed on}: a group's span (a process row Py
    ranks, a layer's column Px Py, a fibre and the world all P) and, for the @column and
    @row keys, (span, the ranks of a node that use its links at once): of a node's r
    consecutive ranks of a layer, max(1, r // Py) lie in one process column and min(r,
    Py) in one process row."""
    p = c * px * py
    r = placement.ranks_per_node if placement is not None else p
    keys = {"row": py, "col": px * py, "fibre": p, "world": p}
    for group in COMM_GROUPS:
        keys[group + "@column"] = (keys[group], max(1, r // py))
        keys[group + "@row"] = (keys[group], min(r, py))
    return {**keys, **split_keys(keys, px, py, node_groups(px, py, c, placement))}


class RowRole(enum.IntFlag):
    """The features of a process row at step k that its costs depend on (besides its
    rows and pivots), by its position r = (x - kx) mod Px: the ends of the chains and
    trees down a column, its tournament roles at steps k and k+1 (q: `butterfly_size`);
    CHILDREN is a multiplier, not a bit: its children in a binomial tree, counted where
    some broadcast of the step is small enough to take one."""

    FIRST = 1            # r = 0: the root (process row kx)
    LAST = 2             # r = Px - 1
    FOLDS = 4            # r >= q: folds its candidates into r - q, then waits
    UNFOLDED = 8         # r < Px - q: receives a fold
    FOLDS_NEXT = 16      # the same two at step k+1 (the look-ahead's panel)
    UNFOLDED_NEXT = 32
    CHILDREN = 64


class ColumnRole(enum.IntFlag):
    """The same for a process column at position j = (y - ky) mod Py along the rows."""

    FIRST = 1            # j = 0: the panel's column
    LAST = 2             # j = Py - 1
    NEXT_PANEL = 4       # j = (ky_{k+1} - ky) mod Py: step k+1's panel column
    CHILDREN = 8


def _getrf_flops(m, n):
    """Flops of getrf on an m x n block (arrays or numbers)."""
    k = np.minimum(m, n)
    return np.maximum(m, n) * k * k - k**3 / 3.0


@dataclass
class _Piece:
    """Bytes and messages per communicator group ((sent, recv, msgs, serial): `add`),
    flops and their time-equivalent
    (flops at the rate they run, in gamma-flops) of one piece of every step, arrays
    [step, layer, x class, y class]; `phases` the same per phase of the code
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
        each (`linalg_io.models.costs.link_terms`); `across`: its part between nodes,
        kept apart (`linalg_io.models.conflux_nodes`)."""
        if across is not None:
            part, between = across
            self.add(group + part, mask, between, phase)
            self.add(group + NODE, mask, tuple(np.asarray(c, dtype=float) - b
                                               for c, b in zip(costs, between)), phase)
            return
        sent, recv, msgs = (mask * np.asarray(c, dtype=float) for c in costs)
        old = self.traffic.get(group, (0.0,) * 4)
        self.traffic[group] = tuple(o + c for o, c in
                                    zip(old, (sent, recv, msgs, np.maximum(sent, recv))))
        if self.phases is not None and phase is not None:
            self._phase(phase).add(group, mask, costs)

    def work(self, flops, rate: float = 1.0, phase: str | None = None) -> None:
        self.flops = self.flops + flops
        self.slow = self.slow + flops * (1.0 / rate - 1.0)
        if self.phases is not None and phase is not None:
            self._phase(phase).work(flops, rate)

    def _phase(self, phase: str) -> _Piece:
        assert phase in PHASES, phase
        return self.phases.setdefault(phase, _Piece(self.shape))

    def totals(self) -> np.ndarray:
        """[sent, recv, msgs, flops] summed over the groups, full shape."""
        parts = [sum((t[i] for t in self.traffic.values()), 0.0) for i in range(3)]
        return np.stack([np.broadcast_to(a, self.shape) for a in parts + [self.flops]])

    def seconds(self, profile: MachineProfile, placement: Placement,
                spans: dict) -> tuple[np.ndarray, np.ndarray]:
        """(work, wait) per rank: its flops and on-node messages, which take its core,
        and its messages on the network, which do not (`link_split`)."""
        links = timed_links(self.traffic, spans)
        inside, across = link_split(links, profile, placement) if links else (0.0, 0.0)
        return (np.broadcast_to(inside + (self.flops + self.slow) / profile.gamma_flops,
                                self.shape), np.broadcast_to(across, self.shape))


def _widths(tiles) -> np.ndarray:
    """[step] columns of each panel (the last one may be narrower)."""
    return np.minimum(tiles.v, tiles.n - np.arange(tiles.ntiles) * tiles.v).astype(float)


def _trailing(tiles, steps: int) -> np.ndarray:
    """[step, process column] local columns right of each panel (tiles > k)."""
    widths = _widths(tiles)
    by_column = np.zeros((steps + 1, tiles.py))
    by_column[np.arange(steps), tiles.col_owner(np.arange(steps))] = widths
    after = np.cumsum(by_column[::-1], axis=0)[::-1]      # tiles >= j
    return after[1:]


def conflux_plan_counts(n: int, v: int, px: int, py: int, c: int,
                        pivots: str | Sequence[np.ndarray] = "none",
                        profile: MachineProfile | None = None,
                        placement: Placement | None = None, by_phase: bool = False,
                        by_group: bool = False) -> dict:
    """Per-rank totals, arrays [layer, x, y]: "sent", "recv" (bytes), "msgs", "flops";
    with a profile also "time_s", the critical path of the code's schedule on the
    profile's machine (`placement`: where the P ranks sit, default the profile's); with
    `by_phase`, "by_phase": {phase: the same four arrays, "gamma_flops" and "links"
    (`_by_phase`)} for the `PHASES` of `ConfluxLU.step` in its order (they sum to the
    totals, but for the panel rows' solve with Px = 1, which the code does not run: the
    getrf of the panel gives L; the pivot ids' broadcast is push_pivots', the local
    getrf and merges tournament_pivoting's); with `by_group`,
    "by_group": {group: (sent, recv) arrays [layer, x, y]} of the row, column and fibre
    communicators, and "id_roots" (the pivot ids' root and bytes per step), for the
    inter-node split (`node_traffic`).

    A rank's time for a piece of work is the sum over its collectives, one after
    another, of alpha msgs + beta max(sent, recv) (a rank sends while it receives only
    inside one collective: a chain, a Bruck round), at the rates of the link each
    crosses (`MachineProfile.link`), + flops/gamma, the trailing update's
    flops at gamma times `gemm_efficiency(s_l)`, getrf and trsm at gamma times
    PANEL_RATE. Per step k and rank r, four pieces, in the order `ConfluxLU.step`
    runs them:

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
    """
    plan = StepPlan.create(n, v, px, py, c)
    tiles = plan.tiles
    steps, p = tiles.ntiles, c * px * py
    k = np.arange(steps)
    w = _widths(tiles)
    kx, lk = k % px, (k // py) % c
    nxt = np.minimum(k + 1, steps - 1)                   # step k+1 (the last: unused)
    layer = np.arange(c)
    slices = (w[:, None] // c + (layer[None, :] < w[:, None] % c)).astype(float)
    active, owned = pivot_counts(plan, pivots)
    trailing = _trailing(tiles, steps)
    q = butterfly_size(px)
    rounds = q.bit_length() - 1

    # classes of the process rows and columns at each step (module doc); a position's
    # children in a binomial tree matter only at steps where a broadcast is that small
    role = (np.arange(px)[None, :] - k[:, None]) % px
    rows_left = active - owned
    r = np.arange(px)
    r_next = (r - 1) % px
    x_code = (RowRole.FIRST * (r == 0) + RowRole.LAST * (r == px - 1)
              + RowRole.FOLDS * (r >= q) + RowRole.UNFOLDED * (r < px - q)
              + RowRole.FOLDS_NEXT * (r_next >= q) + RowRole.UNFOLDED_NEXT * (r_next < px - q)
              )[role] \
        + RowRole.CHILDREN * binomial_children(r, px)[role] * _small(slices, trailing)[:, None]
    x_features = [active, owned, x_code.astype(float)]
    if plan.redundant_u:
        bruck_sent, _, bruck_msgs = allgatherv_costs(owned)
        x_features += [bruck_sent, bruck_msgs]
    if profile is not None:
        placement = placement or profile.placement(p)
    groups = node_groups(px, py, c, placement)
    if "col" in groups:
        col_hops = groups["col"].hops(kx)
        butterflies = [groups["col"].butterfly(shifts) for shifts in (k, k + 1)]
        x_features += col_hops.features() + butterflies
        if plan.redundant_u:
            bruck_split = bruck_across(owned, groups["col"])
            x_features += list(bruck_split)
    xs = step_classes(x_features)
    ky = tiles.col_owner(k)
    along = (np.arange(py)[None, :] - ky[:, None]) % py
    j = np.arange(py)
    row_small = (w * w * WORD <= SMALL_BYTES) | _small(rows_left, slices)
    y_code = (ColumnRole.FIRST * (j == 0) + ColumnRole.LAST * (j == py - 1))[along] \
        + ColumnRole.NEXT_PANEL * (along == ((ky[nxt] - ky) % py)[:, None]) \
        + ColumnRole.CHILDREN * binomial_children(j, py)[along] * row_small[:, None]
    row_hops = groups["row"].hops(ky) if "row" in groups else None
    ys = step_classes([trailing, y_code.astype(float),
                       *(row_hops.features() if row_hops else [])])

    step_index = k[:, None]

    def per_x(values: np.ndarray) -> np.ndarray:       # [step, rank] -> [step, 1, class, 1]
        return values[step_index, xs.rep][:, None, :, None]

    def per_y(values: np.ndarray) -> np.ndarray:
        return values[step_index, ys.rep][:, None, None, :]

    def per_l(values: np.ndarray) -> np.ndarray:
        return values[:, :, None, None]

    def per_step(values: np.ndarray) -> np.ndarray:
        return values[:, None, None, None]

    shape = (steps, c, xs.size, ys.size)
    a, p_x = per_x(active), per_x(owned)
    b = a - p_x
    x_pos = per_x(role)                                  # (x - kx) mod Px
    t = per_y(trailing)
    y_pos = per_y(along)                                 # (y - ky) mod Py
    sl = per_l(slices)
    wk = per_step(w)
    on_fibre = per_l((layer[None, :] - lk[:, None]) % c)
    layer_root = per_l(layer[None, :] == lk[:, None])
    on_panel = y_pos == 0

    def between(group, part, costs):
        return (part, costs()) if group in groups else None

    def panel_phase(a_rows, roles, panel_column, layer_is_root, fibre_pos, width, turn):
        """F: reduce_panel, tournament and the panel's getrf on the class grid."""
        piece = _Piece(shape, phases={} if by_phase else None)
        piece.add("fibre@column", panel_column,
                  reduce_costs(fibre_pos, c, a_rows * width * WORD),
                  "reduce_panel",
                  between("fibre", HOP, lambda: reduce_across(
                      groups["fibre"].hops((lk, lk[nxt])[turn]).at(per_l), fibre_pos, c,
                      a_rows * width * WORD)))
        players = panel_column & layer_is_root
        block = width * (width + 1) * WORD
        if px > 1:
            n_sent = np.where(roles >= q, 1, rounds + (roles < px - q))
            piece.add("col@column", players, (n_sent * block, n_sent * block, n_sent),
                      "tournament_pivoting",
                      between("col", NET, lambda: (per_x(butterflies[turn]) * block,) * 2
                              + (per_x(butterflies[turn]),)))
        merges = np.where(roles >= q, 0, rounds + (roles < px - q))
        piece.work(players * (_getrf_flops(a_rows, width) + merges * _getrf_flops(2 * width,
                                                                                  width)),
                   PANEL_RATE, "tournament_pivoting")
        return piece

    panel = panel_phase(a, x_pos, on_panel, layer_root, on_fibre, wk, 0)
    panel_next = panel_phase(b, (x_pos - 1) % px, per_y(y_code) & ColumnRole.NEXT_PANEL > 0,
                             per_l(layer[None, :] == lk[nxt, None]),
                             per_l((layer[None, :] - lk[nxt, None]) % c), per_step(w[nxt]), 1)

    layer_hops = groups["fibre"].hops(lk) if "fibre" in groups else None
    solve = _Piece(shape, phases={} if by_phase else None)
    players = on_panel & layer_root
    solvers = layer_root & (True if plan.redundant_u else x_pos == 0)
    solve.add("row", solvers, bcast_costs(y_pos, py, wk * wk * WORD), "push_pivots",
              between("row", HOP, lambda: bcast_across(row_hops.at(per_y), y_pos, py,
                                                       wk * wk * WORD)))
    solve.work(players * b * wk * wk, PANEL_RATE, "solves" if px > 1 else None)
    solve.add("fibre", True, reduce_costs(on_fibre, c, p_x * t * WORD), "push_pivots",
              between("fibre", HOP, lambda: reduce_across(layer_hops.at(per_l), on_fibre, c,
                                                          p_x * t * WORD)))
    ahead = None
    if plan.redundant_u:
        into = per_x(owned.sum(axis=1, keepdims=True) - owned)

        def pivot_rows(piece, mask, phase=None):
            piece.add("col", mask, (t * WORD * per_x(bruck_sent), t * WORD * into,
                                    (t > 0) * per_x(bruck_msgs)), phase,
                      between("col", NET, lambda: (t * WORD * per_x(bruck_split[0]),
                                                   t * WORD * per_x(bruck_split[1]),
                                                   (t > 0) * per_x(bruck_split[2]))))

        pivot_rows(solve, layer_root, "push_pivots")
        if px > 1 and profile is not None:
            # the look-ahead (models/conflux.py `_overlapped`)
            ahead = _Piece(shape)
            started = on_panel & layer_root & per_step(k > 0)
            pivot_rows(ahead, started)
            before = per_step(w[np.maximum(k - 1, 0)])
            ahead.work(started * 2.0 * a * before * t, gemm_efficiency(before))
    else:
        at_root = x_pos == 0
        others = per_step(owned.sum(axis=1) - owned[k, kx])

        def apart():
            away = per_x(col_hops.from_root)
            elsewhere = per_step((owned * col_hops.from_root).sum(axis=1))
            return (t * p_x * WORD * ~at_root * away, at_root * t * WORD * elsewhere,
                    ((p_x * t) > 0) * ~at_root * away)

        solve.add("col", layer_root, (t * p_x * WORD * ~at_root, at_root * t * WORD * others,
                                      ((p_x * t) > 0) * ~at_root), "push_pivots",
                  between("col", NET, apart))
    solve.work(solvers * wk * wk * t, PANEL_RATE, "solves")
    if c > 1:
        solve.add("fibre@column", on_panel, _scatter(b * WORD, sl, layer_root),
                  "scatter_slices", between("fibre", NET, lambda: _scatter(
                      b * WORD, sl * per_l(layer_hops.from_root), layer_root)))
        solve.add("fibre@row", x_pos == 0, _scatter(t * WORD, sl, layer_root),
                  "scatter_slices", between("fibre", NET, lambda: _scatter(
                      t * WORD, sl * per_l(layer_hops.from_root), layer_root)))
    solve.add("row", True, bcast_costs(y_pos, py, b * sl * WORD), "scatter_slices",
              between("row", HOP, lambda: bcast_across(row_hops.at(per_y), y_pos, py,
                                                       b * sl * WORD)))
    if c > 1:
        solve.add("col", True, bcast_costs(x_pos, px, sl * t * WORD), "scatter_slices",
                  between("col", HOP, lambda: bcast_across(col_hops.at(per_x), x_pos, px,
                                                           sl * t * WORD)))

    update = _Piece(shape, phases={} if by_phase else None)
    update.work(2.0 * b * sl * t, gemm_efficiency(np.maximum(sl, 1.0)), "update")

    counts = [piece.totals() for piece in (panel, solve, update)]
    totals = spread(sum(counts), xs, ys)
    ids = _ids_broadcast(plan, w, p)
    for i, key in enumerate(("sent", "recv", "msgs")):
        totals[i] += ids[key].reshape(c, px, py)
    out = {"sent": totals[0], "recv": totals[1], "msgs": totals[2], "flops": totals[3]}
    if by_phase:
        out["by_phase"] = _by_phase((panel, solve, update), xs, ys, ids, (c, px, py))
    if by_group:
        def group_bytes(group, between_nodes=False):
            return spread(sum(
                np.stack([np.broadcast_to(piece.traffic[key][i], shape) for i in (0, 1)])
                for piece in (panel, solve) for key in piece.traffic
                if key.split("@")[0] == group and (across_part(key) or not between_nodes)),
                xs, ys)

        used = {key.split("@")[0] for piece in (panel, solve) for key in piece.traffic}
        out["by_group"] = {group: group_bytes(group) for group in COMM_GROUPS if group in used}
        out["by_group"].update({group + "@across": group_bytes(group, True)
                                for group in groups if group in used})
        out["id_roots"] = (ids["roots"], (w + 1) * WORD)
    if profile is not None:
        out["time_s"] = _critical_path(profile, placement, (panel, solve, update, panel_next),
                                       xs, ys, ids, link_keys(px, py, c, placement), ahead)
    return out


def _by_phase(pieces, xs: StepClasses, ys: StepClasses, ids: dict, shape: tuple) -> dict:
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
    totals = spread(per_phase, xs, ys)
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


def _small(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per step: whether some first[k, i] second[k, j] WORD bytes > 0 take a binomial
    tree (<= SMALL_BYTES, `linalg_io.layout.schedules`)."""
    def least_positive(values):
        return np.where(values > 0, values, np.inf).min(axis=1)
    return least_positive(first) * least_positive(second) * WORD <= SMALL_BYTES


def _scatter(rows_bytes, slices, layer_root) -> tuple:
    """(sent, received, messages) of the linear scatterv of a panel's column slices over
    each fibre from layer lk: layer l gets `slices`[l] columns of `rows_bytes` bytes."""
    counts = rows_bytes * slices                                  # [step, layer, x, y]
    others = np.where(layer_root, 0.0, counts)
    sent = layer_root * others.sum(axis=1, keepdims=True)
    msgs = layer_root * (others > 0).sum(axis=1, keepdims=True)
    return sent, others, msgs


def _ids_broadcast(plan: StepPlan, w: np.ndarray, p: int) -> dict:
    """The pivot ids' binomial broadcast from (kx, ky, lk) to all P ranks, every step:
    per world rank its sent, received bytes and messages over all steps (the cyclic
    convolution of the roots' counts with the per-position costs, rounded: exact
    integers) and, per step, each position's (sent, received, messages)."""
    t = plan.tiles
    k = np.arange(t.ntiles)
    roots = ((k // t.py) % plan.c * t.px + k % t.px) * t.py + t.col_owner(k)
    position = np.arange(p)
    per_width = {}
    totals = {key: np.zeros(p) for key in ("sent", "recv", "msgs")}
    for width in np.unique(w):
        costs = bcast_costs(position, p, (width + 1) * WORD)
        per_width[width] = costs
        count = np.bincount(roots[w == width], minlength=p).astype(float)
        spectrum = np.fft.rfft(count)
        for key, cost in zip(("sent", "recv", "msgs"), costs):
            totals[key] += np.rint(np.fft.irfft(spectrum * np.fft.rfft(cost), n=p))
    return {**totals, "per_width": per_width, "widths": w, "roots": roots}


def _critical_path(profile, placement, pieces, xs: StepClasses, ys: StepClasses, ids: dict,
                   spans: dict, ahead=None) -> float:
    """time_s of `conflux_plan_counts`: M(F_0) + sum_k [M(I_k) + M(S_k) + M(U_k + F_{k+1})]."""
    panel, solve, update, panel_next = (piece.seconds(profile, placement, spans)
                                        for piece in pieces)
    if ahead is not None:
        # S_k on column ky_k: its allgather on links that overlap costs max(rest of U_{k-1},
        # G) with the update
        links = timed_links(ahead.traffic, spans)
        moving = {key: costs for key, costs in links.items()
                  if profile.overlaps(key[0] if isinstance(key, tuple) else key, placement)}
        inside, across = link_split(moving, profile, placement) if moving else (0.0, 0.0)
        window = (ahead.flops + ahead.slow) / profile.gamma_flops * (
            max(1.0, spans["world"] / placement.shared_cores) if placement.shared_cores else 1.0)
        excess = np.maximum(inside + across - window, 0.0)
        solve = (solve[0] - inside, np.maximum(solve[1] - across, 0.0) + excess)
    steps = panel[0].shape[0]
    weights = (xs.count[:, None, :, None] * ys.count[:, None, None, :]
               * np.ones(panel[0].shape[1])[None, :, None, None]).reshape(steps, -1)
    cores = placement.shared_cores

    def makespan(work: np.ndarray, wait: np.ndarray) -> np.ndarray:
        return waiting_makespans(work.reshape(steps, -1), wait.reshape(steps, -1), cores,
                                 weights)

    following = [np.concatenate([part[:-1], np.zeros_like(part[-1:])]) for part in panel_next]
    ids_time = {}
    for width, costs in ids["per_width"].items():
        inside, across = link_split({spans["world"]: costs}, profile, placement)
        ids_time[width] = float(waiting_makespans(inside, across, cores))
    total = makespan(*panel)[0] + sum(ids_time[width] for width in ids["widths"])
    if spans["row"] == 1 or cores is not None:
        # Py = 1: every rank is on the panel's column (the tournament couples them each
        # step); shared cores: the ranks that do not wait take the cores, step by step
        return float(total + makespan(*solve).sum()
                     + makespan(update[0] + following[0], update[1] + following[1]).sum())
    # Py > 1, a core per rank: the look-ahead starts step k+1's sends right after
    # F_{k+1}, so no rank waits for the panel's column (nor, stepping on, for the busier
    # column of a step): each rank's own S, U and F (work and wait) add up; the busiest
    # total is the time
    own = sum(part[0] + part[1] for part in (solve, update, following))
    return float(total + spread(own, xs, ys).max())


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
    distinct nodes), and the pivot ids' tree edges between nodes."""
    c, px, py = counts["sent"].shape
    p = c * px * py
    spans = {"row": py, "col": px * py, "fibre": p}
    sent, recv = np.zeros(p), np.zeros(p)
    for group, (group_sent, group_recv) in counts["by_group"].items():
        if crossing_links(spans[group], placement):
            sent, recv = sent + group_sent.reshape(-1), recv + group_recv.reshape(-1)
    roots, sizes = counts["id_roots"]
    nodes = np.arange(p) // placement.ranks_per_node
    for size in np.unique(sizes):
        ids_sent, ids_recv = bcast_node_costs(p, size, roots[sizes == size], nodes)
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
                "network's alpha and beta per communicator; M = slowest rank, or the "
                "makespan when ranks share cores; with Py > 1 and a core per rank, the "
                "look-ahead's sends started early: M(F_0) + sum_k M(I_k) + max over ranks of "
                "sum_k [S_k + U_k + F_{k+1}]; conflux_plan_counts)")


def record_block(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                 pivots: str | Sequence[np.ndarray] = "uniform",
                 placement: Placement | None = None) -> dict:
    """The record's `model` block, its time from the critical-path prediction."""
    counts = conflux_plan_counts(n, v, px, py, c, pivots, profile, placement, by_group=True)
    block = _costs(counts, pivots).record_block(profile, placement)
    block["time_s"] = counts["time_s"]
    block["time_formula"] = TIME_FORMULA
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
            "time_s": counts["time_s"]}


# ---- models/rank_classes.py at 31c85bb ----


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
    q = int(np.prod(lead, dtype=np.int64))
    x_first = steps * layers * px * ny * q + ys.groups[1] * ny * py
    y_first = steps * layers * py * nx * q + xs.groups[1] * nx * px
    if x_first <= y_first:
        return _expand_then_sum(values, xs.of, ys, axis=-2)
    swapped = _expand_then_sum(np.swapaxes(values, -1, -2), ys.of, xs, axis=-2)
    return np.swapaxes(swapped, -1, -2)


def _expand_then_sum(values: np.ndarray, expand_of: np.ndarray, summed_classes: StepClasses,
                     axis: int) -> np.ndarray:
    """`spread` with the classes on axis -2 expanded (`expand_of`) and those on the last
    axis summed (`summed_classes`)."""
    *lead, steps, layers, _, n_sum = values.shape
    sum_of = summed_classes.of
    ranks_expanded, ranks_summed = expand_of.shape[1], sum_of.shape[1]
    index = expand_of.reshape((1,) * len(lead) + (steps, 1, ranks_expanded, 1))
    expanded = np.take_along_axis(values, index, axis=axis)          # [.., s, l, x, n_sum]
    group, count = summed_classes.groups
    order = np.argsort(group, kind="stable")
    starts = np.searchsorted(group[order], np.arange(count))
    summed = np.add.reduceat(np.take(expanded, order, axis=-4), starts, axis=-4)
    firsts = order[starts]
    onehot = (sum_of[firsts][:, None, :] == np.arange(n_sum)[None, :, None])  # [g, n, y]
    lhs = np.moveaxis(summed, -4, -2).reshape(-1, count * n_sum)         # [.. l x, g n]
    with BLAS.limit(limits=1, user_api="blas"):
        total = lhs @ onehot.reshape(count * n_sum, ranks_summed).astype(float)
    return total.reshape(*lead, layers, ranks_expanded, ranks_summed)
