"""Reducing every rank's counts into the record's `traffic` block
(docs/records.md#schema): the logical counter's (`TrafficCounter`) and the wire
counter's (`WireCounter`). The line a run prints from its record:
`linalg_io.report.line`."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import TrafficCounter
from linalg_io.comm.wire import NoWire, WireCounter, wire_by_node
from linalg_io.models.costs import node_split


def stats(values: np.ndarray, keys: tuple[str, ...] = ("max", "mean", "min")) -> dict[str, float]:
    funcs = {"max": np.max, "mean": np.mean, "min": np.min}
    return {k: float(funcs[k](values)) for k in keys}


def traffic_summary(counter: TrafficCounter, wire: WireCounter | NoWire, world: MPI.Comm,
                    reps: int, logical_unavailable: str | None = None) -> dict | None:
    """Per-rank traffic per repetition, gathered on rank 0 (None elsewhere).

    Collective over `world` (uncounted). `wire` is the wire counter, or its stand-in
    (then `wire` is null and `wire_unavailable` says why). `by_op` and
    `by_phase` give the bytes sent per operation and per phase by the rank that sent
    the most, so they add up to `bytes_sent.max`; `recv_by_phase` the same for the
    rank that received the most; `per_rank_*` list every rank (for balance). With
    `logical_unavailable` (an algorithm whose messages the package does not see,
    such as ScaLAPACK's) the logical fields are null and the reason is recorded.
    """
    counter.settle_one_sided(world)
    mine = {
        "sent": counter.bytes_sent, "recv": counter.bytes_recv, "msgs": counter.msgs_sent,
        "by_op": dict(counter.sent_by_op), "by_phase": dict(counter.sent_by_phase),
        "recv_by_phase": dict(counter.recv_by_phase),
        "wire": wire_by_node(wire, world),
    }
    everyone = world.gather(mine, root=0)
    if world.Get_rank() != 0:
        return None
    scale = 1.0 / max(reps, 1)

    def per_rank(key, index=None) -> np.ndarray:
        return np.array([r[key] if index is None else r[key][index] for r in everyone],
                        dtype=float) * scale

    summary: dict = {"level": "logical"}
    if logical_unavailable is None:
        sent, recv = per_rank("sent"), per_rank("recv")
        busiest = everyone[int(np.argmax(sent))]
        most_received = everyone[int(np.argmax(recv))]
        summary.update({
            "bytes_sent": stats(sent),
            "bytes_recv": stats(recv),
            "msgs_sent": stats(per_rank("msgs"), ("max", "mean")),
            "by_op": {op: b * scale for op, b in sorted(busiest["by_op"].items())},
            "by_phase": {ph: b * scale for ph, b in sorted(busiest["by_phase"].items())},
            "recv_by_phase": {ph: b * scale
                              for ph, b in sorted(most_received["recv_by_phase"].items())},
            "per_rank_bytes_sent": sent.tolist(),
            "per_rank_bytes_recv": recv.tolist(),
        })
    else:
        summary.update({key: None for key in ("bytes_sent", "bytes_recv", "msgs_sent", "by_op",
                                              "by_phase", "recv_by_phase",
                                              "per_rank_bytes_sent", "per_rank_bytes_recv")})
        summary["logical_unavailable"] = logical_unavailable
    if wire.available:
        wire_sent, wire_recv = per_rank("wire", "sent"), per_rank("wire", "recv")
        summary["wire"] = {
            "source": wire.source,
            "bytes_sent": stats(wire_sent),
            "bytes_recv": stats(wire_recv),
            "msgs_sent": stats(per_rank("wire", "msgs"), ("max", "mean")),
            "per_rank_bytes_sent": wire_sent.tolist(),
            "per_rank_bytes_recv": wire_recv.tolist(),
            **node_split(wire_sent, wire_recv, per_rank("wire", "inter_sent"),
                         per_rank("wire", "inter_recv")),
        }
    else:
        summary["wire"] = None
        summary["wire_unavailable"] = wire.reason
    return summary
