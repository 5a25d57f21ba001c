"""The rank classes of the 2.5D LU's steps (`linalg_io.models.conflux`), found at the
ranks where a feature can change, not by comparing every rank of every step.

At step k a process row x costs what its rows a_x, its pivots p_x, its position r = (x
- kx) mod Px (`RowRole`) and, c = 1, its Bruck windows of the pivot counts make it
cost; a process column y what its trailing columns t_y and its position j = (y - ky)
mod Py (`ColumnRole`) and, where the groups' members share nodes
(`linalg_io.models.conflux_nodes`), its messages between nodes make it cost. Each
changes only at a few ranks of a step:

  RowRole              r in {0, 1, q, q+1, Px-q, Px-q+1, Px-1} (q: `butterfly_size`)
  ColumnRole           j in {0, 1, Py-1, j', j'+1}, j' = (ky_{k+1} - ky) mod Py
  a_x, p_x             where they change along the process rows (`pivot_changes`)
  t_y                  (cyclic columns) j in {0, 1, m mod Py, m mod Py + 1}, m = the
                       tiles after k: columns 1 .. m mod Py hold one tile more, column
                       m mod Py the last (narrower) tile
  a row's crossings    the columns where a row's node, hop in or hop out changes
                       (`Members.boundaries`; its tree's edges: the steps below)

but for the steps where a broadcast is small enough to take a binomial tree (CHILDREN:
every rank's children count, and the tree's edges between nodes) or, c = 1, the pivots
are unequal (the Bruck windows): there every rank is a break; and where a process
column's members share nodes (`linalg_io.models.conflux_nodes.node_groups`), every
process row of every step is one: whether its tournament partners and its Bruck
windows' receivers sit on other nodes (`Members.butterfly`, `bruck_across`) turns with
its place within its node. `classes_at` (`linalg_io.models.rank_classes`) classes the
runs between the breaks; the costs are read at each class's representative. The
classes are the same as comparing every rank's features (tests/conflux_walk.py and
the reference tests/conflux_model_reference.py hold the totals to them), in O(steps
x breaks), not O(steps x ranks).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from functools import lru_cache, partial

import numpy as np
from linalg_io.models.conflux_nodes import Hops, Members, bruck_across
from linalg_io.models.rank_classes import RunClasses, classes_at, run_classes, stacked

from linalg_io.layout.conflux_layout import StepPlan, butterfly_size
from linalg_io.layout.schedules import (
    SMALL_BYTES,
    allgatherv_costs,
    binomial_children,
    bruck_rounds,
    gatherv_costs,
)
from linalg_io.layout.words import WORD

# the x figures of the tournament's messages between nodes at steps k and k+1
BUTTERFLY = ("butterfly", "butterfly_next")
# [step, process row] entries of each table at once where a column's members share nodes
BLOCK_ELEMENTS = 1 << 20
# the most entries of a column's tables at every root kept per grid (`_rotations`)
ROTATION_CELLS = 1 << 20


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


def panel_widths(tiles) -> np.ndarray:
    """[step] columns of each panel (the last one may be narrower)."""
    return np.minimum(tiles.v, tiles.n - np.arange(tiles.ntiles) * tiles.v).astype(float)


def _trailing_table(tiles) -> np.ndarray:
    """[step, process column] local columns right of each panel (tiles > k)."""
    steps = tiles.ntiles
    by_column = np.zeros((steps + 1, tiles.py))
    by_column[np.arange(steps), tiles.col_owner(np.arange(steps))] = panel_widths(tiles)
    after = np.cumsum(by_column[::-1], axis=0)[::-1]      # tiles >= j
    return after[1:]


@dataclass(frozen=True)
class StepRanks:
    """The classes of the process rows (`xs`) and columns (`ys`) at each step, and the
    figures the model reads at their representatives, [step, class] each: `x`
    "active", "owned", "role" (r), "bruck_sent", "bruck_msgs" (c = 1: the Bruck
    allgatherv of the pivot counts, in rows), "others" (the pivots the other process
    rows own), "gather_sent", "gather_recv", "gather_msgs" (the gatherv of the pivot
    counts onto row kx, in rows); `y` "trailing", "along" (j), "code" (`ColumnRole`).
    Where a process column's members share nodes (node group "col"), also `x`
    BUTTERFLY (the tournament's messages between nodes at steps k and k+1) and
    "bruck_across_sent", "_recv", "_msgs" (c = 1) or "gather_across_sent", "_recv",
    "_msgs" (c > 1, bytes): the pivot rows' messages between nodes; and `x_hops` the
    column's crossings (`Hops`). Where a row's share nodes, `y_hops` its crossings (the
    tree's edges only at the steps where a row broadcast is small enough to take one)."""

    xs: RunClasses
    ys: RunClasses
    x: dict
    y: dict
    x_hops: Hops | None = None
    y_hops: Hops | None = None


def _least_positive(steps: int, step: np.ndarray, values: np.ndarray) -> np.ndarray:
    """[step] the least of `values` > 0 at each step (inf where none is)."""
    least = np.full(steps, np.inf)
    np.minimum.at(least, step, np.where(values > 0, values, np.inf))
    return least


def _at_offsets(root: np.ndarray, offsets: list, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(step, rank) flat of rank (root[k] + offset) mod n for each offset ([step] arrays
    or numbers) at every step k."""
    steps = len(root)
    ranks = np.stack([np.broadcast_to((root + offset) % n, (steps,)) for offset in offsets],
                     axis=1)
    return np.repeat(np.arange(steps), len(offsets)), ranks.reshape(-1)


def _with_dense(steps: int, n: int, breaks: tuple, dense: np.ndarray) -> tuple:
    """`breaks` (step, rank) plus every rank of the steps where `dense`."""
    chosen = np.flatnonzero(dense)
    return (np.concatenate([breaks[0], np.repeat(chosen, n)]),
            np.concatenate([breaks[1], np.tile(np.arange(n), len(chosen))]))


def step_ranks(plan: StepPlan, slices: np.ndarray, active: np.ndarray, owned: np.ndarray,
               changes: tuple[np.ndarray, np.ndarray],
               groups: dict[str, Members], at: np.ndarray | None = None) -> StepRanks:
    """The classes of `conflux_plan_counts` (module doc): `slices` [step, layer], `groups`
    the node groups (`linalg_io.models.conflux_nodes.node_groups`); at the steps `at`
    (ascending, one row of the classes' tables each), else at every step: `active` and
    `owned` [row, process row] their pivot counts (`pivot_counts`' rows there), `changes`
    the (row, process row) where those change along the process rows (`pivot_changes`,
    `pivots_at`)."""
    tiles = plan.tiles
    px, py, steps = tiles.px, tiles.py, tiles.ntiles
    k = np.arange(steps) if at is None else np.asarray(at, dtype=np.int64)
    rows = len(k)
    every_row = np.arange(rows)
    widths = panel_widths(tiles)
    w = widths[k]
    kx, ky = k % px, tiles.col_owner(k)
    nxt = np.minimum(k + 1, steps - 1)
    q = butterfly_size(px)

    # process columns: trailing columns and positions
    after = steps - 1 - k                                 # tiles right of panel k
    if tiles.reflected:
        table = _trailing_table(tiles)

        def trailing_at(at, y):
            return table[k[at], y]
    else:
        def trailing_at(at, y):
            # tiles J in (k, ntiles) with J = y mod Py, the last one narrower
            step = k[at]
            count = (steps - 1 - y) // py - (step - y) // py
            last = (y == (steps - 1) % py) & (step < steps - 1)
            return count * float(tiles.v) - last * (tiles.v - widths[-1])
    next_column = (tiles.col_owner(nxt) - ky) % py
    y_breaks = _at_offsets(ky, [0, 1, py - 1, next_column, next_column + 1,
                                after % py, after % py + 1], py)
    row, col = groups.get("row"), groups.get("col")
    if row is not None:
        moved = row.boundaries()
        y_breaks = (np.concatenate([y_breaks[0], np.repeat(every_row, len(moved))]),
                    np.concatenate([y_breaks[1], np.tile(moved, rows)]))
    least_trailing = _least_positive(rows, np.append(y_breaks[0], every_row),
                                     trailing_at(np.append(y_breaks[0], every_row),
                                                 np.append(y_breaks[1], 0 * every_row)))

    # process rows: pivots and positions
    offsets = sorted({0, 1, q % px, (q + 1) % px, (px - q) % px, (px - q + 1) % px, px - 1})
    role_breaks = _at_offsets(kx, offsets, px)
    x_breaks = (np.concatenate([role_breaks[0], changes[0]]),
                np.concatenate([role_breaks[1], changes[1]]))
    left = active[x_breaks] - owned[x_breaks]
    least_left = np.minimum(_least_positive(rows, x_breaks[0], left),
                            _least_positive(rows, every_row, active[:, 0] - owned[:, 0]))
    least_slice = np.where(slices[k] > 0, slices[k], np.inf).min(axis=1)
    column_small = least_slice * least_trailing * WORD <= SMALL_BYTES
    row_small = (w * w * WORD <= SMALL_BYTES) | (least_left * least_slice * WORD
                                                  <= SMALL_BYTES)

    x_codes, x_children = _row_roles(px)

    def role_at(at, x):
        return (x - kx[at]) % px

    def x_code_at(at, x):
        role = role_at(at, x)
        return (x_codes[role] + RowRole.CHILDREN * x_children[role] * column_small[at]
                ).astype(float)

    x_features = [lambda at, x: active[at, x], lambda at, x: owned[at, x], x_code_at]
    x_dense = column_small.copy()
    figures = {}
    if plan.redundant_u:
        unequal = np.zeros(rows, dtype=bool)
        unequal[changes[0][owned[changes] != owned[changes[0], 0]]] = True
        x_dense |= unequal
        if col is None:
            # (where a column's members share nodes, its classes take these tables a
            # block at a time, from the pass that finds its windows between nodes)
            bruck_sent_at, bruck_msgs_at = _bruck_features(owned, unequal)
            x_features += [bruck_sent_at, bruck_msgs_at]
            figures.update(bruck_sent=bruck_sent_at, bruck_msgs=bruck_msgs_at)
    if col is None:
        xs = classes_at(rows, px, *_with_dense(rows, px, x_breaks, x_dense),
                        lambda at, x: [feature(at, x) for feature in x_features])
        tables, col_hops = {}, None
    else:
        xs, tables, col_hops = _shared_column_classes(
            col, k, owned, x_features, unequal if plan.redundant_u else None)

    y_children = binomial_children(np.arange(py), py)

    def along_at(at, y):
        return (y - ky[at]) % py

    def y_code_at(at, y):
        j = along_at(at, y)
        return (ColumnRole.FIRST * (j == 0) + ColumnRole.LAST * (j == py - 1)
                + ColumnRole.NEXT_PANEL * (j == next_column[at])
                + ColumnRole.CHILDREN * y_children[j] * row_small[at])

    y_features = [trailing_at, lambda at, y: y_code_at(at, y).astype(float)]
    if row is not None:
        def row_hops_at(at, y):
            """The row's crossings, its tree's edges only where a row broadcast is small
            (elsewhere every one is a chain, > SMALL_BYTES, or empty): found only there,
            the chains' hops (`Members.hops_at`'s but the tree's) alone elsewhere."""
            at, y = np.broadcast_arrays(at, y)
            tree = row_small[at]
            nodes = row.nodes
            g = len(nodes)
            parent, children = np.zeros(at.shape, dtype=bool), np.zeros(at.shape)
            if tree.any():
                edges = row.hops_at(ky[at[tree]], y[tree])
                parent[tree], children[tree] = edges.parent, edges.children
            return Hops(nodes[y] != nodes[(y - 1) % g], nodes[y] != nodes[(y + 1) % g], parent,
                        children, nodes[y] != nodes[ky[at] % g])

        y_features.append(lambda at, y: _hops_code(row_hops_at(at, y)))
    ys = classes_at(rows, py, *_with_dense(rows, py, y_breaks, row_small),
                    lambda at, y: [feature(at, y) for feature in y_features])

    at = every_row[:, None]
    # (a table alike on every process row: a view of one column, not Px)
    others = owned[:, 0] * px if owned.strides[1] == 0 else owned.sum(axis=1)
    x_rep, y_rep = xs.rep, ys.rep
    owned_rep = owned[at, x_rep]
    is_root = x_rep == kx[:, None]
    gathered = np.where(is_root, 0.0, owned_rep * WORD)
    x = {"active": active[at, x_rep], "owned": owned_rep, "role": role_at(at, x_rep),
         "others": others[:, None] - owned_rep,
         "gather_sent": gathered,
         "gather_recv": np.where(is_root, (others - owned[every_row, kx])[:, None] * WORD,
                                 0.0),
         "gather_msgs": (gathered > 0) * 1.0,
         **{name: figure(at, x_rep) for name, figure in figures.items()}}
    x.update(tables)
    y = {"trailing": trailing_at(at, y_rep), "along": along_at(at, y_rep),
         "code": y_code_at(at, y_rep)}
    return StepRanks(xs=xs, ys=ys, x=x, y=y,
                     x_hops=col_hops,
                     y_hops=None if row is None else row_hops_at(at, y_rep))


def _bruck_features(owned: np.ndarray, unequal: np.ndarray) -> tuple:
    """(sent, messages) at (row, process row) of the Bruck allgatherv of the pivot counts
    `owned` [row, process row], in rows (`allgatherv_costs`): of rows of equal counts
    (`unequal` False) m of them each round, else from their tables (`_bruck_tables`)."""
    row_of = np.cumsum(unequal) - 1
    dense_sent, dense_msgs = _bruck_tables(owned, np.flatnonzero(unequal))

    def bruck_sent_at(at, x):
        equal_sent = _equal_blocks(owned[at, x], owned.shape[1])[0]
        if not unequal.any():
            return equal_sent
        return np.where(unequal[at], dense_sent[row_of[at], x], equal_sent)

    def bruck_msgs_at(at, x):
        equal_msgs = _equal_blocks(owned[at, x], owned.shape[1])[1]
        if not unequal.any():
            return equal_msgs
        return np.where(unequal[at], dense_msgs[row_of[at], x], equal_msgs)

    return bruck_sent_at, bruck_msgs_at


def _bruck_tables(owned: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sent, messages) [row, process row] of the Bruck allgatherv of the pivot counts
    owned[rows] (`allgatherv_costs`), BLOCK_ELEMENTS entries at a time: its temporaries
    (the prefix sums of each row twice over, ...) those of a block, not of every row."""
    px = owned.shape[1]
    sent, msgs = np.empty((len(rows), px)), np.empty((len(rows), px))
    per_block = max(1, BLOCK_ELEMENTS // px)
    for first in range(0, len(rows), per_block):
        block = slice(first, first + per_block)
        sent[block], _, msgs[block] = allgatherv_costs(owned[rows[block]])
    return sent, msgs


@lru_cache(maxsize=8)
def _row_roles(px: int) -> tuple[np.ndarray, np.ndarray]:
    """[r] the `RowRole` bits of each position r = (x - kx) mod Px but CHILDREN, and its
    children in a binomial tree (the same every step of a grid: made once, read-only)."""
    r = np.arange(px)
    r_next = (r - 1) % px
    q = butterfly_size(px)
    codes = (RowRole.FIRST * (r == 0) + RowRole.LAST * (r == px - 1)
             + RowRole.FOLDS * (r >= q) + RowRole.UNFOLDED * (r < px - q)
             + RowRole.FOLDS_NEXT * (r_next >= q) + RowRole.UNFOLDED_NEXT * (r_next < px - q))
    children = binomial_children(r, px)
    codes.flags.writeable = children.flags.writeable = False
    return codes, children


def _shared_column_classes(col: Members, k: np.ndarray, owned: np.ndarray,
                           x_features: list, unequal: np.ndarray | None
                           ) -> tuple[RunClasses, dict, Hops]:
    """The classes of the process rows where a process column's members share nodes
    (module doc) at the steps k (`owned`: a row each): every process row of every step
    apart, from [step, row]
    tables of its features and of its crossings (`Hops`), tournaments (BUTTERFLY) and
    pivot rows' messages between nodes, built BLOCK_ELEMENTS entries at a time;
    (classes, those tables' figures at the representatives [step, class], the crossings
    there). c = 1 (`unequal` not None: the rows whose pivot counts differ along the
    process rows), the pivot rows' Bruck allgatherv: its windows between nodes and,
    from the same pass, its "bruck_sent" and "bruck_msgs" (features after `x_features`',
    as `step_ranks` orders them, then figures)."""
    steps, px = len(k), owned.shape[1]
    kx = k % px
    per_block = max(1, BLOCK_ELEMENTS // px)
    blocks, figures, crossings = [], [], []
    for first in range(0, steps, per_block):
        at = np.arange(first, min(steps, first + per_block))
        hops, *tournaments = _column_tables(col, k[at])
        tables = dict(zip(BUTTERFLY, tournaments))
        bruck = {}
        if unequal is not None:
            *across, every_sent, every_msgs = bruck_across(owned[at], col, every=True)
            tables.update(zip(("bruck_across_sent", "bruck_across_recv", "bruck_across_msgs"),
                              across))
            bruck = _bruck_block(owned[at], unequal[at], every_sent, every_msgs)
        else:
            tables.update(zip(("gather_across_sent", "gather_across_recv",
                               "gather_across_msgs"),
                              gatherv_costs(owned[at] * WORD * hops.from_root,
                                            kx[at, None])))
        # one key each for the crossings and the two steps' tournaments (small counts)
        keys = [_hops_code(hops), tables[BUTTERFLY[0]] + 1024.0 * tables[BUTTERFLY[1]]]
        keys += [tables[name] for name in tables if name not in BUTTERFLY]
        every = (at[:, None], np.arange(px)[None, :])
        block = run_classes([np.broadcast_to(feature(*every), (len(at), px))
                             for feature in x_features] + list(bruck.values()) + keys)
        rows = np.arange(len(at))[:, None]
        blocks.append(block)
        tables.update(bruck)
        figures.append({name: _at_reps(rows, block.rep, table) for name, table in tables.items()})
        crossings.append(hops.at(partial(_at_reps, rows, block.rep)))
    xs = stacked(blocks)

    def joined(parts: list) -> np.ndarray:
        """[step, class] of each block's (figures at its representatives, at rank 0):
        the padding of a block with fewer classes reads rank 0, as `rep` 0 does."""
        return np.concatenate([np.concatenate(
            [values, np.repeat(zero[:, None], xs.size - values.shape[1], axis=1)], axis=1)
            for values, zero in parts])

    tables = {name: joined([figure[name] for figure in figures]) for name in figures[0]}
    hops = Hops(*(joined([getattr(part, f.name) for part in crossings])
                  for f in fields(Hops)))
    return xs, tables, hops


def _bruck_block(owned: np.ndarray, unequal: np.ndarray, every_sent: np.ndarray,
                 every_msgs: np.ndarray) -> dict:
    """{"bruck_sent", "bruck_msgs"} [row, process row] of `_bruck_features` for a block's
    rows: of rows of equal counts m of them each round, else the allgatherv's own
    (`bruck_across`'s every_sent, every_msgs)."""
    equal = ~unequal[:, None]
    sent, msgs = _equal_blocks(owned, owned.shape[1])
    return {"bruck_sent": np.where(equal, sent, every_sent),
            "bruck_msgs": np.where(equal, msgs, every_msgs)}


def _equal_blocks(owned: np.ndarray, px: int) -> tuple[np.ndarray, np.ndarray]:
    """(sent, messages) of the Bruck allgatherv over px ranks where every block is
    `owned` rows: m of them in each round (h, m), a message a round where they are some."""
    rounds = bruck_rounds(px)
    return owned * float(sum(m for _, m in rounds)), (owned > 0) * float(len(rounds))


def _column_tables(col: Members, k: np.ndarray) -> tuple[Hops, np.ndarray, np.ndarray]:
    """[step, member] the crossings of a process column's members at the steps k (roots
    kx = k mod Px, `Members.hops`) and the tournament's messages between nodes at steps
    k and k+1 (`Members.butterfly`). Where the members sit r to a node in order (node
    slot x // r, Px a multiple of r), turning the root, or the roles, by r turns the
    nodes by one: the tables at s are those at s mod r, moved by s - s mod r (the same
    counts); those r rows are made once per grid (`_rotations`), not at every step."""
    g = len(col.nodes)
    per_node = int(np.count_nonzero(col.nodes == col.nodes[0]))
    if (g % per_node or per_node * g > ROTATION_CELLS
            or not np.array_equal(col.nodes, np.arange(g) // per_node)):
        return col.hops(k % g), col.butterfly(k), col.butterfly(k + 1)
    hops, butterfly = _rotations(g, per_node)
    members = np.arange(g)

    def turned(shifts: np.ndarray) -> np.ndarray:
        """Flat indices into a [residue, member] table of the tables at `shifts`."""
        residue = shifts % per_node
        return residue[:, None] * g + (members[None, :] - (shifts - residue)[:, None]) % g

    now = turned(k % g)
    return (hops.at(lambda table: table.reshape(-1)[now]), butterfly.reshape(-1)[now],
            butterfly.reshape(-1)[turned((k + 1) % g)])


@lru_cache(maxsize=2)
def _rotations(g: int, per_node: int) -> tuple[Hops, np.ndarray]:
    """(`Members.hops` at roots, `Members.butterfly` at shifts 0 .. per_node - 1) of g
    members per_node to a node in order: [residue, member] (`_column_tables`),
    read-only."""
    members = Members(np.arange(g) // per_node)
    residues = np.arange(per_node)
    hops, butterfly = members.hops(residues), members.butterfly(residues)
    for table in (*(getattr(hops, f.name) for f in fields(Hops)), butterfly):
        table.flags.writeable = False
    return hops, butterfly


def _at_reps(rows: np.ndarray, rep: np.ndarray, table: np.ndarray) -> tuple:
    """A block's [step, row] table at its representatives and at row 0 (`joined`): a
    copy, not a view that would keep the block's whole table."""
    return table[rows, rep], table[:, 0].copy()


def _hops_code(hops: Hops) -> np.ndarray:
    """The crossings of `Hops` as one number each (the children's count above the bits
    of the other four), a class key."""
    return (hops.cross_in + 2.0 * hops.cross_out + 4.0 * hops.parent + 8.0 * hops.from_root
            + 16.0 * hops.children)

