"""The rates the time models take the local work at, relative to the profile's gamma
(a dgemm's rate), and the BLAS pool the models' own small products run in.

The dgemm rate at inner dimension k is gamma times `gemm_efficiency(k)` = k/(k+64) over
512/576 (1 at k >= 512): a thin update runs far from the rate of a square one
(`bench/bench_time_model.py` measures it against the model). A panel's getrf and the
triangular solves run at `PANEL_RATE` gamma: they are bandwidth- and latency-bound
where the dgemm is not.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import ThreadpoolController

GEMM_K_HALF = 64.0
GEMM_K_REF = 512.0
PANEL_RATE = 0.5

# the models' products are small: one BLAS thread (a pool of threads costs more than
# it brings at these sizes; `BLAS.limit(limits=1, user_api="blas")` around them)
BLAS = ThreadpoolController()


def gemm_efficiency(k: np.ndarray) -> np.ndarray:
    """The dgemm's rate at inner dimension k, relative to gamma (module doc)."""
    k = np.asarray(k, dtype=float)
    return np.minimum(1.0, (k / (k + GEMM_K_HALF)) / (GEMM_K_REF / (GEMM_K_REF + GEMM_K_HALF)))


def getrf_flops(m, n):
    """Flops of getrf on an m x n block (arrays or numbers): max(m, n) k^2 - k^3/3,
    k = min(m, n)."""
    k = np.minimum(m, n)
    return np.maximum(m, n) * k * k - k**3 / 3.0
