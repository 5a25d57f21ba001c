"""Process grids (1D, 2D Pr x Pc, 3D Px x Py x c) with their sub-communicators.

Shapes come from `linalg_io.layout.grid_shapes` (pure math a model can call); this
module only splits communicators. All sub-communicators share the parent's
traffic counter.
"""

from __future__ import annotations

from dataclasses import dataclass

from linalg_io.comm.counting import CountedComm
from linalg_io.errors import InputError


@dataclass
class Grid2D:
    """Pr x Pc grid, row-major. row_comm joins the Pc ranks of my process row
    (rank in it = my column), col_comm the Pr ranks of my process column."""

    comm: CountedComm
    pr: int
    pc: int
    myrow: int
    mycol: int
    row_comm: CountedComm
    col_comm: CountedComm

    @classmethod
    def create(cls, comm: CountedComm, pr: int, pc: int) -> Grid2D:
        if pr * pc != comm.size:
            raise InputError(f"grid {pr}x{pc} needs {pr * pc} ranks but the job has {comm.size}")
        myrow, mycol = divmod(comm.rank, pc)
        return cls(comm, pr, pc, myrow, mycol,
                   row_comm=comm.Split(myrow, mycol), col_comm=comm.Split(mycol, myrow))

    def rank_of(self, row: int, col: int) -> int:
        return row * self.pc + col


@dataclass
class Grid3D:
    """Px x Py x c grid: c layers, each a Px x Py 2D grid.

    layer_comm: the Px*Py ranks of my layer (rank in it = x * Py + y); row_comm:
    the Py ranks with my (layer, x); col_comm: the Px ranks with my (layer, y);
    fibre_comm: the c ranks with my (x, y), one per layer (rank in it = layer).
    """

    comm: CountedComm
    px: int
    py: int
    c: int
    x: int
    y: int
    layer: int
    layer_comm: CountedComm
    row_comm: CountedComm
    col_comm: CountedComm
    fibre_comm: CountedComm

    @classmethod
    def create(cls, comm: CountedComm, px: int, py: int, c: int) -> Grid3D:
        if px * py * c != comm.size:
            raise InputError(
                f"grid {px}x{py}x{c} needs {px * py * c} ranks but the job has {comm.size}")
        layer, in_layer = divmod(comm.rank, px * py)
        x, y = divmod(in_layer, py)
        return cls(
            comm, px, py, c, x, y, layer,
            layer_comm=comm.Split(layer, in_layer),
            row_comm=comm.Split(layer * px + x, y),
            col_comm=comm.Split(layer * py + y, x),
            fibre_comm=comm.Split(in_layer, layer),
        )

    def rank_of(self, x: int, y: int, layer: int) -> int:
        return layer * self.px * self.py + x * self.py + y
