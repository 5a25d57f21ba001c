"""2.5D LU with tournament pivoting (COnfLUX, Kwasniewski et al., PPoPP'21) on Px x Py x c ranks.

Layout (`linalg_io.layout.conflux_layout`): v x v tiles block-cyclic over every Px x Py
layer; all c layers keep the same local block, and the matrix is the *sum* of the
layers (layer 0 starts with A, the others with zeros). Rows are moved, not swapped:
a rank keeps its rows, in a local order where the rows already chosen as pivots
come first (local swaps, no messages); the rows still active follow, contiguous.

Step k (panel = tile column k, w columns; roots from `StepPlan`: column ky, layer
lk, row kx), phases in the order the code runs them:

reduce_panel          the active panel rows of column ky are summed over the c layers
                      onto layer lk (a chain over the fibre ending on lk);
tournament_pivoting   the Px ranks (x, ky, lk) choose the w pivot rows
                      (`linalg_io.lu.tournament`);
push_pivots           (kx, ky, lk) broadcasts the pivot ids to all; every rank moves
                      its own pivot rows to the front of its active rows; the pivot
                      rows' trailing columns are summed over the layers onto layer lk;
                      c = 1: they are allgathered in each process column and every
                      (x, ky) broadcasts L00 along its process row; c > 1: they are
                      gathered on (kx, y, lk) and (kx, ky, lk) sends L00 along row kx
                      (`StepPlan.redundant_u`);
solve_panel           (x, ky, lk): L = A10 U00^-1 for its remaining active rows;
solve_row             U = L00^-1 A01 for the trailing columns: every (x, y, lk) when
                      c = 1, (kx, y, lk) when c > 1;
scatter_slices        layer l gets columns s_l of L (sent from (x, ky, lk) to (x, ky, l),
                      then broadcast along its process row) and the same rows of U (c > 1:
                      sent from (kx, y, lk) to (kx, y, l), then broadcast down its process
                      column);
trailing_update       every rank: A11 -= L[:, s_l] U[s_l, :] on its layer (dgemm).

Every message is point-to-point in one of the package's own schedules
(`linalg_io.comm.collectives`: binomial or pipelined-chain bcast and reduce, Bruck
allgatherv, linear gatherv and scatterv), so the bytes counted are the bytes on the
wire. Cost: the words each rank receives (= sends, on average) are the closed form
`linalg_io.models.conflux.FORMULA` (c = 1: N^2/(2P) (Px-1 + Py-1) + N v Px (log2 Px +
Py-1)/P + N; its c > 1 terms name the phases above), and
`linalg_io.models.conflux.conflux_costs` walks the same plan for the exact per-rank
counts; tests check they are equal to the logical and the wire counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from linalg_io._kernels.dense_local import (
    gemm_minus_nt,
    getrf,
    transpose_into,
    trsm_right_lower_unit_t,
    trsm_right_upper,
)
from linalg_io.comm import collectives
from linalg_io.comm.grid import Grid3D
from linalg_io.comm.phase_clock import PhaseClock
from linalg_io.errors import SingularMatrixError
from linalg_io.layout.conflux_layout import Step, StepPlan
from linalg_io.lu.tournament import permutation, tournament

# the time phases (`PhaseClock`), in the order `step` runs them
CONFLUX_PHASES = ("reduce_panel", "tournament_pivoting", "push_pivots", "solves",
                  "scatter_slices", "update")


@dataclass
class Factors:
    """What one rank keeps of the factors, for verification (references, no copies).

    diag:   [(k, pivot_ids, LU00)] on (kx, ky, lk): unit L00 below, U00 on and above;
    l_rows: [(k, global_rows, L)] on (x, ky, lk): L rows of step k (rows x w);
    u_rows: [(k, global_cols, UT)] on (kx, y, lk): U row of step k, transposed (cols x w).
    """

    diag: list = field(default_factory=list)
    l_rows: list = field(default_factory=list)
    u_rows: list = field(default_factory=list)


class ConfluxLU:
    """One rank's part of the 2.5D LU; `factor()` runs all steps of `plan`.

    `matrix` is the local block (`HostMatrix` here, `linalg_io.lu.conflux_gpu.DeviceMatrix`
    on a GPU), `kernels` the local getrf/trsm on panel-sized blocks (`HostKernels`,
    `linalg_io.lu.conflux_gpu.DeviceKernels`).
    """

    def __init__(self, grid: Grid3D, plan: StepPlan, matrix, kernels) -> None:
        self.grid = grid
        self.plan = plan
        self.tiles = plan.tiles
        self.matrix = matrix
        self.kernels = kernels
        self.rows = self.tiles.local_rows(grid.x)
        self.cols = self.tiles.local_cols(grid.y)
        self.clock = PhaseClock(CONFLUX_PHASES)
        # a process column of one rank: its getrf of the panel (the whole tournament) is
        # the panel's LU, L rows included, so solve_panel has nothing left to solve
        self.panel_alone = grid.px == 1

    def reset(self) -> None:
        self.order = self.rows.copy()             # local position -> global row
        self.position = {int(g): i for i, g in enumerate(self.rows)}
        self.done = 0                             # rows already pivots
        self.factors = Factors()
        self.pivots: list[np.ndarray] = []

    def factor(self) -> None:
        """All steps; `clock` gets one run of seconds per phase."""
        self.clock.start()
        steps = list(self.plan.steps())
        ahead = self.panel_phase(steps[0])
        for i, s in enumerate(steps):
            ahead = self.step(s, ahead, steps[i + 1] if i + 1 < len(steps) else None)
        self.clock.stop()

    # --- one step ----------------------------------------------------------
    def panel_phase(self, s: Step) -> tuple:
        """reduce_panel and tournament_pivoting of step s on its process column (others:
        nothing). Returns (panel, pivot_ids, lu00), None where this rank has none."""
        g = self.grid
        if g.y != s.ky:
            return None, None, None
        with self.clock.phase("reduce_panel"):
            panel = self.reduce_panel(s)
        if g.layer != s.lk:
            return panel, None, None
        with self.clock.phase("tournament_pivoting"):
            return (panel, *self.tournament_pivoting(s, panel))

    def step(self, s: Step, ahead: tuple, nxt: Step | None) -> tuple | None:
        """Step s, its panel phase already done (`ahead`); returns the next step's."""
        g, clock = self.grid, self.clock
        self._panel_swaps: list[tuple[int, int]] = []
        panel, pivot_ids, lu00 = ahead
        clock.switch("push_pivots")
        pivot_ids, lu00, mine = self.push_pivots(s, pivot_ids, lu00)
        tstart = self.tiles.local_col_start(g.y, s.k + 1)
        pivot_rows = self.gather_pivot_rows(s, mine, pivot_ids, tstart)
        clock.switch("solves")
        l_full = u_full = None
        if g.layer == s.lk:
            if g.y == s.ky:
                l_full = self.solve_panel(s, panel, len(mine), lu00)
            if pivot_rows is not None:
                u_full = self.solve_row(s, pivot_rows, lu00, tstart)
        clock.switch("scatter_slices")
        l_slice, u_slice = self.scatter_slices(s, l_full, u_full, len(mine), tstart)
        self.done += len(mine)
        clock.switch("update")
        ahead = self.trailing_update(l_slice, u_slice, tstart, nxt)
        clock.switch("other")
        return ahead

    def _sum_over_layers(self, block: np.ndarray, root_layer: int) -> None:
        """Sum `block` over the c layers (fibre) in place onto `root_layer` (a chain
        ending there; the other layers' blocks are left with partial sums)."""
        collectives.reduce_sum(self.grid.fibre_comm, block, root_layer)

    def reduce_panel(self, s: Step) -> np.ndarray:
        """Sum the active rows of the panel over the layers onto layer lk."""
        g = self.grid
        j0 = self.tiles.local_col_start(g.y, s.k)
        panel = self.matrix.block(self.done, None, j0, j0 + s.w)
        with g.comm.phase("reduce_panel"):
            self._sum_over_layers(panel, s.lk)
        return panel

    def tournament_pivoting(self, s: Step, panel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(pivot ids, LU00) of the panel's w pivot rows; with Px = 1 the panel is
        factored in place (its rows in pivot order, L below the top w x w)."""
        if self.panel_alone:
            ipiv = np.zeros(s.w, dtype=np.int32)
            self.kernels.getrf(panel, ipiv)
            chosen = permutation(ipiv, panel.shape[0])[:s.w]
            return self.order[self.done:][chosen].astype(np.int64), np.asfortranarray(panel[:s.w])
        with self.grid.comm.phase("tournament_pivoting"):
            ids = self.order[self.done:].astype(np.float64)
            return tournament(self.grid.col_comm, panel, ids, s.w, self.kernels.getrf,
                              shift=s.k)

    def push_pivots(self, s: Step, pivot_ids, lu00) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Pivot ids to every rank, L00 to layer lk; move my pivot rows to the front."""
        g = self.grid
        with g.comm.phase("push_pivots"):
            header = np.empty(s.w + 1)
            root = g.rank_of(s.kx, s.ky, s.lk)
            if g.comm.rank == root:
                singular = (pivot_ids < 0).any() or not np.all(np.diag(lu00) != 0)
                header[:s.w] = pivot_ids
                header[s.w] = 1.0 if singular else 0.0
            collectives.bcast(g.comm, header, root)
            if header[s.w] != 0.0:
                raise SingularMatrixError(
                    f"matrix is singular to working precision at tile column {s.k} "
                    f"(columns {s.k * self.tiles.v}..{s.k * self.tiles.v + s.w - 1})")
            pivot_ids = header[:s.w].astype(np.int64)
            if g.layer == s.lk and (self.plan.redundant_u or g.x == s.kx):
                if lu00 is None:
                    lu00 = np.empty((s.w, s.w), order="F")
                collectives.bcast(g.row_comm, lu00, s.ky)
        self.pivots.append(pivot_ids)
        owners = self.tiles.owner_row(pivot_ids)
        mine = [int(i) for i in np.nonzero(owners == g.x)[0]]
        live = self.tiles.local_col_start(g.y, s.k + 1)   # the columns left are done with
        for offset, i in enumerate(mine):
            self._swap(self.done + offset, self.position[int(pivot_ids[i])], live)
        return pivot_ids, lu00, mine

    def _swap(self, a: int, b: int, live: int) -> None:
        if a == b:
            return
        self.matrix.swap_rows(a, b, live)
        ga, gb = int(self.order[a]), int(self.order[b])
        self.order[a], self.order[b] = gb, ga
        self.position[ga], self.position[gb] = b, a
        self._panel_swaps.append((a - self.done, b - self.done))

    def gather_pivot_rows(self, s: Step, mine: list[int], pivot_ids: np.ndarray,
                          tstart: int) -> np.ndarray | None:
        """Trailing columns of the pivot rows, summed over layers, on every (x, y, lk).

        Returns them transposed (trailing columns x w, pivot order) on layer lk.
        """
        g = self.grid
        ntrail = len(self.cols) - tstart
        mine_rows = self.matrix.block(self.done, self.done + len(mine), tstart, None)
        with g.comm.phase("push_pivots"):
            self._sum_over_layers(mine_rows, s.lk)
            if g.layer != s.lk:
                return None
            owners = self.tiles.owner_row(pivot_ids)
            counts = np.bincount(owners, minlength=g.px) * ntrail
            displs = collectives.displacements(counts)
            gathered = np.empty(s.w * ntrail)
            # each block is (its pivots x ntrail) in Fortran order: (ntrail x its pivots) in C
            if self.plan.redundant_u:
                collectives.allgatherv(g.col_comm, mine_rows, gathered, counts)
            else:
                collectives.gatherv(g.col_comm, mine_rows, gathered, counts, s.kx)
                if g.x != s.kx:
                    return None
        pivots_t = np.empty((ntrail, s.w), order="F")
        by_owner = np.argsort(owners, kind="stable")
        for x in range(g.px):
            sel = by_owner[np.searchsorted(owners[by_owner], x, "left"):
                           np.searchsorted(owners[by_owner], x, "right")]
            if len(sel):
                pivots_t[:, sel] = gathered[displs[x]:displs[x] + counts[x]].reshape(ntrail, len(sel))
        return pivots_t

    def solve_panel(self, s: Step, panel: np.ndarray, npiv: int, lu00: np.ndarray) -> np.ndarray:
        """L = A10 U00^-1 for the active rows of (x, ky, lk) that are not pivots (with
        Px = 1 the panel's getrf has computed it)."""
        if self.panel_alone:
            l_full = np.asfortranarray(panel[npiv:])
        else:
            for a, b in self._panel_swaps:
                panel[[a, b]] = panel[[b, a]]
            l_full = self.kernels.solve_upper_right(lu00, np.asfortranarray(panel[npiv:]))
        self.factors.l_rows.append((s.k, self.order[self.done + npiv:].copy(), l_full))
        if self.grid.x == s.kx:
            self.factors.diag.append((s.k, self.pivots[-1], lu00))
        return l_full

    def solve_row(self, s: Step, pivots_t: np.ndarray, lu00: np.ndarray, tstart: int) -> np.ndarray:
        """U = L00^-1 A01 (kept transposed: trailing columns x w) on (x, y, lk)."""
        u_t = self.kernels.solve_unit_lower_transposed(lu00, pivots_t)
        if self.grid.x == s.kx:
            self.factors.u_rows.append((s.k, self.cols[tstart:], u_t))
        return u_t

    def scatter_slices(self, s: Step, l_full, u_full, npiv: int, tstart: int):
        """Layer l receives L[:, s_l] along its process row and U[s_l, :] from its fibre."""
        g = self.grid
        nrows = len(self.rows) - self.done - npiv
        ntrail = len(self.cols) - tstart
        mine = int(s.slices[g.layer])
        with g.comm.phase("scatter_slices"):
            l_slice = np.empty((nrows, mine), order="F")
            if g.y == s.ky:
                l_slice = self._scatter_columns(s, l_full, nrows)
            collectives.bcast(g.row_comm, l_slice, s.ky)
            if self.plan.redundant_u:
                u_slice = self._scatter_columns(s, u_full, ntrail)
            else:
                u_slice = np.empty((ntrail, mine), order="F")
                if g.x == s.kx:
                    u_slice = self._scatter_columns(s, u_full, ntrail)
                collectives.bcast(g.col_comm, u_slice, s.kx)
        return l_slice, u_slice

    def _scatter_columns(self, s: Step, full, nrows: int) -> np.ndarray:
        """The column slices of `full` (nrows x w, Fortran, on layer lk) to their layers
        (each sent directly from lk); returns this layer's slice."""
        g = self.grid
        if g.c == 1:
            return full
        out = np.empty((nrows, int(s.slices[g.layer])), order="F")
        collectives.scatterv(g.fibre_comm, full, out, s.slices * nrows, s.lk)
        return out

    def trailing_update(self, l_slice: np.ndarray, u_slice_t: np.ndarray, tstart: int,
                        nxt: Step | None) -> tuple | None:
        """A11 -= L[:, s_l] U[s_l, :] on this layer (local dgemm), with a look-ahead of one
        step: the next panel's columns first, then the next panel phase (its column
        factors the panel while the other ranks update), then the rest."""
        first = nxt.w if nxt is not None and self.grid.y == nxt.ky else 0
        self.matrix.update(self.done, tstart, l_slice, u_slice_t[:first])
        ahead = self.panel_phase(nxt) if nxt is not None else None
        self.matrix.update(self.done, tstart + first, l_slice, u_slice_t[first:])
        return ahead


class HostMatrix:
    """A rank's local block in host memory, stored row-major (its transpose in Fortran
    order) so that moving a pivot row is one contiguous copy; the trailing update is a
    dgemm on the transposed corner: a[r0:, c0:]^T -= U_slice^T L_slice^T."""

    def __init__(self, local: np.ndarray) -> None:
        self.at = np.asfortranarray(local.T)

    def load(self, original: np.ndarray | None) -> None:
        """Restore the layer's starting values: A's block, or zeros (original None)."""
        if original is None:
            self.at.fill(0.0)
        else:
            self.at[...] = original.T

    def block(self, r0: int, r1: int | None, c0: int, c1: int | None) -> np.ndarray:
        """A copy of a[r0:r1, c0:c1] in Fortran order (a tiled transpose of the stored
        block)."""
        stored = self.at[c0:c1, r0:r1]
        out = np.empty(stored.shape[::-1], order="F")
        transpose_into(stored, out)
        return out

    def swap_rows(self, i: int, j: int, c0: int) -> None:
        """Swap rows i and j in columns c0 and right (those the LU still reads)."""
        self.at[c0:, [i, j]] = self.at[c0:, [j, i]]

    def finish(self) -> None:
        """Nothing queued: the CPU work has returned."""

    def update(self, r0: int, c0: int, l_slice: np.ndarray, u_slice_t: np.ndarray) -> None:
        """a[r0:, c0:c0+t] -= l_slice @ u_slice_t.T, t = len(u_slice_t): one strided
        dgemm in place, a[r0:, c0:c0+t]^T -= u_slice_t l_slice^T (no copies)."""
        gemm_minus_nt(self.at[c0:c0 + u_slice_t.shape[0], r0:], u_slice_t, l_slice)


class HostKernels:
    """Panel-sized local LAPACK/BLAS on the host (GIL released in the compiled kernels)."""

    @staticmethod
    def getrf(a: np.ndarray, ipiv: np.ndarray) -> int:
        return getrf(a, ipiv)

    @staticmethod
    def solve_upper_right(lu00: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """rows U00^-1 (U00 = upper triangle of lu00), in place (blocked, mostly dgemm)."""
        trsm_right_upper(lu00, rows)
        return rows

    @staticmethod
    def solve_unit_lower_transposed(lu00: np.ndarray, pivots_t: np.ndarray) -> np.ndarray:
        """(L00^-1 A01)^T = A01^T L00^-T (L00 = unit lower triangle of lu00), in place."""
        trsm_right_lower_unit_t(lu00, pivots_t)
        return pivots_t
