"""`Members.butterfly`, `Members.hops_at`, `Members.hops` and `bruck_across` against
their definitions, member by member (indices taken mod g), over node maps in order and
shuffled, shifts and roots past g."""

import numpy as np
import pytest
from linalg_io.models.conflux_nodes import Members, bruck_across

from linalg_io.layout.schedules import allgatherv_costs, bruck_rounds


def butterfly_loop(nodes, shift: int, r: int) -> int:
    g = len(nodes)
    q = 1 << (g.bit_length() - 1)
    role = (r - shift) % g

    def apart(partner: int) -> bool:
        return nodes[(partner + shift) % g] != nodes[r]

    count = apart(role - q) if role >= q else (apart(role + q) if role + q < g else 0)
    if role < q:
        count += sum(apart(role ^ bit) for bit in (1 << i for i in range(q.bit_length() - 1)))
    return count


def hops_loop(nodes, root: int, member: int) -> tuple:
    g = len(nodes)
    q = (member - root) % g
    span = q & -q if q else 1 << max(0, (g - 1).bit_length())
    mine = nodes[member]
    parent = q > 0 and nodes[(root + q - span) % g] != mine
    children = sum(1 for m in (1 << i for i in range(g.bit_length()))
                   if m < g and m < span and q + m < g and nodes[(root + q + m) % g] != mine)
    return (mine != nodes[(member - 1) % g], mine != nodes[(member + 1) % g], parent,
            children, mine != nodes[root % g])


@pytest.mark.parametrize("g", [2, 3, 5, 8, 13, 64, 100])
@pytest.mark.parametrize("per", [1, 2, 3, 7])
@pytest.mark.parametrize("shuffled", [False, True])
def test_members_tables_match_their_definitions(g, per, shuffled):
    rng = np.random.default_rng(g * 31 + per)
    nodes = np.arange(g) // per
    if shuffled:
        nodes = rng.permutation(nodes)
    members = Members(nodes=nodes)
    shifts = rng.integers(0, 5 * g, 12)
    table = members.butterfly(shifts)
    assert table.tolist() == [[float(butterfly_loop(nodes, s, r)) for r in range(g)]
                              for s in shifts]
    roots = rng.integers(0, g, 9)
    hops = members.hops_at(roots[:, None], np.arange(g)[None, :])
    got = np.stack([hops.cross_in, hops.cross_out, hops.parent, hops.children,
                    hops.from_root], axis=-1).astype(float)
    want = [[[float(v) for v in hops_loop(nodes, int(root), m)] for m in range(g)]
            for root in roots]
    assert got.tolist() == want
    table = members.hops(roots)
    assert np.stack([table.cross_in, table.cross_out, table.parent, table.children,
                     table.from_root], axis=-1).astype(float).tolist() == want


def bruck_across_loop(nodes, counts) -> tuple:
    """Round by round, member by member: q's window q .. q + m - 1 to q - h where the two
    sit on different nodes (integer counts: every sum exact in any order)."""
    p = len(nodes)
    sent, recv, msgs = [0] * p, [0] * p, [0] * p
    for h, m in bruck_rounds(p):
        for q in range(p):
            if nodes[q] != nodes[(q - h) % p]:
                window = sum(counts[(q + j) % p] for j in range(m))
                sent[q] += window
                recv[(q - h) % p] += window
                msgs[q] += window > 0
    return sent, recv, msgs


@pytest.mark.parametrize("g", [2, 3, 13, 100, 509])
def test_bruck_across_every_gives_the_allgatherv_own(g):
    """With `every`, the same crossings, then the allgatherv's own sent bytes (rows of
    unequal blocks: fractions, summed as `allgatherv_costs` sums them, bit for bit) and
    messages (every row, empty ones and zeros among them)."""
    rng = np.random.default_rng(g)
    counts = rng.random((4, g)) * 37.3 * (rng.random((4, g)) < 0.5)
    counts[0] = 0.0
    members = Members(nodes=np.arange(g) // 4)
    *across, sent, msgs = bruck_across(counts, members, every=True)
    for got, want in zip(across, bruck_across(counts, members)):
        assert np.array_equal(got, want)
    own_sent, _, own_msgs = allgatherv_costs(counts)
    unequal = ~(counts == counts[:, :1]).all(axis=1)
    assert unequal[1:].all()
    assert np.array_equal(sent[unequal], own_sent[unequal])
    assert np.array_equal(msgs, own_msgs)


@pytest.mark.parametrize("g", [2, 3, 5, 8, 13, 64, 100])
@pytest.mark.parametrize("per", [1, 2, 3, 7])
@pytest.mark.parametrize("shuffled", [False, True])
def test_bruck_across_matches_its_definition(g, per, shuffled):
    rng = np.random.default_rng(g * 37 + per)
    nodes = np.arange(g) // per
    if shuffled:
        nodes = rng.permutation(nodes)
    counts = rng.integers(0, 50, (3, g)) * (rng.random((3, g)) < 0.6)
    got = bruck_across(counts.astype(float), Members(nodes=nodes))
    for row in range(3):
        want = bruck_across_loop(nodes, counts[row].tolist())
        assert [part[row].tolist() for part in got] == [[float(v) for v in part]
                                                        for part in want]
