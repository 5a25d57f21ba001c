"""Triangular test matrices of the sparse triangular solve, checked once at the edge.

``lap2d:NX`` / ``lap3d:NX``   lower IC(0) factor L of the 5-/7-point Laplacian on an
                              NX^2 / NX^3 grid (natural order; A ~= L L^T, same pattern
                              as tril(A)); ``--upper`` gives U = L^T.
``rand:N:DENSITY:DEPTH``      random lower-triangular matrix with exactly DEPTH levels:
                              rows come in DEPTH bands of N/DEPTH rows; a row of band l
                              depends on one row of band l-1 and on each earlier row with
                              probability DENSITY; strictly diagonally dominant by rows.
                              ``--upper`` gives its transpose.
``path.mtx``                  Matrix Market file (scipy.io.mmread): square, lower (or with
                              ``--upper`` upper) triangular unless ``--tril`` takes that
                              triangle, finite, with a nonzero diagonal.

Every rank builds the same matrix from the same description (no communication).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from linalg_io._kernels.sptrsv import stencil_ic0_pivots
from linalg_io.errors import InputError


def _canonical(matrix: sp.spmatrix) -> sp.csr_matrix:
    """Float64 CSR with sorted, summed indices."""
    csr = sp.csr_matrix(matrix, dtype=np.float64)
    csr.sum_duplicates()
    csr.sort_indices()
    return csr


def laplacian_ic0(nx: int, dims: int) -> sp.csr_matrix:
    """Lower IC(0) factor of the 5-point (dims=2) or 7-point (dims=3) Laplacian."""
    ny = nx
    nz = nx if dims == 3 else 1
    n = nx * ny * nz
    pivots = stencil_ic0_pivots(nx, ny, nz, 2.0 * dims)
    root = np.sqrt(pivots)
    rows = np.arange(n, dtype=np.int64)
    x, y, z = rows % nx, (rows // nx) % ny, rows // (nx * ny)
    row_parts, col_parts, val_parts = [rows], [rows], [root]
    for has_lower, stride in ((x > 0, 1), (y > 0, nx), (z > 0, nx * ny)):
        below = rows[has_lower]
        row_parts.append(below)
        col_parts.append(below - stride)
        val_parts.append(-1.0 / root[below - stride])
    coo = sp.coo_matrix((np.concatenate(val_parts),
                         (np.concatenate(row_parts), np.concatenate(col_parts))), shape=(n, n))
    return _canonical(coo)


def random_levels(n: int, density: float, depth: int, seed: int) -> sp.csr_matrix:
    """Random lower-triangular matrix with exactly `depth` levels (see module doc)."""
    if not 1 <= depth <= n:
        raise InputError(f"rand:N:DENSITY:DEPTH needs 1 <= DEPTH <= N, got N={n}, DEPTH={depth}")
    if not 0.0 <= density <= 1.0:
        raise InputError(f"rand: DENSITY must lie in [0, 1], got {density}")
    rng = np.random.default_rng(seed)
    band_start = (np.arange(depth + 1, dtype=np.int64) * n) // depth
    rows = np.arange(n, dtype=np.int64)
    band = np.searchsorted(band_start, rows, side="right") - 1
    deep = rows[band > 0]
    prev_lo, prev_hi = band_start[band[deep] - 1], band_start[band[deep]]
    chain_cols = prev_lo + (rng.random(deep.size) * (prev_hi - prev_lo)).astype(np.int64)
    extra_counts = rng.binomial(prev_hi, density)
    extra_rows = np.repeat(deep, extra_counts)
    extra_cols = (rng.random(extra_rows.size) * np.repeat(prev_hi, extra_counts)).astype(np.int64)
    off_rows = np.concatenate([deep, extra_rows])
    off_cols = np.concatenate([chain_cols, extra_cols])
    off_vals = -rng.random(off_rows.size) - 0.1
    strict = sp.coo_matrix((off_vals, (off_rows, off_cols)), shape=(n, n)).tocsr()
    diag = 1.0 + np.asarray(abs(strict).sum(axis=1)).ravel()
    return _canonical(strict + sp.diags(diag))


def read_mtx(path: str, upper: bool, take_triangle: bool) -> sp.csr_matrix:
    """A triangular matrix from a Matrix Market file, checked (see module doc)."""
    try:
        matrix = scipy.io.mmread(path)
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read {path} as Matrix Market: {error}") from None
    if not sp.issparse(matrix):
        matrix = sp.coo_matrix(matrix)
    if matrix.shape[0] != matrix.shape[1]:
        raise InputError(f"{path}: matrix is {matrix.shape[0]} x {matrix.shape[1]}, must be square")
    if matrix.shape[0] == 0:
        raise InputError(f"{path}: matrix is 0 x 0 (nothing to solve)")
    if np.iscomplexobj(matrix.data):
        raise InputError(f"{path}: complex matrices are not supported")
    csr = _canonical(matrix)
    if not np.all(np.isfinite(csr.data)):
        raise InputError(f"{path}: matrix has non-finite entries")
    triangle = sp.triu if upper else sp.tril
    wrong_side = sp.tril(csr, k=-1) if upper else sp.triu(csr, k=1)
    if wrong_side.nnz and not take_triangle:
        side = "below" if upper else "above"
        want = "upper" if upper else "lower"
        raise InputError(f"{path}: not {want} triangular ({wrong_side.nnz} nonzeros {side} the "
                         f"diagonal); pass --tril to use its {want} triangle")
    return _canonical(triangle(csr)) if wrong_side.nnz else csr


def check_diagonal(matrix: sp.csr_matrix, name: str) -> None:
    """InputError naming the first row whose diagonal entry is zero or missing."""
    zero = np.flatnonzero(matrix.diagonal() == 0.0)
    if zero.size:
        raise InputError(f"{name}: zero or missing diagonal in {zero.size} rows "
                         f"(first: row {zero[0]}); a triangular solve needs a nonzero diagonal")


def matrix_size(spec: str) -> tuple[int, int] | None:
    """(n, nnz) of the matrix `spec` names, from its description alone (a .mtx file's
    header), before anything is built; rand: the expected number of distinct entries,
    each row of band l >= 1 drawing about DENSITY (1 - DENSITY/2) of the rows before
    its band; None where the description does not parse (load_matrix says why)."""
    kind, _, rest = spec.partition(":")
    try:
        if kind in ("lap2d", "lap3d") and rest:
            nx = int(rest)
            if kind == "lap2d":
                return nx**2, nx**2 + 2 * nx * (nx - 1)
            return nx**3, nx**3 + 3 * nx**2 * (nx - 1)
        if kind == "rand" and rest:
            n_text, density_text, depth_text = rest.split(":")
            n, density, depth = int(n_text), float(density_text), int(depth_text)
            before = n * n * (depth - 1) / (2 * depth)   # sum over rows of the rows before
            return n, int(2 * n - n // depth + density * (1 - density / 2) * before)
        if spec.endswith(".mtx"):
            rows, _, entries, *_ = scipy.io.mminfo(spec)
            return int(rows), int(entries)
    except (ValueError, ZeroDivisionError, OSError):
        return None
    return None


def load_matrix(spec: str, upper: bool = False, take_triangle: bool = False,
                seed: int = 0) -> sp.csr_matrix:
    """The triangular matrix named by `spec` (lower, or upper with `upper`), checked."""
    kind, _, rest = spec.partition(":")
    try:
        if kind in ("lap2d", "lap3d") and rest:
            nx = int(rest)
            if nx < 1:
                raise ValueError
            lower = laplacian_ic0(nx, 2 if kind == "lap2d" else 3)
            matrix = lower.T.tocsr() if upper else lower
        elif kind == "rand" and rest:
            n_text, density_text, depth_text = rest.split(":")
            n = int(n_text)
            if n < 1:
                raise ValueError
            lower = random_levels(n, float(density_text), int(depth_text), seed)
            matrix = lower.T.tocsr() if upper else lower
        elif spec.endswith(".mtx") or Path(spec).is_file():
            matrix = read_mtx(spec, upper, take_triangle)
        else:
            raise ValueError
    except ValueError:
        raise InputError(f"--matrix {spec!r}: expected lap2d:NX, lap3d:NX, "
                         f"rand:N:DENSITY:DEPTH or a .mtx file") from None
    matrix = _canonical(matrix)
    check_diagonal(matrix, spec)
    return matrix


def as_lower(matrix: sp.csr_matrix, upper: bool) -> sp.csr_matrix:
    """The lower-triangular form the solvers work on: J U J for upper U (J reverses rows)."""
    if not upper:
        return matrix
    n = matrix.shape[0]
    coo = matrix.tocoo()
    return _canonical(sp.coo_matrix((coo.data, (n - 1 - coo.row, n - 1 - coo.col)), shape=(n, n)))
