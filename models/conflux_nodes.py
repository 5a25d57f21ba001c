"""Which of the 2.5D LU's messages cross nodes, for its time and its inter-node bytes.

Rank (l, x, y) of the Px x Py x c grid is world rank (l Px + x) Py + y, and ranks sit on
nodes in blocks of r consecutive world ranks. Each communicator group has its members
at a stride s: a process row (member y) s = 1, Py members; a process column (member x)
s = Py, Px members; a fibre (member l) s = Px Py, c members. Where the grid is aligned
with the nodes, member i of every instance of a group sits on the same node slot
(`group_nodes`): r / s consecutive members to a node (r a multiple of s, the group's
members a multiple of r / s). There the group's members share nodes, and each of its
collectives (`linalg_io.layout.schedules`) sends a rank's bytes partly within its node
and partly to other nodes:

  chain (bcast, reduce > SMALL_BYTES)  member i receives from i - 1 and sends to i + 1
                   whatever the root: across where i - 1 and i (cross_in[i]), i and
                   i + 1 (cross_out[i]) sit on different nodes;
  binomial tree (<= SMALL_BYTES)  the edge to q's parent q - lowbit(q) and to each
                   child q + m, at the step's root: `Hops.parent`, `Hops.children`;
  linear gatherv / scatterv  a member on another node than the root (`Hops.from_root`);
  butterfly (the tournament)  each exchange with a partner on another node
                   (`Members.butterfly`);
  Bruck allgatherv  each round's window to q - h on another node (`bruck_across`).

`_Piece.add` (linalg_io.models.conflux) keeps a split group's traffic in parts: key
G@node (on the node, the node's rates: ON_NODE), G@hop (a chain's or a tree's hops
between nodes: one hop per direction per instance of the group on a node shares the
node's link, `link_keys`) and G@net (the other exchanges between nodes, on the group's
own link key: every rank of the node that runs them at once). Each part keeps its own
serial (max(sent, recv) per collective, `linalg_io.models.costs.link_terms`); the parts
add up to the group's counts. A group whose members sit on distinct nodes, within one
node, or on a grid not aligned with the nodes is not split: all of its messages on its
own link (`link_keys`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from linalg_io._kernels.conflux_nodes import bruck_across as across_windows
from linalg_io._kernels.conflux_nodes import butterfly_counts, hops_table
from linalg_io.models.costs import Links
from linalg_io.models.lu2d import ON_NODE
from linalg_io.models.profile import Placement, crossing_links

from linalg_io.layout.schedules import (
    SMALL_BYTES,
    bruck_rounds,
    chosen,
    chunk_count,
    lowbit_span,
)

NODE, HOP, NET = "@node", "@hop", "@net"     # the parts of a split group's traffic


@dataclass(frozen=True)
class Hops:
    """[step, member] crossings of one group's schedules at each step's root (or at the
    class representatives: `at`): the chain's hop in and out, the binomial tree's edge
    to the parent and its edges to children that cross (a count), and whether the
    member sits on another node than the root."""

    cross_in: np.ndarray
    cross_out: np.ndarray
    parent: np.ndarray
    children: np.ndarray
    from_root: np.ndarray

    def at(self, index) -> Hops:
        """Each table through `index` ([step, member] -> the class grid)."""
        return Hops(*(index(getattr(self, f.name)) for f in fields(self)))

    def features(self) -> list[np.ndarray]:
        """[step, member] features that set apart members of unequal crossings (for
        `linalg_io.models.rank_classes.step_classes`)."""
        return [getattr(self, f.name).astype(float) for f in fields(self)]


@dataclass(frozen=True)
class Members:
    """Node slot of each member of a group whose members share nodes (module doc)."""

    nodes: np.ndarray

    def hops(self, roots: np.ndarray) -> Hops:
        """The crossings at each step's root (`roots` [step]): [step, member] tables."""
        unique, which = np.unique(np.asarray(roots, dtype=np.int64) % len(self.nodes),
                                  return_inverse=True)
        table = Hops(*hops_table(self._slots(), unique))
        return table.at(lambda values: values[which.reshape(-1)])

    def hops_at(self, roots, members) -> Hops:
        """The crossings of `members` at `roots` (index arrays that broadcast together:
        a step's root and the members of its runs, `linalg_io.models.conflux_classes`)."""
        g = len(self.nodes)
        roots, members = np.broadcast_arrays(np.asarray(roots, dtype=np.int64) % g,
                                             np.asarray(members, dtype=np.int64))
        q = (members - roots) % g
        span = lowbit_span(q, g)
        mine = self.nodes[members]
        # the nodes of members 0 .. 3g - 1 (mod g): roots + q + m < 3g, no modulo
        ring = np.tile(self.nodes, 3)
        parent = (q > 0) & (ring[roots + q - span * (q > 0)] != mine)
        children = np.zeros(q.shape)
        m = 1
        while m < g:
            children += (m < span) & (q + m < g) & (ring[roots + q + m] != mine)
            m <<= 1
        return Hops(cross_in=mine != self.nodes[(members - 1) % g],
                    cross_out=mine != self.nodes[(members + 1) % g],
                    parent=parent, children=children, from_root=mine != self.nodes[roots])

    def boundaries(self) -> np.ndarray:
        """The members whose node, hop in or hop out differs from the member before's:
        between them only the tree's edges (`Hops.parent`, `Hops.children`) change."""
        nodes = self.nodes
        static = [nodes, nodes != np.roll(nodes, 1), nodes != np.roll(nodes, -1)]
        moved = np.zeros(len(nodes) - 1, dtype=bool)
        for values in static:
            moved |= values[1:] != values[:-1]
        return np.flatnonzero(moved) + 1

    def butterfly(self, shifts: np.ndarray) -> np.ndarray:
        """[step, member] the tournament's messages each way to another node, roles
        shifted by shifts[step] (`linalg_io.lu.tournament`): the fold and unfold with r
        - q or r + q, the exchange with r ^ bit in each round (`linalg_io._kernels.
        conflux_nodes.butterfly_counts`)."""
        unique, which = np.unique(np.asarray(shifts, dtype=np.int64) % len(self.nodes),
                                  return_inverse=True)
        return butterfly_counts(self._slots(), unique)[which.reshape(-1)]

    def _slots(self) -> np.ndarray:
        return np.ascontiguousarray(self.nodes, dtype=np.int64)


def group_nodes(stride: int, size: int, placement: Placement | None) -> Members | None:
    """The node slots of a group of `size` members at `stride` (module doc) where they
    share nodes and cross them; else None."""
    if placement is None or size < 2 or not crossing_links(stride * size, placement):
        return None
    r = placement.ranks_per_node
    if r % stride or r // stride < 2:
        return None                            # distinct nodes, or not aligned
    per_node = r // stride
    if size % per_node and stride * size != placement.p:
        return None                            # the next instances straddle nodes unalike
    return Members(np.arange(size) // per_node)


def node_groups(px: int, py: int, c: int, placement: Placement | None) -> dict[str, Members]:
    """{group: its members' node slots} of the row, column and fibre groups whose
    members share nodes (module doc)."""
    found = {"row": group_nodes(1, py, placement), "col": group_nodes(py, px, placement),
             "fibre": group_nodes(px * py, c, placement)}
    return {group: members for group, members in found.items() if members is not None}


def hop_instances(px: int, py: int) -> dict[str, int]:
    """{traffic key of the 2.5D LU's collectives: the instances of its group (of the
    part a collective runs on: @column, @row) with members on one node, where they
    share nodes}: the chains whose hops between nodes share the node's link. A node
    holds r / s members of each instance (module doc): a row's one instance, Py of the
    columns (one of them the panel's), Px Py of the fibres (Px of the panel's column's,
    Py of the pivot row's)."""
    return {"row": 1, "col": py, "col@column": 1, "fibre": px * py, "fibre@column": px,
            "fibre@row": py}


def split_keys(keys: dict, px: int, py: int, groups: dict[str, Members]) -> dict:
    """The `Links` keys of the parts of the split groups' traffic keys (module doc), from
    the groups' own `keys`."""
    parts = {}
    for key, instances in hop_instances(px, py).items():
        if key.split("@")[0] in groups:
            link = keys[key]
            span = link[0] if isinstance(link, tuple) else link
            parts[key + NODE] = ON_NODE
            parts[key + HOP] = (span, instances)
            parts[key + NET] = link
    return parts


def bcast_across(hops: Hops, q, p: int, nbytes) -> tuple:
    """(sent, received, messages) between nodes of the ranks at positions q of a bcast
    (`linalg_io.layout.schedules.bcast_costs`), `hops` at the same ranks."""
    n = np.asarray(nbytes, dtype=float)
    if p <= 1:
        return (0.0,) * 3
    chain = n > SMALL_BYTES
    last = q < p - 1
    sent = chosen(chain, lambda: n * last * hops.cross_out, lambda: n * hops.children)
    msgs = chosen(chain, lambda: last * chunk_count(n) * hops.cross_out,
                  lambda: hops.children * (n > 0))
    return sent, n * (q > 0) * chosen(chain, lambda: hops.cross_in, lambda: hops.parent), msgs


def reduce_across(hops: Hops, q, p: int, nbytes) -> tuple:
    """The same of a reduce onto position 0 (`reduce_costs`): the chain r+1 -> ... -> r,
    or the binomial tree upside down."""
    n = np.asarray(nbytes, dtype=float)
    if p <= 1:
        return (0.0,) * 3
    chain = n > SMALL_BYTES
    out = chosen(chain, lambda: hops.cross_out, lambda: hops.parent) * (q > 0)
    recv = chosen(chain, lambda: n * (q != 1) * hops.cross_in, lambda: n * hops.children)
    return n * out, recv, out * chosen(chain, lambda: chunk_count(n), lambda: n > 0)


def bruck_across(counts: np.ndarray, members: Members, every: bool = False) -> tuple:
    """(sent, received, messages) [..., member] between nodes of the Bruck allgatherv of
    blocks `counts` [..., member] (`linalg_io.layout.schedules.allgatherv_costs`): each
    round's window q .. q+m-1 sent to q - h where the two sit on different nodes
    (`linalg_io._kernels.conflux_nodes.bruck_across`); with `every`, then the
    allgatherv's own (sent, messages) on and between nodes, as `allgatherv_costs` gives
    them for rows of unequal blocks, from the same pass."""
    counts = np.asarray(counts, dtype=float)
    p = counts.shape[-1]
    rounds = np.array(bruck_rounds(p), dtype=np.int64).reshape(-1, 2)
    flat = np.ascontiguousarray(counts.reshape(-1, p))
    tables = across_windows(flat, members._slots(), np.ascontiguousarray(rounds[:, 0]),
                            np.ascontiguousarray(rounds[:, 1]), every)
    return tuple(table.reshape(counts.shape) for table in tables)


def timed_links(traffic: dict, keys: dict) -> Links:
    """{link key: (sent, recv, msgs, serial)} of traffic {group key: (sent, recv, msgs,
    serial)}, each on keys[group key] (`linalg_io.models.conflux.link_keys`; a split
    group's parts on theirs, module doc)."""
    links: Links = {}
    for group, costs in traffic.items():
        key = keys[group]
        old = links.get(key)
        links[key] = costs if old is None else tuple(o + c for o, c in zip(old, costs))
    return links


def across_part(group_key: str) -> bool:
    """Whether a traffic key is a split group's part between nodes."""
    return group_key.endswith((HOP, NET))

