"""Predicted seconds per phase of the two LUs: the record's `model.time_by_phase`.

The phases are those the code times (`linalg_io.comm.phase_clock`): 2.5D
reduce_panel, tournament_pivoting, push_pivots, solves, scatter_slices, update; 2D
panel, swap, bcast_L, bcast_U, update. A rank's time in a phase is its own work there,
summed over the steps:

    sum over its links of alpha msgs + max(beta sent, beta recv) + flops / rate

(`linalg_io.models.costs.link_time`; 2.5D: the collectives of a phase run one after
another, each with its own max(beta sent, beta recv), as the critical path takes
them), the dgemm at gamma times its efficiency at its inner dimension, getrf and the
triangular solves at gamma times the panel's rate (the machine's `MachineProfile.local`,
`linalg_io.models.rates`), times P / cores when the ranks share fewer cores. No
waiting is in it: where a measured phase exceeds its prediction by much, that phase
waits for another rank (or runs slower than the rates say). The result is
{"max": {phase: over the ranks}, "mean": {...}}.

2.5D: the per-phase counts of `linalg_io.models.conflux.conflux_plan_counts` (the walk
its totals and critical path come from), per step k (w columns, roots kx, ky, lk; a rank
(l, x, y) with a active rows, p of them pivots, b = a - p, t trailing columns, slice
s_l), the schedules of `linalg_io.lu.conflux`:
  reduce_panel         column ky: the c layers' a x w panel rows summed onto lk;
  tournament_pivoting  (x, ky, lk): getrf of a x w, log2 q merges (getrf of 2w x w) and
                       their w (w+1) blocks (Px = 1: the getrf of the panel alone);
  push_pivots          the w+1 ids to all P; L00 along the rows of layer lk (all rows
                       when c = 1, row kx otherwise); the p x t pivot rows summed over the
                       layers, then allgathered (c = 1) or gathered on row kx; less,
                       c = 1 and Px > 1, on column ky (k >= 1), min(R, G^o): the
                       allgather's part on links that overlap, G^o, moves during the rest
                       R of update k-1 (the look-ahead, `linalg_io.models.conflux`);
  solves               (x, ky, lk): b w^2 (Px > 1; with Px = 1 the getrf gave L); the
                       solvers of U: w^2 t;
  scatter_slices       c > 1: the L and U slices from lk to the layers; L slices along
                       the rows (b x s_l), U slices down the columns (c > 1, s_l x t);
  update               2 b s_l t.
  Each group's traffic on the link it is timed on; a row's, column's or fibre's whose
  members share nodes split into its messages on a node and between nodes
  (`linalg_io.models.conflux_nodes`).
2D: the per-phase bytes and messages of `linalg_io.models.lu2d.lu2d_plan_counts`, each
part on the link it crosses (`linalg_io.models.lu2d.lu2d_phase_links`), the panels'
getrf in panel, the dgemm and the dtrsm of U in update.
"""

from __future__ import annotations

import numpy as np
from linalg_io.models.conflux import conflux_plan_counts, link_keys
from linalg_io.models.conflux_nodes import timed_links
from linalg_io.models.costs import link_time
from linalg_io.models.lu2d import lu2d_phase_links, lu2d_plan_counts
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import DEFAULT_RATES, LocalRates

from linalg_io.layout.conflux_layout import PHASES as CONFLUX_PHASES
from linalg_io.layout.lu2d_steps import TIME_PHASES as LU2D_PHASES


class _Phase:
    """One phase's per-rank traffic per link span and gamma-equivalent flops, summed
    over the steps (arrays of the grid's shape)."""

    def __init__(self, shape: tuple) -> None:
        self.shape = shape
        self.links: dict[int, list] = {}
        self.flops = np.zeros(shape)
        self.gamma_flops = np.zeros(shape)
        self.hidden = 0.0      # seconds of it a look-ahead runs beside another phase

    def add(self, span, mask, costs: tuple) -> None:
        if span not in self.links:
            self.links[span] = [np.zeros(self.shape) for _ in costs]
        totals = self.links[span]
        for total, cost in zip(totals, costs):
            total += mask * np.broadcast_to(np.asarray(cost, dtype=float), self.shape)

    def work(self, flops, rate) -> None:
        flops = np.broadcast_to(np.asarray(flops, dtype=float), self.shape)
        self.flops += flops
        self.gamma_flops += flops / rate

    def seconds(self, profile: MachineProfile, placement: Placement) -> np.ndarray:
        links = {span: tuple(costs) for span, costs in self.links.items()}
        comm = link_time(links, profile, placement) if links else 0.0
        return np.broadcast_to(comm + self.gamma_flops / profile.gamma_flops - self.hidden,
                               self.shape)


def _summary(phases: dict[str, _Phase], profile: MachineProfile, placement: Placement,
             p: int) -> dict:
    cores = placement.shared_cores
    slowdown = max(1.0, p / cores) if cores else 1.0
    seconds = {name: phase.seconds(profile, placement) * slowdown
               for name, phase in phases.items()}
    return {"max": {name: float(s.max()) for name, s in seconds.items()},
            "mean": {name: float(s.mean()) for name, s in seconds.items()}}


def conflux_phases(n: int, v: int, px: int, py: int, c: int, pivots="uniform",
                   placement: Placement | None = None,
                   profile: MachineProfile | None = None) -> dict:
    """The per-phase `_Phase` totals of the 2.5D LU, arrays [layer, x, y]: the per-phase
    counts of `conflux_plan_counts` (one walk of the plan), each communicator group on
    the link it is timed on (`linalg_io.models.conflux.link_keys`, for `placement`), a
    group's messages on and between nodes apart where its members share nodes
    (`linalg_io.models.conflux_nodes`); with a `profile`, push_pivots' `hidden`: the
    seconds of it the look-ahead moves beside the update (its "overlapped_s")."""
    keys = link_keys(px, py, c, placement)
    counts = conflux_plan_counts(n, v, px, py, c, pivots, profile, placement,
                                 by_phase=True)["by_phase"]
    phases = {name: _Phase((c, px, py)) for name in CONFLUX_PHASES}
    for name, phase in phases.items():
        links = timed_links(counts[name]["links"], keys)
        for key, costs in links.items():
            phase.add(key, True, costs)
        phase.flops += counts[name]["flops"]
        phase.gamma_flops += counts[name]["gamma_flops"]
        phase.hidden = counts[name].get("overlapped_s", 0.0)
    return phases


def conflux_phase_seconds(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                          placement: Placement, pivots="uniform") -> dict:
    """Predicted seconds per phase of the 2.5D LU (module doc)."""
    return _summary(conflux_phases(n, v, px, py, c, pivots, placement, profile), profile,
                    placement, px * py * c)


def lu2d_phases(n: int, nb: int, pr: int, pc: int, pivoting="expected",
                placement: Placement | None = None, local: LocalRates = DEFAULT_RATES) -> dict:
    """The per-phase `_Phase` totals of the 2D LU, arrays [process row, process column],
    each part of a phase on the link it crosses for `placement`
    (`linalg_io.models.lu2d.lu2d_phase_links`; None: one node), the local work at the
    rates `local`."""
    counts = lu2d_plan_counts(n, nb, pr, pc, pivoting)
    placement = placement or Placement(p=pr * pc, ranks_per_node=pr * pc, nodes=1,
                                       shared_cores=None, memory_per_rank=0.0)
    phases = {name: _Phase((pr, pc)) for name in LU2D_PHASES}
    for name, links in lu2d_phase_links(n, nb, pr, pc, pivoting, placement).items():
        for key, costs in links.items():
            phases[name].add(key, True, tuple(np.reshape(c, (pr, pc)) for c in costs))
    flops = counts["flops_by_phase"]
    phases["panel"].work(flops["panel"], local.panel)
    phases["update"].work(flops["solve"], local.panel)
    phases["update"].work(flops["dgemm"], float(local.gemm(np.float64(nb))))
    return phases


def lu2d_phase_seconds(n: int, nb: int, pr: int, pc: int, profile: MachineProfile,
                       placement: Placement, pivoting="expected") -> dict:
    """Predicted seconds per phase of the 2D LU (module doc)."""
    return _summary(lu2d_phases(n, nb, pr, pc, pivoting, placement, profile.local), profile,
                    placement, pr * pc)
