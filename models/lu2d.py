"""Model of the 2D block-cyclic LU with partial pivoting (linalg_io/lu/lu2d.py).

`lu2d_plan_counts` walks the same block-cyclic plan the code executes (block column
k: j0 = k NB, kb = min(NB, N - j0), diagonal process (k mod Pr, k mod Pc)) and adds per
rank the bytes and messages of the point-to-point schedules the code runs
(`linalg_io.layout.schedules`); every byte is in such a message, so the counts are
the logical and the wire traffic at once:

panel    (Pr > 1, ranks of process column k mod Pc) per pivot column one Bruck
         allgatherv in the process column: candidate (|v|, row, kb values), the
         diagonal rank adds the current row (kb values): blocks of 8 (kb + 2) B,
         8 (2 kb + 2) on the diagonal.
bcast_L  (Pc > 1) the panel's root broadcasts its L part along its process row (a
         pipelined chain from the root, binomial when small): 8 (kb (kb - 1)/2 + kb +
         1 + m_below kb) B (strictly lower L11, pivots, info, its rows below).
bcast_U  (Pr > 1) the kb pivot rows, restricted to each rank's trailing columns, are
         allgathered (Bruck) in the process column from wherever they live.
swap     (Pr > 1) the diagonal rank sends the top rows displaced by pivots to the
         process rows owning the pivot positions (one message per process row).

Row swaps are matrix-dependent. `pivoting` = the run's pivots (exact), "none"
(diagonally dominant: no swaps, exact there), "expected" (a random matrix: pivots
uniform over the active rows, s = kb * its active rows / all active rows owned by
each non-diagonal process row) or "worst" (every non-diagonal process row owns as many
pivot rows as it can, s = min(kb, its active rows): the most bytes the swaps send).

Closed form (words received, = sent on average, per rank): bcast_L (Pc-1) (N^2/2 +
Pr N NB/2)/P; bcast_U (Pr-1) N^2/(2P) (every rank of a process column receives every
pivot row it does not own, wherever they live); swap 0 (no swaps), (Pr-1) N^2/(2 P Pr)
(expected), (Pr-1) N^2/(2P) (worst); panel N (Pr-1) (NB + 2 + NB/Pr)/Pc.
Flops per rank: 2 N^3/(3 P) (dgemm) + N^2 NB/(2 Pc) (redundant triangular solves for
U) + N^2 NB/(2 P) (panels).
Lower bound: 2 N^3 / (3 P sqrt(M)) words, M the per-rank memory in words.
"""

from __future__ import annotations

import numpy as np
from linalg_io.models.costs import RankCosts

from linalg_io.layout.blockcyclic import counts_from, pivot_rows_by_owner
from linalg_io.layout.schedules import allgatherv_costs, bcast_costs

WORD = 8
PIVOTING = ("worst", "none", "expected")


def _step_pivot_rows(pivoting, j0: int, kb: int, nb: int, pr: int,
                     m_below: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pivot rows each process row owns before the step's interchanges, positions below
    the block each receives a displaced row at): exact for the run's pivots or for none,
    the bound or the expectation otherwise (fractional)."""
    prow = (j0 // nb) % pr
    diag = np.arange(pr) == prow
    if isinstance(pivoting, np.ndarray):
        return pivot_rows_by_owner(pivoting[j0:j0 + kb], j0, nb, pr)
    if pivoting == "none":
        return diag * float(kb), np.zeros(pr)
    if pivoting == "worst":      # as many pivot rows as a non-diagonal row can own
        s = np.minimum(kb, m_below).astype(float)
    else:                        # expected: pivots uniform over the active rows
        s = kb * m_below / (m_below.sum() + kb)
    s = s * ~diag
    kept = max(0.0, kb - s.sum())   # rows the diagonal row keeps
    return np.where(diag, kept, s), s


def lu2d_plan_counts(n: int, nb: int, pr: int, pc: int, pivoting="worst") -> dict:
    """Per-rank (Pr x Pc array) bytes sent/received, messages and flops, by phase.

    `pivoting`: "none", "expected", "worst", or the run's pivots (int array of length N:
    exact). Returns {"sent": {phase: array}, "recv": {phase: array}, "msgs": array,
    "flops": array}; arrays are indexed [process row, process column].
    """
    exact = not isinstance(pivoting, str)
    if exact:
        pivoting = np.asarray(pivoting, dtype=np.int64)
    elif pivoting not in PIVOTING:
        raise ValueError(f"pivoting must be one of {PIVOTING} or the pivots, got {pivoting!r}")
    phases = ("panel", "bcast_L", "bcast_U", "swap")
    sent = {ph: np.zeros((pr, pc)) for ph in phases}
    recv = {ph: np.zeros((pr, pc)) for ph in phases}
    msgs = np.zeros((pr, pc))
    flops = np.zeros((pr, pc))
    rows = np.arange(pr).reshape(-1, 1)
    cols = np.arange(pc).reshape(1, -1)

    def add(phase: str, mask: np.ndarray, costs: tuple) -> None:
        out, into, count = (np.broadcast_to(np.asarray(a, dtype=float), (pr, pc)) for a in costs)
        sent[phase] += mask * out
        recv[phase] += mask * into
        msgs[:] += mask * count

    for k in range((n + nb - 1) // nb):
        j0 = k * nb
        kb = min(nb, n - j0)
        j1 = j0 + kb
        prow, pcol = k % pr, k % pc
        below = counts_from(j1, n, nb, pr)
        trail = counts_from(j1, n, nb, pc)
        m_below = below.reshape(-1, 1) + 0 * cols
        n_trail = trail.reshape(1, -1) + 0 * rows
        diag_row = rows == prow
        in_pcol = cols == pcol
        # panel: kb Allgatherv (Bruck) of the candidates in process column pcol
        m_active = m_below + diag_row * kb
        flops += in_pcol * (m_active * kb * kb - kb**3 / 3.0)
        if pr > 1:
            candidates = np.full(pr, (kb + 2) * WORD, dtype=float)
            candidates[prow] += kb * WORD
            add("panel", in_pcol, tuple(kb * a.reshape(-1, 1) for a in allgatherv_costs(candidates)))
        # bcast_L: root = (r, pcol) along its process row
        size = (kb * (kb - 1) // 2 + kb + 1 + m_below * kb) * WORD
        add("bcast_L", np.ones((pr, pc), dtype=bool), bcast_costs((cols - pcol) % pc, pc, size))
        # bcast_U (Allgatherv of the pivot rows, Bruck) + swap, on the trailing columns only
        flops += kb * kb * n_trail + 2.0 * m_below * n_trail * kb
        if pr > 1:
            owned, displaced = _step_pivot_rows(pivoting, j0, kb, nb, pr, below)
            blocks = np.outer(owned, trail) * WORD                     # [process row, col]
            spread = allgatherv_costs(blocks.T)                        # [col, process row]
            add("bcast_U", np.ones((pr, pc), dtype=bool), tuple(a.T for a in spread))
            remote = displaced * (np.arange(pr) != prow)   # the diagonal row's own: a copy
            moved = remote.reshape(-1, 1) * n_trail * WORD
            sent["swap"] += diag_row * moved.sum(axis=0, keepdims=True)
            recv["swap"] += moved
            msgs += diag_row * (n_trail > 0) * (remote > 0).sum()
    return {"sent": sent, "recv": recv, "msgs": msgs, "flops": flops}


def closed_form_words(n: int, nb: int, pr: int, pc: int, pivoting: str = "worst") -> dict:
    """The leading terms of the per-rank words received (= sent, on average) by phase."""
    p = pr * pc
    swaps = {"none": 0.0, "expected": 1.0 / pr, "worst": 1.0}[pivoting]
    return {
        "panel": n * (pr - 1) * (nb + 2 + nb / pr) / pc,
        "bcast_L": (pc - 1) * (n * n / 2 + pr * n * nb / 2) / p,
        "bcast_U": (pr - 1) * n * n / (2 * p),
        "swap": swaps * (pr - 1) * n * n / (2 * p),
    }


FORMULA = ("2D LU (block-cyclic, partial pivoting, own point-to-point collectives: wire = "
           "logical), words received/rank ~ (Pc-1) N^2/(2P) [bcast_L] + (Pr-1) N^2/(2P) "
           "[bcast_U] + 0 .. (Pr-1) N^2/(2P) [swap, no swaps .. worst case] + N (Pr-1)"
           "(NB+2+NB/Pr)/Pc [panel pivot search]; exact counts from the block-cyclic plan "
           "and the pivots")


def lu2d_costs(n: int, nb: int, pr: int, pc: int, pivoting="worst") -> RankCosts:
    """Per-rank costs (world rank = row * Pc + col) of the 2D LU, see the module doc."""
    plan = lu2d_plan_counts(n, nb, pr, pc, pivoting)
    sent = sum(plan["sent"].values()).reshape(-1)
    recv = sum(plan["recv"].values()).reshape(-1)
    label = pivoting if isinstance(pivoting, str) else "as measured"
    return RankCosts(bytes_sent=sent, bytes_recv=recv, msgs_sent=plan["msgs"].reshape(-1),
                     flops=plan["flops"].reshape(-1),
                     formula=f"{FORMULA} (pivoting={label})")


def lu_lower_bound(n: int, p: int, mem_words: float, memory: str) -> dict:
    """Communication lower bound of LU: 2 N^3 / (3 P sqrt(M)) words per rank, M the
    memory per rank in words. The bound falls as M grows, so the record says which M it
    took (`memory`, and `mem_words`): a 2D and a 2.5D run of one problem hold different
    M, and their distances to the bound compare only with that in view."""
    if p == 1:   # one rank holds everything: it receives nothing from other ranks
        return {"bytes_per_rank": 0.0, "mem_words": float(mem_words),
                "formula": "0: one rank receives nothing (2 N^3 / (3 P sqrt(M)) is for P > 1)"}
    words = 2.0 * n**3 / (3.0 * p * np.sqrt(mem_words))
    return {"bytes_per_rank": float(words * WORD), "mem_words": float(mem_words),
            "formula": (f"2 N^3 / (3 P sqrt(M)) words per rank, M = {memory} "
                        f"= {mem_words:.4g} words")}
