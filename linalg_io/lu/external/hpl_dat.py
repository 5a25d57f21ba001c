"""HPL's input file (HPL.dat; HPCC's HPL reads the same lines as hpccinf.txt) for given
problem sizes, one NB and one P x Q grid.

The algorithm lines are HPL.dat's example values, the ones the in-process driver
(hpl/lio_hpl.c) sets: right-looking panel factorization, Crout recursion, NBMIN 4,
NDIV 2, 1rM broadcast, look-ahead 1, mixed swapping (threshold 64), L1 and U
transposed, equilibration, alignment 8; row-major process mapping (PMAP 0), as
Grid2D and BLACS 'Row'; threshold 16.
"""

from __future__ import annotations

from linalg_io.errors import InputError

ALGORITHM_LINES = (
    "16.0         threshold",
    "1            # of panel fact",
    "2            PFACTs (0=left, 1=Crout, 2=Right)",
    "1            # of recursive stopping criterium",
    "4            NBMINs (>= 1)",
    "1            # of panels in recursion",
    "2            NDIVs",
    "1            # of recursive panel fact.",
    "1            RFACTs (0=left, 1=Crout, 2=Right)",
    "1            # of broadcast",
    "1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)",
    "1            # of lookahead depth",
    "1            DEPTHs (>=0)",
    "2            SWAP (0=bin-exch,1=long,2=mix)",
    "64           swapping threshold",
    "0            L1 in (0=transposed,1=no-transposed) form",
    "0            U  in (0=transposed,1=no-transposed) form",
    "1            Equilibration (0=no,1=yes)",
    "8            memory alignment in double (> 0)",
)


def hpl_dat(sizes: list[int], nb: int, p: int, q: int) -> str:
    """The text of HPL.dat: one run per entry of `sizes` (HPL allows 1 to 20)."""
    if not 1 <= len(sizes) <= 20 or min(sizes) < 1 or nb < 1 or p < 1 or q < 1:
        raise InputError(f"HPL.dat: sizes {sizes} (1 to 20 of them), NB {nb}, P {p}, Q {q} "
                         "must be positive")
    lines = ("HPLinpack benchmark input file",
             "written by linalg-io",
             "HPL.out      output file name (if any)",
             "8            device out (6=stdout,7=stderr,file)",
             f"{len(sizes):<12d} # of problems sizes (N)",
             " ".join(str(n) for n in sizes) + "  Ns",
             "1            # of NBs",
             f"{nb:<12d} NBs",
             "0            PMAP process mapping (0=Row-,1=Column-major)",
             "1            # of process grids (P x Q)",
             f"{p:<12d} Ps",
             f"{q:<12d} Qs") + ALGORITHM_LINES
    return "\n".join(lines) + "\n"
