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
U) + N^2 NB/(2 P) (panels); the time takes the panels and solves at PANEL_RATE gamma and
the dgemm at gamma times gemm_efficiency(NB) (`linalg_io.models.rates`).
Lower bound: 2 N^3 / (3 P sqrt(M)) words, M the per-rank memory in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
from linalg_io.models.costs import RankCosts, waiting_makespans
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rank_classes import StepClasses, step_classes
from linalg_io.models.rates import BLAS, PANEL_RATE, gemm_efficiency

from linalg_io.layout.blockcyclic import counts_from, numroc, pivot_rows_by_owner
from linalg_io.layout.schedules import (
    CHUNK_BYTES,
    SMALL_BYTES,
    allgatherv_costs,
    allgatherv_one_costs,
    binomial_children,
    bruck_messages,
    chunk_count,
)

WORD = 8
PIVOTING = ("worst", "none", "expected")


def _pivot_rows(pivoting, starts: np.ndarray, widths: np.ndarray, nb: int, pr: int,
                below: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[step, process row]: pivot rows each process row owns before the step's
    interchanges, and positions below the block where it receives a displaced row:
    exact for the run's pivots or for none, the bound or the expectation otherwise
    (fractional)."""
    steps = len(starts)
    diag = np.arange(pr)[None, :] == (np.arange(steps) % pr)[:, None]
    kb = widths[:, None].astype(float)
    if isinstance(pivoting, np.ndarray):
        pairs = [pivot_rows_by_owner(pivoting[j0:j0 + w], j0, nb, pr)
                 for j0, w in zip(starts, widths)]
        return (np.array([o for o, _ in pairs], dtype=float),
                np.array([d for _, d in pairs], dtype=float))
    if pivoting == "none":
        return diag * kb, np.zeros((steps, pr))
    if pivoting == "worst":      # as many pivot rows as a non-diagonal row can own
        s = np.minimum(kb, below).astype(float)
    else:                        # expected: pivots uniform over the active rows
        s = kb * below / (below.sum(axis=1, keepdims=True) + kb)
    s = s * ~diag
    kept = np.maximum(0.0, kb - s.sum(axis=1, keepdims=True))   # rows the diagonal row keeps
    return np.where(diag, kept, s), s


PHASES = ("panel", "bcast_L", "bcast_U", "swap")
# up to this Pc the column sums are matrix products with [step, Pc] arrays (cheaper than
# folding the rows' [step, Pr] factors)
FEW_COLUMNS = 32
ROW_CHUNK = 1 << 20      # [step, process row] entries of the critical path's classes at once


def lu2d_plan_counts(n: int, nb: int, pr: int, pc: int, pivoting="worst") -> dict:
    """Per-rank (Pr x Pc array) bytes sent/received and messages by phase, and flops.

    `pivoting`: "none", "expected", "worst", or the run's pivots (int array of length N:
    exact). Returns {"sent": {phase: array}, "recv": {phase: array}, "msgs": array,
    "msgs_by_phase": {phase: array}, "flops": array, "flops_by_phase": {"panel", "solve"
    (the dtrsm of U), "dgemm": array}}; arrays are indexed [process row, process column].

    Each cost of block column k is a sum of products f_k(r) g_k(c) of a process row's
    factor (its rows below the block, pivot rows, Bruck windows, ...) and a process
    column's (its trailing columns, its position in the L broadcast, ...), so every
    rank's total over the steps is a sum of matrix products F^T G, [step, row] by [step,
    column]. A column's factors are its trailing columns (the widths of its blocks right
    of the step's), whether it has any, or a function of its position (c - k) mod Pc,
    so the sums over the steps fold the rows' factors (prefix sums over the steps,
    sums over the steps of one position) instead of building [step, column] arrays:
    O(steps Pr + P). The same numbers as walking every rank and step
    (tests/lu2d_walk.py), to rounding (integer counts exactly).
    """
    if not isinstance(pivoting, str):
        pivoting = np.asarray(pivoting, dtype=np.int64)
    elif pivoting not in PIVOTING:
        raise ValueError(f"pivoting must be one of {PIVOTING} or the pivots, got {pivoting!r}")
    plan = _plan(n, nb, pr, pc)
    fixed = _fixed_costs(n, nb, pr, pc)
    out = {key: {ph: fixed[key][ph].copy() for ph in PHASES}
           for key in ("sent", "recv", "msgs_by_phase")}
    if pr > 1:
        # bcast_U: the pivot rows' trailing columns, Bruck allgatherv in every column;
        # swap: the diagonal row sends the displaced rows to their new process rows
        owned, displaced = _pivot_rows(pivoting, plan.starts, plan.widths, nb, pr, plan.below)
        # a Bruck window is linear in the blocks and the same every step: the windows of
        # sum_k owned_k trail_k (one product) are the sum of the steps' windows
        spread_sent, spread_recv, _ = allgatherv_costs(plan.by_trail(owned).T)
        out["sent"]["bcast_U"] += spread_sent.T * WORD
        out["recv"]["bcast_U"] += spread_recv.T * WORD
        if isinstance(pivoting, str) and pivoting == "none":   # the diagonal row's kb
            messages = allgatherv_one_costs(pr, 0.0, plan.kb[:, 0], plan.diag_row)[2]
        else:
            messages = bruck_messages(owned > 0)
        out["msgs_by_phase"]["bcast_U"] += plan.by_trailing(messages)
        remote = displaced * ~plan.diag                # the diagonal row's own: a copy
        out["sent"]["swap"] += plan.by_trail(plan.diag * remote.sum(axis=1, keepdims=True)
                                             * WORD)
        out["recv"]["swap"] += plan.by_trail(remote * WORD)
        out["msgs_by_phase"]["swap"] += plan.by_trailing(
            plan.diag * (remote > 0).sum(axis=1, keepdims=True))
    return {"sent": out["sent"], "recv": out["recv"], "msgs_by_phase": out["msgs_by_phase"],
            "msgs": sum(out["msgs_by_phase"].values()), "flops": fixed["flops"].copy(),
            "flops_by_phase": {part: f.copy() for part, f in fixed["flops_by_phase"].items()},
            "gamma_flops": fixed["gamma_flops"].copy()}


def _outer_sum(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """sum over the steps k of rows[k, r] columns[k, c] (one BLAS thread: small)."""
    with BLAS.limit(limits=1, user_api="blas"):
        return np.asarray(rows, dtype=float).T @ np.asarray(columns, dtype=float)


@dataclass(frozen=True)
class _Plan:
    """Per block column k: [step, process row] arrays, and the process columns' factors
    as functions (no [step, process column] array: `by_trail`, `by_trailing`,
    `by_position`, `trail_at`)."""

    n: int
    nb: int
    pc: int
    starts: np.ndarray
    widths: np.ndarray
    kb: np.ndarray          # [step, 1]
    below: np.ndarray       # rows of each process row below the block
    diag: np.ndarray        # the process row k mod Pr
    diag_row: np.ndarray    # [step]: k mod Pr

    def trail_at(self, columns: np.ndarray, k: np.ndarray) -> np.ndarray:
        """[step, i]: the columns right of block k[s] of process column columns[s, i]."""
        ends = (self.starts[k] + self.widths[k])[:, None]
        return (numroc(self.n, self.nb, columns, self.pc)
                - numroc(ends, self.nb, columns, self.pc)).astype(float)

    def _trail(self) -> np.ndarray:
        """[step, process column] trailing columns (few columns: a small array)."""
        steps = len(self.starts)
        return self.trail_at(np.broadcast_to(np.arange(self.pc), (steps, self.pc)),
                             np.arange(steps))

    def by_trail(self, rows: np.ndarray) -> np.ndarray:
        """[Pr, Pc]: sum over the steps k of rows[k, r] times column c's trailing columns.
        These are the widths of c's blocks b > k, so the sum is, over c's blocks b, the
        width of b times rows summed over the steps before b."""
        if self.pc <= FEW_COLUMNS:
            return _outer_sum(rows, self._trail())
        rows = _steps_by_rows(rows, len(self.starts), self.below.shape[1])
        before = np.cumsum(rows, axis=0) - rows
        return _fold(self.widths[:, None] * before, self.pc).T

    def by_trailing(self, rows: np.ndarray) -> np.ndarray:
        """[Pr, Pc]: sum over the steps k of rows[k, r] where column c has trailing
        columns, that is before c's last block."""
        if self.pc <= FEW_COLUMNS:
            return _outer_sum(rows, self._trail() > 0)
        steps = len(self.starts)
        rows = _steps_by_rows(rows, steps, self.below.shape[1])
        before = np.concatenate([np.zeros((1, rows.shape[1])), np.cumsum(rows, axis=0)])
        last = steps - 1 - (steps - 1 - np.arange(self.pc)) % self.pc   # c's last block
        return before[np.maximum(last, 0)].T

    def by_position(self, rows: np.ndarray, positions: str) -> np.ndarray:
        """[Pr, Pc]: sum over the steps k of rows[k, r] where column c is at `positions`
        ("first", "not first", "not last") of (c - k) mod Pc."""
        if self.pc <= FEW_COLUMNS:
            k = np.arange(len(self.starts))
            q = (np.arange(self.pc)[None, :] - (k % self.pc)[:, None]) % self.pc
            at_positions = {"first": q == 0, "not first": q > 0, "not last": q < self.pc - 1}
            return _outer_sum(rows, at_positions[positions])
        rows = _steps_by_rows(rows, len(self.starts), self.below.shape[1])
        at = _fold(rows, self.pc)                  # [position of step k = k mod Pc, r]
        if positions == "first":
            return at.T
        total = rows.sum(axis=0)[:, None]
        shift = 0 if positions == "not first" else 1    # the last is c = k - 1 mod Pc
        return total - np.roll(at, -shift, axis=0).T


def _steps_by_rows(rows, steps: int, pr: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(rows, dtype=float), (steps, pr))


def _fold(values: np.ndarray, period: int) -> np.ndarray:
    """[period, ...]: values[k] summed over the k of each residue mod period."""
    pad = -len(values) % period
    padded = np.concatenate([values, np.zeros((pad,) + values.shape[1:])])
    return padded.reshape((-1, period) + values.shape[1:]).sum(axis=0)


@lru_cache(maxsize=4)
def _plan(n: int, nb: int, pr: int, pc: int) -> _Plan:
    k = np.arange((n + nb - 1) // nb)
    starts = k * nb
    widths = np.minimum(nb, n - starts)
    return _Plan(n=n, nb=nb, pc=pc, starts=starts, widths=widths,
                 kb=widths.astype(float)[:, None],
                 below=counts_from(starts + widths, n, nb, pr).astype(float),
                 diag=np.arange(pr)[None, :] == (k % pr)[:, None], diag_row=k % pr)


@lru_cache(maxsize=4)
def _fixed_costs(n: int, nb: int, pr: int, pc: int) -> dict:
    """The counts that do not depend on the pivots: panel, bcast_L, flops."""
    plan = _plan(n, nb, pr, pc)
    kb, below = plan.kb, plan.below
    out = {key: {ph: np.zeros((pr, pc)) for ph in PHASES}
           for key in ("sent", "recv", "msgs_by_phase")}
    # bcast_L: (r, k mod Pc) along process row r, a chain or, small, a binomial tree
    size = (kb * (kb - 1) // 2 + kb + 1 + below * kb) * WORD
    if pc > 1:
        chain = size > SMALL_BYTES
        out["sent"]["bcast_L"] += plan.by_position(size * chain, "not last")
        out["recv"]["bcast_L"] += plan.by_position(size, "not first")
        out["msgs_by_phase"]["bcast_L"] += plan.by_position(chunk_count(size) * chain,
                                                            "not last")
        tree = np.flatnonzero(~chain.all(axis=1))     # steps where some row's L is small
        if len(tree):
            position = (np.arange(pc)[None, :] - (tree % pc)[:, None]) % pc
            children = binomial_children(np.arange(pc), pc)[position]
            out["sent"]["bcast_L"] += _outer_sum((size * ~chain)[tree], children)
            out["msgs_by_phase"]["bcast_L"] += _outer_sum(((size > 0) * ~chain)[tree],
                                                          children)
    if pr > 1:
        # panel: kb Allgatherv (Bruck) of the candidates in process column k mod Pc
        candidates = allgatherv_one_costs(pr, (kb[:, 0] + 2) * WORD, kb[:, 0] * WORD,
                                          plan.diag_row)
        for key, cost in zip(("sent", "recv", "msgs_by_phase"), candidates):
            out[key]["panel"] += plan.by_position(kb * cost, "first")
    panel = plan.by_position((below + plan.diag * kb) * kb * kb - kb**3 / 3.0, "first")
    solve = plan.by_trail(kb * kb)
    update = plan.by_trail(2.0 * below * kb)
    out["flops"] = panel + solve + update
    out["flops_by_phase"] = {"panel": panel, "solve": solve, "dgemm": update}
    # the time's flop-equivalents at gamma: getrf and trsm at PANEL_RATE, the dgemm at
    # its efficiency for the inner dimension NB (as models/conflux.py)
    out["gamma_flops"] = ((panel + solve) / PANEL_RATE
                          + update / float(gemm_efficiency(np.float64(nb))))
    return out


TIME_FORMULA = ("critical path M(F_0) + L_0 + sum_k [M(S_k) + max(M(U_k + F_{k+1}), A_k + "
                "L_{k+1})] (models/lu2d.py critical_path_time; where the row's link does not "
                "move messages while ranks compute: max(M(U_k + F_{k+1}), A_k) + L_{k+1}): "
                "F panel (getrf at PANEL_RATE "
                "gamma, its pivot allgathers in the process column), L the panel's arrival "
                "along the process row (chain or tree), S swap + bcast_U (process column) + "
                "trsm, U the dgemm at gemm_efficiency(NB) gamma, A_k the look-ahead "
                "column's first NB columns of U_k and F_{k+1}; messages at alpha msgs + "
                "beta max(sent, recv) per collective of the link they cross; M = slowest rank, or the "
                "makespan when ranks share cores")


def critical_path_time(n: int, nb: int, pr: int, pc: int, pivoting, profile: MachineProfile,
                       placement: Placement) -> float:
    """Seconds of the 2D LU as its code runs (linalg_io/lu/lu2d.py), per step k:

      F_k(r)   the panel on process column k mod Pc: getrf at PANEL_RATE gamma and, Pr >
               1, its kb candidate allgathers in the process column (a node's links
               shared only by its ranks in that column, ranks_per_node / Pc or one);
      L_k(r,c) when rank (r, c) holds the panel's L: a chain from the root, position q
               of Pc: beta size + alpha chunks + (q - 1)(alpha + beta chunk); a binomial
               tree (small): popcount(q) (alpha + beta size);
      S_k      swap and bcast_U in the process column (every rank waits for its
               column's rows) and the trsm of the pivot rows (at PANEL_RATE gamma);
      U_k      the trailing dgemm at gemm_efficiency(NB) gamma.

    Look-ahead of depth 1: the process column of step k+1 updates its first kb columns
    (A_k: that part of U_k, then F_{k+1}) and starts L_{k+1} before the rest of its
    update, so the other columns receive L_{k+1} while they update, and step k ends when
    both the updates (with F_{k+1} on its column) and L_{k+1}'s arrival are done:

      time = M(F_0) + max L_0 + sum_k [M(S_k) + max(M(U_k + F_{k+1}), A_k + max L_{k+1})]

    The ranks test L_{k+1} (its sends and its posted receives) between their update's
    column chunks. Where the process row's link does not move messages meanwhile
    (`MachineProfile.overlaps`: across nodes where calibrate measured so, as over TCP on
    a fast link), L_{k+1} arrives only after the updates: the step's last term is
    max(M(U_k + F_{k+1}), A_k) + max L_{k+1}.

    M: the slowest rank's sum, or the makespan of the ranks' works where they share
    `placement.shared_cores` (`waiting_makespans`: a rank waiting on the network holds
    no core; A_k's work is then slower by P / cores). Messages cost
    alpha msgs + beta max(sent, recv) per collective (S_k: the swap, then bcast_U) at
    the rates of the link they cross (`MachineProfile.link`: a process row Pc
    consecutive ranks, a column the grid)."""
    plan = _plan(n, nb, pr, pc)
    gamma = profile.gamma_flops
    row_alpha, row_beta = profile.link(pc, placement)
    row_overlap = profile.overlaps(pc, placement)
    col_alpha, col_beta = profile.link(pr * pc, placement)
    # the panel runs on one process column: a node's ranks of it share its links
    panel_alpha, panel_beta = profile.link(pr * pc, placement,
                                           max(1, placement.ranks_per_node // pc))
    cores = placement.shared_cores
    slow = 1.0 if cores is None else max(1.0, pr * pc / cores)
    kb, below = plan.kb, plan.below
    # a process column's messages: work on the rank's core on a node, a wait (no core)
    # on the network (`waiting_makespans`)
    col_net = profile.on_network(pr * pc, placement)
    panel = ((below + plan.diag * kb) * kb * kb - kb**3 / 3.0) / (PANEL_RATE * gamma)
    panel_wait = np.zeros_like(panel)
    if pr > 1:
        sent, recv, msgs = allgatherv_one_costs(pr, (kb[:, 0] + 2) * WORD, kb[:, 0] * WORD,
                                                plan.diag_row)
        search = kb * (panel_alpha * msgs + panel_beta * np.maximum(sent, recv))
        search_work, panel_wait = _work_or_wait(search, col_net)
        panel = panel + search_work
    arrival = _l_arrival(plan, pc, row_alpha, row_beta)
    column = _ColumnSeconds(plan, nb, pr, pivoting, col_alpha, col_beta)
    rate = float(gemm_efficiency(np.float64(nb))) * gamma
    steps = len(plan.starts)
    on_first = np.arange(pc) == 0
    total = float(waiting_makespans((panel[0][:, None] * on_first).reshape(1, -1),
                                    (panel_wait[0][:, None] * on_first).reshape(1, -1),
                                    cores)[0]) + float(arrival[0])
    # per step, the process rows and columns whose features are equal cost alike: one
    # evaluation per (row class, column class), weighted by the ranks it stands for; a
    # column's features (its trailing columns, whether it is the look-ahead's) change
    # only at a few columns of each step (`_column_segments`); the steps in chunks of
    # ROW_CHUNK [step, process row] entries (the classes' memory)
    chunk = max(1, ROW_CHUNK // pr)
    for first in range(0, steps, chunk):
        k = np.arange(first, min(steps, first + chunk))
        total += _steps_seconds(plan, k, panel, panel_wait, arrival, column, rate, slow,
                                gamma, cores, col_net, row_overlap)
    return total


def _steps_seconds(plan: _Plan, k: np.ndarray, panel: np.ndarray, panel_wait: np.ndarray,
                   arrival: np.ndarray, column: _ColumnSeconds, rate: float, slow: float,
                   gamma: float, cores, col_net: bool, row_overlap: bool) -> float:
    """sum over the steps k of M(S_k) + the step's last term (`critical_path_time`)."""
    steps, pc = len(plan.starts), plan.pc
    kb, below = plan.kb[k], plan.below[k]
    ahead = np.minimum(k + 1, steps - 1)
    has_next = k + 1 < steps
    row_features = [below, panel[ahead], panel_wait[ahead]]
    if column.pr > 1:
        row_features += [column.msgs[k], column.bytes[k]]
    rows = step_classes(row_features)
    cols, col_count = _column_segments(plan, k, ahead % pc)
    at = np.arange(len(k))[:, None]

    def per_row(values: np.ndarray) -> np.ndarray:      # [k, pr] -> [k, row class, 1]
        return values[at, rows.rep][:, :, None]

    weights = (rows.count[:, :, None] * col_count[:, None, :]).reshape(len(k), -1)
    t = plan.trail_at(cols, k)[:, None, :]               # [k, 1, column class]
    la = (cols == (ahead % pc)[:, None])[:, None, :]
    update = 2.0 * per_row(below) * kb[:, :, None] * t / rate
    f_next = per_row(panel[ahead]) * la * has_next[:, None, None]
    f_wait = per_row(panel_wait[ahead]) * la * has_next[:, None, None]
    ahead_trail = plan.trail_at((ahead % pc)[:, None], k)[:, 0]
    first_cols = np.minimum(plan.kb[ahead][:, 0], ahead_trail)
    share = first_cols / np.maximum(ahead_trail, 1.0)
    ahead_update = 2.0 * below[at, rows.rep] * kb * ahead_trail[:, None] / rate
    lead = ((ahead_update * share[:, None] + panel[ahead][at, rows.rep]) * slow
            + panel_wait[ahead][at, rows.rep]).max(axis=1)
    after = np.where(has_next, arrival[ahead], 0.0)
    swap_work, s_wait = _work_or_wait(column.classes(rows, t, k), col_net)  # [k, row, col]
    s_work = (kb * kb * t[:, 0, :] / (PANEL_RATE * gamma))[:, None, :] + swap_work
    s_k = waiting_makespans(np.broadcast_to(s_work, update.shape).reshape(len(k), -1),
                            np.broadcast_to(s_wait, update.shape).reshape(len(k), -1), cores,
                            weights)
    u_k = waiting_makespans((update + f_next).reshape(len(k), -1),
                            np.broadcast_to(f_wait, update.shape).reshape(len(k), -1), cores,
                            weights)
    if row_overlap:
        step = np.maximum(u_k, np.where(has_next, lead, 0.0) + after)
    else:   # L_{k+1} moves once the receivers are back in MPI, after their update
        step = np.maximum(u_k, np.where(has_next, lead, 0.0)) + after
    return float((s_k + step).sum())


def _column_segments(plan: _Plan, k: np.ndarray,
                     look_ahead: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([step, segment] first column, [step, segment] columns) of the runs of process
    columns with equal features at each step: a column's trailing columns (`numroc` of
    N and of the block's end) change only at the owners of the blocks those end in and
    the next column, whether it is the look-ahead's at that column and the next; empty
    segments (0 columns) are padding. k: the steps."""
    pc = plan.pc
    ends = plan.starts[k] + plan.widths[k]
    cuts = [np.zeros_like(ends)]
    for column in ((ends // plan.nb) % pc, np.full_like(ends, (plan.n // plan.nb) % pc),
                   look_ahead):
        cuts += [column, column + 1]
    cuts = np.sort(np.minimum(np.stack(cuts, axis=1), pc), axis=1)
    count = np.diff(cuts, axis=1, append=pc)
    return np.minimum(cuts, pc - 1), count


def _work_or_wait(seconds: np.ndarray, on_network: bool) -> tuple[np.ndarray, np.ndarray]:
    """(work, wait) of a process column's messages: a copy that takes its rank's core on
    a node, a wait that holds none on the network (`waiting_makespans`)."""
    none = np.zeros_like(seconds)
    return (none, seconds) if on_network else (seconds, none)


def _l_arrival(plan: _Plan, pc: int, alpha: float, beta: float) -> np.ndarray:
    """[step]: seconds from the root's start of bcast_L to the last rank holding the whole
    message (`critical_path_time`; the longest message, that of the row with the most
    rows below the block, arrives last)."""
    if pc == 1:
        return np.zeros(len(plan.kb))
    size = ((plan.kb * (plan.kb - 1) // 2 + plan.kb + 1 + plan.below * plan.kb) * WORD).max(
        axis=1, keepdims=True)
    # every step has a rank at each position q = 1 .. Pc-1 of the row; a chain's last
    # arrives at q = Pc-1, a tree's at the deepest q (the most bits set)
    chain = beta * size + alpha * chunk_count(size) + (pc - 2) * (
        alpha + beta * np.minimum(size, CHUNK_BYTES))
    depth = max(q.bit_count() for q in range(1, pc))
    tree = depth * (alpha + beta * size)
    return np.where(size > SMALL_BYTES, chain, tree)[:, 0]


class _ColumnSeconds:
    """The link time of each step's swap and bcast_U per rank (the counts of
    `lu2d_plan_counts`, step by step): `msgs` and `bytes` [step, process row], timed on a
    process column's trailing columns by `classes`."""

    def __init__(self, plan: _Plan, nb: int, pr: int, pivoting, alpha: float,
                 beta: float) -> None:
        self.plan, self.pr, self.alpha, self.beta = plan, pr, alpha, beta
        if pr == 1:
            return
        if not isinstance(pivoting, str):
            pivoting = np.asarray(pivoting, dtype=np.int64)
        owned, displaced = _pivot_rows(pivoting, plan.starts, plan.widths, nb, pr, plan.below)
        bruck_sent, bruck_recv, _ = allgatherv_costs(owned)
        if isinstance(pivoting, str) and pivoting == "none":
            messages = allgatherv_one_costs(pr, 0.0, plan.kb[:, 0], plan.diag_row)[2]
        else:
            messages = bruck_messages(owned > 0)
        remote = displaced * ~plan.diag
        # the swap, then the allgather: each its own max(sent, recv)
        self.bytes = (np.maximum(bruck_sent, bruck_recv)
                      + np.maximum(plan.diag * remote.sum(axis=1, keepdims=True), remote)) * WORD
        self.msgs = messages + plan.diag * (remote > 0).sum(axis=1, keepdims=True)

    def classes(self, rows: StepClasses, trail: np.ndarray, k: np.ndarray) -> np.ndarray:
        """[step, row class, column class] seconds at the steps k, for the process rows
        `rows` (step classes of the features that include msgs and bytes) and the
        classes' trailing columns `trail` [step, 1, column class]."""
        if self.pr == 1:
            return np.zeros((len(k), rows.size, trail.shape[2]))
        at = k[:, None]
        return (self.alpha * self.msgs[at, rows.rep][:, :, None] * (trail > 0)
                + self.beta * self.bytes[at, rows.rep][:, :, None] * trail)


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
    """Per-rank costs (world rank = row * Pc + col) of the 2D LU, see the module doc. The
    L broadcast runs in a process row (Pc consecutive ranks), the rest in a process
    column (stride Pc: the whole grid)."""
    plan = lu2d_plan_counts(n, nb, pr, pc, pivoting)

    def flat(phases):
        return tuple(sum(plan[key][ph] for ph in phases).reshape(-1)
                     for key in ("sent", "recv", "msgs_by_phase"))

    label = pivoting if isinstance(pivoting, str) else "as measured"
    sent, recv, msgs = flat(PHASES)
    links = {pc: flat(("bcast_L",))}
    column = flat(("panel", "bcast_U", "swap"))
    links[pr * pc] = tuple(a + b for a, b in zip(links.get(pr * pc, (0, 0, 0)), column))
    timing = partial(critical_path_time, n, nb, pr, pc, pivoting)
    return RankCosts(bytes_sent=sent, bytes_recv=recv, msgs_sent=msgs,
                     flops=plan["flops"].reshape(-1),
                     gamma_flops=plan["gamma_flops"].reshape(-1),
                     formula=f"{FORMULA} (pivoting={label})", links=links,
                     critical_path=(timing, TIME_FORMULA))


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
