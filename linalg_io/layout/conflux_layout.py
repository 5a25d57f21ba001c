"""Tile maps and the step schedule of the 2.5D LU (pure integer math, no MPI).

The N x N matrix is cut into v x v tiles (the last tile row/column may be narrower);
tile (I, J) lives on process (I mod Px, J mod Py) of every layer, so each rank of a
Px x Py x c grid keeps the same local block (its tile rows x its tile columns) on
every layer: c N^2 / P words per rank. Local rows and columns are the owned tiles
in increasing order.

`StepPlan` fixes, before any byte moves, who roots each phase of step k (panel =
tile column k): the panel's process column ky = k mod Py, the layer that reduces it
and solves for it, lk = (k div Py) mod c (rotated so every layer of column ky takes
its turn), the process row kx = k mod Px that broadcasts the pivot ids, and the c
slices of the panel's w columns (layer l takes s_l = w div c (+1 for l < w mod c)
of them in the outer product). The algorithm (`linalg_io.lu.conflux`) and the model
(`linalg_io.models.conflux`) both walk this plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class TileMap:
    """v x v tiles of an n x n matrix, block-cyclic over Px process rows x Py columns."""

    n: int
    v: int
    px: int
    py: int

    @property
    def ntiles(self) -> int:
        return -(-self.n // self.v)

    def width(self, tile: int) -> int:
        return min(self.v, self.n - tile * self.v)

    def owned_indices(self, proc: int, nprocs: int) -> np.ndarray:
        """Global indices (rows or columns) of the tiles I = proc mod nprocs, ascending."""
        starts = np.arange(proc, self.ntiles, nprocs) * self.v
        if len(starts) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(s, min(s + self.v, self.n)) for s in starts]).astype(np.int64)

    def local_rows(self, x: int) -> np.ndarray:
        return self.owned_indices(x, self.px)

    def local_cols(self, y: int) -> np.ndarray:
        return self.owned_indices(y, self.py)

    @cached_property
    def rows_per_proc(self) -> np.ndarray:
        return np.array([len(self.local_rows(x)) for x in range(self.px)], dtype=np.int64)

    @cached_property
    def cols_per_proc(self) -> np.ndarray:
        return np.array([len(self.local_cols(y)) for y in range(self.py)], dtype=np.int64)

    def owner_row(self, global_rows: np.ndarray) -> np.ndarray:
        """Process row owning each global row."""
        return (np.asarray(global_rows, dtype=np.int64) // self.v) % self.px

    def local_col_start(self, y: int, tile: int) -> int:
        """Local column index of the first column of tile >= `tile` owned by y."""
        first_owned = tile + ((y - tile) % self.py)
        full_tiles = (first_owned - y) // self.py
        return min(full_tiles * self.v, int(self.cols_per_proc[y]))

    def trailing_cols(self, k: int) -> np.ndarray:
        """Per process column: local columns right of panel k (global >= end of tile k)."""
        return np.array([self.cols_per_proc[y] - self.local_col_start(y, k + 1)
                         for y in range(self.py)], dtype=np.int64)


def butterfly_size(px: int) -> int:
    """Ranks in the tournament's butterfly over a process column of px: the largest power
    of two <= px (ranks beyond it fold onto it first)."""
    return 1 << (px.bit_length() - 1)


def slice_sizes(w: int, c: int) -> np.ndarray:
    """Columns of a w-wide panel taken by each of the c layers."""
    return np.array([w // c + (l < w % c) for l in range(c)], dtype=np.int64)


@dataclass(frozen=True)
class Step:
    k: int
    w: int
    ky: int
    lk: int
    kx: int
    slices: np.ndarray      # s_l, columns of the panel per layer
    offsets: np.ndarray     # first panel column of each layer's slice


@dataclass(frozen=True)
class StepPlan:
    """The schedule of the 2.5D LU on a Px x Py x c grid with v x v tiles."""

    tiles: TileMap
    c: int

    @classmethod
    def create(cls, n: int, v: int, px: int, py: int, c: int) -> StepPlan:
        return cls(TileMap(n, v, px, py), c)

    @property
    def redundant_u(self) -> bool:
        """Where U = L00^-1 A01 is solved. c = 1: on every rank of layer lk (the pivot
        rows allgathered in each process column, L00 broadcast along every process row;
        no slices to hand out). c > 1: on process row kx of layer lk only (the pivot rows
        gathered there, L00 sent along that row), which hands the c slices of U to its
        fibre, each layer broadcasting its slice down the process column: per step
        w t (Px-1)/Px^2 + w t (c-1)/(c Px) + w t (Px-1)/(c Px) words received per rank
        on average against w t (Px-1)/(c Px) + w t (c-1)/c^2 + L00's w^2 for the
        redundant solve, less for every c > 1 and Px > 1."""
        return self.c == 1

    def steps(self):
        t = self.tiles
        for k in range(t.ntiles):
            w = t.width(k)
            s = slice_sizes(w, self.c)
            offsets = np.concatenate([[0], np.cumsum(s)[:-1]]).astype(np.int64)
            yield Step(k=k, w=w, ky=k % t.py, lk=(k // t.py) % self.c, kx=k % t.px,
                       slices=s, offsets=offsets)
