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
        def mm(values: np.ndarray) -> dict:
            values = np.asarray(values, dtype=float)
            return {"max": float(values.max()), "mean": float(values.mean())}

        return {
            "bytes_sent": mm(self.bytes_sent),
            "bytes_recv": mm(self.bytes_recv),
            "msgs_sent": mm(self.msgs_sent),
            "flops": mm(self.flops),
            "time_s": float(self.times(profile).max()),
            "time_formula": self.TIME_FORMULA,
            "formula": self.formula,
            "per_rank_bytes_sent": np.asarray(self.bytes_sent, dtype=float).tolist(),
        }
