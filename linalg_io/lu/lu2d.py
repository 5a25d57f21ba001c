"""2D LU with partial pivoting on a block-cyclic Pr x Pc grid (ScaLAPACK pdgetrf / HPL scheme).

Right-looking, one NB-wide block column k per step (j0 = k NB, kb = min(NB, N - j0),
diagonal process (k mod Pr, k mod Pc)), in the order the code runs:

panel    process column k mod Pc factors rows j0..N-1 of the block column. Pr = 1:
         one local dgetrf. Pr > 1: per column one allgather in the process column of
         each rank's candidate (|v|, global row, the row), the diagonal rank adding the
         row at the pivot position, so the pivot search and the in-panel swap are one
         message (HPL's combined pivot-and-swap); then scale and rank-1 update in Cython.
bcast_L  the panel's root sends its L part (the strictly lower kb(kb-1)/2 of L11, the
         pivots, info, its rows below) along its process row: one broadcast (a
         pipelined chain from the root), started as soon as the panel is factored (see
         update), received and passed on by the others at the start of the step.
bcast_U  the kb pivot rows, restricted to each rank's trailing columns, are allgathered
         in the process column straight from the ranks owning them (no separate row
         swap into the diagonal process row, then broadcast); every rank solves
         U = L11^-1 (pivot rows) itself (dtrsm).
swap     the diagonal rank sends the top rows displaced by the pivots to the process
         rows owning the pivot positions (one message per process row). Only the
         trailing columns are swapped: as in HPL, the L columns to the left keep the
         row order of their step (solve2d applies the pivots step by step).
update   trailing dgemm A22 -= L21 U12 (Cython, GIL released). Look-ahead of depth 1:
         the process column owning block column k+1 updates those columns first and
         factors that panel and starts its bcast_L before the rest of its update
         (testing the broadcast between column chunks so that it progresses), so the
         panel and its broadcast overlap the other process columns' update (same
         messages, same order per communicator). With Pc = 2 each rank then does half
         the panels and half the update, and neither waits in the steady state.

Every message is point-to-point, in the package's own schedules
(`linalg_io.comm.collectives`: Bruck allgather, chain or binomial broadcast), so the
bytes counted are the bytes on the wire. Words received per rank (average, = sent):
(Pc-1) (N^2/2 + Pr N NB/2)/P in bcast_L, (Pr-1) N^2/(2P) in bcast_U, from 0 (no row
swaps) to (Pr-1) N^2/(2P) in swap ((Pr-1) N^2/(2 P Pr) expected for a random matrix),
N (Pr-1)(NB + 2 + NB/Pr)/Pc in panel; per rank and phase
`linalg_io.models.lu2d.lu2d_plan_counts` (exact, given the pivots).
Pivots are LAPACK's convention, 0-based: at step j rows j and pivots[j] were swapped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from linalg_io._kernels import dense_local, lu_kernels
from linalg_io.comm import collectives
from linalg_io.comm.grid import Grid2D
from linalg_io.comm.phase_clock import PhaseClock, Phases
from linalg_io.errors import SingularMatrixError
from linalg_io.layout.blockcyclic import global_to_local, numroc, owned_indices, owner, row_moves
from linalg_io.layout.lu2d_steps import (
    TIME_PHASES,
    block_columns,
    candidate_words,
    diagonal,
    panel_words,
    strict_lower_words,
)

# the time phases (`PhaseClock`): the traffic phases, and the update
LU2D_PHASES = TIME_PHASES


@dataclass(frozen=True)
class LU2DParams:
    n: int
    nb: int


@dataclass
class _Step:
    """The plan of block column k, as seen from one rank."""

    j0: int
    kb: int
    prow: int
    pcol: int
    top_row: int      # local row of global row j0 (meaningful on the diagonal process row)
    below_row: int    # first local row with global index >= j0 + kb
    panel_col: int    # local column of global column j0 (on process column pcol)
    trail_col: int    # first local column with global index >= j0 + kb

    @property
    def j1(self) -> int:
        return self.j0 + self.kb


def steps(grid: Grid2D, params: LU2DParams):
    """The block-column steps of the factorization (`linalg_io.layout.lu2d_steps`, the
    model's walk)."""
    nb = params.nb
    for k, (j0, kb) in enumerate(zip(*block_columns(params.n, nb))):
        j0, kb = int(j0), int(kb)
        yield _Step(j0, kb, *diagonal(k, grid.pr, grid.pc),
                    top_row=numroc(j0, nb, grid.myrow, grid.pr),
                    below_row=numroc(j0 + kb, nb, grid.myrow, grid.pr),
                    panel_col=numroc(j0, nb, grid.mycol, grid.pc),
                    trail_col=numroc(j0 + kb, nb, grid.mycol, grid.pc))


def lu2d(grid: Grid2D, a: np.ndarray, params: LU2DParams,
         clock: PhaseClock | None = None) -> np.ndarray:
    """Factor the local part `a` (Fortran-ordered, block-cyclic) in place; return the pivots.

    On return `a` holds U on and above the diagonal and L (unit diagonal) below, L in
    the row order of its step (see the module docstring); the returned int64 array
    of length N holds the global pivots, identical on every rank. A zero pivot raises
    SingularMatrixError on every rank at the same step. `clock` gets one run of
    seconds per phase (`LU2D_PHASES`; the dtrsm of U counts as update, as in HPL).
    """
    clock = clock if clock is not None else PhaseClock(LU2D_PHASES)
    phases = Phases(clock, grid.comm)
    clock.start()
    pivots = np.empty(params.n, dtype=np.int64)
    block_steps = list(steps(grid, params))
    panels = _PanelBroadcasts(grid, phases, a.shape[0], params.nb)
    factored = None   # the look-ahead: (top, ipiv, info) of this step's panel, done early
    u_buffers = [np.empty(params.nb * a.shape[1]) for _ in range(2)] if grid.pr > 1 else []
    for index, step in enumerate(block_steps):
        # until the swap, a step's time outside its panel is the panel's arrival (bcast_L)
        phases.switch("bcast_L")
        j0, kb, j1 = step.j0, step.kb, step.j1
        if grid.mycol == step.pcol:
            if factored is None:
                factored = _factor_panel(grid, phases, a, step, params.nb)
                panels.start(index, step, a, factored)
            top, ipiv, info = factored
            factored = None
            l21 = a[step.below_row:, step.panel_col:step.panel_col + kb]
        else:
            top, ipiv, info, l21 = panels.receive(index, step)
        if info:
            panels.finish()
            raise SingularMatrixError(
                f"matrix is singular: zero pivot in column {info - 1} "
                f"(U[{info - 1}, {info - 1}] = 0)")
        pivots[j0:j1] = ipiv
        ahead = block_steps[index + 1] if index + 1 < len(block_steps) else None
        if ahead is not None and grid.mycol != ahead.pcol:
            panels.post(index + 1, ahead)
        if step.trail_col == a.shape[1]:
            continue
        trailing = a[:, step.trail_col:]
        if grid.pr == 1:
            phases.switch("swap")
            dense_local.laswp(trailing[j0:], (ipiv - j0 + 1).astype(np.int32))
            u = trailing[j0:j1]
        else:
            u = _swap_and_gather_u(grid, phases, trailing, step, ipiv, params.nb, u_buffers)
        phases.switch("update")
        dense_local.trsm_lower_unit(top, u)
        below = trailing[step.below_row:]
        if ahead is not None and grid.mycol == ahead.pcol:
            # look-ahead: update and factor the next panel, and start its broadcast,
            # before the rest of the update, which the other process columns' update
            # and their receipt of the next panel overlap
            dense_local.gemm_minus(below[:, :ahead.kb], l21, u[:, :ahead.kb])
            factored = _factor_panel(grid, phases, a, ahead, params.nb)
            panels.start(index + 1, ahead, a, factored)
            panels.update_progressing(below[:, ahead.kb:], l21, u[:, ahead.kb:])
        else:
            panels.update_progressing(below, l21, u)
        phases.switch("other")
    with phases.phase("bcast_L"):
        panels.finish()
    clock.stop()
    return pivots


class _PanelBroadcasts:
    """bcast_L: the panel root's L part (the strictly lower kb(kb-1)/2 of L11, the kb
    pivots, info, its rows below the block) to its process row, one broadcast per step
    (`linalg_io.comm.collectives`: a pipelined chain from the root along the row, or a
    binomial tree when small) into one of two alternating buffers, so that the root can
    start step k+1's broadcast during step k's update (the look-ahead) while step k's
    is still being forwarded. A buffer is reused only after every send from it (the
    root's and the forwarding ranks') has completed. The other ranks post their
    receives of step k+1's panel when step k begins (`post`), and every rank tests what
    it has in flight between the column chunks of its update: across nodes over TCP a
    message moves only inside MPI calls, so a receive posted only when the panel is
    needed would wait for the root's next call."""

    def __init__(self, grid: Grid2D, phases: Phases, local_rows: int, nb: int) -> None:
        self.grid, self.phases = grid, phases
        self.local_rows = local_rows
        self.buffers = [np.empty(panel_words(nb, local_rows)) for _ in range(2)]
        self.requests: list[list[MPI.Request]] = [[], []]
        self.posted: list[collectives.PostedBcast | None] = [None, None]

    def _message(self, index: int, step: _Step) -> tuple[np.ndarray, int, int]:
        """(this step's message buffer, strict, rows below the block), after the
        broadcast that last used the buffer has completed."""
        slot = index % 2
        self._complete(slot)
        m_below = self.local_rows - step.below_row
        return (self.buffers[slot][:panel_words(step.kb, m_below)],
                strict_lower_words(step.kb), m_below)

    def start(self, index: int, step: _Step, a: np.ndarray,
              factored: tuple[np.ndarray, np.ndarray, int]) -> None:
        """Root: pack step `index`'s factored panel and start its broadcast."""
        if self.grid.pc == 1:
            return
        top, ipiv, info = factored
        with self.phases.phase("bcast_L"):
            message, strict, _ = self._message(index, step)
            kb = step.kb
            message[:strict] = top.T[np.triu_indices(kb, 1)]
            message[strict:strict + kb] = ipiv
            message[strict + kb] = info
            message[strict + kb + 1:] = a[step.below_row:,
                                          step.panel_col:step.panel_col + kb].ravel(order="F")
            self.requests[index % 2] = collectives.bcast_start(self.grid.row_comm, message,
                                                               step.pcol)

    def post(self, index: int, step: _Step) -> None:
        """Others: post the receives of step `index`'s panel."""
        if self.grid.pc == 1:
            return
        with self.phases.phase("bcast_L"):
            message, _, _ = self._message(index, step)
            self.posted[index % 2] = collectives.bcast_post(self.grid.row_comm, message,
                                                            step.pcol)

    def receive(self, index: int, step: _Step) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
        """Others: step `index`'s panel as (top, pivots, info, L21), its forwarding sends
        left in flight."""
        slot = index % 2
        with self.phases.phase("bcast_L"):
            if self.posted[slot] is None:
                self.post(index, step)
            message, strict, m_below = self._message(index, step)
            self.requests[slot] = self.posted[slot].finish()
        self.posted[slot] = None
        kb = step.kb
        top = np.zeros((kb, kb), order="F")
        top.T[np.triu_indices(kb, 1)] = message[:strict]
        ipiv = message[strict:strict + kb].astype(np.int64)
        info = int(message[strict + kb])
        return top, ipiv, info, message[strict + kb + 1:].reshape((m_below, kb), order="F")

    def update_progressing(self, c: np.ndarray, l21: np.ndarray, u: np.ndarray) -> None:
        """c -= l21 @ u in column chunks, testing the broadcasts in flight (sends and
        posted receives) between them so that MPI moves their data meanwhile."""
        in_flight = [request for slot in self.requests for request in slot]
        in_flight += [request for posted in self.posted if posted is not None
                      for request in posted.requests]
        if not in_flight:
            dense_local.gemm_minus(c, l21, u)
            return
        chunk = max(256, c.shape[1] // 4)
        for first in range(0, c.shape[1], chunk):
            dense_local.gemm_minus(c[:, first:first + chunk], l21, u[:, first:first + chunk])
            MPI.Request.Testall(in_flight)

    def _complete(self, slot: int) -> None:
        self.grid.comm.Waitall(self.requests[slot])
        self.requests[slot] = []

    def finish(self) -> None:
        """Complete every broadcast send this rank started."""
        for slot in range(len(self.requests)):
            self._complete(slot)


def _factor_panel(grid: Grid2D, phases: Phases, a: np.ndarray, step: _Step,
                  nb: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Factor block column `step` on its process column: (top block, pivots, info)."""
    panel_cols = slice(step.panel_col, step.panel_col + step.kb)
    with phases.phase("panel"):
        if grid.pr == 1:
            return _panel_local(a[step.j0:, panel_cols], step.j0)
        return _panel_distributed(grid, a[:, panel_cols], step, nb)


def _panel_local(panel: np.ndarray, j0: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Pr = 1: the whole panel is local; one dgetrf. Returns (top, global pivots, info)."""
    kb = panel.shape[1]
    ipiv = np.empty(kb, dtype=np.int32)
    info = dense_local.getrf(panel, ipiv)
    return panel[:kb], ipiv.astype(np.int64) + (j0 - 1), (j0 + info) if info else 0


def _panel_distributed(grid: Grid2D, panel: np.ndarray, step: _Step,
                       nb: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Pr > 1: per column one Allgatherv of candidates in the process column (its
    schedule worked out once per panel, each candidate written into its send buffer)."""
    kb, pr, myrow = step.kb, grid.pr, grid.myrow
    each, diagonal_adds = candidate_words(kb)
    counts = np.full(pr, each, dtype=np.int64)
    counts[step.prow] += diagonal_adds
    exchange = collectives.Allgatherv(grid.col_comm, counts)
    gathered = np.empty(int(counts.sum()))
    is_diag = myrow == step.prow
    top = np.empty((kb, kb), order="F")
    ipiv = np.empty(kb, dtype=np.int64)
    info = 0
    firsts = numroc(np.arange(step.j0, step.j1), nb, myrow, pr)
    for jj in range(kb):
        g = step.j0 + jj
        first = int(firsts[jj])
        lu_kernels.panel_candidate(panel, first, jj, exchange.send, nb, myrow, pr, is_diag)
        exchange.run(gathered)
        p = lu_kernels.panel_apply(panel, top, gathered, jj, g, first, nb, myrow, pr, step.prow)
        if p < 0:
            p = -p - 1
            info = info or g + 1
        ipiv[jj] = p
    return top, ipiv, info


def _rows_block(buffer: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The first rows x cols items of `buffer` as a Fortran-ordered block."""
    return buffer[:rows * cols].reshape((rows, cols), order="F")


def _swap_and_gather_u(grid: Grid2D, phases: Phases, trailing: np.ndarray, step: _Step,
                       ipiv: np.ndarray, nb: int, buffers: list[np.ndarray]) -> np.ndarray:
    """Pr > 1: move the pivot rows (trailing columns) to every rank of the process column
    as the unsolved U block row (bcast_U), and the displaced top rows to the pivot
    positions (swap). Rows travel as Fortran-ordered blocks, copied in and out of the
    trailing matrix by `lu_kernels.gather_rows` / `place_rows`. Returns U (kb x trailing
    columns, Fortran order; on the diagonal process row, its top rows in place).
    `buffers`: two of at least kb x trailing columns, reused from step to step (fresh
    ones would cost page faults every step): the exchange's, and U's."""
    with phases.phase("bcast_U"):
        exchange, sources, displaced, moves = _gather_u_start(grid, trailing, step, ipiv, nb,
                                                              buffers)
    with phases.phase("swap"):
        _swap_displaced(grid, trailing, step, displaced, moves, nb)
    with phases.phase("bcast_U"):
        return _place_u(grid, trailing, step, exchange, sources, nb, buffers)


def _gather_u_start(grid: Grid2D, trailing: np.ndarray, step: _Step, ipiv: np.ndarray,
                    nb: int, buffers: list[np.ndarray]) -> tuple:
    """bcast_U's exchange of the pivot rows, run: (the exchange, the pivot rows' global
    rows, the positions below the block that receive a displaced top row, the moves)."""
    pr, myrow = grid.pr, grid.myrow
    j0, j1 = step.j0, step.j1
    ntrail = trailing.shape[1]
    moves = row_moves(ipiv, j0)
    sources = np.arange(j0, j1, dtype=np.int64)
    displaced = []   # positions below the top block that receive a displaced top row
    for q, r in moves.items():
        if q < j1:
            sources[q - j0] = r
        else:
            displaced.append(q)
    source_owner = owner(sources, nb, pr)
    counts = np.bincount(source_owner, minlength=pr) * ntrail
    exchange = collectives.Allgatherv(grid.col_comm, counts, work=buffers[0])
    from_my_row = source_owner == myrow
    lu_kernels.gather_rows(trailing, global_to_local(sources[from_my_row], nb, pr),
                           _rows_block(exchange.send, int(from_my_row.sum()), ntrail))
    exchange.run(None)
    return exchange, sources, np.sort(np.array(displaced, dtype=np.int64)), moves


def _swap_displaced(grid: Grid2D, trailing: np.ndarray, step: _Step, displaced: np.ndarray,
                    moves: dict, nb: int) -> None:
    """swap: the diagonal rank sends the top rows displaced by the pivots to the process
    rows owning their new positions (`displaced`), one message per process row."""
    pr, myrow = grid.pr, grid.myrow
    ntrail = trailing.shape[1]
    displaced_owner = owner(displaced, nb, pr)
    if myrow == step.prow:
        parcels = []   # (process row, local positions there, rows)
        for r in range(pr):
            positions = displaced[displaced_owner == r]
            if positions.size:
                rows = np.empty((positions.size, ntrail), order="F")
                lu_kernels.gather_rows(
                    trailing, global_to_local(np.array([moves[q] for q in positions]), nb, pr),
                    rows)
                parcels.append((r, global_to_local(positions, nb, pr), rows))
        requests = [grid.col_comm.Isend(rows.reshape(-1, order="F"), r, tag=7)
                    for r, _, rows in parcels if r != myrow]
        for r, positions, rows in parcels:
            if r == myrow:
                lu_kernels.place_rows(rows, positions, trailing)
        grid.col_comm.Waitall(requests)
    else:
        positions = global_to_local(displaced[displaced_owner == myrow], nb, pr)
        if positions.size:
            rows = np.empty((positions.size, ntrail), order="F")
            grid.col_comm.Recv(rows.reshape(-1, order="F"), step.prow, tag=7)
            lu_kernels.place_rows(rows, positions, trailing)


def _place_u(grid: Grid2D, trailing: np.ndarray, step: _Step, exchange, sources: np.ndarray,
             nb: int, buffers: list[np.ndarray]) -> np.ndarray:
    """U (unsolved) from bcast_U's blocks: in place on the diagonal process row."""
    ntrail = trailing.shape[1]
    source_owner = owner(sources, nb, grid.pr)
    u = (trailing[step.top_row:step.top_row + step.kb] if grid.myrow == step.prow
         else _rows_block(buffers[1], step.kb, ntrail))
    for r in range(grid.pr):
        at = np.flatnonzero(source_owner == r)
        lu_kernels.place_rows(_rows_block(exchange.blocks[r], at.size, ntrail), at, u)
    return u


def gather_lapack_form(grid: Grid2D, a: np.ndarray, pivots: np.ndarray,
                       n: int, nb: int) -> np.ndarray | None:
    """The factors as one N x N array in LAPACK's (scipy.linalg.lu_factor's) form, on
    rank 0 (None elsewhere): the later interchanges applied to the L columns. For tests
    and small N only (uncounted, pickled)."""
    rows = owned_indices(n, nb, grid.myrow, grid.pr)
    cols = owned_indices(n, nb, grid.mycol, grid.pc)
    pieces = grid.comm.comm.gather((rows, cols, np.asarray(a)), root=0)
    if grid.comm.rank != 0:
        return None
    lu = np.empty((n, n), order="F")
    for r, c, block in pieces:
        lu[np.ix_(r, c)] = block
    for j in range(n):
        p = int(pivots[j])
        if p != j:
            left = (j // nb) * nb
            lu[[j, p], :left] = lu[[p, j], :left]
    return lu
