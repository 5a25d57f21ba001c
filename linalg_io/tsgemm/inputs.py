"""Inputs that do not depend on the decomposition: entry (i, j) of a matrix is a hash of
(seed, matrix, i, j), so any rank can generate any block, and the reference check can
regenerate exactly what another rank holds without moving a byte."""

from __future__ import annotations

import numpy as np

_SALT = {"A": 0x51ED270B27A1C3D5, "B": 0x2545F4914F6CDD1D}
_CHUNK = 1 << 20


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place on uint64."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def block(name: str, seed: int, rows: tuple[int, int], cols: tuple[int, int], total_cols: int,
          dtype, order: str = "C") -> np.ndarray:
    """Rows [r0, r1) x columns [c0, c1) of matrix `name` (total_cols wide), uniform in
    [-0.5, 0.5), in the given dtype and memory order."""
    (r0, r1), (c0, c1) = rows, cols
    out = np.empty((r1 - r0, c1 - c0), dtype=dtype, order=order)
    if out.size == 0:
        return out
    key = np.uint64((seed * 0x9E3779B97F4A7C15 + _SALT[name]) % 2**64)
    col_index = np.arange(c0, c1, dtype=np.uint64)
    step = max(1, _CHUNK // max(1, c1 - c0))
    with np.errstate(over="ignore"):
        for start in range(r0, r1, step):
            stop = min(r1, start + step)
            index = (np.arange(start, stop, dtype=np.uint64)[:, None] * np.uint64(total_cols)
                     + col_index[None, :])
            bits = _mix(index * np.uint64(0x9E3779B97F4A7C15) + key)
            out[start - r0:stop - r0] = (bits >> np.uint64(11)) * 2.0**-53 - 0.5
    return out
