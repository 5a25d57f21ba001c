"""The reference the 2D LU model's counts are held to: `models/lu2d.py` at commit
85a8d70, which summed [step, process row] arrays (O(steps x Pr) time and memory)
before the runs of `models/lu2d_runs.py`. tests/test_lu2d_scale.py checks the new
counts and links equal these (exact where whole numbers, else relative 1e-12), and
tests/lu2d_path_reference.py takes its step helpers from here. Frozen: not edited
with the model."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
from linalg_io.models.costs import Links, RankCosts, waiting_makespans
from linalg_io.models.profile import MachineProfile, Placement, crossing_links
from linalg_io.models.rank_classes import StepClasses, step_classes
from linalg_io.models.rates import BLAS, PANEL_RATE, gemm_efficiency

from linalg_io.layout.blockcyclic import counts_from, numroc, pivot_rows_by_owner
from linalg_io.layout.lu2d_steps import (
    TRAFFIC_PHASES,
    block_columns,
    candidate_words,
    diagonal,
    panel_words,
)
from linalg_io.layout.schedules import (
    CHUNK_BYTES,
    SMALL_BYTES,
    allgatherv_costs,
    allgatherv_node_costs,
    allgatherv_one_costs,
    bcast_node_costs,
    binomial_children,
    bruck_messages,
    bruck_rounds,
    chunk_count,
)
from linalg_io.layout.words import WORD

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


PHASES = TRAFFIC_PHASES
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
    starts, widths = block_columns(n, nb)
    diag_row, _ = diagonal(np.arange(len(starts)), pr, pc)
    return _Plan(n=n, nb=nb, pc=pc, starts=starts, widths=widths,
                 kb=widths.astype(float)[:, None],
                 below=counts_from(starts + widths, n, nb, pr).astype(float),
                 diag=np.arange(pr)[None, :] == diag_row[:, None], diag_row=diag_row)


@lru_cache(maxsize=4)
def _fixed_costs(n: int, nb: int, pr: int, pc: int) -> dict:
    """The counts that do not depend on the pivots: panel, bcast_L, flops."""
    plan = _plan(n, nb, pr, pc)
    kb, below = plan.kb, plan.below
    out = {key: {ph: np.zeros((pr, pc)) for ph in PHASES}
           for key in ("sent", "recv", "msgs_by_phase")}
    # bcast_L: (r, k mod Pc) along process row r, a chain or, small, a binomial tree
    size = panel_words(kb, below) * WORD
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
        base, extra = candidate_words(kb[:, 0])
        candidates = allgatherv_one_costs(pr, base * WORD, extra * WORD, plan.diag_row)
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
                "beta max(sent, recv) per collective of the link they cross; M = slowest rank, "
                "or the makespan when ranks share cores")


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
        base, extra = candidate_words(kb[:, 0])
        sent, recv, msgs = allgatherv_one_costs(pr, base * WORD, extra * WORD, plan.diag_row)
        search = kb * (panel_alpha * msgs + panel_beta * np.maximum(sent, recv))
        search_work, panel_wait = _work_or_wait(search, col_net)
        panel = panel + search_work
    arrival = _l_arrival(plan, pc, *row_hops(pc, profile, placement))
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


def _l_arrival(plan: _Plan, pc: int, on_node: tuple[float, float],
               across: tuple[float, float], cross_in: np.ndarray) -> np.ndarray:
    """[step]: seconds from the root's start of bcast_L to the last rank holding the whole
    message (`critical_path_time`; the longest message, that of the row with the most
    rows below the block, arrives last), with each hop at the rates of the link it takes:
    `across` where it enters column c from another node (cross_in[c]), else `on_node`.

    A chain of q hops streams the message at its slowest hop's rate and fills the pipe
    with one piece on each other hop: beta_s size + alpha_s chunks + sum over the other
    hops of (alpha_h + beta_h piece); the last rank's path holds every hop but the one
    into the root. A binomial tree (small) pays alpha + beta size per level, the top
    levels (as many as the row has nodes, log2) across nodes."""
    if pc == 1:
        return np.zeros(len(plan.kb))
    size = (panel_words(plan.kb, plan.below) * WORD).max(axis=1)
    piece = np.minimum(size, CHUNK_BYTES)
    roots = np.arange(len(size)) % pc
    hops = pc - 1
    crossing = cross_in.sum() - cross_in[roots]                   # on the last rank's path
    node_hop = on_node[0] + on_node[1] * piece
    net_hop = across[0] + across[1] * piece
    slow_net = (crossing > 0) & (net_hop >= node_hop)
    stream = np.where(slow_net, across[1] * size + across[0] * chunk_count(size),
                      on_node[1] * size + on_node[0] * chunk_count(size))
    fill = (crossing - slow_net) * net_hop + (hops - crossing - ~slow_net) * node_hop
    chain = stream + fill
    top = pc - 1                                    # the most levels a position is deep
    depth = top.bit_length() - 1 + (((top + 1) & top) == 0)
    slots = int(np.count_nonzero(cross_in))         # nodes along the row, when it crosses
    tree_cross = min(depth, (slots - 1).bit_length() if slots else 0)
    tree = (tree_cross * (across[0] + across[1] * size)
            + (depth - tree_cross) * (on_node[0] + on_node[1] * size))
    return np.where(size > SMALL_BYTES, chain, tree)


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
    column (stride Pc: the whole grid); which of their messages cross nodes, for a
    placement: `lu2d_phase_links`."""
    plan = lu2d_plan_counts(n, nb, pr, pc, pivoting)

    def flat(phases):
        return tuple(sum(plan[key][ph] for ph in phases).reshape(-1)
                     for key in ("sent", "recv", "msgs_by_phase"))

    label = pivoting if isinstance(pivoting, str) else "as measured"
    sent, recv, msgs = flat(PHASES)
    timing = partial(critical_path_time, n, nb, pr, pc, pivoting)
    return RankCosts(bytes_sent=sent, bytes_recv=recv, msgs_sent=msgs,
                     flops=plan["flops"].reshape(-1),
                     gamma_flops=plan["gamma_flops"].reshape(-1),
                     formula=f"{FORMULA} (pivoting={label})",
                     placed_links=partial(lu2d_links, n, nb, pr, pc, pivoting),
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


# Which messages cross nodes (`lu2d_phase_links`):
# Which of the 2D LU's messages cross nodes, rank by rank, and the links they are timed on.
#
# Ranks sit on nodes in blocks of r = ranks_per_node consecutive world ranks; rank (row,
# col) of the Pr x Pc grid is world rank row Pc + col. Where the grid and the nodes are
# aligned (Pc a multiple of r, or r a multiple of Pc), whether two ranks of one process
# row or column sit on different nodes depends on one index only:
#
#   process row (Pc consecutive ranks): column c on node slot c // r (Pc >= r), or the
#       whole row on one node (r a multiple of Pc);
#   process column (stride Pc): row x on node x // (r / Pc) (r a multiple of Pc: r / Pc
#       rows share a node), or every member on its own node (Pc a multiple of r).
#
# So each phase's bytes per rank split into an on-node and an inter-node part exactly:
#
#   bcast_L  a chain from the root along the row: rank c receives from c - 1 and sends to
#            c + 1 (mod Pc) whatever the root, so its received bytes cross when c - 1 and
#            c sit on different nodes and its sent bytes when c and c + 1 do; the binomial
#            tree of small panels: the edges (q - lowbit(q), q) from each step's root
#            (`bcast_node_costs`);
#   bcast_U  the Bruck allgatherv in the column (`allgatherv_node_costs`);
#   swap     the diagonal row's displaced rows to the rows on other nodes;
#   panel    the kb candidate allgathers (Bruck) in the panel's column.
#
# The inter-node part of a row's chain crosses each node's link once in each direction
# per process row on the node: it is timed with one row's share of the link (the key
# (Pc, rows per node), `MachineProfile.link`), not the node's ranks' share; the column's
# crossing bytes with every rank of the node sharing it, the panel's with the ranks of the
# node in the panel's column. The on-node parts are timed at the node's rates (span 1).
# Messages split as the bytes do for the chain and the tree; for the Bruck exchanges by
# the share of a rank's rounds whose partner sits on another node. Grids not aligned with
# the nodes keep every message of a communicator that spans nodes on the network.

ON_NODE = 1     # the span of a communicator that never leaves a node


def row_nodes(pc: int, placement: Placement) -> np.ndarray | None:
    """Node slot of each column within any process row (module doc); None where the
    grid is not aligned with the nodes."""
    r = placement.ranks_per_node
    if pc % r == 0:
        return np.arange(pc) // r
    if r % pc == 0:
        return np.zeros(pc, dtype=np.int64)
    return None


def column_nodes(pr: int, pc: int, placement: Placement) -> np.ndarray | None:
    """Node slot of each row within any process column (module doc); None where the
    grid is not aligned with the nodes."""
    r = placement.ranks_per_node
    if pc % r == 0:
        return np.arange(pr)
    if r % pc == 0:
        return np.arange(pr) // (r // pc)
    return None


def row_hops(pc: int, profile: MachineProfile, placement: Placement) -> tuple:
    """(on-node (alpha, beta), inter-node (alpha, beta), cross_in) of bcast_L's hops: the
    hop into column c crosses nodes where cross_in[c]; the inter-node hops take one
    chain's share of the node's link per process row on it (module doc). Without a
    network, or on a grid not aligned with the nodes: every hop at the row's rates."""
    nodes_c = row_nodes(pc, placement)
    if nodes_c is None or not profile.on_network(pc, placement):
        rates = profile.link(pc, placement)
        return rates, rates, np.zeros(pc, dtype=bool)
    cross_in = nodes_c != nodes_c[(np.arange(pc) - 1) % pc]
    return ((profile.alpha_s, profile.beta_s_per_byte),
            profile.link(pc, placement, rows_per_node(pc, placement)), cross_in)


def rows_per_node(pc: int, placement: Placement) -> int:
    """Process rows with ranks on one node: the chains that share its link at once."""
    return max(1, placement.ranks_per_node // pc)


def lu2d_phase_links(n: int, nb: int, pr: int, pc: int, pivoting,
                     placement: Placement) -> dict[str, Links]:
    """{phase: Links} of the 2D LU for `placement` (module doc): per rank (flattened,
    world order) the (sent, received, messages) of each part of the phase, keyed by the
    link it crosses. The parts of a phase add up to `lu2d_plan_counts`' counts."""
    counts = lu2d_plan_counts(n, nb, pr, pc, pivoting)
    row_key, column_key = pc, pr * pc
    totals = {ph: tuple(counts[k][ph] for k in ("sent", "recv", "msgs_by_phase"))
              for ph in PHASES}
    keys = {"bcast_L": row_key, "panel": (column_key, rows_per_node(pc, placement)),
            "bcast_U": column_key, "swap": column_key}
    nodes_r, nodes_c = column_nodes(pr, pc, placement), row_nodes(pc, placement)
    crossing = {}
    if crossing_links(row_key, placement) and nodes_c is not None:
        crossing["bcast_L"] = _bcast_l_crossing(n, nb, pr, pc, nodes_c)
        keys["bcast_L"] = (row_key, rows_per_node(pc, placement))
    if crossing_links(column_key, placement) and nodes_r is not None and pr > 1 \
            and placement.ranks_per_node % pc == 0 and placement.ranks_per_node > pc:
        crossing.update(_column_crossing(n, nb, pr, pc, pivoting, nodes_r, totals))
    out = {}
    for phase in PHASES:
        total = tuple(np.asarray(a, dtype=float) for a in totals[phase])
        if phase not in crossing:
            out[phase] = {keys[phase]: tuple(a.reshape(-1) for a in total)}
            continue
        across = crossing[phase]
        out[phase] = {ON_NODE: tuple((t - a).reshape(-1) for t, a in zip(total, across)),
                      keys[phase]: tuple(a.reshape(-1) for a in across)}
    return out


def merge_links(*parts: Links) -> Links:
    """The sum of several `Links`, key by key."""
    out: Links = {}
    for links in parts:
        for key, costs in links.items():
            if key in out:
                out[key] = tuple(a + b for a, b in zip(out[key], costs))
            else:
                out[key] = tuple(np.asarray(c, dtype=float) for c in costs)
    return out


def lu2d_links(n: int, nb: int, pr: int, pc: int, pivoting, placement: Placement) -> Links:
    """Every phase's `lu2d_phase_links`, merged: the `Links` of `RankCosts.times`."""
    return merge_links(*lu2d_phase_links(n, nb, pr, pc, pivoting, placement).values())


def _bcast_l_crossing(n: int, nb: int, pr: int, pc: int, nodes_c: np.ndarray) -> tuple:
    """(sent, received, messages) [Pr, Pc] of bcast_L between nodes."""
    plan = _plan(n, nb, pr, pc)
    kb, below = plan.kb, plan.below
    size = panel_words(kb, below) * WORD                                # [step, row]
    chain = size > SMALL_BYTES
    column = np.arange(pc)
    cross_in = (nodes_c != nodes_c[(column - 1) % pc]).astype(float)      # from c - 1
    cross_out = (nodes_c != nodes_c[(column + 1) % pc]).astype(float)     # to c + 1
    sent = plan.by_position(size * chain, "not last") * cross_out
    recv = plan.by_position(size * chain, "not first") * cross_in
    msgs = plan.by_position(chunk_count(size) * chain, "not last") * cross_out
    if not chain.all():
        tree = ~chain.all(axis=1)
        roots = np.flatnonzero(tree) % pc
        unit = {root: bcast_node_costs(pc, 1.0, np.array([root]), nodes_c)
                for root in np.unique(roots)}
        edges_out = np.array([unit[root][0] for root in roots])          # [tree step, pc]
        edges_in = np.array([unit[root][1] for root in roots])
        small = (size * ~chain)[tree]
        sent = sent + _outer_sum(small, edges_out)
        recv = recv + _outer_sum(small, edges_in)
        msgs = msgs + _outer_sum((small > 0) * 1.0, edges_out)
    return sent, recv, msgs


def _column_crossing(n: int, nb: int, pr: int, pc: int, pivoting, nodes_r: np.ndarray,
                     totals: dict) -> dict:
    """{phase: (sent, received, messages) [Pr, Pc] between nodes} of the phases in a
    process column whose members share nodes r / Pc at a time (module doc)."""
    plan = _plan(n, nb, pr, pc)
    kb = plan.kb
    rounds = bruck_rounds(pr)
    member = np.arange(pr)
    round_share = np.mean([nodes_r != nodes_r[(member - h) % pr] for h, _ in rounds],
                          axis=0)[:, None]                                 # [Pr, 1]
    out = {}
    if not isinstance(pivoting, str):
        pivoting = np.asarray(pivoting, dtype=np.int64)
    owned, displaced = _pivot_rows(pivoting, plan.starts, plan.widths, nb, pr, plan.below)
    sent, recv = allgatherv_node_costs(plan.by_trail(owned).T, nodes_r)
    out["bcast_U"] = (sent.T * WORD, recv.T * WORD, totals["bcast_U"][2] * round_share)
    remote = displaced * ~plan.diag
    apart = nodes_r[None, :] != nodes_r[plan.diag_row][:, None]           # [step, row]
    moved = remote * apart
    out["swap"] = (plan.by_trail(plan.diag * moved.sum(axis=1, keepdims=True) * WORD),
                   plan.by_trail(moved * WORD),
                   plan.by_trailing(plan.diag * ((remote > 0) & apart).sum(axis=1,
                                                                           keepdims=True)))
    base, extra = (words * WORD for words in candidate_words(kb[:, 0]))
    blocks = base[:, None] + extra[:, None] * plan.diag                    # [step, row]
    sent, recv = allgatherv_node_costs(blocks, nodes_r)
    out["panel"] = (plan.by_position(kb * sent, "first"), plan.by_position(kb * recv, "first"),
                    totals["panel"][2] * round_share)
    return out
