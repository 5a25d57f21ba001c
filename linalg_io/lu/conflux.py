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

With the look-ahead (`ConfluxLU`), column ky_{k+1} runs step k+1's reduce_panel,
tournament_pivoting, its row moves' plan, solve_panel and the start of its sends inside
step k's trailing_update; with c = 1 and Px > 1 also the start of step k+1's pivot-row
allgather, which a thread moves while the rest of the update computes
(`linalg_io.comm.progress`); the messages and their order are the same.

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
from mpi4py import MPI

from linalg_io._kernels.dense_local import (
    gemm_minus_nt,
    getrf,
    swap_columns,
    transpose_into,
    trsm_right_lower_unit_t,
    trsm_right_upper,
)
from linalg_io.comm import collectives
from linalg_io.comm.grid import Grid3D
from linalg_io.comm.phase_clock import PhaseClock, Phases
from linalg_io.comm.progress import progressed
from linalg_io.errors import SingularMatrixError
from linalg_io.layout.conflux_layout import PHASES, Step, StepPlan
from linalg_io.lu.tournament import permutation, tournament

# the time phases (`PhaseClock`), in the order `step` runs them
CONFLUX_PHASES = PHASES


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


@dataclass
class _Panel:
    """Step k's panel phase, as the look-ahead left it on one rank (None: no part in it).

    panel:   the active panel rows summed over the layers (process column ky);
    header:  the w pivot ids and the singular flag (the tournament's players (x, ky, lk));
    lu00:    the w x w LU of the pivot rows (players);
    own_pivots: the positions in pivot order of the pivot rows this process row owns;
    moves:   the local row swaps (a, b), positions relative to the active rows, and perm:
             the active rows' new order (position i holds the row that was at perm[i]);
    l_full:  L of the player's non-pivot rows (solve_panel, done);
    posted:  the sends this rank has started for the step: its pivot ids (root), L00
             along its process row and, with c = 1, L along its process row;
    rows_gather: with c = 1 and Px > 1, the allgather of the pivot rows' trailing
             columns in the panel's process column, started (`_start_pivot_rows`)."""

    panel: np.ndarray | None = None
    header: np.ndarray | None = None
    lu00: np.ndarray | None = None
    own_pivots: list | None = None
    moves: list | None = None
    perm: np.ndarray | None = None
    l_full: np.ndarray | None = None
    posted: set = field(default_factory=set)
    rows_gather: collectives.Allgatherv | None = None


class Workspace:
    """Step buffers kept from run to run: a large array made fresh every step costs its
    page faults every step (the allocator returns it to the system when freed; what that
    cost: docs/MEASUREMENTS.md#in-code). `get(key, shape)` gives an uninitialised
    Fortran array, the same memory for the same key; keys name a step's kept factors
    (("l", k), ("u", k)) or a transient buffer by step parity (("panel", k % 2), ...),
    so that the look-ahead's step k+1 never writes what step k still reads."""

    def __init__(self) -> None:
        self._arrays: dict = {}

    def get(self, key, shape: tuple[int, ...]) -> np.ndarray:
        size = int(np.prod(shape))
        buf = self._arrays.get(key)
        if buf is None or buf.size < size:
            buf = self._arrays[key] = np.empty(size)
        return buf[:size].reshape(shape, order="F")


class ConfluxLU:
    """One rank's part of the 2.5D LU; `factor()` runs all steps of `plan`.

    `matrix` is the local block (`HostMatrix` here, `linalg_io.lu.conflux_gpu.DeviceMatrix`
    on a GPU), `kernels` the local getrf/trsm on panel-sized blocks (`HostKernels`,
    `linalg_io.lu.conflux_gpu.DeviceKernels`).

    Look-ahead of depth 1: during step k's update, the ranks of column ky_{k+1} update
    that panel's columns first, then run step k+1's panel phase (`panel_phase`: reduce,
    tournament, the row moves worked out, solve_panel) and start its sends (pivot ids,
    L00, L) and, with c = 1 and Px > 1, the allgather of step k+1's pivot rows
    (`_start_pivot_rows`), then finish update k while a thread tests those requests
    (`progressed`: over TCP a message moves only inside MPI calls); the other ranks
    receive them at the start of step k+1. The messages and their order per communicator
    are those of the schedule without look-ahead.
    """

    def __init__(self, grid: Grid3D, step_plan: StepPlan, matrix, kernels) -> None:
        self.grid = grid
        self.step_plan = step_plan
        self.tiles = step_plan.tiles
        self.matrix = matrix
        self.kernels = kernels
        self.rows = self.tiles.local_rows(grid.x)
        self.cols = self.tiles.local_cols(grid.y)
        self.clock = PhaseClock(CONFLUX_PHASES)
        self.phases = Phases(self.clock, grid.comm)
        # a process column of one rank: its getrf of the panel (the whole tournament) is
        # the panel's LU, L rows included, so solve_panel has nothing left to solve
        self.panel_alone = grid.px == 1
        self.u_in_place = self.panel_alone and grid.c == 1 and matrix.rows_in_place
        self.buffers = Workspace()

    def reset(self) -> None:
        self.order = self.rows.copy()             # local position -> global row
        self.position = np.full(self.tiles.n, -1, dtype=np.int64)   # global row -> position
        self.position[self.rows] = np.arange(len(self.rows))
        self.done = 0                             # rows already pivots
        self.factors = Factors()
        self.pivots: list[np.ndarray] = []
        self._sends: list = []                    # started sends: (requests, buffers)

    def factor(self) -> None:
        """All steps; `clock` gets one run of seconds per phase."""
        self.clock.start()
        steps = list(self.step_plan.steps())
        ahead = self.panel_phase(steps[0])
        for i, s in enumerate(steps):
            ahead = self.step(s, ahead, steps[i + 1] if i + 1 < len(steps) else None)
        self._complete_sends()
        self.clock.stop()

    # --- sends started ahead ---------------------------------------------------
    def _start(self, comm, buf: np.ndarray, root: int) -> None:
        """Start the bcast of buf from this rank (the root) over comm; kept until done."""
        requests = collectives.bcast_start(comm, buf, root)
        if requests:
            self._sends.append((requests, buf))

    def _test_sends(self) -> None:
        """Let MPI progress the started sends; forget them once all have completed."""
        if self._sends and MPI.Request.Testall([r for rs, _ in self._sends for r in rs]):
            self._sends = []

    def _complete_sends(self) -> None:
        self.grid.comm.Waitall([r for rs, _ in self._sends for r in rs])
        self._sends = []

    # --- one step ----------------------------------------------------------
    def panel_phase(self, s: Step) -> _Panel:
        """Step s's panel work on its process column, started sends included: reduce_panel
        (the column), tournament_pivoting, then (players (x, ky, lk)) the pivot ids'
        bcast started by the root, the row moves worked out, L00's bcast along the row
        started, solve_panel, and with c = 1 L's bcast along the row started."""
        g, phases = self.grid, self.phases
        out = _Panel()
        if g.y != s.ky:
            return out
        with phases.phase("reduce_panel"):
            out.panel = self.reduce_panel(s)
        if g.layer != s.lk:
            return out
        with phases.phase("tournament_pivoting"):
            pivot_ids, lu00 = self.tournament_pivoting(s, out.panel)
        with phases.phase("push_pivots"):
            singular = (pivot_ids < 0).any() or not np.all(np.diag(lu00) != 0)
            out.header = np.append(pivot_ids.astype(np.float64), 1.0 if singular else 0.0)
            if g.comm.rank == g.rank_of(s.kx, s.ky, s.lk):
                self._start(g.comm, out.header, g.comm.rank)
                out.posted.add("ids")
            if singular:
                return out
            out.lu00 = lu00
            out.own_pivots = self._own_pivots(pivot_ids)
            out.moves, out.perm = self._row_moves(pivot_ids, out.own_pivots)
            if self.step_plan.redundant_u or g.x == s.kx:
                self._start(g.row_comm, lu00, s.ky)
                out.posted.add("lu00")
        with phases.phase("solves"):
            out.l_full = self.solve_panel(s, out, pivot_ids)
        if g.c == 1:
            with phases.phase("scatter_slices"):
                self._start(g.row_comm, out.l_full, s.ky)
                out.posted.add("l")
        return out

    def step(self, s: Step, ahead: _Panel, nxt: Step | None) -> _Panel | None:
        """Step s, its panel phase already done (`ahead`); returns the next step's."""
        g, phases = self.grid, self.phases
        with phases.phase("push_pivots"):
            pivot_ids, lu00, own_pivots = self.push_pivots(s, ahead)
            tstart = self.tiles.local_col_start(g.y, s.k + 1)
            pivot_rows = self.gather_pivot_rows(s, own_pivots, pivot_ids, tstart,
                                                ahead.rows_gather)
        with phases.phase("solves"):
            u_full = None
            if g.layer == s.lk and pivot_rows is not None:
                u_full = self.solve_row(s, pivot_rows, lu00, tstart)
        with phases.phase("scatter_slices"):
            l_slice, u_slice = self.scatter_slices(s, ahead, u_full, len(own_pivots), tstart)
        self.done += len(own_pivots)
        with phases.phase("update"):
            return self.trailing_update(l_slice, u_slice, tstart, nxt)

    def _sum_over_layers(self, block: np.ndarray, root_layer: int) -> None:
        """Sum `block` over the c layers (fibre) in place onto `root_layer` (a chain
        ending there; the other layers' blocks are left with partial sums)."""
        collectives.reduce_sum(self.grid.fibre_comm, block, root_layer)

    def reduce_panel(self, s: Step) -> np.ndarray:
        """Sum the active rows of the panel over the layers onto layer lk."""
        g = self.grid
        j0 = self.tiles.local_col_start(g.y, s.k)
        out = self.buffers.get(("panel", s.k % 2), (len(self.rows) - self.done, s.w))
        panel = self.matrix.block(self.done, None, j0, j0 + s.w, out)
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
        ids = self.order[self.done:].astype(np.float64)
        return tournament(self.grid.col_comm, panel, ids, s.w, self.kernels.getrf,
                          shift=s.k, scratch=self.buffers.get(("getrf", 0), panel.shape))

    def _own_pivots(self, pivot_ids: np.ndarray) -> list[int]:
        """The positions in pivot order of the pivot rows this process row owns."""
        return [int(i) for i in np.nonzero(self.tiles.owner_row(pivot_ids) == self.grid.x)[0]]

    def _row_moves(self, pivot_ids: np.ndarray,
                   own_pivots: list[int]) -> tuple[list, np.ndarray]:
        """The swaps (a, b) of active-row positions that bring my pivot rows, in pivot
        order, to the front of the active rows, and the order they leave (perm)."""
        # the swaps, in turn, on plain ints: only the positions they touch are mapped
        # (perm_at: position -> original position, where: original -> position now)
        perm_at: dict[int, int] = {}
        where: dict[int, int] = {}
        moves = []
        originals = ((self.position[pivot_ids[own_pivots]] - self.done).tolist()
                     if own_pivots else [])
        for offset, original in enumerate(originals):
            b = where.get(original, original)
            if b != offset:
                pa, pb = perm_at.get(offset, offset), perm_at.get(b, b)
                perm_at[offset], perm_at[b] = pb, pa
                where[pa], where[pb] = b, offset
                moves.append((offset, b))
        perm = np.arange(len(self.order) - self.done)
        if perm_at:
            perm[list(perm_at)] = list(perm_at.values())
        return moves, perm

    def push_pivots(self, s: Step, ahead: _Panel) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Pivot ids to every rank, L00 to layer lk; move my pivot rows to the front
        (what the look-ahead started, it does not repeat)."""
        g = self.grid
        header = ahead.header
        if "ids" not in ahead.posted:
            header = np.empty(s.w + 1)
            collectives.bcast(g.comm, header, g.rank_of(s.kx, s.ky, s.lk))
        if header[s.w] != 0.0:
            self._complete_sends()
            raise SingularMatrixError(
                f"matrix is singular to working precision at tile column {s.k} "
                f"(columns {s.k * self.tiles.v}..{s.k * self.tiles.v + s.w - 1})")
        pivot_ids = header[:s.w].astype(np.int64)
        lu00 = ahead.lu00
        if (g.layer == s.lk and (self.step_plan.redundant_u or g.x == s.kx)
                and "lu00" not in ahead.posted):
            lu00 = np.empty((s.w, s.w), order="F")
            collectives.bcast(g.row_comm, lu00, s.ky)
        self.pivots.append(pivot_ids)
        own_pivots = (ahead.own_pivots if ahead.own_pivots is not None
                      else self._own_pivots(pivot_ids))
        moves, perm = ((ahead.moves, ahead.perm) if ahead.moves is not None
                       else self._row_moves(pivot_ids, own_pivots))
        if moves:
            live = self.tiles.local_col_start(g.y, s.k + 1)   # the columns left are done with
            first, second = (np.array(side, dtype=np.int64) + self.done for side in zip(*moves))
            self.matrix.move_rows(first, second, live)
            self.order[self.done:] = self.order[self.done:][perm]
            moved = np.union1d(first, second)
            self.position[self.order[moved]] = moved
        return pivot_ids, lu00, own_pivots

    def gather_pivot_rows(self, s: Step, own_pivots: list[int], pivot_ids: np.ndarray,
                          tstart: int, started: collectives.Allgatherv | None = None
                          ) -> np.ndarray | None:
        """Trailing columns of the pivot rows, summed over layers, on every (x, y, lk).

        Returns them transposed (trailing columns x w, pivot order) on layer lk. `started`:
        the allgather the look-ahead began (`_start_pivot_rows`), completed here.
        """
        g = self.grid
        ntrail = len(self.cols) - tstart
        if started is not None:
            owners = self.tiles.owner_row(pivot_ids)
            counts = np.bincount(owners, minlength=g.px) * ntrail
            gathered = self.buffers.get(("gathered", s.k % 2), (s.w * ntrail,))
            started.complete(gathered)
            return self._pivots_t(s, owners, counts, gathered, ntrail)
        # my pivot rows' trailing columns, transposed (ntrail x own pivots, Fortran): a plain
        # copy of the stored transpose's columns, and the layout pivots_t keeps
        kept = g.x == s.kx and g.layer == s.lk       # U's rows, kept as the factor
        if self.u_in_place:
            # one rank per column and one layer: every pivot row is mine, in pivot order,
            # and nothing writes its trailing columns again, so U is solved where they are
            return self.matrix.rows_t_view(self.done, self.done + len(own_pivots), tstart)
        own_rows_t = self.matrix.rows_t(
            self.done, self.done + len(own_pivots), tstart, self.buffers.get(
                ("u", s.k) if kept and g.px == 1 else ("own_rows_t", s.k % 2),
                (ntrail, len(own_pivots))))
        self._sum_over_layers(own_rows_t, s.lk)
        if g.layer != s.lk:
            return None
        if g.px == 1:
            return own_rows_t                 # every pivot row is mine, in pivot order
        owners = self.tiles.owner_row(pivot_ids)
        counts = np.bincount(owners, minlength=g.px) * ntrail
        gathered = self.buffers.get(("gathered", s.k % 2), (s.w * ntrail,))
        if self.step_plan.redundant_u:
            collectives.allgatherv(g.col_comm, own_rows_t, gathered, counts)
        else:
            collectives.gatherv(g.col_comm, own_rows_t, gathered, counts, s.kx)
            if g.x != s.kx:
                return None
        return self._pivots_t(s, owners, counts, gathered, ntrail)

    def _pivots_t(self, s: Step, owners: np.ndarray, counts: np.ndarray, gathered: np.ndarray,
                  ntrail: int) -> np.ndarray:
        """The gathered blocks of the pivot rows (rank x's counts[x] items, its rows in
        pivot order, transposed) as one ntrail x w array in pivot order."""
        g = self.grid
        displs = collectives.displacements(counts)
        kept = g.x == s.kx and g.layer == s.lk       # U's rows, kept as the factor
        pivots_t = self.buffers.get(("u", s.k) if kept else ("pivots", s.k % 2), (ntrail, s.w))
        by_owner = np.argsort(owners, kind="stable")
        for x in range(g.px):
            sel = by_owner[np.searchsorted(owners[by_owner], x, "left"):
                           np.searchsorted(owners[by_owner], x, "right")]
            if len(sel):
                block = gathered[displs[x]:displs[x] + counts[x]]
                pivots_t[:, sel] = block.reshape((ntrail, len(sel)), order="F")
        return pivots_t

    def solve_panel(self, s: Step, ahead: _Panel, pivot_ids: np.ndarray) -> np.ndarray:
        """L = A10 U00^-1 for the active rows of (x, ky, lk) that are not pivots, in the
        order the row moves leave them (with Px = 1 the panel's getrf has computed it)."""
        npiv = len(ahead.own_pivots)
        l_full = self.buffers.get(("l", s.k), (ahead.panel.shape[0] - npiv, s.w))
        if self.panel_alone:
            np.copyto(l_full, ahead.panel[npiv:])
        else:
            np.take(ahead.panel, ahead.perm[npiv:], axis=0, out=l_full)
            l_full = self.kernels.solve_upper_right(ahead.lu00, l_full)
        rows = self.order[self.done:][ahead.perm[npiv:]]
        self.factors.l_rows.append((s.k, rows, l_full))
        if self.grid.x == s.kx:
            self.factors.diag.append((s.k, pivot_ids, ahead.lu00))
        return l_full

    def solve_row(self, s: Step, pivots_t: np.ndarray, lu00: np.ndarray, tstart: int) -> np.ndarray:
        """U = L00^-1 A01 (kept transposed: trailing columns x w) on (x, y, lk)."""
        u_t = self.kernels.solve_unit_lower_transposed(lu00, pivots_t)
        if self.grid.x == s.kx:
            self.factors.u_rows.append((s.k, self.cols[tstart:], u_t))
        return u_t

    def scatter_slices(self, s: Step, ahead: _Panel, u_full, npiv: int, tstart: int):
        """Layer l receives L[:, s_l] along its process row and U[s_l, :] from its fibre."""
        g = self.grid
        nrows = len(self.rows) - self.done - npiv
        ntrail = len(self.cols) - tstart
        slice_cols = int(s.slices[g.layer])
        if "l" in ahead.posted:
            l_slice = ahead.l_full
        else:
            l_slice = self.buffers.get(("l_slice", s.k % 2), (nrows, slice_cols))
            if g.y == s.ky:
                l_slice = self._scatter_columns(s, ahead.l_full, nrows)
            collectives.bcast(g.row_comm, l_slice, s.ky)
        if self.step_plan.redundant_u:
            u_slice = self._scatter_columns(s, u_full, ntrail)
        else:
            u_slice = np.empty((ntrail, slice_cols), order="F")
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
                        nxt: Step | None) -> _Panel | None:
        """A11 -= L[:, s_l] U[s_l, :] on this layer (local dgemm), with the look-ahead
        (class doc): the next panel's columns, the next panel phase and the start of its
        pivot rows' allgather (`_start_pivot_rows`), then the rest while a thread tests
        that allgather and the started sends (`progressed`), and a test of the sends."""
        first = nxt.w if nxt is not None and self.grid.y == nxt.ky else 0
        self.matrix.update(self.done, tstart, l_slice, u_slice_t[:first])
        ahead = self.panel_phase(nxt) if nxt is not None else None
        rest = u_slice_t[first:]
        if ahead is not None and self._gathers_ahead(ahead):
            ahead.rows_gather = self._start_pivot_rows(nxt, ahead, l_slice, rest,
                                                       tstart + first)
            moving = ahead.rows_gather.pending + [r for rs, _ in self._sends for r in rs]
            with progressed(moving):
                self.matrix.update(self.done, tstart + first, l_slice, rest)
        else:
            self.matrix.update(self.done, tstart + first, l_slice, rest)
        self._test_sends()
        return ahead

    def _gathers_ahead(self, ahead: _Panel) -> bool:
        """Whether the look-ahead starts the next step's pivot-row allgather: c = 1 (the
        allgather of `redundant_u`, in the panel's process column, whose ranks all know
        the pivots from the tournament), Px > 1, the step not singular."""
        return (self.grid.c == 1 and self.grid.px > 1 and ahead.own_pivots is not None
                and hasattr(self.matrix, "rows_t_updated"))

    def _start_pivot_rows(self, nxt: Step, ahead: _Panel, l_slice: np.ndarray,
                          rest: np.ndarray, c0: int) -> collectives.Allgatherv:
        """Step nxt's gather of the pivot rows, started inside this step's update: my
        pivot rows of nxt (in pivot order, where they sit before nxt's row moves), this
        step's update applied to their trailing columns (c0 on) alone, and the first
        round of their allgather posted. The update that follows updates them in place
        again (about w/Px of the rank's m active rows: extra flops 2 (w/Px) ntrail w,
        w/(Px m) of the step's); what the others receive is those values, the same bytes
        and messages as the allgather at nxt's push_pivots. The caller has a thread test
        them while it computes (`progressed`)."""
        g = self.grid
        pivot_ids = ahead.header[:nxt.w].astype(np.int64)
        positions = self.position[pivot_ids[ahead.own_pivots]]
        ntrail = len(self.cols) - c0
        with self.phases.phase("push_pivots"):
            own_rows_t = self.matrix.rows_t_updated(
                positions, c0, l_slice[positions - self.done], rest,
                self.buffers.get(("own_rows_t", nxt.k % 2), (ntrail, len(positions))))
            counts = np.bincount(self.tiles.owner_row(pivot_ids), minlength=g.px) * ntrail
            gather = collectives.Allgatherv(g.col_comm, counts, work=self.buffers.get(
                ("gather_work", nxt.k % 2), (int(counts.sum()),)))
            gather.start(own_rows_t)
        return gather


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

    def block(self, r0: int, r1: int | None, c0: int, c1: int | None,
              out: np.ndarray) -> np.ndarray:
        """a[r0:r1, c0:c1] copied into out (Fortran order; a tiled transpose of the
        stored block); returns out."""
        transpose_into(self.at[c0:c1, r0:r1], out)
        return out

    rows_in_place = True     # `rows_t_view`: the stored rows themselves

    def rows_t(self, r0: int, r1: int, c0: int, out: np.ndarray) -> np.ndarray:
        """a[r0:r1, c0:]^T copied into out (Fortran order: contiguous stored columns);
        returns out."""
        np.copyto(out, self.at[c0:, r0:r1])
        return out

    def rows_t_view(self, r0: int, r1: int, c0: int) -> np.ndarray:
        """a[r0:r1, c0:]^T as a view of the stored transpose (Fortran order, strided)."""
        return self.at[c0:, r0:r1]

    def move_rows(self, first: np.ndarray, second: np.ndarray, c0: int) -> None:
        """Swap rows first[i] and second[i], in turn, in columns c0 and right (those the
        LU still reads): contiguous columns of the stored transpose (dswap)."""
        swap_columns(self.at[c0:], first, second)

    def finish(self) -> None:
        """Nothing queued: the CPU work has returned."""

    def rows_t_updated(self, positions: np.ndarray, c0: int, l_rows: np.ndarray,
                       u_slice_t: np.ndarray, out: np.ndarray) -> np.ndarray:
        """(a[positions, c0:] - l_rows @ u_slice_t.T)^T into out (Fortran, columns c0 on
        x rows), the stored block unchanged; returns out. The rows are contiguous stored
        columns, copied one by one (np.take along that axis copies element by element)."""
        for j, position in enumerate(positions.tolist()):
            out[:, j] = self.at[c0:, position]
        gemm_minus_nt(out, u_slice_t, np.asfortranarray(l_rows))
        return out

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
