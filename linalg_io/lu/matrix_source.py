"""Where an LU's input matrix comes from: generated element-wise, or read from a file.

Each rank asks only for its own rows and columns (`local_block`), so nothing is
scattered from rank 0: generated matrices are a function of (seed, i, j, N)
(linalg_io.layout.generate); a `.npy` file is memory-mapped
(``np.load(mmap_mode='r')``) and every rank reads just its blocks; a dense Matrix
Market file (``array`` format, or ``coordinate`` densified) is parsed by every
rank, which keeps its blocks. Bad input raises InputError at the edge: unreadable
or unknown format, not 2D, not square, complex, N different from --n; non-finite
values are found in the local blocks (`local_block` -> `check_finite`) and the
caller agrees them across ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from linalg_io.errors import InputError
from linalg_io.layout.generate import KINDS, matrix_entries

# columns generated per chunk (bounds the generator's temporaries)
_CHUNK_ELEMENTS = 1 << 22


@dataclass
class MatrixSource:
    """The global N x N matrix: `kind` in random, diagdom, file."""

    kind: str
    n: int
    seed: int = 0
    path: str | None = None
    _array: np.ndarray | None = None

    def local_block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """A[rows][:, cols] as a new Fortran-ordered float64 array."""
        out = np.empty((len(rows), len(cols)), dtype=np.float64, order="F")
        if len(rows) == 0 or len(cols) == 0:
            return out
        step = max(1, _CHUNK_ELEMENTS // len(rows))
        for c0 in range(0, len(cols), step):
            chunk = cols[c0:c0 + step]
            if self._array is None:
                out[:, c0:c0 + step] = matrix_entries(self.kind, self.seed, self.n, rows, chunk)
            else:
                out[:, c0:c0 + step] = self._array[np.ix_(rows, chunk)]
        return out

    def describe(self) -> str:
        return f"file:{Path(self.path).name}" if self.path else self.kind


def check_finite(block: np.ndarray) -> str | None:
    """A message naming the first non-finite entry of a local block, or None."""
    if np.isfinite(block).all():
        return None
    i, j = np.argwhere(~np.isfinite(block))[0]
    return f"matrix has a non-finite value ({block[i, j]}) at local entry ({i}, {j})"


def require_finite(block: np.ndarray | None) -> None:
    """InputError naming the first non-finite entry of a local block (None: no block here),
    for the caller to agree across ranks (`linalg_io.launch.agree.agreed`)."""
    problem = None if block is None else check_finite(block)
    if problem:
        raise InputError(problem)


def _load_array(path: Path) -> np.ndarray:
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        elif suffix == ".mtx":
            from scipy.io import mmread

            array = mmread(str(path))
            if hasattr(array, "toarray"):
                array = array.toarray()
        else:
            raise InputError(f"matrix file {path}: unknown format {suffix!r}; "
                             "expected .npy or .mtx")
    except (ValueError, OSError, EOFError) as error:
        raise InputError(f"matrix file {path} cannot be read: {error}") from None
    if array.dtype.kind not in "fiub":
        raise InputError(f"matrix file {path}: dtype {array.dtype} is not real "
                         "(expected float or integer values)")
    return array


def open_source(dist: str, n: int | None, seed: int = 0, path: str | None = None) -> MatrixSource:
    """The matrix of a run: generated (`dist` in random, diagdom) or from `path`."""
    if path and dist != "file":
        raise InputError(f"--file {path} is read only with --dist file (got --dist {dist})")
    if dist in KINDS:
        if n is None:
            raise InputError(f"--n is required with --dist {dist}")
        return MatrixSource(kind=dist, n=int(n), seed=seed)
    if dist != "file":
        raise InputError(f"unknown --dist {dist!r}; expected random, diagdom or file")
    if not path:
        raise InputError("--dist file needs --file PATH (.npy or .mtx)")
    file = Path(path)
    if not file.is_file():
        raise InputError(f"matrix file {path} does not exist")
    array = _load_array(file)
    if array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] == 0:
        raise InputError(f"matrix file {path}: shape {array.shape} is not a non-empty "
                         "square matrix")
    if n is not None and n != array.shape[0]:
        raise InputError(f"--n {n} does not match the file's order {array.shape[0]}")
    return MatrixSource(kind="file", n=int(array.shape[0]), seed=seed, path=str(path),
                        _array=array)
