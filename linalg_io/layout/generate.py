"""Deterministic test matrices, element by element, so each rank builds only its own blocks.

Entry (i, j) of the N x N matrix depends only on (seed, i, j, N): a counter-based
hash (splitmix64 of seed * N^2 + i * N + j) mapped to a uniform value in
[-0.5, 0.5), as HPL's generator. Any distribution of the matrix over ranks
therefore sees the same global matrix, and tests can rebuild it whole.

kinds: ``random`` (uniform [-0.5, 0.5)); ``diagdom`` (random plus N on the
diagonal: |a_ii| >= N - 0.5 > sum of the other |a_ij|, so partial pivoting never
swaps rows).
"""

from __future__ import annotations

import numpy as np

from linalg_io.errors import InputError

KINDS = ("random", "diagdom")
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(counter: np.ndarray) -> np.ndarray:
    z = counter + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def uniform_entries(seed: int, n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """A[rows][:, cols] of the seeded uniform [-0.5, 0.5) N x N matrix (Fortran order)."""
    rows = np.asarray(rows, dtype=np.uint64).reshape(-1, 1)
    cols = np.asarray(cols, dtype=np.uint64).reshape(1, -1)
    with np.errstate(over="ignore"):
        base = np.uint64(seed) * np.uint64(n) * np.uint64(n)
        bits = _splitmix64(base + rows * np.uint64(n) + cols)
    values = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53) - 0.5
    return np.asfortranarray(values)


def matrix_entries(kind: str, seed: int, n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """A[rows][:, cols] of the generated matrix of `kind` (see the module docstring)."""
    if kind not in KINDS:
        raise InputError(f"unknown matrix kind {kind!r}; expected one of {', '.join(KINDS)}")
    block = uniform_entries(seed, n, rows, cols)
    if kind == "diagdom":
        rows = np.asarray(rows).reshape(-1, 1)
        cols = np.asarray(cols).reshape(1, -1)
        block[rows == cols] += float(n)
    return block


def vector_entries(seed: int, n: int, rows: np.ndarray) -> np.ndarray:
    """Entries of a seeded uniform right-hand side b (independent of the matrix)."""
    return uniform_entries(seed + 0x5EED, n, rows, np.zeros(1, dtype=np.int64))[:, 0].copy()
