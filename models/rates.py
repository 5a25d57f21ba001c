"""The rates the time models take the local work at, relative to the profile's gamma
(a dgemm's rate), and the BLAS pool the models' own small products run in.

The dgemm rate at inner dimension k is gamma times `gemm_efficiency(k)` = k/(k+h) over
512/(512+h) (1 at k >= 512): a thin update runs far from the rate of a square one. A
panel's getrf and the triangular solves run at a share of gamma: they are bandwidth- and
latency-bound where the dgemm is not. Both are a machine's (`LocalRates`: h and that
share), measured by `linalg-io calibrate` at each thread count and kept in its machine
file (`gemm_k_half`, `panel_rate`); a file without them takes GEMM_K_HALF and PANEL_RATE
(`bench/threads_check.py --kernels` measures both against a machine's BLAS).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

GEMM_K_HALF = 64.0
GEMM_K_REF = 512.0
PANEL_RATE = 0.5

# the models' products are small: one BLAS thread (a pool of threads costs more than
# it brings at these sizes; `BLAS.limit(limits=1, user_api="blas")` around them)
BLAS = ThreadpoolController()


def gemm_efficiency(k: np.ndarray, k_half: float = GEMM_K_HALF) -> np.ndarray:
    """The dgemm's rate at inner dimension k, relative to gamma (module doc; h =
    `k_half`)."""
    k = np.asarray(k, dtype=float)
    return np.minimum(1.0, (k / (k + k_half)) / (GEMM_K_REF / (GEMM_K_REF + k_half)))


@dataclass(frozen=True)
class LocalRates:
    """A rank's local work relative to its gamma (module doc): the dgemm at inner
    dimension k at `gemm(k)` of the curve's h = `k_half`, getrf and the triangular
    solves at `panel`."""

    k_half: float = GEMM_K_HALF
    panel: float = PANEL_RATE

    def gemm(self, k) -> np.ndarray:
        return gemm_efficiency(k, self.k_half)


DEFAULT_RATES = LocalRates()


def getrf_flops(m, n):
    """Flops of getrf on an m x n block (arrays or numbers): max(m, n) k^2 - k^3/3,
    k = min(m, n)."""
    k = np.minimum(m, n)
    return np.maximum(m, n) * k * k - k**3 / 3.0
