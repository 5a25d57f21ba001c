"""Model of the 2.5D LU with tournament pivoting (linalg_io/lu/conflux.py).

`conflux_plan_counts` walks the same `StepPlan` the code executes (panel k: w
columns, roots ky = k mod Py, lk = (k div Py) mod c, kx = k mod Px; layer l takes
s_l of the panel's columns) and adds, per rank and per phase, the bytes and
messages of the point-to-point schedules the code runs (`linalg_io.layout.schedules`:
binomial or pipelined-chain bcast and reduce, Bruck allgatherv, linear gatherv and
scatterv). Every byte the code sends is in such a message, so the counts are the
logical and the wire traffic at once. With a_x the active rows of process row x
before step k, p_x the pivots it owns, b_x = a_x - p_x, t_y the trailing columns of
process column y:

reduce_panel         (c > 1) the fibre (x, ky, *) sums its a_x w panel rows onto lk
                     (a chain lk+1 -> ... -> lk: every layer but lk+1 receives a_x w)
tournament_pivoting  (Px > 1) (x, ky, lk): w (w+1) words per butterfly round
                     (log2 q, q the largest power of two <= Px), one fold and unfold
                     message each for roles r >= q and r < Px - q (r = (x - k) mod Px)
push_pivots          ids: w+1 words from (kx, ky, lk) to all (binomial tree); L00: w^2
                     words along the process rows of layer lk that solve for U (c = 1:
                     every row; c > 1: row kx); pivot rows: p_x t_y summed over each
                     fibre onto lk, then allgathered in each process column of layer lk
                     (c = 1) or gathered on (kx, y, lk) (c > 1, see StepPlan.redundant_u)
scatter_slices       L: (c > 1) (x, ky, lk) sends b_x s_l to each (x, ky, l), then every
                     layer broadcasts its b_x s_l along its process rows from ky; U:
                     (c > 1) (kx, y, lk) sends s_l t_y to each (kx, y, l), then every
                     layer broadcasts it down its process columns from kx

Only a_x, p_x depend on the matrix (rows move, they are not swapped): `pivots` is
"none" (the pivots of step k are the rows of tile k, what a diagonally dominant
matrix gives: exact there), the actual pivot ids of a run (exact for that run),
"uniform" (the expectation for a uniformly random matrix, fractional rows; below)
or "proportional" (each process row gives pivots in proportion to its active rows).

"uniform": the active rows of a random matrix are exchangeable, but the tournament
is not: each process row offers n_x = min(a_x, w) candidates, folds and butterfly
rounds merge two candidate sets into min(w, n_1 + n_2) winners, and two full sets
win about equally often however many rows each stands for. The model splits each
merge's winners in proportion to n (r/n)^TOURNAMENT_POOL_EXPONENT (r:
the active rows the set stands for), top-down over the step's merge tree (roles
rotated by k as in the code, a side never giving more than its n nor less than
the winners minus the other side's n). With Px a power of two and equal a_x that
is a_x/sum(a) w, the proportional share. Otherwise (Px = 3, 5, 6, 7, or a process
row with one tile more) the proportional share is biased: an unpaired role of the
butterfly wins nearly w/q, a process row with more rows gives little more than
the others, so its rows go late, under narrow trailing matrices. 7x1x1, N = 2048,
v = 256, step 0, mean over seeds 1-6 of the pivots per process row: measured 35.5
31.2 34.3 55.7 32.0 34.0 33.3, this rule 38.9 32.3 32.5 54.7 32.7 32.3 32.5,
proportional 64 32 ... 32; bytes sent by rank 0, measured/model - 1: -0.1% +- 0.5%,
proportional -6.1% (bench_conflux.py --what seeds).

Closed form, words received (= sent, on average) per rank (sums over the panels of
m w and of w t_y Py are N^2/2): c = 1: N^2/(2P) (Px-1 + Py-1) + N v Px (log2 Px +
Py-1)/P; c > 1: N^2/(2P) [2(c-1) + (Px-1)/Px + 2(c-1)/c + Py-1 + Px-1] + N v (Px log2 Px
+ Py-1)/P (reduce panel and pivot rows; gather of the pivot rows; L and U slices to the
layers; L along rows and U down columns; tournament and L00), + N (pivot ids).
Flops per rank: 2 N^3/(3P) (dgemm) + N^2 v/(2 Py c) (U solves on layer lk, c = 1:
every rank of the layer solves w^2 t_y, redundant over the Px process rows; c > 1:
N^2 v/(2 Py c Px), row kx only; each layer is lk for 1/c of the panels) + panels and
tournament.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from linalg_io.models.costs import RankCosts
from linalg_io.models.profile import MachineProfile

from linalg_io.layout.conflux_layout import StepPlan, butterfly_size
from linalg_io.layout.grid_shapes import divisors
from linalg_io.layout.schedules import (
    allgatherv_costs,
    bcast_costs,
    gatherv_costs,
    reduce_costs,
    scatterv_costs,
)

WORD = 8
PHASES = ("reduce_panel", "tournament_pivoting", "push_pivots", "scatter_slices")
TILE_SIZES = (128, 256, 512)
MIN_SLICE = 64   # below this inner dimension the layer's dgemm runs far from gamma
# dgemm rate at inner dimension k, relative to gamma (taken at k = 512): k/(k+64) over
# 512/576; measured on the development machine (one rank, OpenBLAS): 0.67 at k = 64,
# 0.75 at 128, 1.0 at 256 (the formula gives 0.56, 0.75, 0.90). Used for the time only.
GEMM_K_HALF = 64.0
GEMM_K_REF = 512.0
# getrf of the tall panels and the triangular solves run at about half gamma (same
# machine: dgetrf 2048 x 256 16.6 GF/s, dtrsm 20 GF/s, dgemm k = 256 34 GF/s).
PANEL_RATE = 0.5
# A tournament merge of two candidate sets (n_i candidates standing for r_i active rows)
# keeps winners from each in proportion to n_i (r_i/n_i)^beta: beta = 1 would be the
# proportional share, beta = 0 a coin flip per set. Fitted on the pivots of random
# matrices (bench_conflux.py --what seeds: Px = 3, 5, 6, 7, v = 128 and 256, N = 2048
# and 4096, seeds 1-6): 0.2 to 0.3 leaves per-rank biases <= 2%, 1 gives up to 7%.
TOURNAMENT_POOL_EXPONENT = 0.25


def gemm_efficiency(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, dtype=float)
    return np.minimum(1.0, (k / (k + GEMM_K_HALF)) / (GEMM_K_REF / (GEMM_K_REF + GEMM_K_HALF)))


def _getrf_flops(m: float, n: float) -> float:
    k = min(m, n)
    return max(m, n) * k * k - k**3 / 3.0


def merge_tree(px: int, k: int):
    """The tournament's merges at step k: a process row (int) or a pair (first, second).

    Roles r = (x - k) mod Px; r >= q (q the largest power of two <= Px) folds onto
    r - q, then the butterfly pairs roles differing in bit 1, 2, ..., q/2."""
    q = butterfly_size(px)
    nodes = [((r + k) % px, (r + q + k) % px) if r + q < px else (r + k) % px
             for r in range(q)]
    while len(nodes) > 1:
        nodes = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes), 2)]
    return nodes[0]


def tournament_pivots(active: np.ndarray, w: int, k: int,
                      beta: float = TOURNAMENT_POOL_EXPONENT) -> np.ndarray:
    """Expected pivots per process row at step k of a random matrix (module doc)."""
    candidates = np.minimum(active, w)

    @cache
    def size(node) -> tuple[float, float]:   # (candidates, active rows) of a set
        if isinstance(node, tuple):
            (n1, r1), (n2, r2) = size(node[0]), size(node[1])
            return min(w, n1 + n2), r1 + r2
        return candidates[node], active[node]

    def weight(n: float, rows: float) -> float:
        return n * (rows / n) ** beta if n > 0 else 0.0

    owned = np.zeros(len(active))

    def split(node, winners: float) -> None:
        if not isinstance(node, tuple):
            owned[node] = winners
            return
        (n1, r1), (n2, r2) = size(node[0]), size(node[1])
        w1, w2 = weight(n1, r1), weight(n2, r2)
        first = winners * w1 / (w1 + w2) if w1 + w2 > 0 else 0.0
        first = min(max(first, winners - n2), n1)
        split(node[0], first)
        split(node[1], winners - first)

    root = merge_tree(len(active), k)
    split(root, min(w, size(root)[0]))
    return owned


def _pivot_counts(plan: StepPlan, pivots) -> list[np.ndarray]:
    """Per step, the pivots owned by each process row (float for the expectations)."""
    t = plan.tiles
    if isinstance(pivots, str):
        if pivots == "none":
            return [np.bincount(t.owner_row(np.arange(k * t.v, k * t.v + t.width(k))),
                                minlength=t.px).astype(float) for k in range(t.ntiles)]
        if pivots not in ("uniform", "proportional"):
            raise ValueError("pivots must be 'none', 'uniform', 'proportional' or the pivot "
                             f"ids, got {pivots!r}")
        active = t.rows_per_proc.astype(float)
        out = []
        for k in range(t.ntiles):
            if pivots == "uniform":
                share = tournament_pivots(active, t.width(k), k)
            else:
                share = active / active.sum() * t.width(k)
            out.append(share)
            active = active - share
        return out
    return [np.bincount(t.owner_row(np.asarray(ids)), minlength=t.px).astype(float)
            for ids in pivots]


def _fibre_scatter(rows_bytes: np.ndarray, slices: np.ndarray, lk: int, shape: tuple,
                   axis: str) -> tuple[np.ndarray, ...]:
    """(sent, received, messages) [layer, x, y] of the scatters of a panel's column
    slices from layer lk over every fibre: layer l gets slices[l] columns of
    `rows_bytes` bytes each (indexed by x for L, by y for U)."""
    per_layer = scatterv_costs(np.multiply.outer(rows_bytes, slices), lk)   # [x or y, layer]
    out = []
    for a in per_layer:
        layered = np.moveaxis(a, -1, 0)                                      # [layer, x or y]
        out.append(np.broadcast_to(layered[:, :, None] if axis == "x" else layered[:, None, :],
                                   shape))
    return tuple(out)


def conflux_plan_counts(n: int, v: int, px: int, py: int, c: int,
                        pivots: str | Sequence[np.ndarray] = "none",
                        profile: MachineProfile | None = None,
                        cores: int | None = None) -> dict:
    """Per-rank bytes sent/received by phase, messages and flops; arrays [layer, x, y].

    With a profile, also "time_s", the critical path of the code's schedule. A rank's
    time for a piece of work is alpha msgs + beta max(sent, recv) + flops/gamma, the
    trailing update's flops at gamma times `gemm_efficiency(s_l)`, getrf and trsm at
    gamma times PANEL_RATE. Per step k and rank r, three pieces, in the order
    `ConfluxLU.step` runs them:

      F_k(r)  panel phase: reduce_panel, local getrf of the a_x x w candidates, the
              tournament's log2 q merges (getrf of 2w x w) and its messages; only on
              process column ky_k (getrf and merges on layer lk_k);
      S_k(r)  pivot ids, L00, pivot rows (Reduce + Allgatherv), solve_panel (column
              ky_k, layer lk_k), solve_row (layer lk_k), the L and U scatters;
      U_k(r)  trailing update (dgemm b_x x s_l x t_y).

    The look-ahead runs F_{k+1} inside U_k on column ky_{k+1} (after that column's
    first w columns); every rank then enters step k+1 with the Bcast of the pivot
    ids from (kx, ky, lk)_{k+1}, which that root sends only after its whole U_k and
    F_{k+1}; the L broadcast of step k waits for solve_panel on column ky_k. So,
    with one core per rank,

      step_k = max_r S_k(r) + max_r [U_k(r) + F_{k+1}(r)],

    the panel column's F adding to its own update: with Py = 1 every rank carries
    F (and solve_row over all N trailing columns), with Py > 1 only the ranks of one
    column carry F, the others wait at the Bcast. When the P ranks share `cores` < P
    cores (one node, oversubscribed; a waiting rank yields its core,
    `linalg_io.comm.launch`), each of the two max_r is replaced by the makespan of
    those per-rank works under fair sharing of the cores (`shared_makespan`: sort
    the works w_(1) <= ... <= w_(P); time = sum_i (w_(i) - w_(i-1)) max(1, (P-i+1)/cores)).
    There the idle columns' cores go to the panel column, while Py = 1 runs its
    Px-fold redundant getrf, tournament and solve_row on every rank at
    cores/P of a core each. Then

      time_s = M(F_0) + sum_k [M(S_k) + M(U_k + F_{k+1})],  M = shared_makespan.
    """
    plan = StepPlan.create(n, v, px, py, c)
    tiles = plan.tiles
    p = c * px * py
    shape = (c, px, py)
    sent = {ph: np.zeros(shape) for ph in PHASES}
    recv = {ph: np.zeros(shape) for ph in PHASES}
    msgs = np.zeros(shape)
    flops = np.zeros(shape)
    L, X, Y = np.meshgrid(np.arange(c), np.arange(px), np.arange(py), indexing="ij")
    world = (L * px + X) * py + Y
    active = tiles.rows_per_proc.astype(float)
    q = butterfly_size(px)
    rounds = q.bit_length() - 1
    slow_flops = np.zeros(shape)   # flop-equivalents lost by the dgemm's small inner dimension
    share = float(cores) if cores is not None and cores < p else None
    pieces = []                    # per step: (F_k, S_k, U_k), seconds per rank

    def add(phase: str, mask: np.ndarray, costs: tuple) -> None:
        """Add a schedule's (sent, received, messages) on the ranks of `mask`."""
        out, into, count = (np.broadcast_to(np.asarray(a, dtype=float), shape) for a in costs)
        sent[phase] += mask * out
        recv[phase] += mask * into
        msgs[:] += mask * count

    def snapshot() -> tuple:
        return (sum(sent.values()), sum(recv.values()), msgs.copy(), flops + slow_flops)

    def piece(before: tuple, after: tuple) -> np.ndarray:
        d_sent, d_recv, d_msgs, d_flops = (b - a for a, b in zip(before, after))
        return (profile.alpha_s * d_msgs + profile.beta_s_per_byte
                * np.maximum(d_sent, d_recv) + d_flops / profile.gamma_flops)

    everyone = np.ones(shape, dtype=bool)
    for step, owned in zip(plan.steps(), _pivot_counts(plan, pivots)):
        w, ky, lk, kx = step.w, step.ky, step.lk, step.kx
        s = step.slices.astype(float)
        a = active[X]
        p_x = owned[X]
        b = a - p_x
        t_y = tiles.trailing_cols(step.k).astype(float)
        t = t_y[Y]
        sl = s[L]
        on_panel = Y == ky
        root = L == lk
        on_fibre = (L - lk) % c            # chains over the fibre end on layer lk
        along_row = (Y - ky) % py          # chains along a process row start at ky
        down_col = (X - kx) % px           # chains down a process column start at kx
        start = snapshot() if profile else None
        # reduce_panel: the panel's active rows summed over the fibre onto lk
        add("reduce_panel", on_panel, reduce_costs(on_fibre, c, a * w * WORD))
        # tournament_pivoting
        players = on_panel & root
        block = w * (w + 1) * WORD
        role = (X - step.k) % px    # the butterfly's roles rotate with the step
        if px > 1:
            folded = role >= q
            partner_folds = role < px - q
            n_sent = np.where(folded, 1, rounds + partner_folds)
            add("tournament_pivoting", players, (n_sent * block, n_sent * block, n_sent))
        merges = np.where(role >= q, 0, rounds + (role < px - q))
        panel_flops = players * (np.vectorize(_getrf_flops)(a, w) + merges * _getrf_flops(2 * w, w))
        flops += panel_flops
        slow_flops += panel_flops * (1.0 / PANEL_RATE - 1.0)
        after_panel = snapshot() if profile else None
        # push_pivots: ids to everyone; L00 along the rows of layer lk that solve for U
        header_root = (lk * px + kx) * py + ky
        add("push_pivots", everyone, bcast_costs((world - header_root) % p, p, (w + 1) * WORD))
        solvers = root & (everyone if plan.redundant_u else X == kx)
        add("push_pivots", solvers, bcast_costs(along_row, py, w * w * WORD))
        flops += players * b * w * w   # solve_panel
        slow_flops += players * b * w * w * (1.0 / PANEL_RATE - 1.0)
        # the pivot rows' trailing columns: summed over the fibre onto lk, then
        # allgathered in each process column (redundant U) or gathered on row kx
        add("push_pivots", everyone, reduce_costs(on_fibre, c, p_x * t * WORD))
        column_blocks = np.outer(t_y, owned) * WORD          # [y, x]
        if plan.redundant_u:
            spread = allgatherv_costs(column_blocks)
        else:
            spread = gatherv_costs(column_blocks, kx)
        add("push_pivots", root, tuple(np.transpose(a_)[None] for a_ in spread))
        flops += solvers * w * w * t   # solve_row
        slow_flops += solvers * w * w * t * (1.0 / PANEL_RATE - 1.0)
        # scatter_slices: L's column slices to the layers of the panel column, each
        # layer's slice along its process rows; U's row slices the same way
        if c > 1:
            add("scatter_slices", on_panel,
                _fibre_scatter(b[0, :, 0] * WORD, s, lk, shape, axis="x"))
        add("scatter_slices", everyone, bcast_costs(along_row, py, b * sl * WORD))
        if c > 1:
            u_from = everyone if plan.redundant_u else X == kx
            add("scatter_slices", u_from, _fibre_scatter(t_y * WORD, s, lk, shape, axis="y"))
            if not plan.redundant_u:
                add("scatter_slices", everyone, bcast_costs(down_col, px, sl * t * WORD))
        # trailing_update
        before_update = snapshot() if profile else None
        flops += 2.0 * b * sl * t
        if profile:
            efficiency = gemm_efficiency(np.maximum(sl, 1.0))
            slow_flops += 2.0 * b * sl * t * (1.0 / efficiency - 1.0)
            pieces.append((piece(start, after_panel), piece(after_panel, before_update),
                           piece(before_update, snapshot())))
        active = active - owned
    time_s = _critical_path(pieces, share) if profile else 0.0
    return {"sent": sent, "recv": recv, "msgs": msgs, "flops": flops, "time_s": time_s}


def shared_makespan(work: np.ndarray, cores: float | None) -> float:
    """Time for ranks that start together with `work` seconds each (at one core) to
    all finish when they share `cores` cores fairly (processor sharing: while m ranks
    still work, each runs at min(1, cores/m)); max(work) when cores is None."""
    w = np.sort(np.asarray(work, dtype=float).reshape(-1))
    if cores is None or cores >= len(w):
        return float(w[-1])
    running = len(w) - np.arange(len(w))
    return float((np.diff(w, prepend=0.0) * np.maximum(1.0, running / cores)).sum())


def _critical_path(pieces: list, cores: float | None) -> float:
    """time_s of `conflux_plan_counts` from the per-step (F_k, S_k, U_k) per rank."""
    total = shared_makespan(pieces[0][0], cores)
    for k, (_, s_k, u_k) in enumerate(pieces):
        f_next = pieces[k + 1][0] if k + 1 < len(pieces) else np.zeros_like(u_k)
        total += shared_makespan(s_k, cores) + shared_makespan(u_k + f_next, cores)
    return total


def closed_form_words(n: int, v: int, px: int, py: int, c: int) -> float:
    """Leading terms of the words received (= sent, on average) per rank (module doc)."""
    p = px * py * c
    half = n * n / (2.0 * p)
    tournament = px * np.log2(px)
    if c == 1:
        return half * ((px - 1) + (py - 1)) + n * v * (tournament + px * (py - 1)) / p + n
    brackets = 2 * (c - 1) + (px - 1) / px + 2 * (c - 1) / c + (py - 1) + (px - 1)
    return half * brackets + n * v * (tournament + py - 1) / p + n


FORMULA = ("2.5D LU (COnfLUX, tournament pivoting, own point-to-point collectives: wire = "
           "logical), words received (= sent) per rank on average ~ c = 1: N^2/(2P) "
           "(Px-1 + Py-1) + N v Px (log2 Px + Py-1)/P; c > 1: N^2/(2P) [2(c-1) reduce panel "
           "and pivot rows + (Px-1)/Px gather pivot rows + 2(c-1)/c scatter L and U slices + "
           "Py-1 L along rows + Px-1 U down columns] + N v (Px log2 Px + Py-1)/P; + N pivot "
           "ids; exact counts from the step plan")


def conflux_costs(n: int, v: int, px: int, py: int, c: int,
                  pivots: str | Sequence[np.ndarray] = "none") -> RankCosts:
    """Per-rank costs (world rank = layer Px Py + x Py + y), see the module doc."""
    return _costs(conflux_plan_counts(n, v, px, py, c, pivots), pivots)


def _costs(counts: dict, pivots) -> RankCosts:
    label = pivots if isinstance(pivots, str) else "as measured"
    return RankCosts(bytes_sent=sum(counts["sent"].values()).reshape(-1),
                     bytes_recv=sum(counts["recv"].values()).reshape(-1),
                     msgs_sent=counts["msgs"].reshape(-1), flops=counts["flops"].reshape(-1),
                     formula=f"{FORMULA} (pivots: {label})")


MEMORY = "the 2.5D layout's memory per rank (memory_words)"


def memory_words(n: int, v: int, px: int, py: int, c: int) -> float:
    """Per-rank words of the busiest rank: the local block, the copy of A it restarts
    each repetition from (layer 0) and checks the residual with, the factors kept for
    verification (on the layer that computed them: 1/c of the steps), and the
    panel/row buffers of one step."""
    rows = -(-n // (v * px)) * v
    cols = -(-n // (v * py)) * v
    return rows * cols * (2 + 1 / c) + 4 * (rows + cols) * v


def grid_candidates(p: int) -> list[tuple[int, int, int]]:
    """Every Px x Py x c with Px Py c = p (Px > Py included: the tournament runs on Px)."""
    return [(px, (p // c) // px, c) for c in divisors(p) for px in divisors(p // c)]


def predicted_time(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                   pivots: str | Sequence[np.ndarray] = "uniform",
                   cores: int | None = None) -> float:
    """Critical-path time prediction (see `conflux_plan_counts`); `cores`: the cores
    the ranks share (None: one per rank)."""
    return conflux_plan_counts(n, v, px, py, c, pivots, profile, cores)["time_s"]


def record_block(n: int, v: int, px: int, py: int, c: int, profile: MachineProfile,
                 pivots: str | Sequence[np.ndarray] = "uniform",
                 cores: int | None = None) -> dict:
    """The record's `model` block, its time from the critical-path prediction."""
    counts = conflux_plan_counts(n, v, px, py, c, pivots, profile, cores)
    block = _costs(counts, pivots).record_block(profile)
    block["time_s"] = counts["time_s"]
    block["time_formula"] = ("critical path M(F_0) + sum_k [M(S_k) + M(U_k + F_{k+1})] of "
                             "per-rank pieces alpha msgs + beta max(sent, recv) + flops / "
                             "gamma' (panel, solves and update; M = slowest rank, or the "
                             "makespan when ranks share cores; conflux_plan_counts)")
    return block


def candidate_table(n: int, p: int, mem_bytes: float, profile: MachineProfile,
                    tile_sizes: Sequence[int] = TILE_SIZES,
                    cores: int | None = None) -> list[dict]:
    """Every admissible (Px, Py, c, v) with its predicted bytes per rank (received, wire
    sent and received, logical sent), messages, memory and time (`cores`: the cores the
    p ranks share, None: one per rank). `wire_max` is the busiest rank's larger wire
    direction, max over ranks of max(sent, received): what the volume objective ranks."""
    rows = []
    tiles = [v for v in tile_sizes if v <= n] or [n]
    for px, py, c in grid_candidates(p):
        for v in tiles:
            if c > 1 and v // c < MIN_SLICE:
                continue
            counts = conflux_plan_counts(n, v, px, py, c, "uniform", profile, cores)
            costs = _costs(counts, "uniform")
            wire_sent, wire_recv, _ = costs.wire()
            mem = memory_words(n, v, px, py, c) * WORD
            rows.append({"px": px, "py": py, "c": c, "v": v,
                         "bytes_recv_max": float(costs.bytes_recv.max()),
                         "wire_sent_max": float(wire_sent.max()),
                         "wire_recv_max": float(wire_recv.max()),
                         "wire_max": float(np.maximum(wire_sent, wire_recv).max()),
                         "wire_mean": float(np.maximum(wire_sent, wire_recv).mean()),
                         "bytes_sent_max": float(costs.bytes_sent.max()),
                         "bytes_sent_mean": float(costs.bytes_sent.mean()),
                         "msgs_max": float(costs.msgs_sent.max()),
                         "mem_bytes": mem, "fits": mem <= mem_bytes,
                         "time_s": counts["time_s"]})
    return rows


OBJECTIVES = ("time", "volume")


def ranked(rows: list[dict], objective: str = "time") -> list[dict]:
    """The rows within memory, best first: by predicted time ("time"; within 0.1% the
    lesser wire volume first) or by the busiest rank's wire bytes ("volume"; ties by
    time)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    fitting = [row for row in rows if row["fits"]]
    if objective == "volume":
        return sorted(fitting, key=lambda r: (r["wire_max"], r["time_s"]))
    best = min((row["time_s"] for row in fitting), default=0.0)

    def by_time(row: dict) -> tuple:
        if row["time_s"] <= best * 1.001:
            return (0, row["wire_max"], row["time_s"])
        return (1, row["time_s"], row["wire_max"])

    return sorted(fitting, key=by_time)


def choose_config(n: int, p: int, mem_bytes: float, profile: MachineProfile,
                  tile_sizes: Sequence[int] = TILE_SIZES, cores: int | None = None,
                  objective: str = "time") -> tuple[int, int, int, int]:
    """(Px, Py, c, v) best for `objective` (`ranked`) among those within `mem_bytes`.

    Raises ValueError when nothing fits."""
    table = ranked(candidate_table(n, p, mem_bytes, profile, tile_sizes, cores), objective)
    if not table:
        raise ValueError(f"no {p}-rank grid fits N={n} in {mem_bytes / 2**20:.0f} MiB per rank")
    row = table[0]
    return row["px"], row["py"], row["c"], row["v"]
