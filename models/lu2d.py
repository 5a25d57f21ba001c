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
U) + N^2 NB/(2 P) (panels); the time takes the panels and solves at the panel's rate
times gamma and the dgemm at gamma times its efficiency at NB (the machine's
`MachineProfile.local`, `linalg_io.models.rates`).
Lower bound: 2 N^3 / (3 P sqrt(M)) words, M the per-rank memory in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache, partial
from math import lcm

import numpy as np
from linalg_io._kernels.lu2d_points import gather
from linalg_io.models.costs import Links, RankCosts, waiting_makespans
from linalg_io.models.lu2d_runs import (
    Jumps,
    at_column,
    bruck_at,
    bruck_misses,
    column_sum,
    outer_sum,
    piece_ends,
    run_counts,
    run_of,
    run_starts,
    window_holds,
    window_sums,
)
from linalg_io.models.profile import MachineProfile, Placement, crossing_links
from linalg_io.models.rank_classes import StepClasses, step_classes
from linalg_io.models.rates import BLAS, LocalRates
from linalg_io.models.step_sample import prime_stride, smooth_sum

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
    allgatherv_bytes,
    allgatherv_node_costs,
    allgatherv_one_costs,
    bcast_node_costs,
    binomial_children,
    bruck_rounds,
    chunk_count,
)
from linalg_io.layout.words import WORD

PIVOTING = ("worst", "none", "expected")


PHASES = TRAFFIC_PHASES
PIVOT_PHASES = ("bcast_U", "swap")    # the phases whose counts depend on the pivots
ROW_CHUNK = 1 << 20      # [step, process row] entries of the critical path's classes at once
# the same where a step takes the few rows of `_Steps.row_points`: arrays small enough
# that the allocator reuses their memory (larger ones cost as much in page faults as in
# arithmetic), in chunks of many steps still
POINT_CHUNK = 1 << 16
_POINTS_PER_RUN = 6      # `_Steps.row_points` per run and Bruck round, at most (for the chunks)
# POINT_CHUNK's steps evaluated at once: far fewer points than that most (a few runs)
POINT_PARTS = 4
# `sampled_steps`: the most steps the critical path walks one by one; beyond, the last
# TAIL_STEPS and about SAMPLES others, with a polynomial of degree SAMPLE_DEGREE
EXACT_STEPS = 1 << 16
TAIL_STEPS = 512
SAMPLES = 2048
SAMPLE_DEGREE = 6


@dataclass(frozen=True)
class _Rows:
    """The process rows at each step as runs of equal rows (`lu2d_runs.run_starts`), or
    one run per row (`_Steps.dense_rows`): [step, run] first row, rows, rows below the
    block, whether it is the diagonal row."""

    start: np.ndarray
    count: np.ndarray
    below: np.ndarray
    diag: np.ndarray

    def jumps(self, values) -> Jumps:
        """The per-step function with `values` [step, run] (or [step, 1]) on the runs."""
        return Jumps.of_runs(self.start, values, self._memo)

    @cached_property
    def _memo(self) -> dict:
        return {}

    def total(self, values: np.ndarray) -> np.ndarray:
        """[step, 1]: the sum over the rows of `values` [step, run]."""
        return (values * self.count).sum(axis=1, keepdims=True)

    def at_steps(self, k: np.ndarray) -> _Rows:
        """The runs of the steps k."""
        return _Rows(start=self.start[k], count=self.count[k], below=self.below[k],
                     diag=self.diag[k])


def _pivot_rows(pivoting, steps: _Steps, rows: _Rows,
                k: np.ndarray | slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """[step, run]: pivot rows each process row owns before the step's interchanges, and
    positions below the block where it receives a displaced row, at the steps k (`rows`
    of those steps): exact for the run's pivots (`rows` one run per row) or for none, the
    bound or the expectation otherwise (fractional)."""
    kb = steps.kb[k]
    if isinstance(pivoting, np.ndarray):
        pairs = [pivot_rows_by_owner(pivoting[j0:j0 + w], j0, steps.nb, steps.pr)
                 for j0, w in zip(steps.starts[k], steps.widths[k])]
        return (np.array([o for o, _ in pairs], dtype=float),
                np.array([d for _, d in pairs], dtype=float))
    if pivoting == "none":
        return rows.diag * kb, np.zeros(rows.below.shape)
    if pivoting == "worst":      # as many pivot rows as a non-diagonal row can own
        s = np.minimum(kb, rows.below).astype(float)
    else:                        # expected: pivots uniform over the active rows
        s = kb * rows.below / (rows.total(rows.below) + kb)
    s = s * ~rows.diag
    kept = np.maximum(0.0, kb - rows.total(s))            # rows the diagonal row keeps
    return np.where(rows.diag, kept, s), s


def lu2d_plan_counts(n: int, nb: int, pr: int, pc: int, pivoting="worst") -> dict:
    """Per-rank (Pr x Pc array) bytes sent/received and messages by phase, and flops.

    `pivoting`: "none", "expected", "worst", or the run's pivots (int array of length N:
    exact). Returns {"sent": {phase: array}, "recv": {phase: array}, "msgs": array,
    "msgs_by_phase": {phase: array}, "flops": array, "flops_by_phase": {"panel", "solve"
    (the dtrsm of U), "dgemm": array}}; arrays are indexed [process row, process column].

    Each cost of block column k is a sum of products f_k(r) g_k(c) of a process row's
    factor (its rows below the block, pivot rows, Bruck windows, ...) and a process
    column's (its trailing columns, whether it has any, its position (c - k) mod Pc),
    and at each step both are constant on a few runs of consecutive ranks: the sums over
    the steps are sums of products of their jumps (`linalg_io.models.lu2d_runs`), and
    the ranks where those jumps fall repeat with k mod lcm(Pr, Pc), so the products are
    first summed over the steps of each residue: O(steps x runs^2 + min(steps,
    lcm(Pr, Pc)) x runs^2 + P) time for the assumed pivotings (O(steps Pr) for a run's
    pivots, given per row); a position's sum (c - k mod Pc: the panel, bcast_L) is
    the rows' sum in one column. The same numbers as walking every rank and step
    (tests/lu2d_walk.py, tests/test_lu2d_period.py): whole numbers exactly, others
    (expected pivoting, flops) to rounding.
    """
    traffic = _traffic(n, nb, pr, pc, _checked(pivoting), received_only=False, copy=True)
    flops = _fixed_flops(n, nb, pr, pc)
    return {**traffic, "msgs": sum(traffic["msgs_by_phase"].values()),
            "flops": flops["flops"].copy(),
            "flops_by_phase": {part: f.copy() for part, f in flops["flops_by_phase"].items()}}


def lu2d_received(n: int, nb: int, pr: int, pc: int, pivoting="worst") -> dict:
    """{phase: [Pr, Pc]} bytes received: `lu2d_plan_counts`' "recv", the same numbers,
    without the sent bytes and messages (bcast_U's Bruck windows and rounds: most of
    the cost)."""
    return _traffic(n, nb, pr, pc, _checked(pivoting), received_only=True, copy=True)["recv"]


def lu2d_traffic(n: int, nb: int, pr: int, pc: int, pivoting="worst",
                 received_only: bool = False) -> dict:
    """{"sent", "recv", "msgs_by_phase": {phase: [Pr, Pc]}}: `lu2d_plan_counts`' (only
    "recv" where `received_only`: `lu2d_received`'s), the same numbers, without the
    flops; the phases that do not depend on the pivots are the arrays every call for
    this grid shares (read them, never write them)."""
    return _traffic(n, nb, pr, pc, _checked(pivoting), received_only, copy=False)


def _traffic(n: int, nb: int, pr: int, pc: int, pivoting, received_only: bool,
             copy: bool) -> dict:
    """`lu2d_traffic`, the phases of `_fixed_traffic` copied where `copy`."""
    fixed = _fixed_traffic(n, nb, pr, pc)
    keys = ("recv",) if received_only else ("sent", "recv", "msgs_by_phase")
    out = {key: _fixed_phases(fixed[key], pr, copy) for key in keys}
    if pr > 1:
        _add_pivot_counts(out, _steps(n, nb, pr, pc), pivoting, received_only)
    return out


def _fixed_phases(fixed: dict, pr: int, copy: bool) -> dict:
    """{phase: array}: `_fixed_traffic`'s phases (copies where `copy`); the pivots'
    (bcast_U and swap, zero there) left for `_add_pivot_counts` to set where it runs
    (Pr > 1)."""
    return {ph: (None if ph in PIVOT_PHASES and pr > 1 else fixed[ph].copy() if copy
                 else fixed[ph]) for ph in PHASES}


def _put(phases: dict, phase: str, value: np.ndarray) -> None:
    """Add `value` to phases[phase], or set it there where it is not yet (`_fixed_phases`)."""
    if phases[phase] is None:
        phases[phase] = value
    else:
        phases[phase] += value


def _checked(pivoting):
    """`pivoting` as the counts take it: a name of PIVOTING, or the pivots as int64."""
    if not isinstance(pivoting, str):
        return np.asarray(pivoting, dtype=np.int64)
    if pivoting not in PIVOTING:
        raise ValueError(f"pivoting must be one of {PIVOTING} or the pivots, got {pivoting!r}")
    return pivoting


def _add_pivot_counts(out: dict, steps: _Steps, pivoting, received_only: bool) -> None:
    """Add the phases that depend on the pivots (Pr > 1) to `out` {key: {phase: [Pr,
    Pc]}}: "recv" only where `received_only`, else "sent", "recv" and "msgs_by_phase"."""
    pr = steps.pr
    # bcast_U: the pivot rows' trailing columns, Bruck allgatherv in every column;
    # swap: the diagonal row sends the displaced rows to their new process rows
    rows = steps.rows if isinstance(pivoting, str) else steps.dense_rows()
    owned, displaced = _pivot_rows(pivoting, steps, rows)
    remote = displaced * ~rows.diag                # the diagonal row's own: a copy
    blocks = steps.by_trail(rows.jumps(owned)).T
    _put(out["recv"], "swap", steps.by_trail(rows.jumps(remote * WORD)))
    if received_only:       # allgatherv_costs' received: every block but its own
        _put(out["recv"], "bcast_U", (blocks.sum(axis=-1, keepdims=True) - blocks).T * WORD)
        return
    # a Bruck window is linear in the blocks and the same every step: the windows of
    # sum_k owned_k trail_k (one product) are the sum of the steps' windows
    spread_sent, spread_recv = allgatherv_bytes(blocks)
    _put(out["sent"], "bcast_U", spread_sent.T * WORD)
    _put(out["recv"], "bcast_U", spread_recv.T * WORD)
    _put(out["msgs_by_phase"], "bcast_U",
         steps.by_trailing(_bruck_messages(rows, owned > 0, pr)))
    _put(out["sent"], "swap",
         steps.by_trail(rows.jumps(rows.diag * rows.total(remote) * WORD)))
    _put(out["msgs_by_phase"], "swap",
         steps.by_trailing(rows.jumps(rows.diag * rows.total(remote > 0))))


def _bruck_messages(rows: _Rows, nonempty: np.ndarray, p: int) -> Jumps:
    """Per step, the messages each process row sends in the Bruck allgatherv of blocks
    `nonempty` [step, run] (`linalg_io.layout.schedules.bruck_messages`): every round but
    those whose window is empty (`lu2d_runs.bruck_misses`)."""
    every = rows.jumps(np.full((len(rows.start), 1), float(len(bruck_rounds(p)))))
    return Jumps.join(every, bruck_misses(rows.start, rows.count, nonempty, p))


@dataclass(frozen=True)
class _Steps:
    """The block columns k ([step] arrays), their process rows as runs (`rows`) and their
    process columns' trailing columns as runs (`column_start`: [step, run] first column,
    `trail`), the diagonal column k mod Pc (`diag_col`): sums over the steps by
    `by_trail`, `by_trailing` (`lu2d_runs.outer_sum`), `by_position`
    (`lu2d_runs.column_sum`).
    `dense_rows`: the [step, process row] arrays of a run's pivots and the critical
    path."""

    n: int
    nb: int
    pr: int
    pc: int
    starts: np.ndarray
    widths: np.ndarray
    kb: np.ndarray          # [step, 1]
    diag_row: np.ndarray    # [step]: k mod Pr
    column_start: np.ndarray
    trail: np.ndarray
    diag_col: np.ndarray    # [step]: k mod Pc

    @cached_property
    def rows(self) -> _Rows:
        """The process rows' runs at every step (`runs`)."""
        return self.runs()

    def runs(self, extra_cuts: tuple = ()) -> _Rows:
        """The process rows' runs, also cut at `extra_cuts` ([step] rows)."""
        ends = self.starts + self.widths
        d = self.diag_row
        cuts = [(ends // self.nb) % self.pr, np.full_like(ends, (self.n // self.nb) % self.pr),
                d, *extra_cuts]
        start = run_starts([c + s for c in cuts for s in (0, 1)], self.pr)
        rep = np.minimum(start, self.pr - 1)
        below = _owned_after(self.n, self.nb, ends, rep, self.pr).astype(float)
        return _Rows(start=start, count=run_counts(start, self.pr), below=below,
                     diag=rep == d[:, None])

    def dense_rows(self, k: np.ndarray | slice = slice(None)) -> _Rows:
        """One run per process row, at the steps k: [step, process row] arrays."""
        ends = (self.starts + self.widths)[k]
        start = np.broadcast_to(np.arange(self.pr), (len(ends), self.pr))
        return _Rows(start=start, count=np.ones(start.shape, dtype=np.int64),
                     below=counts_from(ends, self.n, self.nb, self.pr).astype(float),
                     diag=np.arange(self.pr)[None, :] == self.diag_row[k][:, None])

    def rows_at(self, k: np.ndarray, rows: np.ndarray,
                run: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """([step, i] rows below block k[s] of process row rows[s, i], whether it is the
        diagonal row): the rows below of its run (`rows`; `run`: `run_of` of the steps'
        starts and `rows`, where the caller has it)."""
        if run is None:
            run = run_of(self.rows.start[k], rows)
        below = gather(self.rows.below, np.ascontiguousarray(k, dtype=np.int64), run)
        return below, rows == self.diag_row[k][:, None]

    def row_points(self, k: np.ndarray) -> np.ndarray:
        """[step, i]: process rows at which every per-row term of the critical path at
        the steps k (`critical_path_time`: rows below, pivot rows owned, the panel's and
        bcast_U's Bruck windows and messages at k, the panel's at k + 1) takes its
        largest value: the ends of the pieces between the runs' starts at k and k + 1,
        those starts less each Bruck round's m (and m - 1: a window's sum is linear in
        the rank between them, its messages change one rank later) and the diagonal row
        of k + 1 less m - 1 (its candidates' windows). Each term is linear, or the
        larger of two linear ones, on a piece: at most one of its ends is larger."""
        pr = self.pr
        ahead = np.minimum(k + 1, len(self.starts) - 1)
        here = np.concatenate([self.rows.start[k], np.full((len(k), 1), pr)], axis=1)
        sizes = np.array([m for _, m in bruck_rounds(pr)], dtype=np.int64)
        candidates = self.diag_row[ahead][:, None] - sizes[None, :] + 1
        return piece_ends([here, self.rows.start[ahead], candidates], pr, here, sizes)

    def trail_at(self, columns: np.ndarray, k: np.ndarray) -> np.ndarray:
        """[step, i]: the columns right of block k[s] of process column columns[s, i]."""
        return _owned_after(self.n, self.nb, self.starts[k] + self.widths[k], columns,
                            self.pc).astype(float)

    @cached_property
    def _trail_jumps(self) -> Jumps:
        return Jumps.of_runs(self.column_start, self.trail)

    @cached_property
    def _trailing_jumps(self) -> Jumps:
        return Jumps.of_runs(self.column_start, self.trail > 0)

    def _row_jumps(self, rows) -> Jumps:
        return rows if isinstance(rows, Jumps) else self.rows.jumps(rows)

    def by_trail(self, rows) -> np.ndarray:
        """[Pr, Pc]: sum over the steps k of rows[k, r] (jumps, or values on `rows`'s
        runs) times column c's trailing columns."""
        return self._outer_sum(rows, self._trail_jumps)

    def by_trailing(self, rows) -> np.ndarray:
        """[Pr, Pc]: sum over the steps k of rows[k, r] where column c has trailing
        columns."""
        return self._outer_sum(rows, self._trailing_jumps)

    def _outer_sum(self, rows, columns: Jumps) -> np.ndarray:
        if not isinstance(rows, Jumps) and not np.any(rows):    # no swaps: nothing to add
            return np.zeros((self.pr, self.pc))
        return outer_sum(self._row_jumps(rows), columns, self.pr, self.pc)

    @cached_property
    def _position_columns(self) -> tuple[Jumps, Jumps]:
        """`at_column` of the diagonal column k mod Pc and of the one before it."""
        return at_column(self.diag_col), at_column((self.diag_col - 1) % self.pc)

    def by_position(self, rows, positions: str) -> np.ndarray:
        """[Pr, Pc]: sum over the steps k of rows[k, r] where column c is at `positions`
        ("first", "not first", "not last") of (c - k) mod Pc: the sum in column k mod
        Pc (or k - 1) alone, or every column's less that."""
        at = column_sum(self._row_jumps(rows), self._position_columns[positions == "not last"],
                        self.pr, self.pc)
        return at if positions == "first" else at.sum(axis=1, keepdims=True) - at

    def folded(self, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """weight[k] summed over the steps of each residue k mod lcm(Pr, Pc) (the Bruck
        windows of the diagonal row depend on k mod Pr alone, the diagonal column on k
        mod Pc): (the sums, the residues' diagonal row, their diagonal column), for
        `column_sum` of `window_holds` of those rows or `window_sums`."""
        steps = len(self.starts)
        period = min(steps, lcm(self.pr, self.pc))
        residue = np.arange(period)
        return (np.bincount(np.arange(steps) % period, weight, minlength=period),
                residue % self.pr, residue % self.pc)


# the calls for one grid (its pivotings, links and time) share these; held for one grid
# only: a grid's arrays are P-sized (tens of MB at P = 2^20, hundreds with what they
# keep) and a table's workers evaluate one grid after the other
@lru_cache(maxsize=1)
def _steps(n: int, nb: int, pr: int, pc: int) -> _Steps:
    starts, widths = block_columns(n, nb)
    k = np.arange(len(starts))
    diag_row, diag_col = diagonal(k, pr, pc)
    ends = starts + widths
    cuts = [(ends // nb) % pc, np.full_like(ends, (n // nb) % pc)]
    column_start = run_starts([c + s for c in cuts for s in (0, 1)], pc)
    rep = np.minimum(column_start, pc - 1)
    trail = _owned_after(n, nb, ends, rep, pc).astype(float)
    return _Steps(n=n, nb=nb, pr=pr, pc=pc, starts=starts, widths=widths,
                  kb=widths.astype(float)[:, None], diag_row=diag_row,
                  column_start=column_start, trail=trail, diag_col=diag_col)


def _owned_after(n: int, nb: int, ends: np.ndarray, ranks: np.ndarray, p: int) -> np.ndarray:
    """[step, i]: numroc(n) - numroc(ends[step]) of the ranks ranks[step, i] in 0..p-1 (the
    indices ends[step]..n-1 each owns), with numroc(n) from a table of the p ranks."""
    blocks = ends // nb
    extra = (blocks % p)[:, None]
    before = (((blocks // p) * nb)[:, None] + np.where(ranks < extra, nb, 0)
              + np.where(ranks == extra, (ends % nb)[:, None], 0))
    return _owned(n, nb, p)[ranks] - before


@lru_cache(maxsize=4)
def _owned(n: int, nb: int, p: int) -> np.ndarray:
    """[p]: numroc(n) of each of the p ranks."""
    return numroc(n, nb, np.arange(p), p)


def _dense(rows: _Rows, values: np.ndarray, k: np.ndarray, pr: int) -> np.ndarray:
    """[len(k), Pr]: `values` [step, run] on every process row at the steps k."""
    start = rows.start[k]
    run = (np.arange(pr)[None, :, None] >= start[:, None, :]).sum(axis=2) - 1
    return np.take_along_axis(values[k], run, axis=1)


@lru_cache(maxsize=1)
def _fixed_traffic(n: int, nb: int, pr: int, pc: int) -> dict:
    """The traffic that does not depend on the pivots: panel, bcast_L ({"sent", "recv",
    "msgs_by_phase": {phase: [Pr, Pc]}}, zeros for the other phases)."""
    steps = _steps(n, nb, pr, pc)
    rows = steps.rows
    kb, below = steps.kb, rows.below
    out = {key: {ph: np.zeros((pr, pc)) for ph in PHASES}
           for key in ("sent", "recv", "msgs_by_phase")}
    # bcast_L: (r, k mod Pc) along process row r, a chain or, small, a binomial tree
    size = panel_words(kb, below) * WORD
    if pc > 1:
        chain = size > SMALL_BYTES
        out["sent"]["bcast_L"] += steps.by_position(size * chain, "not last")
        out["recv"]["bcast_L"] += steps.by_position(size, "not first")
        out["msgs_by_phase"]["bcast_L"] += steps.by_position(chunk_count(size) * chain,
                                                             "not last")
        tree = np.flatnonzero(~chain.all(axis=1))     # steps where some row's L is small
        if len(tree):
            position = (np.arange(pc)[None, :] - (tree % pc)[:, None]) % pc
            children = binomial_children(np.arange(pc), pc)[position]
            small = _dense(rows, size * ~chain, tree, pr)
            out["sent"]["bcast_L"] += _outer_sum(small, children)
            out["msgs_by_phase"]["bcast_L"] += _outer_sum((small > 0) * 1.0, children)
    if pr > 1:
        # panel: kb Allgatherv (Bruck) of the candidates in process column k mod Pc:
        # blocks of base words, the diagonal rank's base + extra, which a rank's window
        # holds in the rounds m > (diagonal - rank) mod Pr (`allgatherv_one_costs`)
        base, extra = (words * WORD for words in candidate_words(kb[:, 0]))
        rounds = bruck_rounds(pr)
        weight, roots, column = steps.folded(kb[:, 0] * extra)
        out["sent"]["panel"] += (
            steps.by_position(kb * base[:, None] * sum(m for _, m in rounds), "first")
            + window_sums(weight, roots, column, pr, pc))
        out["recv"]["panel"] += steps.by_position(
            kb * (base[:, None] * (pr - 1) + extra[:, None] * ~rows.diag), "first")
        out["msgs_by_phase"]["panel"] += steps.by_position(kb * len(rounds), "first")
    return out


@lru_cache(maxsize=1)
def _fixed_flops(n: int, nb: int, pr: int, pc: int) -> dict:
    """The flops per rank ({"flops", "flops_by_phase"}: `lu2d_plan_counts`')."""
    steps = _steps(n, nb, pr, pc)
    rows = steps.rows
    kb, below = steps.kb, rows.below
    out = {}
    # getrf: (rows + diagonal block) kb^2 - kb^3/3, the fraction summed per column apart
    # (a difference of its sums would leave rounding where a column has none)
    panel = (steps.by_position((below + rows.diag * kb) * kb * kb, "first")
             - _fold(kb[:, 0] ** 3 / 3.0, pc)[None, :])
    solve = steps.by_trail(kb * kb)
    update = steps.by_trail(2.0 * below * kb)
    out["flops"] = panel + solve + update
    out["flops_by_phase"] = {"panel": panel, "solve": solve, "dgemm": update}
    return out


def _rated_flops(by_phase: dict, nb: int, local: LocalRates) -> np.ndarray:
    """The time's flop-equivalents at gamma per rank (world rank = row * Pc + col) of the
    flops `by_phase` (`lu2d_plan_counts`'): getrf and trsm at the panel's rate, the dgemm
    at its efficiency for the inner dimension NB (as models/conflux.py)."""
    return ((by_phase["panel"] + by_phase["solve"]) / local.panel
            + by_phase["dgemm"] / float(local.gemm(np.float64(nb)))).reshape(-1)


def _fold(values: np.ndarray, period: int) -> np.ndarray:
    """[period]: values[k] summed over the k of each residue mod period."""
    return np.bincount(np.arange(len(values)) % period, values, minlength=period)


def _outer_sum(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """sum over the steps k of rows[k, r] columns[k, c] (one BLAS thread: small)."""
    with BLAS.limit(limits=1, user_api="blas"):
        return np.asarray(rows, dtype=float).T @ np.asarray(columns, dtype=float)


TIME_FORMULA = ("critical path M(F_0) + L_0 + sum_k [M(S_k) + max(M(U_k + F_{k+1}), A_k + "
                "L_{k+1})] (models/lu2d.py critical_path_time; where the row's link does not "
                "move messages while ranks compute: max(M(U_k + F_{k+1}), A_k) + L_{k+1}): "
                "F panel (getrf at panel_rate "
                "gamma, its pivot allgathers in the process column), L the panel's arrival "
                "along the process row (chain or tree), S swap + bcast_U (process column) + "
                "trsm, U the dgemm at gemm(NB) gamma, A_k the look-ahead "
                "column's first NB columns of U_k and F_{k+1}; messages at alpha msgs + "
                "beta max(sent, recv) per collective of the link they cross; M = slowest rank, "
                "or the makespan when ranks share cores")


SAMPLED_FORMULA = ("; sampled: of {steps} steps the last {tail} walked and one in {stride} of the "
                   "others, their sum corrected by a degree-{degree} polynomial fit "
                   "(approximate: relative error within {error:g} of walking every step "
                   "where measured)")
# the largest relative error of the sampled sum against every step, measured on the
# grids of docs/MEASUREMENTS.md ("model lu speed") and pinned by tests/test_lu2d_sampled.py
SAMPLED_ERROR = 2e-4


def time_formula(n: int, nb: int, pr: int, pc: int, pivoting) -> str:
    """TIME_FORMULA, and where `critical_path_time` samples the steps (`sampled_steps`)
    how, and its error."""
    steps = len(block_columns(n, nb)[0])
    plan = sampled_steps(steps, pr, pc) if isinstance(pivoting, str) else None
    if plan is None:
        return TIME_FORMULA
    sample = plan[0]
    return TIME_FORMULA + SAMPLED_FORMULA.format(
        steps=steps, tail=len(plan[1]), stride=int(sample[1] - sample[0]) if len(sample) > 1
        else 1, degree=SAMPLE_DEGREE, error=SAMPLED_ERROR)


def critical_path_time(n: int, nb: int, pr: int, pc: int, pivoting, profile: MachineProfile,
                       placement: Placement) -> float:
    """Seconds of the 2D LU as its code runs (linalg_io/lu/lu2d.py), per step k:

      F_k(r)   the panel on process column k mod Pc: getrf at panel_rate gamma and, Pr >
               1, its kb candidate allgathers in the process column (a node's links
               shared only by its ranks in that column, ranks_per_node / Pc or one);
      L_k(r,c) when rank (r, c) holds the panel's L: a chain from the root, position q
               of Pc: beta size + alpha chunks + (q - 1)(alpha + beta chunk); a binomial
               tree (small): popcount(q) (alpha + beta size);
      S_k      swap and bcast_U in the process column (every rank waits for its
               column's rows) and the trsm of the pivot rows (at panel_rate gamma);
      U_k      the trailing dgemm at gemm(NB) gamma (`profile.local`'s rates).

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
    consecutive ranks, a column the grid).

    Cost: where the ranks do not share cores (M the slowest rank) and the pivots are
    assumed, O(steps x runs x log2(Pr)^2) time: each step's maximum over the process rows
    is taken at the few rows of `_Steps.row_points` (a Bruck window's bytes are linear
    in the rank between them), their windows summed in compiled loops
    (`linalg_io._kernels.lu2d_points`), and on the terms' factors (`_points_seconds`);
    else O(steps x Pr) (the rows' classes at every step: the makespan of shared cores
    needs every rank's work). Memory ROW_CHUNK [step, row] entries at a time
    (POINT_PARTS x POINT_CHUNK at the few rows)."""
    blocks = _steps(n, nb, pr, pc)
    gamma = profile.gamma_flops
    # getrf and trsm at the panel's share of gamma (`MachineProfile.local`)
    solve_rate = profile.local.panel * gamma
    row_overlap = profile.overlaps(pc, placement)
    col_alpha, col_beta = profile.link(pr * pc, placement)
    # the panel runs on one process column: a node's ranks of it share its links
    panel_alpha, panel_beta = profile.link(pr * pc, placement,
                                           max(1, placement.ranks_per_node // pc))
    cores = placement.shared_cores
    slow = 1.0 if cores is None else max(1.0, pr * pc / cores)
    # a process column's messages: work on the rank's core on a node, a wait (no core)
    # on the network (`waiting_makespans`)
    col_net = profile.on_network(pr * pc, placement)

    def panels(k: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(work, wait) [step, i] of F at the steps k on the process rows rows[step, i]."""
        kb = blocks.kb[k]
        below, diag = blocks.rows_at(k, rows)
        panel = ((below + diag * kb) * kb * kb - kb**3 / 3.0) / solve_rate
        if pr == 1:
            return panel, np.zeros_like(panel)
        base, extra = candidate_words(kb[:, 0])
        sent, recv, msgs = allgatherv_one_costs(pr, base * WORD, extra * WORD,
                                                blocks.diag_row[k], rows)
        search = kb * (panel_alpha * msgs + panel_beta * np.maximum(sent, recv))
        search_work, panel_wait = _work_or_wait(search, col_net)
        return panel + search_work, panel_wait

    arrival = _l_arrival(blocks, pc, *row_hops(pc, profile, placement))
    column = _ColumnSeconds(blocks, pr, pivoting, col_alpha, col_beta)
    rate = float(profile.local.gemm(np.float64(nb))) * gamma
    steps = len(blocks.starts)
    on_first = np.arange(pc) == 0
    every_row = np.arange(pr)[None, :]
    panel, panel_wait = panels(np.arange(1), every_row)
    total = float(waiting_makespans((panel[0][:, None] * on_first).reshape(1, -1),
                                    (panel_wait[0][:, None] * on_first).reshape(1, -1),
                                    cores)[0]) + float(arrival[0])
    # per step, the process rows and columns whose features are equal cost alike: one
    # evaluation per (row class, column class), weighted by the ranks it stands for; a
    # column's features (its trailing columns, whether it is the look-ahead's) change
    # only at a few columns of each step (`_column_segments`). Where the ranks do not
    # share cores a step's time is a maximum over the ranks, and for the assumed
    # pivotings it is taken at the few rows of `_Steps.row_points` alone; else every
    # row. The steps in chunks of ROW_CHUNK [step, row] entries (the arrays' memory).
    few = cores is None and isinstance(pivoting, str)
    width = min(pr, _POINTS_PER_RUN * len(bruck_rounds(pr)) * blocks.rows.start.shape[1]) \
        if few else pr
    chunk = max(1, (POINT_CHUNK if few else ROW_CHUNK) // max(1, width))
    # the steps evaluated at once: the few rows' arrays are far narrower than `width`
    evaluated = chunk * (POINT_PARTS if few else 1)

    def seconds(k: np.ndarray) -> np.ndarray:       # [step]: the steps k's terms
        out = []
        for first in range(0, len(k), evaluated):
            part = k[first:first + evaluated]
            rows = blocks.row_points(part) if few else np.broadcast_to(every_row,
                                                                       (len(part), pr))
            runs = (blocks.rows.at_steps(part) if isinstance(pivoting, str)
                    else blocks.dense_rows(part))
            # the rows' runs at the steps (the assumed pivotings: those of `rows_at`)
            run = run_of(runs.start, rows) if isinstance(pivoting, str) else None
            terms = (blocks, part, blocks.rows_at(part, rows, run)[0],
                     panels(np.minimum(part + 1, steps - 1), rows), arrival,
                     column.at(part, runs, rows, run), rate, slow, solve_rate)
            out.append(_points_seconds(*terms, row_overlap) if few
                       else _steps_seconds(*terms, cores, col_net, row_overlap))
        return np.concatenate(out)

    plan = sampled_steps(steps, pr, pc) if isinstance(pivoting, str) else None
    if plan is None:     # summed by chunks of steps (the figures' rounding)
        terms = seconds(np.arange(steps))
        for first in range(0, steps, chunk):
            total += float(terms[first:first + chunk].sum())
        return total
    sample, exact, estimate = plan
    return total + float(seconds(exact).sum()) + estimate(seconds(sample))


def sampled_steps(steps: int, pr: int, pc: int):
    """None where `critical_path_time` walks every step (steps <= EXACT_STEPS), else
    (sample [step], exact [step], estimate): the last TAIL_STEPS steps (`exact`: where
    rows run out of rows below the terms turn fastest) are walked, and of the others
    every s-th (`sample`, about SAMPLES of them), s prime to Pr and Pc so that the
    sample meets every residue of the block-cyclic period k mod lcm(Pr, Pc) alike;
    estimate(the sample's terms) is their sum times s, corrected by a Chebyshev
    polynomial of degree SAMPLE_DEGREE fitted to them: plus its sum over every step not
    walked, less s times its sum over the sample (the rectangle rule's error on the
    smooth part: a step's terms are smooth in k but for its residues, and rows below
    fall by one block every Pr steps). The error measured against every step is in
    docs/MEASUREMENTS.md ("model lu speed")."""
    if steps <= EXACT_STEPS:
        return None
    head = steps - TAIL_STEPS
    stride = prime_stride(head // SAMPLES, pr * pc)
    sample = np.arange(stride // 2, head, stride)
    return sample, np.arange(head, steps), partial(smooth_sum, sample, stride=stride, first=0,
                                                   stop=head, degree=SAMPLE_DEGREE)


def _steps_seconds(blocks: _Steps, k: np.ndarray, below: np.ndarray, panels: tuple,
                   arrival: np.ndarray, column: _ColumnSeconds, rate: float, slow: float,
                   solve_rate: float, cores, col_net: bool, row_overlap: bool) -> float:
    """[step]: M(S_k) + the step's last term (`critical_path_time`) at the steps k:
    `below` [step, process row] at the steps k, `panels` F's (work, wait) at k + 1,
    `column` at the steps k."""
    steps, pc = len(blocks.starts), blocks.pc
    kb = blocks.kb[k]
    ahead = np.minimum(k + 1, steps - 1)
    has_next = k + 1 < steps
    f_ahead, wait_ahead = panels
    row_features = [below, f_ahead, wait_ahead]
    if column.pr > 1:
        row_features += [column.msgs, column.bytes]
    rows = step_classes(row_features)
    cols, col_count = _column_segments(blocks, k, ahead % pc)
    at = np.arange(len(k))[:, None]

    def per_row(values: np.ndarray) -> np.ndarray:      # [k, pr] -> [k, row class, 1]
        return values[at, rows.rep][:, :, None]

    weights = (rows.count[:, :, None] * col_count[:, None, :]).reshape(len(k), -1)
    t = blocks.trail_at(cols, k)[:, None, :]               # [k, 1, column class]
    la = (cols == (ahead % pc)[:, None])[:, None, :]
    update = 2.0 * per_row(below) * kb[:, :, None] * t / rate
    f_next = per_row(f_ahead) * la * has_next[:, None, None]
    f_wait = per_row(wait_ahead) * la * has_next[:, None, None]
    ahead_trail = blocks.trail_at((ahead % pc)[:, None], k)[:, 0]
    first_cols = np.minimum(blocks.kb[ahead][:, 0], ahead_trail)
    share = first_cols / np.maximum(ahead_trail, 1.0)
    ahead_update = 2.0 * below[at, rows.rep] * kb * ahead_trail[:, None] / rate
    lead = ((ahead_update * share[:, None] + f_ahead[at, rows.rep]) * slow
            + wait_ahead[at, rows.rep]).max(axis=1)
    after = np.where(has_next, arrival[ahead], 0.0)
    swap_work, s_wait = _work_or_wait(column.classes(rows, t), col_net)  # [k, row, col]
    s_work = (kb * kb * t[:, 0, :] / solve_rate)[:, None, :] + swap_work
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
    return s_k + step


def _points_seconds(blocks: _Steps, k: np.ndarray, below: np.ndarray, panels: tuple,
                    arrival: np.ndarray, column: _ColumnSeconds, rate: float, slow: float,
                    solve_rate: float, row_overlap: bool) -> np.ndarray:
    """`_steps_seconds` where the ranks do not share cores (M the slowest rank), its
    arguments' process rows any ranks (`_Steps.row_points`), without the [step, row class,
    column class] grid: every term is a correctly rounded sum or product of non-negative
    factors, so it is largest where they are (rounding is monotone), and each maximum
    over the ranks is taken on the factors first, bit for bit `_steps_seconds`'. S_k
    (alpha msgs + beta bytes t + the trsm's kb^2 t) at the columns with the most
    trailing columns t; U_k off the look-ahead column (2 below kb t / rate alone) at the
    most rows below and t, on it (F_{k+1} added, which can be negative) at every row;
    both at least 0 (`_steps_seconds`' padding)."""
    steps, pc = len(blocks.starts), blocks.pc
    kb = blocks.kb[k]
    ahead = np.minimum(k + 1, steps - 1)
    has_next = k + 1 < steps
    f_ahead, wait_ahead = panels
    # the process columns' runs (`_Steps.column_start`): the trailing columns of each
    t, count = blocks.trail[k], run_counts(blocks.column_start[k], pc)
    on_ahead = run_of(blocks.column_start[k], (ahead % pc)[:, None])        # [k, 1]
    t_most = np.where(count > 0, t, 0.0).max(axis=1, keepdims=True)
    s_k = kb * kb * t_most / solve_rate
    if column.pr > 1:
        links = column.alpha * column.msgs * (t_most > 0) + column.beta * column.bytes * t_most
        s_k = s_k + links.max(axis=1, keepdims=True)
    # the columns but the look-ahead's (where a next step has one)
    others = count - ((np.arange(count.shape[1]) == on_ahead) & has_next[:, None])
    t_off = np.where(others > 0, t, 0.0).max(axis=1, keepdims=True)
    u_k = 2.0 * below.max(axis=1, keepdims=True) * kb * t_off / rate
    ahead_trail = np.take_along_axis(t, on_ahead, axis=1)[:, 0]
    ahead_update = 2.0 * below * kb * ahead_trail[:, None] / rate
    on_column = (ahead_update + f_ahead) + wait_ahead
    u_k = np.maximum(np.maximum(u_k[:, 0], 0.0),
                     np.where(has_next, on_column.max(axis=1), 0.0))
    first_cols = np.minimum(blocks.kb[ahead][:, 0], ahead_trail)
    share = first_cols / np.maximum(ahead_trail, 1.0)
    lead = ((ahead_update * share[:, None] + f_ahead) * slow + wait_ahead).max(axis=1)
    after = np.where(has_next, arrival[ahead], 0.0)
    if row_overlap:
        step = np.maximum(u_k, np.where(has_next, lead, 0.0) + after)
    else:   # L_{k+1} moves once the receivers are back in MPI, after their update
        step = np.maximum(u_k, np.where(has_next, lead, 0.0)) + after
    return s_k[:, 0] + step


def _column_segments(blocks: _Steps, k: np.ndarray,
                     look_ahead: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([step, segment] first column, [step, segment] columns) of the runs of process
    columns with equal features at each step: a column's trailing columns (`numroc` of
    N and of the block's end) change only at the owners of the blocks those end in and
    the next column, whether it is the look-ahead's at that column and the next; empty
    segments (0 columns) are padding. k: the steps."""
    pc = blocks.pc
    ends = blocks.starts[k] + blocks.widths[k]
    cuts = [np.zeros_like(ends)]
    for column in ((ends // blocks.nb) % pc, np.full_like(ends, (blocks.n // blocks.nb) % pc),
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


def _l_arrival(blocks: _Steps, pc: int, on_node: tuple[float, float],
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
        return np.zeros(len(blocks.kb))
    size = (panel_words(blocks.kb, blocks.rows.below) * WORD).max(axis=1)
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
    `lu2d_plan_counts`, step by step): `at` gives `msgs` and `bytes` [step, process row]
    at some steps, timed on a process column's trailing columns by `classes`."""

    def __init__(self, blocks: _Steps, pr: int, pivoting, alpha: float, beta: float,
                 msgs: np.ndarray | None = None, nbytes: np.ndarray | None = None) -> None:
        self.blocks, self.pr, self.alpha, self.beta = blocks, pr, alpha, beta
        self.pivoting = (pivoting if isinstance(pivoting, str)
                         else np.asarray(pivoting, dtype=np.int64))
        self.msgs, self.bytes = msgs, nbytes

    def at(self, k: np.ndarray, runs: _Rows, rows: np.ndarray,
           run: np.ndarray | None = None) -> _ColumnSeconds:
        """The same at the steps k on the process rows rows[step, i] (`runs`: the process
        rows of those steps; `run`: `run_of(runs.start, rows)`, where the caller has
        it)."""
        if self.pr == 1:
            return self
        blocks, pivoting, pr = self.blocks, self.pivoting, self.pr
        owned, displaced = _pivot_rows(pivoting, blocks, runs, k)
        if run is None:
            run = run_of(runs.start, rows)
        bruck_sent, bruck_recv, messages = bruck_at(runs.start, runs.count, owned, rows, pr,
                                                    run)
        if isinstance(pivoting, str) and pivoting == "none":
            messages = allgatherv_one_costs(pr, 0.0, blocks.kb[k, 0], blocks.diag_row[k],
                                            rows)[2]
        remote_runs = displaced * ~runs.diag
        remote = gather(np.ascontiguousarray(remote_runs, dtype=float), None, run)
        diag = rows == blocks.diag_row[k][:, None]
        # the swap, then the allgather: each its own max(sent, recv)
        nbytes = (np.maximum(bruck_sent, bruck_recv)
                  + np.maximum(diag * runs.total(remote_runs), remote)) * WORD
        msgs = messages + diag * runs.total(remote_runs > 0)
        return _ColumnSeconds(blocks, pr, pivoting, self.alpha, self.beta, msgs, nbytes)

    def classes(self, rows: StepClasses, trail: np.ndarray) -> np.ndarray:
        """[step, row class, column class] seconds at the steps of `at`, for the process
        rows `rows` (step classes of the features that include msgs and bytes) and the
        classes' trailing columns `trail` [step, 1, column class]."""
        if self.pr == 1:
            return np.zeros((trail.shape[0], rows.size, trail.shape[2]))
        at = np.arange(trail.shape[0])[:, None]
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
    counts = lu2d_plan_counts(n, nb, pr, pc, pivoting)

    def flat(phases):
        return tuple(sum(counts[key][ph] for ph in phases).reshape(-1)
                     for key in ("sent", "recv", "msgs_by_phase"))

    label = pivoting if isinstance(pivoting, str) else "as measured"
    sent, recv, msgs = flat(PHASES)
    timing = partial(critical_path_time, n, nb, pr, pc, pivoting)
    return RankCosts(bytes_sent=sent, bytes_recv=recv, msgs_sent=msgs,
                     flops=counts["flops"].reshape(-1),
                     rated_flops=partial(_rated_flops, counts["flops_by_phase"], nb),
                     formula=f"{FORMULA} (pivoting={label})",
                     placed_links=partial(lu2d_links, n, nb, pr, pc, pivoting, counts=counts),
                     critical_path=(timing, time_formula(n, nb, pr, pc, pivoting)))


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
                     placement: Placement, counts: dict | None = None) -> dict[str, Links]:
    """{phase: Links} of the 2D LU for `placement` (module doc): per rank (flattened,
    world order) the (sent, received, messages) of each part of the phase, keyed by the
    link it crosses. The parts of a phase add up to `lu2d_plan_counts`' counts (`counts`:
    those, already computed for these arguments)."""
    if counts is None:
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


def lu2d_links(n: int, nb: int, pr: int, pc: int, pivoting, placement: Placement,
               counts: dict | None = None) -> Links:
    """Every phase's `lu2d_phase_links`, merged: the `Links` of `RankCosts.times`
    (`counts`: `lu2d_plan_counts` of these arguments, when already computed)."""
    return merge_links(*lu2d_phase_links(n, nb, pr, pc, pivoting, placement,
                                         counts).values())


def _bcast_l_crossing(n: int, nb: int, pr: int, pc: int, nodes_c: np.ndarray) -> tuple:
    """(sent, received, messages) [Pr, Pc] of bcast_L between nodes."""
    blocks = _steps(n, nb, pr, pc)
    rows = blocks.rows
    size = panel_words(blocks.kb, rows.below) * WORD                      # [step, run]
    chain = size > SMALL_BYTES
    column = np.arange(pc)
    cross_in = (nodes_c != nodes_c[(column - 1) % pc]).astype(float)      # from c - 1
    cross_out = (nodes_c != nodes_c[(column + 1) % pc]).astype(float)     # to c + 1
    sent = blocks.by_position(size * chain, "not last") * cross_out
    recv = blocks.by_position(size * chain, "not first") * cross_in
    msgs = blocks.by_position(chunk_count(size) * chain, "not last") * cross_out
    if not chain.all():
        tree = np.flatnonzero(~chain.all(axis=1))
        roots = tree % pc
        unit = {root: bcast_node_costs(pc, 1.0, np.array([root]), nodes_c)
                for root in np.unique(roots)}
        edges_out = np.array([unit[root][0] for root in roots])          # [tree step, pc]
        edges_in = np.array([unit[root][1] for root in roots])
        small = _dense(rows, size * ~chain, tree, pr)
        sent = sent + _outer_sum(small, edges_out)
        recv = recv + _outer_sum(small, edges_in)
        msgs = msgs + _outer_sum((small > 0) * 1.0, edges_out)
    return sent, recv, msgs


def _column_crossing(n: int, nb: int, pr: int, pc: int, pivoting, nodes_r: np.ndarray,
                     totals: dict) -> dict:
    """{phase: (sent, received, messages) [Pr, Pc] between nodes} of the phases in a
    process column whose members share nodes r / Pc at a time (module doc)."""
    blocks = _steps(n, nb, pr, pc)
    kb = blocks.kb
    rounds = bruck_rounds(pr)
    member = np.arange(pr)
    crosses = [nodes_r != nodes_r[(member - h) % pr] for h, _ in rounds]
    round_share = np.mean(crosses, axis=0)[:, None]                        # [Pr, 1]
    out = {}
    if not isinstance(pivoting, str):
        pivoting = np.asarray(pivoting, dtype=np.int64)
    # the runs also cut at the diagonal row's node (nodes_r: consecutive rows per node)
    group = int(np.count_nonzero(nodes_r == nodes_r[0]))
    node_first = blocks.diag_row // group * group
    rows = (blocks.runs((node_first, node_first + group)) if isinstance(pivoting, str)
            else blocks.dense_rows())
    owned, displaced = _pivot_rows(pivoting, blocks, rows)
    sent, recv = allgatherv_node_costs(blocks.by_trail(rows.jumps(owned)).T, nodes_r)
    out["bcast_U"] = (sent.T * WORD, recv.T * WORD, totals["bcast_U"][2] * round_share)
    remote = displaced * ~rows.diag
    rep = np.minimum(rows.start, pr - 1)
    apart = nodes_r[rep] != nodes_r[blocks.diag_row][:, None]             # [step, run]
    moved = remote * apart
    out["swap"] = (blocks.by_trail(rows.jumps(rows.diag * rows.total(moved) * WORD)),
                   blocks.by_trail(rows.jumps(moved * WORD)),
                   blocks.by_trailing(rows.jumps(rows.diag * rows.total((remote > 0) & apart))))
    # panel: each round's window (base words a block, extra more where it holds the
    # diagonal rank's) to q - h, counted where q and q - h sit on different nodes
    base, extra = (kb[:, 0] * words * WORD for words in candidate_words(kb[:, 0]))
    sent, recv = np.zeros((pr, pc)), np.zeros((pr, pc))
    weight, roots, column = blocks.folded(extra)
    for cross, (h, m, hold) in zip(crosses, window_holds(roots, pr)):
        window = (blocks.by_position((base * m)[:, None], "first")
                  + column_sum(hold.scaled(weight), column, pr, pc))
        sent += cross[:, None] * window
        recv += np.roll(cross[:, None] * window, -h, axis=0)             # at q - h
    out["panel"] = (sent, recv, totals["panel"][2] * round_share)
    return out
