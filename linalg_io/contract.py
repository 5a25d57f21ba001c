"""What the runner and a family's case agree on (a leaf module: no MPI, no imports of
the package): `RunConfig`, the plain description of one run the CLI hands the runner,
and `Case`, the object a family's ``make_case(comm, config)`` returns
(`linalg_io.runner` times, verifies and records it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class RunConfig:
    """What the CLI hands the runner: a plain description of one run."""

    command: str
    options: dict[str, Any]
    argv: list[str] = field(default_factory=list)
    reps: int = 5
    warmup: int = 1
    seed: int = 0
    out: str | None = None
    threads: int = 1
    backend: str = "cpu"
    quiet: bool = False
    profile: str | None = None
    resolved: dict[str, Any] = field(default_factory=dict)   # the record's `options`
    stall_timeout: float | str | None = None   # seconds, "off", None: the model's deadline


class Case(Protocol):
    """One benchmark run of a family (an object may also set ``logical_unavailable``,
    a str: why the package's logical counter cannot see its messages)."""

    kernel: str                 # the record's kernel, e.g. "lu"
    algo: str                   # the record's algo, e.g. "conflux"
    params: dict                # the record's params

    def setup_rep(self) -> None:
        """Restore the inputs before a repetition (local work only: untimed, uncounted)."""

    def run(self) -> None:
        """One timed repetition; every message through the CountedComm."""

    def verify(self) -> dict:
        """Collective check -> {metric, value, threshold, passed, ...} (rank 0's counts)."""

    def flops(self) -> float:
        """Flops of one repetition (for GFLOP/s)."""

    def model(self) -> dict | None:
        """The record's `model` block (`RankCosts.record_block`), or None."""

    def lower_bound(self) -> dict | None:
        """{bytes_per_rank, formula} or None."""

    def describe(self) -> str:
        """The parameters as a short string for the summary line."""
