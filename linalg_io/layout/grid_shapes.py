"""Process-grid shapes as pure integer math (no MPI), shared by the grids and the models.

Rank order: 2D grids are row-major (rank = row * Pc + col, as ScaLAPACK's default);
3D grids put layers outermost (rank = layer * Px * Py + x * Py + y).
"""

from __future__ import annotations

import math

from linalg_io.errors import InputError


def divisors(p: int) -> list[int]:
    """The divisors of p >= 1, ascending: the pairs d, p/d for d <= sqrt(p), O(sqrt p)."""
    small = [d for d in range(1, math.isqrt(p) + 1) if p % d == 0]
    return small + [p // d for d in reversed(small) if d * d != p]


def square_2d(p: int) -> tuple[int, int]:
    """The most square Pr x Pc = p with Pr <= Pc (prime p gives 1 x p)."""
    pr = max(d for d in divisors(p) if d * d <= p)
    return pr, p // pr


def parse_grid(text: str, p: int, ndim: int) -> tuple[int, ...]:
    """Parse 'PrxPc' or 'PxxPyxC' and check it uses exactly p ranks (each form is taken
    for the other where c = 1: 2x2 is 2x2x1, and 2x2x1 is 2x2)."""
    try:
        dims = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise InputError(f"grid {text!r} is not of the form PrxPc or PxxPyxC") from None
    if len(dims) == 2 and ndim == 3:
        dims = dims + (1,)
    if len(dims) == 3 and ndim == 2 and dims[2] == 1:   # a 2D grid written as a 3D one
        dims = dims[:2]
    if len(dims) != ndim or min(dims) < 1:
        form = "PrxPc" if ndim == 2 else "PxxPyxC"
        raise InputError(f"grid {text!r} is not of the form {form} with positive sizes")
    product = 1
    for d in dims:
        product *= d
    if product != p:
        raise InputError(f"grid {text} needs {product} ranks but the job has {p}")
    return dims
