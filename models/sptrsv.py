"""Model of the distributed sparse triangular solve (level-set and synchronization-free).

The partition fixes the traffic exactly: rank r must obtain every off-rank solved value
that one of its rows reads, once. With V_r values sent, W_r received and B_r batches
(distinct (destination, level of the value) pairs) sent, per right-hand side count R:

    levelset: bytes_sent = 8 R V_r,           bytes_recv = 8 R W_r,   msgs = B_r
    syncfree: bytes_sent = 8 R V_r + 8 B_r,   bytes_recv = 8 R W_r + 8 B'_r,
              msgs = 2 B_r  (one Put of the values, one Accumulate of the 8-byte flag)

Time: the slowest rank streams its rows once (12 bytes per stored nonzero, 8 R per row
for b and x twice) at the profile's memory bandwidth, plus alpha per message and beta per
byte at the rates of the link each batch crosses (its two ranks on one node or not, with
ranks_per_node consecutive ranks per node: `RankCosts.links`, span 1 on a node, P
across, the node's link shared by those of its ranks that send, or receive, across
nodes: `network_users`), plus one alpha (the network's where any batch crosses nodes) per level that
carries a message (the chain of dependent messages on the critical path of `levels`
levels); the makespan of the ranks' times where they share cores. Computed here from
the pattern, the levels and the owner array alone, independently of the executors'
plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from linalg_io.models.costs import RankCosts, link_span, link_time
from linalg_io.models.profile import MachineProfile, Placement

VALUE_BYTES = 8
FLAG_BYTES = 8


@dataclass
class SptrsvCosts(RankCosts):
    """RankCosts plus the memory stream per rank and the critical path."""

    stream_bytes: np.ndarray = None
    critical_levels: int = 0
    message_levels: int = 0

    TIME_FORMULA = ("stream bytes / mem_bw + alpha (msgs + message levels) + beta max(sent, "
                    "recv) per link, slowest rank (the solve is memory-bound: no flops term; "
                    "makespan where ranks share cores)")

    def times(self, profile: MachineProfile, placement: Placement) -> np.ndarray:
        links = self.links or {placement.p: (self.bytes_sent, self.bytes_recv, self.msgs_sent)}
        slowest_alpha = max(profile.link(link_span(key), placement)[0]
                            for key, (_, _, msgs) in links.items() if msgs.any()) \
            if any(msgs.any() for _, _, msgs in links.values()) else 0.0
        return (self.stream_bytes / profile.mem_bw_bytes_per_s
                + link_time(links, profile, placement) + slowest_alpha * self.message_levels)

    def record_block(self, profile: MachineProfile, placement: Placement | None = None) -> dict:
        block = super().record_block(profile, placement)
        block["critical_path_levels"] = self.critical_levels
        block["message_levels"] = self.message_levels
        return block


def needed_values(indptr: np.ndarray, indices: np.ndarray, owner: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(reader rank, value row) of every distinct off-rank value some rank reads."""
    n = owner.size
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    cols = np.asarray(indices, dtype=np.int64)
    cross = owner[rows] != owner[cols]
    pairs = np.unique(owner[rows[cross]].astype(np.int64) * n + cols[cross])
    return pairs // n, pairs % n


def sptrsv_costs(indptr: np.ndarray, indices: np.ndarray, levels: np.ndarray,
                 owner: np.ndarray, nranks: int, nrhs: int, algo: str,
                 ranks_per_node: int | None = None) -> SptrsvCosts:
    """Per-rank bytes, messages and flops of one solve of a lower-triangular pattern; the
    traffic split by link for `ranks_per_node` consecutive ranks per node (None: one
    node)."""
    reader, value_row = needed_values(indptr, indices, owner)
    writer = owner[value_row].astype(np.int64)
    values_sent = np.bincount(writer, minlength=nranks)
    values_recv = np.bincount(reader, minlength=nranks)
    nlev = int(levels.max()) + 1 if levels.size else 0
    batches = np.unique((writer * nranks + reader) * max(nlev, 1) + levels[value_row])
    batch_writer = batches // max(nlev, 1) // nranks
    batch_reader = batches // max(nlev, 1) % nranks
    batches_sent = np.bincount(batch_writer, minlength=nranks)
    batches_recv = np.bincount(batch_reader, minlength=nranks)
    value_bytes = VALUE_BYTES * nrhs
    rows_per_rank = np.bincount(owner, minlength=nranks)
    row_nnz = np.diff(indptr)
    nnz_per_rank = np.bincount(owner, weights=row_nnz, minlength=nranks)
    flops = nrhs * (2.0 * (nnz_per_rank - rows_per_rank) + rows_per_rank)
    stream = 12.0 * nnz_per_rank + 2 * value_bytes * rows_per_rank
    if algo == "levelset":
        sent = value_bytes * values_sent
        recv = value_bytes * values_recv
        msgs = batches_sent
        formula = ("levelset: bytes_sent = 8*nrhs*(off-rank values sent), "
                   "msgs = (destination, level) batches")
    elif algo == "syncfree":
        sent = value_bytes * values_sent + FLAG_BYTES * batches_sent
        recv = value_bytes * values_recv + FLAG_BYTES * batches_recv
        msgs = 2 * batches_sent
        formula = ("syncfree: bytes_sent = 8*nrhs*(off-rank values sent) + 8*batches, "
                   "msgs = 2*batches (Put + Accumulate flag)")
    else:
        raise ValueError(f"algo must be levelset or syncfree, got {algo!r}")
    message_levels = int(np.unique(levels[value_row]).size)
    per_node = ranks_per_node or nranks
    across = {"values": writer // per_node != reader // per_node,
              "batches": batch_writer // per_node != batch_reader // per_node}
    network = (nranks, network_users(batch_writer[across["batches"]],
                                     batch_reader[across["batches"]], per_node))
    links = {}
    for span, pick in ((1, np.logical_not), (network, np.asarray)):
        v_sent = np.bincount(writer[pick(across["values"])], minlength=nranks)
        v_recv = np.bincount(reader[pick(across["values"])], minlength=nranks)
        b_sent = np.bincount(batch_writer[pick(across["batches"])], minlength=nranks)
        b_recv = np.bincount(batch_reader[pick(across["batches"])], minlength=nranks)
        flags = FLAG_BYTES if algo == "syncfree" else 0
        part = ((value_bytes * v_sent + flags * b_sent).astype(float),
                (value_bytes * v_recv + flags * b_recv).astype(float),
                ((2 if algo == "syncfree" else 1) * b_sent).astype(float))
        links[span] = tuple(a + b for a, b in zip(links.get(span, (0.0, 0.0, 0.0)), part))
    return SptrsvCosts(sent.astype(float), recv.astype(float), msgs.astype(float), flops,
                       formula + f"; critical path {nlev} levels", links=links,
                       stream_bytes=stream, critical_levels=nlev,
                       message_levels=message_levels)


def network_users(senders: np.ndarray, receivers: np.ndarray, per_node: int) -> int:
    """The most ranks of one node that send, or that receive, across nodes: those that
    share its link (`MachineProfile.link`'s active ranks; at least 1). A row partition
    in contiguous blocks puts one boundary between two nodes, one rank each side."""
    most = 1
    for ranks in (senders, receivers):
        ranks = np.unique(ranks)
        if ranks.size:
            most = max(most, int(np.bincount(ranks // per_node).max()))
    return most


def sptrsv_lower_bound(indptr: np.ndarray, indices: np.ndarray, owner: np.ndarray,
                       nranks: int, nrhs: int) -> dict:
    """For this row partition: each rank must receive every off-rank value it reads."""
    reader, _ = needed_values(indptr, indices, owner)
    received = VALUE_BYTES * nrhs * np.bincount(reader, minlength=nranks)
    return {"bytes_per_rank": float(received.max(initial=0)),
            "formula": "8*nrhs*(distinct off-rank values a rank reads), max over ranks, "
                       "for the given row partition"}
