"""The 2.5D LU as a drop-in for pdgetrf: a block-cyclic matrix in, L\\U and pivots back in it.

`factor(local, desc, comm)` keeps pdgetrf's contract: `local` is this rank's part of
an N x N matrix in the ScaLAPACK layout `desc` (`linalg_io.layout.layouts.Descriptor`);
on return it holds L (unit, below the diagonal) and U of P A = L U in LAPACK's form,
and `ipiv` (int32, LOCr(N) + MB entries, 1-based global rows, the same on every
process column) lists the interchanges: row i was swapped with row ipiv[i] - 1, for
i = 0, 1, ... in turn. ScaLAPACK's pdgetrs accepts the result as is.

`DropInLU` does it in three parts, in the order they run (each a phase of the
counting communicator):

redistribute_in   desc -> the 2.5D LU's tiles (`conflux_tiles`, layer 0), straight into
                  the factorization's matrix; relabelled by default (the processes take
                  the tile grid's ranks in the order that keeps the most entries in place);
factor            `linalg_io.lu.conflux.ConfluxLU` on a communicator whose ranks follow
                  that order;
redistribute_out  the factors back into `local`, in two moves read from `Factors`:
                  the L part (tile column J < tile row K) still sits with the rank that
                  held row perm[p] before pivoting (x of the original row, layer lk(J)),
                  the U part (J >= K, diagonal tiles included) on process row K mod Px of
                  layer lk(K); each is a separable layout in the permuted row order
                  (`linalg_io.layout.axes.ExplicitAxis`), moved by its regions.

Traffic per rank: the 2.5D LU's own (`linalg_io.models.conflux`) plus, in and out,
exactly the entries that change owner (`RedistPlan.sent`/`received`, 8 bytes each),
one Alltoallv per move (or per round with a memory fraction). The pivots need no
message: every rank already has them all.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid3D
from linalg_io.comm.redistribute import redistribute
from linalg_io.errors import InputError
from linalg_io.launch.agree import agreed
from linalg_io.layout.axes import ExplicitAxis
from linalg_io.layout.conflux_layout import StepPlan
from linalg_io.layout.layouts import Descriptor, Layout, conflux_tiles, tile_columns
from linalg_io.layout.redist_plan import RedistPlan, Region
from linalg_io.lu.conflux import ConfluxLU, HostKernels, HostMatrix


def lapack_pivots(perm: np.ndarray) -> np.ndarray:
    """The interchanges (LAPACK's ipiv, 0-based) that bring rows perm[0], perm[1], ...
    to positions 0, 1, ...: swapping row i with ipiv[i] for i = 0, 1, ... in turn."""
    n = len(perm)
    row_at = np.arange(n)        # original row now at each position
    position = np.arange(n)      # position of each original row
    ipiv = np.empty(n, dtype=np.int64)
    for i, target in enumerate(perm.tolist()):
        j = int(position[target])
        ipiv[i] = j
        row_at[i], row_at[j] = row_at[j], row_at[i]
        position[row_at[i]], position[row_at[j]] = i, j
    return ipiv


class DropInLU:
    """The plans, grid and factorization object of one (desc, comm, 2.5D shape), reused
    by every `factor` call. (px, py, c, v): the 2.5D grid and tile size."""

    def __init__(self, desc: Descriptor, comm: CountedComm, shape: tuple[int, int, int, int],
                 relabel: bool = True, mem_fraction: float | None = None) -> None:
        if desc.m != desc.n:
            raise InputError(f"the LU needs a square matrix, the descriptor is {desc.m} x {desc.n}")
        if desc.pr * desc.pc > comm.size:
            raise InputError(f"descriptor grid {desc.pr} x {desc.pc} needs more than the "
                             f"{comm.size} ranks of the communicator")
        self.comm, self.desc = comm, desc
        n = desc.n
        self.px, self.py, self.c, self.v = px, py, c, v = shape
        self.layout = desc.layout(comm.size)
        self.plan_in = RedistPlan.create(self.layout, conflux_tiles(n, v, px, py, c),
                                         relabel=relabel, mem_fraction=mem_fraction)
        self.process_of = self.plan_in.process_of
        role = int(np.flatnonzero(self.process_of == comm.rank)[0])
        self.grid = Grid3D.create(comm.Split(0, role), px, py, c)
        self.step_plan = StepPlan.create(n, v, px, py, c)
        tiles = self.step_plan.tiles
        self.matrix = HostMatrix(np.zeros((len(tiles.local_rows(self.grid.x)),
                                           len(tiles.local_cols(self.grid.y)))))
        self.lu = ConfluxLU(self.grid, self.step_plan, self.matrix, HostKernels())
        self.mem_fraction = mem_fraction
        self.plans_out: tuple[RedistPlan, RedistPlan] | None = None

    def factor(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Factor `local` in place (see the module docstring); returns (local, ipiv).
        `part_times` keeps this rank's seconds in each of the three parts."""
        comm = self.comm
        start = MPI.Wtime()
        with comm.phase("redistribute_in"):
            on_layer0 = self.grid.layer == 0
            if not on_layer0:
                self.matrix.load(None)
            redistribute(comm, self.plan_in, local, out=self.matrix.at.T if on_layer0 else None)
        factored = MPI.Wtime()
        self.lu.reset()
        self.lu.factor()
        perm = np.concatenate(self.lu.pivots)
        back = MPI.Wtime()
        with comm.phase("redistribute_out"):
            self.plans_out = self._plans_out(perm)
            l_plan, u_plan = self.plans_out
            redistribute(comm, l_plan, self._l_source(l_plan.src, perm), out=local)
            redistribute(comm, u_plan, self._u_source(u_plan.src), out=local)
        self.part_times = {"redistribute_in": factored - start, "factor": back - factored,
                           "redistribute_out": MPI.Wtime() - back}
        rows = self.layout.local_indices(comm.rank)[0]
        ipiv = np.zeros(len(rows) + self.desc.mb, dtype=np.int32)
        ipiv[:len(rows)] = lapack_pivots(perm)[rows] + 1
        return local, ipiv

    def check(self, local: np.ndarray) -> None:
        """InputError unless `local` is this rank's float64 part of the descriptor."""
        shape = self.layout.local_shape(self.comm.rank)
        if local.shape != shape or local.dtype != np.float64:
            raise InputError(f"local array {local.shape} {local.dtype}: the descriptor gives "
                             f"this rank {shape} float64")

    # --- where the factors are --------------------------------------------------
    def _rank(self, layer: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The process holding grid position (x, y) of `layer`."""
        return self.process_of[(layer * self.px + x) * self.py + y]

    def _plans_out(self, perm: np.ndarray) -> tuple[RedistPlan, RedistPlan]:
        """The two moves of the factors into desc's layout (rows in pivot order)."""
        n, v, px, py, c = self.desc.n, self.v, self.px, self.py, self.c
        steps = list(self.step_plan.steps())
        tile_of = np.arange(n) // v
        lk = np.array([s.lk for s in steps])
        layers, xs, ys = np.arange(c), np.arange(px), np.arange(py)
        # L: row p with the rank that held row perm[p] (x), column j on (lk(J), y(J))
        tiles = self.step_plan.tiles
        l_src = Layout(ExplicitAxis(tiles.owner_row(perm), px),
                       ExplicitAxis(lk[tile_of] * py + tiles.col_owner(tile_of), c * py),
                       self._rank(layers[None, :, None], xs[:, None, None],
                                  ys[None, None, :]).reshape(px, c * py), self.comm.size)
        # U: row p of tile K on (lk(K), K mod Px), column j on y(J)
        u_src = Layout(ExplicitAxis(lk[tile_of] * px + tile_of % px, c * px),
                       tile_columns(tiles),
                       self._rank(layers[:, None, None], xs[None, :, None],
                                  ys[None, None, :]).reshape(c * px, py), self.comm.size)
        l_regions = [Region(s.k * v + s.w, n, s.k * v, s.k * v + s.w) for s in steps[:-1]]
        u_regions = [Region(s.k * v, s.k * v + s.w, s.k * v, n) for s in steps]
        return (RedistPlan(l_src, self.layout, l_regions, self.mem_fraction),
                RedistPlan(u_src, self.layout, u_regions, self.mem_fraction))

    def _l_source(self, layout: Layout, perm: np.ndarray) -> np.ndarray:
        """This rank's L blocks placed in `layout`'s local array (rest unset)."""
        position = np.empty(len(perm), dtype=np.int64)
        position[perm] = np.arange(len(perm))
        local = np.empty(layout.local_shape(self.comm.rank), order="F")
        for k, rows, l_block in self.lu.factors.l_rows:
            first = int(layout.cols.local(k * self.v))
            local[layout.rows.local(position[rows]), first:first + l_block.shape[1]] = l_block
        return local

    def _u_source(self, layout: Layout) -> np.ndarray:
        """This rank's diagonal blocks and U rows placed in `layout`'s local array."""
        local = np.empty(layout.local_shape(self.comm.rank), order="F")
        v = self.v
        for k, _, lu00 in self.lu.factors.diag:
            r0, c0 = int(layout.rows.local(k * v)), int(layout.cols.local(k * v))
            local[r0:r0 + lu00.shape[0], c0:c0 + lu00.shape[1]] = lu00
        for k, cols, u_t in self.lu.factors.u_rows:
            r0 = int(layout.rows.local(k * v))
            local[r0:r0 + u_t.shape[1], layout.cols.local(cols)] = u_t.T
        return local


def factor(local: np.ndarray, desc: Descriptor, comm, shape=None, relabel: bool = True,
           mem_fraction: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """pdgetrf's contract with the 2.5D LU (module docstring): `local` (Fortran-ordered
    float64, this rank's part of `desc`) is overwritten with L\\U; returns (local, ipiv).

    `comm`: an mpi4py communicator (or a CountedComm); `shape`: (Px, Py, c, v) of the
    2.5D grid, by default the choice `lu --algo conflux` runs for this N and communicator
    size (`linalg_io.lu.run_choice.agreed_choice`).
    Collective over `comm`.
    """
    counted = comm if isinstance(comm, CountedComm) else CountedComm(comm)

    if shape is None:
        from linalg_io.launch.node import node_rank_and_size
        from linalg_io.lu.run_choice import agreed_choice
        from linalg_io.models.profile import load_profile

        _, ranks_on_node = node_rank_and_size(counted.comm)
        shape = agreed_choice(counted, "conflux", desc.n, {}, load_profile(), ranks_on_node).shape

    def prepare() -> DropInLU:
        dropin = DropInLU(desc, counted, shape, relabel, mem_fraction)
        dropin.check(local)
        return dropin

    return agreed(counted.comm, prepare).factor(local)
