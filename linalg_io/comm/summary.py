"""Reducing every rank's TrafficCounter into the record's `traffic` block (SPEC section 3)."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import TrafficCounter


def stats(values: np.ndarray, keys: tuple[str, ...] = ("max", "mean", "min")) -> dict[str, float]:
    funcs = {"max": np.max, "mean": np.mean, "min": np.min}
    return {k: float(funcs[k](values)) for k in keys}


def traffic_summary(counter: TrafficCounter, world: MPI.Comm, reps: int) -> dict | None:
    """Per-rank traffic per repetition, gathered on rank 0 (None elsewhere).

    Collective over `world` (uncounted). `by_op` and `by_phase` give the bytes
    sent per operation and per phase by the rank that sent the most, so they add
    up to `bytes_sent.max`; `per_rank_bytes_sent` lists every rank (for balance).
    """
    counter.settle_one_sided(world)
    mine = {
        "sent": counter.bytes_sent, "recv": counter.bytes_recv, "msgs": counter.msgs_sent,
        "by_op": dict(counter.sent_by_op), "by_phase": dict(counter.sent_by_phase),
        "recv_by_phase": dict(counter.recv_by_phase),
    }
    everyone = world.gather(mine, root=0)
    if world.Get_rank() != 0:
        return None
    scale = 1.0 / max(reps, 1)
    sent = np.array([r["sent"] for r in everyone], dtype=float) * scale
    recv = np.array([r["recv"] for r in everyone], dtype=float) * scale
    msgs = np.array([r["msgs"] for r in everyone], dtype=float) * scale
    busiest = everyone[int(np.argmax(sent))]
    return {
        "level": "logical",
        "bytes_sent": stats(sent),
        "bytes_recv": stats(recv),
        "msgs_sent": stats(msgs, ("max", "mean")),
        "by_op": {op: b * scale for op, b in sorted(busiest["by_op"].items())},
        "by_phase": {ph: b * scale for ph, b in sorted(busiest["by_phase"].items())},
        "per_rank_bytes_sent": sent.tolist(),
    }
