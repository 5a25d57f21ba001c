"""The 2D LU's steps as data: what each block column's messages hold, between whom and
in which phase. `linalg_io.lu.lu2d` executes these steps, `linalg_io.models.lu2d` counts
them in closed form and tests/lu2d_walk.py walks them rank by rank, so a message size or
a phase name exists here once.

Step k (one NB-wide block column): j0 = k NB, kb = min(NB, N - j0), diagonal process
(k mod Pr, k mod Pc) (`block_columns`, `diagonal`). Its phases, in the order the code
runs them (`TIME_PHASES`; the traffic phases `TRAFFIC_PHASES` are those with messages):

panel    Pr > 1, process column k mod Pc: per pivot column one allgatherv in the
         process column of each rank's candidate, `candidate_words` (|v|, global row,
         the row: kb + 2 words; the diagonal rank adds the current row, kb more).
swap     the diagonal rank sends the top rows displaced by the pivots to the process
         rows owning the pivot positions: rows x trailing columns, one message per
         process row (`linalg_io.layout.blockcyclic.pivot_rows_by_owner`).
bcast_L  Pc > 1: the panel's root (r, k mod Pc) broadcasts `panel_words` along process
         row r: the strictly lower kb (kb - 1)/2 of L11, the kb pivots, info, and its
         rows below the block (kb each).
bcast_U  Pr > 1: the kb pivot rows, restricted to the trailing columns, allgathered in
         the process column from the process rows owning them: rows x trailing columns.
update   the trailing dgemm (no messages).

Sizes are in words (`linalg_io.layout.words.WORD` bytes each); they take NumPy arrays
as well as ints, so the model evaluates a whole [step, process row] array at once.
"""

from __future__ import annotations

import numpy as np

# the time phases (`linalg_io.comm.phase_clock.PhaseClock`), as the code runs them
TIME_PHASES = ("panel", "swap", "bcast_L", "bcast_U", "update")
# the phases with messages (the traffic counter's), in the models' order
TRAFFIC_PHASES = ("panel", "bcast_L", "bcast_U", "swap")


def block_columns(n: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """(j0, kb) of every step k: the block column's first column and its width."""
    starts = np.arange((n + nb - 1) // nb) * nb
    return starts, np.minimum(nb, n - starts)


def diagonal(k, pr: int, pc: int) -> tuple:
    """(process row, process column) of step k's diagonal block."""
    return k % pr, k % pc


def strict_lower_words(kb):
    """The strictly lower triangle of the kb x kb block L11."""
    return kb * (kb - 1) // 2


def panel_words(kb, rows_below):
    """bcast_L's message from a rank with `rows_below` rows below the block: strictly
    lower L11, the kb pivots, info, and those rows of L21."""
    return strict_lower_words(kb) + kb + 1 + rows_below * kb


def candidate_words(kb) -> tuple:
    """panel: one pivot column's allgatherv block per rank, (every rank's, what the
    diagonal rank adds): (|v|, global row, the kb-wide row) and the current row."""
    return kb + 2, kb
