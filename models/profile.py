"""Machine profile: the alpha-beta-gamma parameters every time prediction uses.

Written by `linalg-io calibrate` (alpha and beta fitted to ping-pong, gamma from a
local dgemm, memory bandwidth from a STREAM-like triad); `default_profile.json`
beside this file was calibrated on the 2-core development machine.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass
from pathlib import Path

from linalg_io.errors import InputError

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


# the rates: every field without a default
NUMBERS = tuple(name for name, field in MachineProfile.__dataclass_fields__.items()
                if field.default is MISSING)


def load_profile(path: str | Path | None = None) -> MachineProfile:
    """Read a profile JSON (the shipped default when `path` is None); InputError when
    it is not a JSON object with the four rates as positive numbers."""
    source = Path(path) if path is not None else DEFAULT_PROFILE_PATH
    try:
        data = json.loads(source.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"machine profile {source} is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise InputError(f"machine profile {source} is not a JSON object")
    missing = [key for key in NUMBERS if key not in data]
    if missing:
        raise InputError(f"machine profile {source} lacks {', '.join(missing)} "
                         "(write one with `linalg-io calibrate --write`)")
    bad = [key for key in NUMBERS if isinstance(data[key], bool)
           or not isinstance(data[key], (int, float)) or not data[key] > 0]
    if bad:
        raise InputError(f"machine profile {source}: {', '.join(bad)} must be positive numbers")
    fields = MachineProfile.__dataclass_fields__
    return MachineProfile(**{k: v for k, v in data.items() if k in fields})
