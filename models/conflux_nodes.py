"""Which of the 2.5D LU's process-row messages cross nodes, for its time.

Rank (l, x, y) of the Px x Py x c grid is world rank (l Px + x) Py + y: a process row is
Py consecutive ranks, as in the 2D LU, so where the grid is aligned with the nodes
(Py a multiple of the ranks per node r, or r a multiple of Py) column y of any row sits
on node slot `linalg_io.models.lu2d.row_nodes`. Every collective of the "row" group
(`linalg_io.models.conflux.COMM_GROUPS`: the L00 and L slices' broadcasts) is a
broadcast from the panel's column ky along the row; a pipelined chain passes it from
y - 1 to y + 1 whatever the root, so rank y's received bytes cross nodes where y - 1
and y sit on different nodes (cross_in[y]) and its sent bytes and messages where y and
y + 1 do (cross_out[y]). The split is exact for the chain; a binomial tree's (a small
message, <= SMALL_BYTES) edges are timed as the chain's hops of their ranks.

The part between nodes is timed on the link key (Py, rows per node): a node's link
carries one chain per direction per process row on it (`rows_per_node`, one where the
row crosses), not one per rank of the node; the rest on the node's rates (ON_NODE).
Each part keeps a collective's serial (its max(sent, recv), `linalg_io.models.costs.
link_terms`): where both of a rank's hops are on one side, the group's serial; where
one is, that hop's bytes. Byte counts are unchanged: the parts add up to the group's.
Grids not aligned with the nodes, or a row within one node: every row message on the
row's own link (`linalg_io.models.conflux.link_keys`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from linalg_io.models.costs import Links
from linalg_io.models.lu2d import ON_NODE, row_nodes, rows_per_node
from linalg_io.models.profile import Placement, crossing_links

ROW = "row"


@dataclass(frozen=True)
class RowCrossing:
    """Per column y of a process row: whether its hop in (from y - 1) and its hop out
    (to y + 1) cross nodes, and the link key the crossing part is timed on."""

    cross_in: np.ndarray
    cross_out: np.ndarray
    across: tuple[int, int]

    def features(self, steps: int) -> list[np.ndarray]:
        """[step, column] features that set apart the columns of unequal crossings (for
        `linalg_io.models.rank_classes.step_classes`)."""
        return [np.broadcast_to(m.astype(float), (steps, len(m)))
                for m in (self.cross_in, self.cross_out)]

    def at(self, columns: np.ndarray) -> RowCrossing:
        """The masks at `columns` (an index array: a class's representative column, or
        every column), for arrays whose last axis those columns index."""
        return RowCrossing(self.cross_in[columns], self.cross_out[columns], self.across)


def row_crossing(py: int, placement: Placement | None) -> RowCrossing | None:
    """The crossings of a process row of Py ranks (module doc); None where the row's
    messages all take one link: within a node (or no placement), or not aligned. (A
    profile without a network times both parts at the node's rates.)"""
    if placement is None or not crossing_links(py, placement):
        return None
    nodes = row_nodes(py, placement)
    if nodes is None:
        return None
    column = np.arange(py)
    return RowCrossing(cross_in=nodes != nodes[(column - 1) % py],
                       cross_out=nodes != nodes[(column + 1) % py],
                       across=(py, rows_per_node(py, placement)))


def _part(costs: tuple, sent_on: np.ndarray, recv_on: np.ndarray) -> tuple:
    """(sent, recv, msgs, serial) of the hops selected by the masks: the serial stays
    the group's where both hops are selected, else the selected hop's bytes."""
    sent, recv, msgs, serial = costs
    return (sent * sent_on, recv * recv_on, msgs * sent_on,
            np.where(sent_on & recv_on, serial, sent * sent_on + recv * recv_on))


def timed_links(traffic: dict, keys: dict, crossing: RowCrossing | None) -> Links:
    """{link key: (sent, recv, msgs, serial)} of traffic {group key: (sent, recv, msgs,
    serial)}: each group on keys[group] (`linalg_io.models.conflux.link_keys`), the row
    group's split into its on-node and inter-node hops by `crossing` (masks indexed as
    the arrays' last axis: `RowCrossing.at`)."""
    links: Links = {}

    def add(key, costs):
        old = links.get(key, (0.0,) * 4)
        links[key] = tuple(o + c for o, c in zip(old, costs))

    for group, costs in traffic.items():
        if crossing is None or group.split("@")[0] != ROW:
            add(keys[group], costs)
            continue
        add(crossing.across, _part(costs, crossing.cross_out, crossing.cross_in))
        add(ON_NODE, _part(costs, ~crossing.cross_out, ~crossing.cross_in))
    return links
