"""Model of the distributed sparse triangular solve (level-set and synchronization-free).

The partition fixes the traffic exactly: rank r must obtain every off-rank solved value
that one of its rows reads, once. With V_r values sent, W_r received and B_r batches
(distinct (destination, level of the value) pairs) sent, per right-hand side count R:

    levelset: bytes_sent = 8 R V_r,           bytes_recv = 8 R W_r,   msgs = B_r
    syncfree: bytes_sent = 8 R V_r + 8 B_r,   bytes_recv = 8 R W_r + 8 B'_r,
              msgs = 2 B_r  (one Put of the values, one Accumulate of the 8-byte flag)

Time: the larger of the solve's critical path and its work.

* The critical path (models/sptrsv_dag.py): the longest path through the (rank, level)
  tasks, a rank's rows of one level streamed at the profile's memory bandwidth (12 bytes
  per stored nonzero, 8 R per row for b and x twice), in level order on their rank, each
  batch an edge from the task that solves its values to the first task it gates, at the
  latency and seconds per byte of the link it crosses (its two ranks on one node or
  not, with ranks_per_node consecutive ranks per node: `RankCosts.links`, span 1 on a
  node, P across, the node's link shared by those of its ranks that send, or receive,
  across nodes: `network_users`). With rows in contiguous blocks the wavefront
  pipelines: a boundary's trip adds once per hop of the chain of ranks, not once per
  level; with rows dealt across ranks every level's message lies on the path.
* The work: each rank's stream / mem_bw + beta per byte + alpha per message on its
  links, the makespan of the ranks' work where they share cores.

Two measured trips refine the path where the machine file has them (`linalg-io
calibrate` writes them; without them the figures are the alpha-beta ones above):

* sync-free, `onesided_trip_s` (on a node) and `inter_node.onesided_trip_s` (across):
  a batch is one put-with-signal whose Flush_all calls wait for the target's
  acknowledgement (over TCP the target's progress engine carries it when the target
  next polls; calibrate measured the trip with the solve's poll), so a batch on a link
  with a measured trip t_os holds its sender t_os (the sender's blocking flush, on the
  path) and arrives when the sender is released. These holds are waits (the poll gives
  its core away): the work's makespan, then the longest rank's holds
  (`costs.waiting_makespans`);
* level-set, `wake_s`, where the job's ranks outnumber its cores (`Placement.
  shared_cores`): the rank a message wakes waits for a core, wake_s more on each edge.
  There a level-set rank's rows run at its share of a core too (its tasks' seconds
  times the ranks per core: the wavefront keeps every rank at work at once).

And the level-set executor's own calls per batch (`linalg_io.sptrsv.levelset`: Python,
mpi4py and the counting communicator, outside the kernel and the waits), where the file
has them: `send_cpu_s` (pack, Isend; `inter_node.send_cpu_s` for a batch between nodes,
where over TCP the Isend writes the message into its socket) holds a batch's sender
after the task that solves its values, `recv_cpu_s` (Irecv, Waitall) holds its receiver
in the task it gates, each
times the ranks per core where ranks share cores (a rank's calls get that share of a
core); both are work too, on their ranks. The executor posts its receives before its
first segment; the model charges them with the Waitall, at the task they gate (the same
seconds on the rank, where its wait for the batch would hide them).

    T = max(critical path, makespan_r(work_r) + max_r(holds_r))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from linalg_io.models.costs import RankCosts, link_terms, waiting_makespans
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.sptrsv_dag import TaskGraph, critical_path, task_graph

VALUE_BYTES = 8
FLAG_BYTES = 8


@dataclass
class SptrsvCosts(RankCosts):
    """RankCosts plus the memory stream per rank and the critical path."""

    stream_bytes: np.ndarray = None
    critical_levels: int = 0
    message_levels: int = 0
    algo: str = "levelset"
    graph: TaskGraph = None
    ranks_per_node: int = 1
    value_bytes: int = VALUE_BYTES

    TIME_FORMULA = ("max(critical path through the (rank, level) tasks: rows streamed at "
                    "mem_bw (level-set: x ranks per core where they share cores), each batch "
                    "an edge at its link's latency + beta bytes (+ wake_s where ranks share "
                    "cores, level-set; sync-free on a link with a measured "
                    "put-with-signal trip t_os: the sender held t_os; level-set: the sender "
                    "held send_cpu_s and the gated task recv_cpu_s a batch, x ranks per core "
                    "where they share), work: stream bytes / mem_bw + alpha msgs + beta "
                    "max(sent, recv) per link (+ the level-set's batch calls), makespan "
                    "where ranks share cores, + the longest rank's sync-free holds)")

    def times(self, profile: MachineProfile, placement: Placement) -> np.ndarray:
        """Seconds per rank (module doc): `work_and_wait`'s sum."""
        return sum(self.work_and_wait(profile, placement))

    def work_and_wait(self, profile: MachineProfile,
                      placement: Placement) -> tuple[np.ndarray, np.ndarray]:
        """(work, wait) seconds per rank (module doc): the stream, the bytes, each link's
        messages at alpha and the level-set executor's calls are work; a sync-free batch
        on a link with a measured put-with-signal trip (`message_costs`) is a wait."""
        links = self.links or {placement.p: (self.bytes_sent, self.bytes_recv, self.msgs_sent)}
        work = (self.stream_bytes / profile.mem_bw_bytes_per_s
                + link_terms(links, profile, placement)[1])
        send, recv = self.batch_calls(profile)
        if send.any() or recv:
            graph, ranks = self.graph, work.size
            work = work + (np.bincount(graph.rank[graph.src], weights=send, minlength=ranks)
                           + recv * np.bincount(graph.rank[graph.dst], minlength=ranks))
        wait = np.zeros_like(work)
        for key, (_, _, msgs) in links.items():
            per_message, measured = self.message_costs(key, profile, placement)
            if measured:
                wait = wait + per_message * msgs
            else:
                work = work + per_message * msgs
        return work, wait

    def message_costs(self, key, profile: MachineProfile,
                      placement: Placement) -> tuple[float, bool]:
        """(seconds per message, measured) on link `key`: alpha, False; a sync-free batch
        (two messages) on a link with a measured put-with-signal trip t_os: t_os / 2,
        True (module doc)."""
        span, active = key if isinstance(key, tuple) else (key, None)
        alpha = profile.link(span, placement, active)[0]
        if self.algo != "syncfree":
            return alpha, False
        across = profile.on_network(span, placement)
        trip = profile.inter_node.onesided_trip_s if across else profile.onesided_trip_s
        return (alpha, False) if trip is None else (trip / 2, True)

    def batch_calls(self, profile: MachineProfile) -> tuple[np.ndarray, float]:
        """(sender's [batch], receiver's) CPU seconds of the executor's calls per batch
        of the task graph: the machine file's send_cpu_s (inter_node.send_cpu_s for a
        batch between nodes, where measured) and recv_cpu_s for the level-set solve (0
        where it has none), 0 for the sync-free one (module doc)."""
        batches = self.graph.src.size
        if self.algo != "levelset":
            return np.zeros(batches), 0.0
        send = np.full(batches, profile.send_cpu_s or 0.0)
        across = profile.inter_node.send_cpu_s if profile.inter_node is not None else None
        if across is not None:
            send[self.across()] = across
        return send, profile.recv_cpu_s or 0.0

    def across(self) -> np.ndarray:
        """[batch] whether the batch's ranks sit on different nodes."""
        graph = self.graph
        return (graph.rank[graph.src] // self.ranks_per_node
                != graph.rank[graph.dst] // self.ranks_per_node)

    def path_terms(self, profile: MachineProfile,
                   placement: Placement) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(compute, hold) per task and delay per batch of the task graph (module doc):
        the holds are the sync-free pushes' measured trips, or the level-set batches'
        calls."""
        graph = self.graph
        # a level-set rank's share of a core where ranks share cores: the wavefront keeps
        # every rank at work at once (a sync-free rank's waits give its core away)
        per_core = (placement.p / placement.shared_cores
                    if self.algo == "levelset" and placement.shared_cores else 1.0)
        compute = graph.stream / profile.mem_bw_bytes_per_s * per_core
        hold = np.zeros(graph.ntasks)
        across = self.across()
        flags = FLAG_BYTES if self.algo == "syncfree" else 0
        nbytes = self.value_bytes * graph.values + flags
        network = next((key for key in self.links if isinstance(key, tuple)), None)
        wake = (profile.wake_s or 0.0) if (self.algo == "levelset"
                                           and placement.shared_cores is not None) else 0.0
        send, recv = self.batch_calls(profile)
        if send.any() or recv:
            np.add.at(hold, graph.src, send * per_core)
            np.add.at(hold, graph.dst, recv * per_core)
        delay = np.zeros(graph.src.size)
        for key, pick in ((1, ~across), (network, across)):
            if key is None or not pick.any():
                continue
            span, active = key if isinstance(key, tuple) else (key, None)
            alpha, beta = profile.link(span, placement, active)
            per_message, measured = self.message_costs(key, profile, placement)
            if measured:
                np.add.at(hold, graph.src[pick], 2 * per_message)
            else:
                delay[pick] = alpha + beta * nbytes[pick] + wake
        return compute, hold, delay

    def path_time(self, profile: MachineProfile, placement: Placement) -> float:
        """The critical path through the (rank, level) tasks (module doc)."""
        compute, hold, delay = self.path_terms(profile, placement)
        return critical_path(self.graph, hold, delay, compute)

    def record_block(self, profile: MachineProfile, placement: Placement | None = None,
                     per_rank: bool = True) -> dict:
        placement = placement or profile.placement(len(self.bytes_sent))
        block = super().record_block(profile, placement, per_rank)
        work, wait = self.work_and_wait(profile, placement)
        block["time_s"] = max(float(waiting_makespans(work, wait, placement.shared_cores)),
                              self.path_time(profile, placement))
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
                       message_levels=message_levels, algo=algo,
                       graph=task_graph(indptr, indices, levels, owner, algo, value_bytes),
                       ranks_per_node=per_node, value_bytes=value_bytes)


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
