"""The Hockney (alpha-beta) fit of ping-pong times, pure: `calibrate` writes it into a
profile, the report draws it beside the measured points."""

from __future__ import annotations

import numpy as np

from linalg_io.errors import InputError


def fit_alpha_beta(rows: list[dict]) -> tuple[float, float]:
    """Hockney fit t(n) = alpha + beta n: alpha = the smallest one-way time of messages
    <= 256 B; beta = the median of (t - alpha) / n over messages >= 64 KiB (the
    asymptotic bandwidth)."""
    small = [r["one_way_s"] for r in rows if r["bytes"] <= 256]
    large = [r for r in rows if r["bytes"] >= 64 * 2**10]
    if not small or not large:
        raise InputError("calibrate needs ping-pong sizes from <= 256 B to >= 64 KiB")
    alpha = min(small)
    beta = float(np.median([(r["one_way_s"] - alpha) / r["bytes"] for r in large]))
    return alpha, beta
