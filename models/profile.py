"""Machine profile: the alpha-beta-gamma parameters every time prediction uses.

Written by `linalg-io calibrate` (alpha and beta fitted to ping-pong, gamma from a
local dgemm, memory bandwidth from a STREAM-like triad); `default_profile.json`
beside this file was calibrated on the 2-core development machine.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_PROFILE_PATH = Path(__file__).with_name("default_profile.json")


@dataclass(frozen=True)
class MachineProfile:
    """alpha: seconds per message; beta: seconds per byte; gamma: flop/s of one
    rank's dgemm; mem_bw: bytes/s of one rank's streaming copy."""

    alpha_s: float
    beta_s_per_byte: float
    gamma_flops: float
    mem_bw_bytes_per_s: float
    name: str = "unnamed"

    def comm_time(self, msgs: float, nbytes: float) -> float:
        return self.alpha_s * msgs + self.beta_s_per_byte * nbytes

    def time(self, msgs: float, nbytes: float, flops: float) -> float:
        """alpha * msgs + beta * bytes + flops / gamma."""
        return self.comm_time(msgs, nbytes) + flops / self.gamma_flops

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def load_profile(path: str | Path | None = None) -> MachineProfile:
    """Read a profile JSON (the shipped default when `path` is None)."""
    source = Path(path) if path is not None else DEFAULT_PROFILE_PATH
    data = json.loads(source.read_text())
    fields = MachineProfile.__dataclass_fields__
    return MachineProfile(**{k: v for k, v in data.items() if k in fields})
