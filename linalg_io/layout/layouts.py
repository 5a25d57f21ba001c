"""Distributed-matrix layouts: a row map times a column map on a process grid.

Pure math, no MPI. A `Layout` puts entry (i, j) of an M x N matrix on the process at
grid position (rows.owner(i), cols.owner(j)); `ranks` names the communicator rank
at each grid position (a rank appears at most once; ranks outside the grid own
nothing). A rank's local array is (its rows) x (its columns), Fortran order, rows and
columns in global order. All maps are vectorized (`owner`, `to_local`, `to_global`).

Layouts built here:
``Descriptor(...).layout()``  ScaLAPACK's block-cyclic descriptor (M, N, MB, NB, RSRC,
                              CSRC on Pr x Pc, row- or column-major rank order);
``row_blocks(m, n, p)``       1D: contiguous row blocks, every column;
``conflux_tiles(n, v, ...)``  the 2.5D LU's input: v x v tiles over the Px x Py ranks
                              of layer 0 (rows cyclic, columns in `TileMap.col_owner`'s
                              order; ranks x Py + y); the other layers' ranks own
                              nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from linalg_io.errors import InputError
from linalg_io.layout.axes import BlockAxis, BlockCyclicAxis, ExplicitAxis, indices
from linalg_io.layout.conflux_layout import StepPlan, TileMap


@dataclass(frozen=True, eq=False)
class Layout:
    """Entry (i, j) on rank ranks[rows.owner(i), cols.owner(j)] of `nprocs` ranks."""

    rows: object     # an axis of linalg_io.layout.axes
    cols: object
    ranks: np.ndarray
    nprocs: int
    name: str = ""

    def __post_init__(self) -> None:
        ranks = np.asarray(self.ranks, dtype=np.int64)
        if ranks.shape != (self.rows.nprocs, self.cols.nprocs):
            raise InputError(f"layout {self.name}: ranks array {ranks.shape} does not match the "
                             f"{self.rows.nprocs} x {self.cols.nprocs} grid")
        if ranks.min() < 0 or ranks.max() >= self.nprocs or len(np.unique(ranks)) != ranks.size:
            raise InputError(f"layout {self.name}: grid ranks must be distinct and in "
                             f"0..{self.nprocs - 1}")
        coords = np.full((self.nprocs, 2), -1, dtype=np.int64)
        coords[ranks.reshape(-1)] = np.argwhere(np.ones(ranks.shape, dtype=bool))
        object.__setattr__(self, "ranks", ranks)
        object.__setattr__(self, "_coords", coords)

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows.n, self.cols.n

    def grid_coords(self, rank: int) -> tuple[int, int] | None:
        """(grid row, grid column) of `rank`, None for a rank outside the grid."""
        row, col = self._coords[rank]
        return None if row < 0 else (int(row), int(col))

    def local_shape(self, rank: int) -> tuple[int, int]:
        coords = self.grid_coords(rank)
        if coords is None:
            return 0, 0
        return self.rows.count(coords[0]), self.cols.count(coords[1])

    def local_indices(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """The global rows and columns of `rank`'s local array, in local order."""
        coords = self.grid_coords(rank)
        if coords is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return indices(self.rows, coords[0]), indices(self.cols, coords[1])

    def owner(self, i, j) -> np.ndarray:
        """Rank owning each entry (i, j) (broadcast like NumPy)."""
        return self.ranks[self.rows.owner(i), self.cols.owner(j)]

    def to_local(self, i, j) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rank, local row, local column) of each entry (i, j)."""
        i, j = np.broadcast_arrays(np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64))
        return self.owner(i, j), self.rows.local(i), self.cols.local(j)

    def to_global(self, rank: int, li, lj) -> tuple[np.ndarray, np.ndarray]:
        """Global (i, j) of local entries (li, lj) of `rank` (which must be in the grid)."""
        row, col = self.grid_coords(rank)
        return self.rows.global_index(row, li), self.cols.global_index(col, lj)

    def relabelled(self, process_of: np.ndarray) -> Layout:
        """The same layout with rank r's part held by process process_of[r]."""
        return Layout(self.rows, self.cols, np.asarray(process_of)[self.ranks], self.nprocs,
                      self.name)


@dataclass(frozen=True)
class Descriptor:
    """A ScaLAPACK array descriptor (the grid in place of the BLACS context).

    m x n entries in mb x nb blocks; the first block row on process row rsrc, the first
    block column on process column csrc; a pr x pc grid whose ranks are numbered
    row-major (rank = row pc + col, BLACS 'Row', the default) or column-major ('Col').
    """

    m: int
    n: int
    mb: int
    nb: int
    pr: int
    pc: int
    rsrc: int = 0
    csrc: int = 0
    order: str = "row"

    def __post_init__(self) -> None:
        if min(self.m, self.n) < 0 or min(self.mb, self.nb, self.pr, self.pc) < 1:
            raise InputError(f"descriptor: need M, N >= 0 and MB, NB, Pr, Pc >= 1, got {self}")
        if not (0 <= self.rsrc < self.pr and 0 <= self.csrc < self.pc):
            raise InputError(f"descriptor: RSRC {self.rsrc} / CSRC {self.csrc} outside the "
                             f"{self.pr} x {self.pc} grid")
        if self.order not in ("row", "col"):
            raise InputError(f"descriptor: rank order must be 'row' or 'col', got {self.order!r}")

    def layout(self, nprocs: int | None = None) -> Layout:
        """The layout on `nprocs` ranks (default pr pc; more leaves ranks without data)."""
        grid = np.arange(self.pr * self.pc, dtype=np.int64)
        ranks = grid.reshape(self.pr, self.pc) if self.order == "row" \
            else grid.reshape(self.pc, self.pr).T
        return Layout(BlockCyclicAxis(self.m, self.mb, self.pr, self.rsrc),
                      BlockCyclicAxis(self.n, self.nb, self.pc, self.csrc), ranks,
                      nprocs or self.pr * self.pc,
                      f"scalapack:{self.mb}x{self.nb}@{self.pr}x{self.pc}")

    def local_rows(self, rank: int) -> int:
        """LOCr(M) of `rank` (LLD is max(1, LOCr))."""
        return self.layout().local_shape(rank)[0]

    def array(self, context: int, rank: int) -> np.ndarray:
        """The 9-integer descriptor ScaLAPACK routines take (DTYPE 1), for `rank`."""
        lld = max(1, self.local_rows(rank))
        return np.array([1, context, self.m, self.n, self.mb, self.nb, self.rsrc, self.csrc,
                         lld], dtype=np.int32)


def parse_scalapack(text: str) -> tuple[int, int]:
    """'scalapack:MBxNB' -> (MB, NB) (InputError otherwise)."""
    kind, _, blocks = text.partition(":")
    try:
        mb, nb = (int(part) for part in blocks.lower().split("x"))
    except ValueError:
        mb = nb = 0
    if kind != "scalapack" or mb < 1 or nb < 1:
        raise InputError(f"--input-layout {text!r}: expected scalapack:MBxNB with MB, NB >= 1")
    return mb, nb


def row_blocks(m: int, n: int, nprocs: int, lengths=None) -> Layout:
    """Rows in contiguous blocks (balanced unless `lengths` is given), all columns."""
    rows = BlockAxis.balanced(m, nprocs) if lengths is None else BlockAxis.from_lengths(lengths)
    if rows.n != m or rows.nprocs != nprocs:
        raise InputError(f"row blocks {lengths} do not cover {m} rows on {nprocs} ranks")
    return Layout(rows, BlockAxis.from_lengths([n]), np.arange(nprocs).reshape(nprocs, 1),
                  nprocs, f"rows@{nprocs}")


def conflux_tiles(n: int, v: int, px: int, py: int, c: int) -> Layout:
    """The 2.5D LU's starting layout: layer 0 of the Px x Py x c grid holds A in v x v
    tiles, tile (I, J) on rank (I mod Px) Py + y(J), y the order of the tile columns
    (`linalg_io.layout.conflux_layout.TileMap`; linalg_io.comm.grid.Grid3D)."""
    return Layout(BlockCyclicAxis(n, v, px), tile_columns(StepPlan.create(n, v, px, py, c).tiles),
                  np.arange(px * py).reshape(px, py), px * py * c, f"tiles:{v}@{px}x{py}x{c}")


def tile_columns(tiles: TileMap):
    """The column map of the 2.5D LU's tiles: block-cyclic, or explicit when reflected."""
    if tiles.reflected:
        return ExplicitAxis(tiles.owner_col(np.arange(tiles.n)), tiles.py)
    return BlockCyclicAxis(tiles.n, tiles.v, tiles.py)
