"""Per-rank costs that every model returns, their time on a machine, and their reduction
to the record's `model` block."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from linalg_io.models.profile import MachineProfile, Placement, crossing_links
from linalg_io.models.rates import LocalRates

# per span (the aligned block of consecutive ranks a communicator lies in, see
# `MachineProfile.link`), or per (span, ranks of a node that use its links at once):
# (bytes sent, bytes received, messages[, serial]) per rank (serial: `link_terms`)
Links = dict[int | tuple[int, int], tuple[np.ndarray, ...]]


def link_span(key: int | tuple[int, int]) -> int:
    """The span of a `Links` key."""
    return key[0] if isinstance(key, tuple) else key


@dataclass
class RankCosts:
    """Predicted traffic and work of one run, one entry per rank (world rank order).

    Counted by the rules of docs/records.md#counting, so they compare line by line with the
    measured `traffic` block. `formula` states the closed form in words for the report.
    """

    bytes_sent: np.ndarray
    bytes_recv: np.ndarray
    msgs_sent: np.ndarray
    flops: np.ndarray
    formula: str
    # what the MPI library moves (docs/records.md#wire), where it differs from
    # the logical counts; None: the algorithm sends every byte in point-to-point
    # messages of its own (`linalg_io.comm.collectives`), so wire == logical
    wire_sent: np.ndarray | None = None
    wire_recv: np.ndarray | None = None
    wire_msgs: np.ndarray | None = None
    # the traffic split by the span of its communicators (they add up to the totals);
    # None: all of it within the whole job (span = number of ranks)
    links: Links | None = None
    # the flops as the time counts them for a rank's local rates (`MachineProfile.local`),
    # in flop-equivalents at gamma (kernels that run below gamma count more); None: the
    # flops themselves
    rated_flops: Callable[[LocalRates], np.ndarray] | None = None
    # the wire bytes (sent, received) per rank exchanged with ranks on other nodes, for a
    # placement, where a communicator that crosses nodes also links ranks of one node (a
    # tree over the whole job); None: `crossing_links` of `links`
    node_traffic: Callable[[Placement], tuple[np.ndarray, np.ndarray]] | None = None
    # the model's own time for a profile and placement (a critical path over the steps)
    # and its formula in words; None: `times` of the slowest rank (TIME_FORMULA)
    critical_path: tuple[Callable[[MachineProfile, Placement], float], str] | None = None
    # the links for a placement, where which of a communicator's messages cross nodes
    # depends on it (a process row's chain crosses only between its nodes); None: `links`
    placed_links: Callable[[Placement], Links] | None = None
    # `placed_links` by placement: a record block asks for them three times
    _links_by_placement: dict = field(default_factory=dict, repr=False, compare=False)

    def links_at(self, placement: Placement) -> Links:
        """The traffic per link for `placement` (`placed_links`, else `links`, else all
        of it within the whole job)."""
        if self.placed_links is not None:
            if placement not in self._links_by_placement:
                self._links_by_placement[placement] = self.placed_links(placement)
            return self._links_by_placement[placement]
        return self.links or {placement.p: (self.bytes_sent, self.bytes_recv, self.msgs_sent)}

    def inter_node(self, placement: Placement) -> tuple[np.ndarray, np.ndarray]:
        """(bytes sent, bytes received) per rank to and from ranks on other nodes, where
        the ranks sit in blocks of `placement.ranks_per_node` consecutive ranks: the
        model's own split (`node_traffic`), else every byte of the links that cross
        nodes (`crossing_links`; exact when each such communicator has its members on
        distinct nodes, as a process column of a row-major grid whose Pc is a multiple
        of the ranks per node)."""
        if self.node_traffic is not None:
            return self.node_traffic(placement)
        sent, recv, _ = self.wire()
        links = (self.links_at(placement) if self.placed_links or self.links
                 else {placement.p: (sent, recv, None)})
        out, into = np.zeros(len(sent)), np.zeros(len(sent))
        for key, (span_sent, span_recv, *_) in links.items():
            if crossing_links(link_span(key), placement):
                out, into = out + span_sent, into + span_recv
        return out, into

    def wire(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bytes sent, bytes received, messages) per rank on the wire."""
        return (self.bytes_sent if self.wire_sent is None else self.wire_sent,
                self.bytes_recv if self.wire_recv is None else self.wire_recv,
                self.msgs_sent if self.wire_msgs is None else self.wire_msgs)

    # what `times` and `record_block` compute, for the record (docs/records.md#model: the
    # alpha-beta-gamma sum, per link, with a rank's bytes the larger of what it sends and
    # receives)
    TIME_FORMULA = ("per rank: sum over links of alpha msgs + max(sum of beta sent, sum of "
                    "beta recv) + flops / gamma (alpha, beta of the node or the network "
                    "each message crosses; flops at the rate each kernel reaches); slowest "
                    "rank, or the makespan when ranks share cores")

    def times(self, profile: MachineProfile, placement: Placement) -> np.ndarray:
        """Seconds per rank: `link_time` of the traffic plus flops / gamma."""
        links = self.links_at(placement)
        return link_time(links, profile, placement) + self._at_gamma(profile) / profile.gamma_flops

    def time_terms(self, profile: MachineProfile, placement: Placement) -> dict:
        """The alpha-beta-gamma sum of the rank whose sum is the largest, term by term
        (seconds, each at one core): latency = alpha msgs, bandwidth = max(beta sent,
        beta recv), compute = flops / gamma. A model whose time is not that sum (a
        critical path, a roofline) keeps these as the terms it is made of."""
        links = self.links_at(placement)
        latency, bandwidth = link_terms(links, profile, placement)
        compute = np.broadcast_to(self._at_gamma(profile) / profile.gamma_flops,
                                  np.shape(self.bytes_sent))
        rank = int(np.argmax(latency + bandwidth + compute))
        return {"latency": float(np.broadcast_to(latency, compute.shape)[rank]),
                "bandwidth": float(np.broadcast_to(bandwidth, compute.shape)[rank]),
                "compute": float(compute[rank])}

    def _at_gamma(self, profile: MachineProfile) -> np.ndarray:
        """The flops per rank in flop-equivalents at `profile`'s gamma (`rated_flops`)."""
        return self.flops if self.rated_flops is None else self.rated_flops(profile.local)

    def record_block(self, profile: MachineProfile, placement: Placement | None = None,
                     per_rank: bool = True) -> dict:
        """The record's `model` block: max and mean per rank, predicted time (`times` of
        the slowest rank, or their makespan where the ranks share cores); `per_rank`:
        with every rank's bytes (a prediction record keeps none)."""
        placement = placement or profile.placement(len(self.bytes_sent))
        block = traffic_block(self, per_rank)
        wire_sent, wire_recv, _ = self.wire()
        block["wire"].update(node_split(np.asarray(wire_sent, dtype=float),
                                        np.asarray(wire_recv, dtype=float),
                                        *self.inter_node(placement), per_rank))
        if self.critical_path is None:
            time_s = shared_makespan(self.times(profile, placement), placement.shared_cores)
            time_formula = self.TIME_FORMULA
        else:
            time_s, time_formula = self.critical_path[0](profile, placement), self.critical_path[1]
        return {**block,
                "flops": _max_mean(self.flops),
                "time_s": float(time_s),
                "time_terms_s": self.time_terms(profile, placement),
                "time_formula": time_formula,
                "formula": self.formula}


def node_split(sent: np.ndarray, recv: np.ndarray, inter_sent: np.ndarray,
               inter_recv: np.ndarray, per_rank: bool = True) -> dict:
    """The `inter_node` and `intra_node` parts of a `wire` block (measured or modelled):
    per rank the bytes sent to and received from ranks on other nodes, and the rest
    (exchanged within its own node), with their max and mean (`per_rank`: and the
    lists)."""
    def part(out: np.ndarray, into: np.ndarray) -> dict:
        out, into = np.asarray(out, dtype=float), np.asarray(into, dtype=float)
        return {"bytes_sent": _max_mean(out), "bytes_recv": _max_mean(into),
                **_per_rank_lists(out, into, per_rank)}
    return {"inter_node": part(inter_sent, inter_recv),
            "intra_node": part(np.asarray(sent) - inter_sent, np.asarray(recv) - inter_recv)}


def link_terms(links: Links, profile: MachineProfile,
               placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """(sum_span alpha_span msgs, bandwidth). An entry (sent, recv, msgs) lets a rank's
    sends and receives overlap: bandwidth max(sum_span beta_span sent, sum_span beta_span
    recv). An entry with a fourth array, (sent, recv, msgs, serial), is collectives that
    run one after another: serial = the sum over them of max(sent, recv) of each (only
    inside one collective, a chain's forwarding or a Bruck round, does a rank send while
    it receives), and its bandwidth is beta_span serial, added."""
    latency, out, into, serial = 0.0, 0.0, 0.0, 0.0
    for key, costs in links.items():
        span, active = key if isinstance(key, tuple) else (key, None)
        alpha, beta = profile.link(span, placement, active)
        sent, recv, msgs = costs[:3]
        latency = latency + alpha * msgs
        if len(costs) > 3:
            serial = serial + beta * costs[3]
        else:
            out = out + beta * sent
            into = into + beta * recv
    return latency, np.maximum(out, into) + serial


def link_time(links: Links, profile: MachineProfile, placement: Placement) -> np.ndarray:
    """Latency plus bandwidth of `link_terms`."""
    latency, bandwidth = link_terms(links, profile, placement)
    return latency + bandwidth


def link_split(links: Links, profile: MachineProfile,
               placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """`link_time` in two: (on the node, on the network) (`MachineProfile.on_network`), each
    span's messages with the others of their kind: on a node a message is a copy that
    takes its rank's core, on the network it is a wait that does not."""
    kinds = ({}, {})
    for key, costs in links.items():
        kinds[profile.on_network(link_span(key), placement)][key] = costs
    inside, across = (link_time(kind, profile, placement) if kind else 0.0 for kind in kinds)
    return inside, across


def waiting_makespans(work: np.ndarray, wait: np.ndarray, cores: float | None,
                      weights: np.ndarray | None = None) -> np.ndarray:
    """`makespans` of ranks that each compute `work` and wait `wait` on the network (rows:
    independent pieces, e.g. steps). A waiting rank holds no core, and what it waits for
    is the others' work (a reduction of their products, a panel they factor): the
    makespan of the work on the shared cores, then the longest wait; max(work + wait)
    where the cores are not shared."""
    work, wait = np.broadcast_arrays(np.asarray(work, dtype=float), np.asarray(wait, dtype=float))
    if weights is not None:   # padding entries (weight 0) count nothing
        used = weights > 0
        if cores is None:
            return np.where(used, work + wait, 0.0).max(axis=-1)
        work, wait = np.where(used, work, 0.0), np.where(used, wait, 0.0)
    if cores is None:
        return (work + wait).max(axis=-1)
    return makespans(work, cores, weights) + wait.max(axis=-1)


def serial_costs(*collectives: tuple) -> tuple:
    """(sent, recv, msgs, serial) of collectives that run one after another, each given
    as (sent, recv, msgs) per rank (`link_terms`)."""
    sent, recv, msgs = (sum(np.asarray(c[i], dtype=float) for c in collectives)
                        for i in range(3))
    serial = sum(np.maximum(np.asarray(c[0], dtype=float), np.asarray(c[1], dtype=float))
                 for c in collectives)
    return sent, recv, msgs, serial


def shared_makespan(work: np.ndarray, cores: float | None,
                    weights: np.ndarray | None = None) -> float:
    """Time for ranks that start together with `work` seconds each (at one core) to all
    finish when they share `cores` cores fairly (processor sharing: while m ranks still
    work, each runs at min(1, cores/m)); max(work) when cores is None. `weights`: how
    many ranks have each work (one each by default; works >= 0)."""
    work = np.asarray(work, dtype=float).reshape(1, -1)
    return float(makespans(work, cores, None if weights is None
                           else np.asarray(weights, dtype=float).reshape(1, -1))[0])


def makespans(work: np.ndarray, cores: float | None,
              weights: np.ndarray | None = None) -> np.ndarray:
    """`shared_makespan` of each row of `work` (rows: independent pieces of work, e.g.
    the steps of an LU). Sorting a row w_(1) <= ... with R_i ranks at or above w_(i):
    sum_i (w_(i) - w_(i-1)) max(1, R_i / cores). Entries of weight 0 must be 0."""
    if cores is None:
        return work.max(axis=-1)
    order = np.argsort(work, axis=-1, kind="stable")
    w = np.take_along_axis(work, order, axis=-1)
    counts = np.ones(work.shape) if weights is None else np.take_along_axis(weights, order, -1)
    running = np.cumsum(counts[..., ::-1], axis=-1)[..., ::-1]
    return (np.diff(w, prepend=0.0, axis=-1) * np.maximum(1.0, running / cores)).sum(axis=-1)


def _max_mean(values: np.ndarray) -> dict:
    values = np.asarray(values, dtype=float)
    return {"max": float(values.max()), "mean": float(values.mean())}


def traffic_block(costs: RankCosts, per_rank: bool = True) -> dict:
    """The traffic part of a `model` block, in the shape of a record's `traffic`: logical
    and wire bytes and messages (max and mean per rank) and (`per_rank`) every rank's
    bytes."""
    wire_sent, wire_recv, wire_msgs = costs.wire()
    return {
        "bytes_sent": _max_mean(costs.bytes_sent),
        "bytes_recv": _max_mean(costs.bytes_recv),
        "msgs_sent": _max_mean(costs.msgs_sent),
        "wire": {"bytes_sent": _max_mean(wire_sent), "bytes_recv": _max_mean(wire_recv),
                 "msgs_sent": _max_mean(wire_msgs),
                 **_per_rank_lists(wire_sent, wire_recv, per_rank)},
        **_per_rank_lists(costs.bytes_sent, costs.bytes_recv, per_rank),
    }


def _per_rank_lists(sent, recv, per_rank: bool) -> dict:
    """{"per_rank_bytes_sent", "per_rank_bytes_recv"} lists, or {} (`per_rank` False)."""
    if not per_rank:
        return {}
    return {"per_rank_bytes_sent": np.asarray(sent, dtype=float).tolist(),
            "per_rank_bytes_recv": np.asarray(recv, dtype=float).tolist()}
