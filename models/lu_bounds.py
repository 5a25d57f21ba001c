"""Proven lower bounds on the 2.5D LU model's time, in closed form: what the candidate
search (`linalg_io.lu.choice`) may skip without evaluating it.

`update_seconds(n, v, px, py, c, profile, placement)` bounds the `time_s` of
`linalg_io.models.conflux.conflux_plan_counts` from below by the trailing updates
alone. Step k (panel widths w_k = min(v, N - k v), R_k = N - w_0 - ... - w_k rows and
columns left after it) gives layer l a slice of s_{k,l} = w_k // c + (l < w_k mod c)
columns; a rank (l, x, y) with b_x of the R_k rows and t_y of the R_k columns runs the
update U_k(r): 2 b_x s_{k,l} t_y flops at gamma gemm_efficiency(max(s, 1)), no
messages, so its work is that over gamma. Summed over the P ranks (the rows and the
columns are each split among the process rows and columns):

    W = sum_k 2 R_k^2 sum_l s_{k,l} / (gamma gemm_efficiency(max(s_{k,l}, 1)))

The model's time holds every rank's sum_k U_k(r) (`conflux._critical_path`): with a
core per rank and Py > 1 the busiest rank's own sum_k [S_k + U_k + F_{k+1}] >= its
sum_k U_k; otherwise sum_k M(U_k + F_{k+1}), each makespan M at least the busiest
rank's work and, where the P ranks share C cores, their work over C (fair sharing
runs a rank at most at one core's rate). So, every other term being >= 0,

    time_s >= W / P * max(1, P / C)   (C: no sharing, 1)

a bound per (N, v, c, P) and the machine's gamma and cores: it tells the tiles and
slices apart (a thin slice v/c runs the dgemm far from gamma), not the grids.
"""

from __future__ import annotations

import numpy as np
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import gemm_efficiency


def update_work(n: int, v: int, c: int) -> float:
    """W of the module doc in gamma-flops (seconds times gamma): every rank's updates."""
    steps = -(-n // v)
    widths = np.minimum(v, n - v * np.arange(steps)).astype(float)
    left = n - np.cumsum(widths)                                  # R_k
    layer = np.arange(c)
    slices = widths[:, None] // c + (layer[None, :] < widths[:, None] % c)
    per_flop = slices / gemm_efficiency(np.maximum(slices, 1.0))
    return float((2.0 * left * left * per_flop.sum(axis=1)).sum())


def update_seconds(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                   placement: Placement) -> float:
    """A lower bound on the 2.5D model's time_s of (Px, Py, c, v) (module doc)."""
    p = px * py * c
    cores = placement.shared_cores
    share = max(1.0, p / cores) if cores else 1.0
    return update_work(n, v, c) / profile.gamma_flops / p * share
