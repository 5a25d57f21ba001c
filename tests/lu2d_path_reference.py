"""The reference the 2D LU's critical path is held to: `critical_path_time` of
`models/lu2d.py` at commit 5b96ce3, which evaluated every step on the whole [step, Pr, Pc]
grid of ranks (chunks of STEP_CHUNK entries) before the rank classes.
tests/test_model_identity.py checks the class evaluation gives the same seconds. Since
then a process row that spans nodes crosses a link only between its nodes: where its
hops cross, the L arrival is the model's own (`_l_arrival` with `row_hops`), the rest
as at 5b96ce3."""

from __future__ import annotations

import numpy as np
from linalg_io.models.costs import waiting_makespans
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import PANEL_RATE, gemm_efficiency
from lu2d_reference import (
    WORD,
    _ColumnSeconds,
    _l_arrival,
    _plan,
    _work_or_wait,
    row_hops,
)

from linalg_io.layout.blockcyclic import counts_from
from linalg_io.layout.schedules import (
    CHUNK_BYTES,
    SMALL_BYTES,
    allgatherv_one_costs,
    chunk_count,
)

STEP_CHUNK = 1 << 22      # [step, Pr, Pc] entries evaluated at once


def critical_path_time(n: int, nb: int, pr: int, pc: int, pivoting, profile: MachineProfile,
                       placement: Placement) -> float:
    """Seconds of the 2D LU as its code ran at 5b96ce3 (linalg_io/lu/lu2d.py), per step k:

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
    trail = counts_from(plan.starts + plan.widths, n, nb, pc).astype(float)
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
    hops = row_hops(pc, profile, placement)
    arrival = (_l_arrival(plan, pc, *hops) if hops[2].any()
               else l_arrival(plan, pc, row_alpha, row_beta))
    column = _ColumnSeconds(plan, nb, pr, pivoting, col_alpha, col_beta)
    solve = (kb * kb * trail / (PANEL_RATE * gamma))[:, None, :]
    rate = float(gemm_efficiency(np.float64(nb))) * gamma
    steps = len(plan.starts)
    on_first = np.arange(pc) == 0
    total = float(waiting_makespans((panel[0][:, None] * on_first).reshape(1, -1),
                                    (panel_wait[0][:, None] * on_first).reshape(1, -1),
                                    cores)[0]) + float(arrival[0])
    chunk = max(1, STEP_CHUNK // (pr * pc))
    for first in range(0, steps, chunk):
        k = np.arange(first, min(steps, first + chunk))
        update = 2.0 * below[k][:, :, None] * kb[k][:, :, None] * trail[k][:, None, :] / rate
        ahead = np.minimum(k + 1, steps - 1)
        has_next = (k + 1 < steps)[:, None, None]
        la = (np.arange(pc)[None, :] == (ahead % pc)[:, None])[:, None, :]   # [k, 1, pc]
        f_next = panel[ahead][:, :, None] * la * has_next
        f_wait = panel_wait[ahead][:, :, None] * la * has_next
        first_cols = np.minimum(kb[ahead][:, 0], trail[k, ahead % pc])
        share = first_cols / np.maximum(trail[k, ahead % pc], 1.0)
        lead = (((update * la).max(axis=2) * share[:, None] + panel[ahead]) * slow
                + panel_wait[ahead]).max(axis=1)
        after = np.where(has_next[:, 0, 0], arrival[ahead], 0.0)
        swap_work, s_wait = _work_or_wait(_column_seconds(column, trail, k),
                                          col_net)   # [k, pr, pc]
        s_work = solve[k] + swap_work
        s_k = waiting_makespans(s_work.reshape(len(k), -1), s_wait.reshape(len(k), -1), cores)
        u_k = waiting_makespans((update + f_next).reshape(len(k), -1),
                                np.broadcast_to(f_wait, update.shape).reshape(len(k), -1), cores)
        if row_overlap:
            step = np.maximum(u_k, np.where(has_next[:, 0, 0], lead, 0.0) + after)
        else:   # L_{k+1} moves once the receivers are back in MPI, after their update
            step = np.maximum(u_k, np.where(has_next[:, 0, 0], lead, 0.0)) + after
        total += float((s_k + step).sum())
    return total


def _column_seconds(column: _ColumnSeconds, trail: np.ndarray, k: np.ndarray) -> np.ndarray:
    """[step, process row, process column] link seconds of the swap and bcast_U at the
    steps k (the `_ColumnSeconds.__call__` of 5b96ce3)."""
    trail = trail[k][:, None, :]
    if column.pr == 1:
        return np.zeros(trail.shape)
    return (column.alpha * column.msgs[k][:, :, None] * (trail > 0)
            + column.beta * column.bytes[k][:, :, None] * trail)


def l_arrival(plan, pc: int, alpha: float, beta: float) -> np.ndarray:
    """`_l_arrival` of 5b96ce3: the max over every position of the row, step by step."""
    if pc == 1:
        return np.zeros(len(plan.kb))
    size = ((plan.kb * (plan.kb - 1) // 2 + plan.kb + 1 + plan.below * plan.kb) * WORD).max(
        axis=1, keepdims=True)
    k = np.arange(len(plan.kb))
    q = (np.arange(pc)[None, :] - (k % pc)[:, None]) % pc
    chain = beta * size + alpha * chunk_count(size) + np.maximum(q - 1, 0) * (
        alpha + beta * np.minimum(size, CHUNK_BYTES))
    depth = np.array([i.bit_count() for i in range(pc)])[q]
    tree = depth * (alpha + beta * size)
    return (np.where(size > SMALL_BYTES, chain, tree) * (q > 0)).max(axis=1)
