"""Tile maps and the step schedule of the 2.5D LU (pure integer math, no MPI).

The N x N matrix is cut into v x v tiles (the last tile row/column may be narrower);
tile (I, J) lives on process (I mod Px, y(J)) of every layer (`TileMap.col_owner`:
y(J) = J mod Py, or the reflected order 0 1 1 0 0 1 1 0 ... when Py = 2, c = 1 and N
is a multiple of 4 v: `reflect_columns`), so each rank of a Px x Py x c grid keeps the
same local block (its tile rows x its tile columns) on every layer: c N^2 / P words
per rank. Local rows and columns are the owned tiles in increasing order. Tile column J
is updated in steps 0..J-1 and its panel's L has N - (J+1) v rows, so with Py = 2 plain
cyclic order gives column 1 the later tile of every pair: more update (at 16 tiles, 11%
more than column 0, the time of the whole LU) and the longer L panels to receive. In each group
of four tiles the reflected order gives both columns the same update and the same L
rows to receive; with a partial last group, a narrower last tile (the model, 2x2x1,
N = 5000, v = 128: 2.3% more received by the busiest rank) or c > 1 layers (whose
rotation meets the columns' order) it can give a rank more to receive than cyclic
order does, so those grids, and Py >= 3 (2x3x1, N = 4096, v = 256: 43.0 MB against
41.2), stay cyclic. Rows stay cyclic: rows move with the pivots.

`StepPlan` fixes, before any byte moves, who roots each phase of step k (panel =
tile column k): the panel's process column ky = y(k), the layer that reduces it
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

# the phases of a step, in the order the algorithm runs them (its time phases; its
# traffic phases are those with messages, all but "solves" and "update")
PHASES = ("reduce_panel", "tournament_pivoting", "push_pivots", "solves", "scatter_slices",
          "update")


@dataclass(frozen=True)
class TileMap:
    """v x v tiles of an n x n matrix: tile rows cyclic over Px process rows, tile
    columns over Py process columns in `col_owner`'s order."""

    n: int
    v: int
    px: int
    py: int
    reflected: bool = False

    @property
    def ntiles(self) -> int:
        return -(-self.n // self.v)

    def width(self, tile: int) -> int:
        return min(self.v, self.n - tile * self.v)

    def owned_indices(self, proc: int, nprocs: int) -> np.ndarray:
        """Global indices (rows) of the tiles I = proc mod nprocs, ascending."""
        return self._indices(np.arange(proc, self.ntiles, nprocs))

    def _indices(self, tiles: np.ndarray) -> np.ndarray:
        """Global indices of the given tiles, ascending."""
        rows = (np.asarray(tiles, dtype=np.int64)[:, None] * self.v
                + np.arange(self.v, dtype=np.int64)).reshape(-1)
        return rows[rows < self.n]

    def col_owner(self, tiles) -> np.ndarray:
        """Process column of each tile column J: J mod Py, or (`reflected`, Py = 2)
        0 1 1 0 0 1 1 0 ..."""
        tiles = np.asarray(tiles, dtype=np.int64)
        if not self.reflected:
            return tiles % self.py
        return np.where((tiles // 2) % 2 == 0, tiles % 2, 1 - tiles % 2)

    def local_rows(self, x: int) -> np.ndarray:
        return self.owned_indices(x, self.px)

    def local_cols(self, y: int) -> np.ndarray:
        return self._indices(np.flatnonzero(self.col_owner(np.arange(self.ntiles)) == y))

    @cached_property
    def rows_per_proc(self) -> np.ndarray:
        tiles = np.arange(self.ntiles)
        return np.bincount(tiles % self.px, weights=self._widths,
                           minlength=self.px).astype(np.int64)

    @cached_property
    def even_rows(self) -> bool:
        """Whether every process row holds as many rows."""
        return bool((self.rows_per_proc == self.rows_per_proc[0]).all())

    @cached_property
    def cols_per_proc(self) -> np.ndarray:
        tiles = np.arange(self.ntiles)
        return np.bincount(self.col_owner(tiles), weights=self._widths,
                           minlength=self.py).astype(np.int64)

    @cached_property
    def _widths(self) -> np.ndarray:
        """Width of each tile (v, the last one's what is left of n)."""
        return np.minimum(self.v, self.n - np.arange(self.ntiles) * self.v)

    def owner_row(self, global_rows: np.ndarray) -> np.ndarray:
        """Process row owning each global row."""
        return (np.asarray(global_rows, dtype=np.int64) // self.v) % self.px

    def owner_col(self, global_cols: np.ndarray) -> np.ndarray:
        """Process column owning each global column."""
        return self.col_owner(np.asarray(global_cols, dtype=np.int64) // self.v)

    @cached_property
    def _col_starts(self) -> np.ndarray:
        """[y, J]: local columns of process column y in tile columns < J (J <= ntiles)."""
        owned = self.col_owner(np.arange(self.ntiles))[None, :] == np.arange(self.py)[:, None]
        return np.concatenate([np.zeros((self.py, 1), dtype=np.int64),
                               np.cumsum(owned * self._widths, axis=1)], axis=1)

    def local_col_start(self, y: int, tile: int) -> int:
        """Local column index of the first column of tile >= `tile` owned by y."""
        return int(self._col_starts[y, min(tile, self.ntiles)])

    def trailing_cols(self, k: int) -> np.ndarray:
        """Per process column: local columns right of panel k (global >= end of tile k)."""
        return np.array([self.cols_per_proc[y] - self.local_col_start(y, k + 1)
                         for y in range(self.py)], dtype=np.int64)


def reflect_columns(n: int, v: int, py: int, c: int) -> bool:
    """Whether the 2.5D LU's tile columns go in reflected order (module doc): Py = 2,
    c = 1 and the tiles fill whole groups of four (N a multiple of 4 v)."""
    return py == 2 and c == 1 and n % (4 * v) == 0


def butterfly_size(px: int) -> int:
    """Ranks in the tournament's butterfly over a process column of px: the largest power
    of two <= px (ranks beyond it fold onto it first)."""
    return 1 << (px.bit_length() - 1)


def tournament_roles(roles: np.ndarray, px: int) -> tuple[np.ndarray, np.ndarray]:
    """(messages sent, merges) of each role r = (x - k) mod Px in the tournament over a
    process column of px: a role of the butterfly (r < q, `butterfly_size`) merges and
    sends log2 q times, once more where role r + q folds onto it (r < Px - q); a role
    beyond it folds on: one send, no merge."""
    q = butterfly_size(px)
    merges = np.where(roles >= q, 0, q.bit_length() - 1 + (roles < px - q))
    return np.where(roles >= q, 1, merges), merges


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
        return cls(TileMap(n, v, px, py, reflected=reflect_columns(n, v, py, c)), c)

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
            yield Step(k=k, w=w, ky=int(t.col_owner(k)), lk=(k // t.py) % self.c, kx=k % t.px,
                       slices=s, offsets=offsets)
