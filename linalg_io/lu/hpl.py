"""HPL's acceptance test and flop count, shared by every LU variant.

Scaled residual (HPL): ||b - A x||_inf / (eps * (||A||_inf ||x||_inf + ||b||_inf) * N),
accepted below 16. GFLOP/s counts (2/3 N^3 + 3/2 N^2) flops, as HPL does.

A matrix singular to working precision can still pass the residual test (two equal
rows give a tiny pivot, a huge x and a small scaled residual), so the verdict also
takes a cheap conditioning signal: the smallest |pivot| (|U_ii|) relative to max|A|,
"numerically singular" (failed) below N eps; the growth factor max|U|/max|A| goes
beside it.
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


def conditioning(min_pivot: float, u_max: float, a_max: float, n: int) -> dict:
    """growth_factor max|U|/max|A|, min_pivot_ratio min|U_ii|/max|A|, and whether that is
    below N eps (numerically_singular)."""
    scale = a_max if a_max > 0 else float("nan")
    ratio = float(min_pivot / scale)
    return {"growth_factor": float(u_max / scale), "min_pivot_ratio": ratio,
            "numerically_singular": bool(not ratio >= n * np.finfo(np.float64).eps)}


def hpl_verify_block(scaled_residual: float, **extra) -> dict:
    """The record's `verify` block for an LU run (extra: `conditioning` and the like); a
    numerically singular matrix fails whatever its residual."""
    passed = bool(np.isfinite(scaled_residual) and scaled_residual < HPL_THRESHOLD
                  and not extra.get("numerically_singular", False))
    return {"metric": "hpl_scaled_residual", "value": float(scaled_residual),
            "threshold": HPL_THRESHOLD, "passed": passed, **extra}
