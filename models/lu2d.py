"""Model of the 2D block-cyclic LU with partial pivoting (linalg_io/lu/lu2d.py).

`lu2d_plan_counts` walks the same block-cyclic plan the code executes (block column
k: j0 = k NB, kb = min(NB, N - j0), diagonal process (k mod Pr, k mod Pc)) and adds per
rank, by the rules of SPEC section 4 (exact but for the matrix-dependent row swaps):

panel    (Pr > 1, ranks of process column k mod Pc) per pivot column one Allgatherv
         in the process column: candidate (|v|, row, kb values), the diagonal rank
         adds the current row (kb values): 8 (kb + 2) B sent, + 8 kb on the diagonal.
bcast_L  (Pc > 1) the panel's root sends its L part along its process row:
         8 (kb (kb - 1)/2 + kb + 1 + m_below kb) B (strictly lower L11, pivots, info,
         its rows below).
bcast_U  (Pr > 1) the kb pivot rows, restricted to each rank's trailing columns, are
         Allgatherv'd in the process column from wherever they live.
swap     (Pr > 1) the diagonal rank sends the top rows displaced by pivots to the
         process rows owning the pivot positions (one message per process row).

Row swaps are matrix-dependent. The diagonal process row always sends kb pivot or
displaced rows per block column (kb n_trail words); a non-diagonal process row sends
the s pivot rows it owns (0 <= s <= min(kb, its active rows)) and always receives kb
rows. pivoting="none" (diagonally dominant: no swaps, s = 0) is exact;
pivoting="worst" is the per-rank upper bound (s at its maximum), so any matrix
measures between the two; pivoting="expected" estimates a random matrix (pivots
uniform over the active rows: s = kb * its active rows / all active rows).

Closed form (words per rank, Pr, Pc > 1, average rank): bcast_L N^2/(2 Pr Pc) +
N NB/(2 Pc); bcast_U + swap from N^2/(2 Pr Pc) (no swaps) up to N^2/(2 Pc) (worst case);
panel N (NB + 2)/Pc + N NB/(Pr Pc). Flops per rank: 2 N^3/(3 P) (dgemm) + N^2 NB/(2 Pc)
(redundant triangular solves for U) + N^2 NB/(2 P) (panels).
Lower bound: 2 N^3 / (3 P sqrt(M)) words, M the per-rank memory in words.
"""

from __future__ import annotations

import numpy as np
from linalg_io.models.costs import RankCosts

from linalg_io.layout.blockcyclic import counts_from

WORD = 8
PIVOTING = ("worst", "none", "expected")


def lu2d_plan_counts(n: int, nb: int, pr: int, pc: int, pivoting: str = "worst") -> dict:
    """Per-rank (Pr x Pc array) bytes sent/received, messages and flops, by phase.

    Returns {"sent": {phase: array}, "recv": {phase: array}, "msgs": array,
    "flops": array}; arrays are indexed [process row, process column].
    """
    if pivoting not in PIVOTING:
        raise ValueError(f"pivoting must be one of {PIVOTING}, got {pivoting!r}")
    phases = ("panel", "bcast_L", "bcast_U", "swap")
    sent = {ph: np.zeros((pr, pc)) for ph in phases}
    recv = {ph: np.zeros((pr, pc)) for ph in phases}
    msgs = np.zeros((pr, pc))
    flops = np.zeros((pr, pc))
    rows = np.arange(pr).reshape(-1, 1)
    cols = np.arange(pc).reshape(1, -1)
    for k in range((n + nb - 1) // nb):
        j0 = k * nb
        kb = min(nb, n - j0)
        j1 = j0 + kb
        prow, pcol = k % pr, k % pc
        m_below = counts_from(j1, n, nb, pr).reshape(-1, 1) + 0 * cols
        n_trail = counts_from(j1, n, nb, pc).reshape(1, -1) + 0 * rows
        diag_row = rows == prow
        in_pcol = cols == pcol
        # panel: kb Allgatherv calls in process column pcol
        m_active = m_below + diag_row * kb
        flops += in_pcol * (m_active * kb * kb - kb**3 / 3.0)
        if pr > 1:
            own = (kb + 2) + diag_row * kb
            total = pr * (kb + 2) + kb
            sent["panel"] += in_pcol * kb * own * WORD
            recv["panel"] += in_pcol * kb * (total - own) * WORD
            msgs += in_pcol * kb
        # bcast_L: root = (r, pcol) to its process row
        if pc > 1:
            size = (kb * (kb - 1) // 2 + kb + 1 + m_below * kb) * WORD
            sent["bcast_L"] += in_pcol * size
            recv["bcast_L"] += ~in_pcol * size
            msgs += in_pcol
        # bcast_U + swap, on the trailing columns only
        flops += kb * kb * n_trail + 2.0 * m_below * n_trail * kb
        if pr > 1:
            block = kb * n_trail * WORD
            has_cols = n_trail > 0
            if pivoting == "none":
                sent["bcast_U"] += diag_row * block
                recv["bcast_U"] += ~diag_row * block
                msgs += diag_row * has_cols
            else:
                if pivoting == "worst":      # as many pivot rows as a non-diag row can own
                    s = np.minimum(kb, m_below).astype(float)
                else:                        # expected: pivots uniform over the active rows
                    s = kb * m_below / (m_below[:, :1].sum() + kb)
                s = s * ~diag_row
                a = np.maximum(0, kb - s.sum(axis=0, keepdims=True))  # rows the diag row keeps
                sent["bcast_U"] += np.where(diag_row, a, s) * n_trail * WORD
                recv["bcast_U"] += np.where(diag_row, kb - a, kb - s) * n_trail * WORD
                sent["swap"] += diag_row * (kb - a) * n_trail * WORD
                recv["swap"] += s * n_trail * WORD
                dests = (s > 0).sum(axis=0, keepdims=True)
                keeps = 1 if pivoting == "worst" else (a > 0)   # the diag row's Allgatherv block
                msgs += has_cols * np.where(diag_row, keeps + dests, s > 0)
    return {"sent": sent, "recv": recv, "msgs": msgs, "flops": flops}


def closed_form_words(n: int, nb: int, pr: int, pc: int, pivoting: str = "worst") -> dict:
    """The leading terms of the per-rank words by phase (average rank)."""
    swaps = n * n / (2 * pc) if pivoting == "worst" else n * n / (2 * pr * pc)
    return {
        "panel": (n * (nb + 2) / pc + n * nb / (pr * pc)) if pr > 1 else 0.0,
        "bcast_L": (n * n / (2 * pr * pc) + n * nb / (2 * pc)) if pc > 1 else 0.0,
        "bcast_U+swap": swaps if pr > 1 else 0.0,
    }


FORMULA = ("2D LU (block-cyclic, partial pivoting), words/rank ~ N^2/(2 Pr Pc) [bcast_L] "
           "+ N^2/(2 Pr Pc) [bcast_U, no swaps] .. N^2/(2 Pc) [bcast_U+swap, worst-case pivots] "
           "+ N (NB+2)/Pc + N NB/(Pr Pc) [panel pivot search]; exact counts from the "
           "block-cyclic plan")


def lu2d_costs(n: int, nb: int, pr: int, pc: int, pivoting: str = "worst") -> RankCosts:
    """Per-rank costs (world rank = row * Pc + col) of the 2D LU, see the module doc."""
    plan = lu2d_plan_counts(n, nb, pr, pc, pivoting)
    sent = sum(plan["sent"].values()).reshape(-1)
    recv = sum(plan["recv"].values()).reshape(-1)
    return RankCosts(bytes_sent=sent, bytes_recv=recv, msgs_sent=plan["msgs"].reshape(-1),
                     flops=plan["flops"].reshape(-1),
                     formula=f"{FORMULA} (pivoting={pivoting})")


def lu_lower_bound(n: int, p: int, mem_words: float, memory: str) -> dict:
    """Communication lower bound of LU: 2 N^3 / (3 P sqrt(M)) words per rank, M the
    memory per rank in words. The bound falls as M grows, so the record says which M it
    took (`memory`, and `mem_words`): a 2D and a 2.5D run of one problem hold different
    M, and their distances to the bound compare only with that in view."""
    words = 2.0 * n**3 / (3.0 * p * np.sqrt(mem_words))
    return {"bytes_per_rank": float(words * WORD), "mem_words": float(mem_words),
            "formula": (f"2 N^3 / (3 P sqrt(M)) words per rank, M = {memory} "
                        f"= {mem_words:.4g} words")}
