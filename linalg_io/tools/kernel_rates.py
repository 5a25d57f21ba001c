"""A rank's local kernels relative to its gamma, as `calibrate` measures them for the
machine file's `gemm_k_half` and `panel_rate` (`linalg_io.models.rates.LocalRates`).

The trailing updates multiply tall blocks through a thin inner dimension k (the 2D LU's
NB, the 2.5D LU's slices v/c): `update_shares` times a dgemm of m = n = UPDATE_ORDER at
each k of UPDATE_KS against the rank's square dgemm (gamma), and `fit_k_half` fits the
curve k/(k+h) over 512/(512+h) to those shares by least squares. The panel's getrf runs
far below gamma (bandwidth- and latency-bound, and on T threads more so):
`panel_share` times LAPACK's getrf of a PANEL_ROWS x PANEL_COLUMNS panel, its flops
(`getrf_flops`) over the seconds, against gamma. Pure but for the timing itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.linalg import lu_factor

from linalg_io.models.rates import GEMM_K_REF, gemm_efficiency, getrf_flops

UPDATE_KS = (64, 128, 256)
# the update's m = n: a rank's trailing blocks are thousands wide in the runs users
# model (an LU's flops weigh its widest steps most); on several threads a narrower
# product runs below them (the pool's share of it), on one thread no different
UPDATE_ORDER = 4096
PANEL_ROWS, PANEL_COLUMNS = 8192, 128
# the curve's h is searched within [0, K_HALF_MOST] (shares at or above 1 at every k: 0)
K_HALF_MOST = 4 * GEMM_K_REF
# the calls of `timed` that `update_shares` and `panel_share` make, together: a rank that
# only keeps a measurement's barriers keeps as many
TIMINGS = len(UPDATE_KS) + 2


def fit_k_half(ks: Sequence[float], shares: Sequence[float]) -> float:
    """The h >= 0 whose `gemm_efficiency(k, h)` is closest to `shares` at `ks` (least
    squares; bounded scalar search, K_HALF_MOST at most)."""
    from scipy.optimize import minimize_scalar

    ks, shares = np.asarray(ks, dtype=float), np.asarray(shares, dtype=float)

    def misfit(h: float) -> float:
        return float(((gemm_efficiency(ks, h) - shares) ** 2).sum())

    best = minimize_scalar(misfit, bounds=(0.0, K_HALF_MOST), method="bounded",
                           options={"xatol": 1e-3})
    # the search stops short of its bounds; 0 itself where the shares reach 1
    return 0.0 if misfit(0.0) <= misfit(best.x) else float(best.x)


def update_shares(gamma: float, timed: Callable[[Callable[[], object]], float]) -> list[float]:
    """The dgemm's rate at each k of UPDATE_KS (m = n = UPDATE_ORDER) over `gamma`, each
    timed by `timed(action)` (its best seconds)."""
    rng = np.random.default_rng(0)
    out = np.empty((UPDATE_ORDER, UPDATE_ORDER))
    shares = []
    for k in UPDATE_KS:
        a, b = rng.random((UPDATE_ORDER, k)), rng.random((k, UPDATE_ORDER))
        seconds = timed(lambda a=a, b=b: np.matmul(a, b, out=out))
        shares.append(2.0 * UPDATE_ORDER * UPDATE_ORDER * k / seconds / gamma)
    return shares


def panel_share(gamma: float, timed: Callable[[Callable[[], object]], float]) -> float:
    """LAPACK's getrf of a PANEL_ROWS x PANEL_COLUMNS panel: its rate over `gamma`, each
    part timed by `timed(action)` (its best seconds): a fresh copy factored in place,
    less the copy alone. (SciPy's LAPACK is imported with the module: loaded inside a
    caller's `threadpool_limits`, its own BLAS pool would escape the limit.)"""
    panel = np.asfortranarray(np.random.default_rng(1).random((PANEL_ROWS, PANEL_COLUMNS)))
    both = timed(lambda: lu_factor(panel.copy(order="F"), overwrite_a=True,
                                   check_finite=False))
    copy = timed(lambda: panel.copy(order="F"))
    return float(getrf_flops(PANEL_ROWS, PANEL_COLUMNS)) / max(both - copy, 1e-9) / gamma
