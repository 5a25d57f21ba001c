"""HPL's acceptance test and flop count, shared by every LU variant.

Scaled residual (HPL): ||b - A x||_inf / (eps * (||A||_inf ||x||_inf + ||b||_inf) * N),
accepted below 16. GFLOP/s counts (2/3 N^3 + 3/2 N^2) flops, as HPL does.
"""

from __future__ import annotations

import numpy as np

HPL_THRESHOLD = 16.0


def hpl_scaled_residual(residual_inf: float, a_inf: float, x_inf: float, b_inf: float,
                        n: int) -> float:
    eps = np.finfo(np.float64).eps
    denominator = eps * (a_inf * x_inf + b_inf) * n
    return float(residual_inf / denominator) if denominator > 0 else float("inf")


def hpl_flops(n: int) -> float:
    return 2.0 / 3.0 * n**3 + 1.5 * n**2


def hpl_verify_block(scaled_residual: float, **extra: float) -> dict:
    """The record's `verify` block for an LU run (extra: growth factor and the like)."""
    passed = bool(np.isfinite(scaled_residual) and scaled_residual < HPL_THRESHOLD)
    return {"metric": "hpl_scaled_residual", "value": float(scaled_residual),
            "threshold": HPL_THRESHOLD, "passed": passed, **extra}
