"""The least memory a run needs per rank, in closed form: a size that cannot fit is
refused at once instead of after minutes of set-up or a model search.

Each bound counts only the arrays a run must hold for its whole length, never a
temporary, so a refused run could not have fitted (an admitted one may still fail
later with MemoryError, which the runner reports as bad input). Bytes per rank:
  LU, 2D          2 N^2/P words: the local block and the copy each repetition restarts from;
  LU, COnfLUX     3 N^2/P words: the least of the 2.5D layout's memory (models.conflux
                  memory_words, (2c + 1) N^2/P at c = 1): block, restart copy, factors;
  LU, other       N^2/P words: the matrix itself;
  TS-GEMM         (A + B + C) / P elements, the three operands spread over the ranks;
  SpTRSV          12 nnz + 8 n (nrhs + 1): every rank builds the whole matrix (CSR,
                  8-byte values and 4-byte column indices) and the right-hand sides.
"""

from __future__ import annotations

import os

from linalg_io.errors import InputError
from linalg_io.layout.words import WORD

LU_COPIES = {"2d": (2, "2 N^2/P words: the local block and its restart copy"),
             "scalapack": (2, "2 N^2/P words: the local block and its restart copy"),
             "conflux": (3, ("3 N^2/P words: the local block, its restart copy and the "
                             "factors, at c = 1")),
             "dropin": (6, ("6 N^2/P words: the caller's block and its restart copy, the "
                            "2.5D tiles, their factors, and L\\U moved back, at c = 1"))}
LU_ANY = (1, "N^2/P words: the matrix itself")


def physical_memory() -> int:
    """This machine's memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def memory_over(ranks_on_node: int) -> int:
    """This machine's memory over the ranks sharing it: a run's memory per rank by default."""
    return physical_memory() // ranks_on_node


def lu_bytes_per_rank(n: int, p: int, algo: str) -> tuple[float, str]:
    """(bytes, formula) the LU `algo` needs per rank at least."""
    copies, formula = LU_COPIES.get(algo, LU_ANY)
    return copies * WORD * n * n / p, formula


def tsgemm_bytes_per_rank(variant: str, m: int, n: int, k: int, p: int,
                          itemsize: int) -> tuple[float, str]:
    """(bytes, formula): A, B and C spread over the p ranks (atb: B is m x n, C k x n)."""
    elements = m * k + m * n + k * n
    shapes = "A m x k, B m x n, C k x n" if variant == "atb" else "A m x k, B k x n, C m x n"
    return itemsize * elements / p, f"A, B and C over the P ranks; {shapes}"


def sptrsv_bytes(n: int, nnz: int, nrhs: int) -> tuple[float, str]:
    """(bytes, formula) of the whole triangular matrix and its right-hand sides."""
    return 12.0 * nnz + 8.0 * n * (nrhs + 1), "12 nnz + 8 n (nrhs + 1): the whole matrix"


def format_bytes(value: float) -> str:
    """1.5e15 -> '1.33 PiB'."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    power = 0
    while value >= 1024 and power < len(units) - 1:
        value /= 1024
        power += 1
    return f"{value:.3g} {units[power]}"


def require_memory(what: str, need: tuple[float, str], available: float, source: str,
                   per: str = "per rank") -> None:
    """InputError when `need` (bytes, formula) exceeds `available` bytes (from `source`)."""
    need_bytes, formula = need
    if need_bytes > available:
        raise InputError(f"{what} needs at least {format_bytes(need_bytes)} {per} "
                         f"({formula}), but {format_bytes(available)} {per} are "
                         f"available ({source})")
