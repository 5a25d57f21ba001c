"""Per-rank costs that every model returns, and their reduction to the record's `model` block."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from linalg_io.models.profile import MachineProfile


@dataclass
class RankCosts:
    """Predicted traffic and work of one run, one entry per rank (world rank order).

    Counted by the rules of SPEC section 4, so they compare line by line with the
    measured `traffic` block. `formula` states the closed form in words for the report.
    """

    bytes_sent: np.ndarray
    bytes_recv: np.ndarray
    msgs_sent: np.ndarray
    flops: np.ndarray
    formula: str
    # what the MPI library moves (SPEC section 4's wire level), where it differs from
    # the logical counts; None: the algorithm sends every byte in point-to-point
    # messages of its own (`linalg_io.comm.collectives`), so wire == logical
    wire_sent: np.ndarray | None = None
    wire_recv: np.ndarray | None = None
    wire_msgs: np.ndarray | None = None

    def wire(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bytes sent, bytes received, messages) per rank on the wire."""
        return (self.bytes_sent if self.wire_sent is None else self.wire_sent,
                self.bytes_recv if self.wire_recv is None else self.wire_recv,
                self.msgs_sent if self.wire_msgs is None else self.wire_msgs)

    # what `times` computes, for the record (SPEC section 5's alpha-beta-gamma sum, with
    # a rank's bytes the larger of what it sends and receives)
    TIME_FORMULA = "alpha msgs + beta max(sent, recv) + flops / gamma, slowest rank"

    def times(self, profile: MachineProfile) -> np.ndarray:
        """alpha * msgs + beta * bytes + flops / gamma, per rank (bytes = max(sent, recv))."""
        moved = np.maximum(self.bytes_sent, self.bytes_recv)
        return profile.alpha_s * self.msgs_sent + profile.beta_s_per_byte * moved \
            + self.flops / profile.gamma_flops

    def record_block(self, profile: MachineProfile) -> dict:
        """The record's `model` block: max and mean per rank, predicted time (slowest rank)."""
        return {**traffic_block(self),
                "flops": _max_mean(self.flops),
                "time_s": float(self.times(profile).max()),
                "time_formula": self.TIME_FORMULA,
                "formula": self.formula}


def _max_mean(values: np.ndarray) -> dict:
    values = np.asarray(values, dtype=float)
    return {"max": float(values.max()), "mean": float(values.mean())}


def traffic_block(costs: RankCosts) -> dict:
    """The traffic part of a `model` block, in the shape of a record's `traffic`: logical
    and wire bytes and messages (max and mean per rank) and every rank's bytes."""
    wire_sent, wire_recv, wire_msgs = costs.wire()
    return {
        "bytes_sent": _max_mean(costs.bytes_sent),
        "bytes_recv": _max_mean(costs.bytes_recv),
        "msgs_sent": _max_mean(costs.msgs_sent),
        "wire": {"bytes_sent": _max_mean(wire_sent), "bytes_recv": _max_mean(wire_recv),
                 "msgs_sent": _max_mean(wire_msgs),
                 "per_rank_bytes_sent": np.asarray(wire_sent, dtype=float).tolist(),
                 "per_rank_bytes_recv": np.asarray(wire_recv, dtype=float).tolist()},
        "per_rank_bytes_sent": np.asarray(costs.bytes_sent, dtype=float).tolist(),
        "per_rank_bytes_recv": np.asarray(costs.bytes_recv, dtype=float).tolist(),
    }
