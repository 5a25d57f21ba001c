"""Closed forms of what the 2.5D model computed step by step or bit by bit: the
binomial tree's children (`linalg_io.layout.schedules.binomial_children`; and the
bcast's and reduce's costs, their parts at the shapes they vary along), the even
split of the "uniform" pivots (`linalg_io.models.conflux_pivots._even_split`) and a
process column's crossings turned with its root (`linalg_io.models.conflux_classes.
_column_tables`) give, bit for bit, what the loops (kept here) or each step's own
tables give."""

import numpy as np
import pytest
from linalg_io.models.conflux_classes import _column_tables, step_ranks
from linalg_io.models.conflux_nodes import Members, node_groups
from linalg_io.models.conflux_pivots import DUST, _even_split, pivot_changes, pivot_counts
from linalg_io.models.profile import Placement

from linalg_io.layout.conflux_layout import StepPlan, TileMap
from linalg_io.layout.schedules import (
    SMALL_BYTES,
    bcast_costs,
    binomial_child_positions,
    binomial_children,
    chunk_count,
    lowbit_span,
    reduce_costs,
)


def children_loop(q: np.ndarray, p: int) -> np.ndarray:
    """One power of two m at a time: q sends to q + m for m < lowbit(q), q + m < p."""
    q = np.asarray(q, dtype=np.int64)
    span = lowbit_span(q, p)
    children = np.zeros(q.shape, dtype=np.int64)
    m = 1
    while m < p:
        children += (m < span) & (q + m < p)
        m <<= 1
    return children


def even_split_loop(rows: float, widths: np.ndarray, px: int) -> tuple:
    """Step by step: min(w, Px min(a, w))/Px, all of a where less than DUST is left."""
    active, owned = [], []
    for w in widths:
        share = min(w, px * min(rows, w)) / px
        share = rows if rows - share < DUST else share
        active.append(rows)
        owned.append(share)
        rows = rows - share
    return np.array(active), np.array(owned)


@pytest.mark.parametrize("p", list(range(70)) + [255, 256, 257, 1000, 4096, 1 << 20,
                                                     (1 << 20) + 5, 3 << 18])
def test_binomial_children_match_the_loop(p):
    q = np.arange(p + 3)        # positions past the end have none
    got = binomial_children(q, p)
    assert got.dtype == np.int64 and np.array_equal(got, children_loop(q, p))
    if 0 < p <= 70:
        assert [len(binomial_child_positions(int(i), p)) for i in range(p)] == got[:p].tolist()
    assert binomial_children(0, p).shape == ()


@pytest.mark.parametrize("n", [1000, 4096, 12345, 524288, 1482752, 16777216])
def test_even_split_matches_the_loop(n):
    for v in (1, 7, 64, 256, 512):
        for px in (1, 2, 4, 64, 1024, 32768):
            tiles = TileMap(n, v, px, 1)
            rows = tiles.rows_per_proc.astype(float)
            if v > n or not (rows == rows[0]).all() or tiles.ntiles > 1 << 17:
                continue
            widths = np.minimum(v, n - np.arange(tiles.ntiles) * v).astype(float)
            active, owned = _even_split(rows[0], widths, px)
            want = even_split_loop(rows[0], widths, px)
            assert active.shape == owned.shape == (tiles.ntiles, px)
            assert active[:, 0].tobytes() == want[0].tobytes(), (n, v, px)
            assert owned[:, 0].tobytes() == want[1].tobytes(), (n, v, px)
            assert active.strides[1] == owned.strides[1] == 0


def test_even_split_of_rows_below_a_share():
    """Fewer rows than the steps' shares (each a fraction of a row), and none."""
    widths = np.array([64.0, 64.0, 64.0, 17.0, 64.0])
    for rows in (0.0, 1e-10, 0.3, 5.0, 100.0, 191.99999999):
        for px in (1, 2, 8, 64):
            active, owned = _even_split(np.float64(rows), widths, px)
            want = even_split_loop(np.float64(rows), widths, px)
            assert active[:, 0].tobytes() == want[0].tobytes(), (rows, px)
            assert owned[:, 0].tobytes() == want[1].tobytes(), (rows, px)


@pytest.mark.parametrize("g, per", [(8, 1), (8, 2), (12, 4), (64, 8), (96, 32), (13, 4),
                                    (6, 4), (16, 16)])
def test_column_tables_turned_match_each_root(g, per):
    """A column's crossings and tournaments at every step from the per-node residues
    turned (`_column_tables`), or each step's own where the nodes do not allow it."""
    members = Members(np.arange(g) // per)
    k = np.random.default_rng(g * per).integers(0, 7 * g, 40)
    hops, now, after = _column_tables(members, k)
    want = members.hops(k % g)
    for name in ("cross_in", "cross_out", "parent", "children", "from_root"):
        got, ref = getattr(hops, name), getattr(want, name)
        assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), name
    for got, ref in ((now, members.butterfly(k)), (after, members.butterfly(k + 1))):
        assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes()


def tree_costs_broadcast(q, p: int, nbytes, reduce: bool) -> tuple:
    """A bcast's or a reduce's (sent, received, messages) from q, n and q's children
    broadcast to the result's shape first."""
    q = np.asarray(q, dtype=np.int64)
    children = binomial_children(q, p)
    q, n, children = np.broadcast_arrays(q, np.asarray(nbytes, dtype=float), children)
    chain = n > SMALL_BYTES
    if p <= 1:
        return (np.zeros(q.shape),) * 3
    if reduce:
        return (n * (q > 0), np.where(chain, n * (q != 1), n * children),
                np.where(chain, (q > 0) * chunk_count(n), (q > 0) * (n > 0)))
    return (n * np.where(chain, (q < p - 1) * 1.0, children), n * (q > 0),
            np.where(chain, (q < p - 1) * chunk_count(n), children * (n > 0)))


@pytest.mark.parametrize("p", [0, 1, 2, 3, 8, 100, 1 << 20])
def test_tree_costs_match_broadcast_first(p):
    rng = np.random.default_rng(p)
    sizes = [0.0, 1e-9, 8.0, SMALL_BYTES, SMALL_BYTES + 1, 3.3e6, 2.0**20 + 1, 5e9]
    shapes = [((), ()), ((5,), ()), ((), (5,)), ((3, 1, 1, 4), (3, 2, 5, 1)),
              ((1, 1, 1, 6), (2, 1, 1, 6))]
    for q_shape, n_shape in shapes:
        q = rng.integers(0, max(p, 1), q_shape)
        n = rng.choice(sizes, n_shape)
        for costs, reduce in ((bcast_costs, False), (reduce_costs, True)):
            for got, want in zip(costs(q, p, n), tree_costs_broadcast(q, p, n, reduce)):
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("n, v, px, py, c, per_node", [(4096, 64, 2, 8, 1, 4),
                                                         (3000, 32, 4, 16, 2, 8),
                                                         (2048, 16, 1, 32, 1, 8)])
def test_row_crossings_match_members_hops(n, v, px, py, c, per_node):
    """`step_ranks`' crossings of a row's members at its y classes: Members.hops_at's
    chain hops at every step; its tree's edges, at a step where a row broadcast is small,
    all of them, elsewhere none."""
    plan = StepPlan.create(n, v, px, py, c)
    p = px * py * c
    placement = Placement(p=p, ranks_per_node=per_node, nodes=p // per_node,
                          shared_cores=None, memory_per_rank=1e9)
    groups = node_groups(px, py, c, placement)
    assert "row" in groups
    tiles = plan.tiles
    w = np.minimum(v, n - np.arange(tiles.ntiles) * v).astype(float)
    slices = (w[:, None] // c + (np.arange(c)[None, :] < w[:, None] % c)).astype(float)
    active, owned = pivot_counts(plan, "uniform")
    ranks = step_ranks(plan, slices, active, owned, pivot_changes(plan, "uniform"), groups)
    k = np.arange(tiles.ntiles)
    want = groups["row"].hops_at(tiles.col_owner(k)[:, None], ranks.ys.rep)
    got = ranks.y_hops
    for name in ("cross_in", "cross_out", "from_root"):
        assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), name
    assert got.parent.dtype == want.parent.dtype and got.children.dtype == want.children.dtype
    tree = (got.parent == want.parent).all(axis=1) & (got.children == want.children).all(axis=1)
    bare = ~got.parent.any(axis=1) & ~got.children.any(axis=1)
    assert (tree | bare).all() and tree[bare].sum() < tree.sum()
