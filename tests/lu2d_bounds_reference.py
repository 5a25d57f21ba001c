"""The reference the 2D LU's lower bound (`linalg_io.models.lu2d_bounds.time_seconds`)
is held to: `models/lu2d_bounds.py` at commit 13e1fc5, which took every grid's owned
rows from `numroc` (tests/test_lu2d_bounds_reference.py checks the new bounds equal
these bit for bit). Frozen: not edited with the model."""

from __future__ import annotations

import numpy as np
from linalg_io.models.lu2d import SAMPLED_ERROR, row_hops, sampled_steps
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import PANEL_RATE, gemm_efficiency, getrf_flops

from linalg_io.layout.blockcyclic import numroc
from linalg_io.layout.lu2d_steps import block_columns, candidate_words, panel_words
from linalg_io.layout.schedules import (
    CHUNK_BYTES,
    SMALL_BYTES,
    allgatherv_one_costs,
    chunk_count,
)
from linalg_io.layout.words import WORD

# relative: the bound's sums in another order than the model's
ROUNDING = 1e-6


def time_seconds(n: int, nb: int, pr: int, pc: int, profile: MachineProfile,
                 placement: Placement) -> float:
    """A lower bound on `lu2d.critical_path_time(n, nb, pr, pc, "expected", profile,
    placement)` (module doc)."""
    starts, widths = block_columns(n, nb)
    steps = len(starts)
    kb = widths.astype(float)
    ends = starts + widths
    k = np.arange(steps)
    owner_row, owner_col = (k + 1) % pr, (k + 1) % pc
    below = (numroc(n, nb, owner_row, pr) - numroc(ends, nb, owner_row, pr)).astype(float)
    trail = (numroc(n, nb, owner_col, pc) - numroc(ends, nb, owner_col, pc)).astype(float)
    gamma = profile.gamma_flops
    rate = float(gemm_efficiency(np.float64(nb))) * gamma
    cores = placement.shared_cores
    update = 2.0 * below * kb * trail / rate
    if cores is not None:
        update = np.maximum(update, 2.0 * kb * (n - ends) ** 2 / rate / cores)
    diag = k % pr
    diag_below = (numroc(n, nb, diag, pr) - numroc(ends, nb, diag, pr)).astype(float)
    panel = _panel_seconds(pr, pc, profile, placement, kb, diag, diag_below)
    solve = kb * kb * trail / (PANEL_RATE * gamma)
    if pr > 1:
        col_alpha, col_beta = profile.link(pr * pc, placement)
        left = n - ends                                  # rows below block k, every row's
        swapped = kb * (left - diag_below) / (left + kb)
        diagonal = (col_alpha * np.minimum(pr - 1, steps - 1 - k) * (trail > 0)
                    + col_beta * WORD * 2.0 * swapped * trail)
        solve = solve + np.maximum(col_beta * WORD * kb * (pr - 1) / pr * trail, diagonal)
    arrival = _arrival_seconds(pc, profile, placement, kb, below)
    first_cols = np.minimum(np.append(kb[1:], 0.0), trail)
    ahead = 2.0 * below * kb * first_cols / rate
    following = np.append(panel[1:], 0.0)
    after = np.append(arrival[1:], 0.0)
    if profile.overlaps(pc, placement):
        step = np.maximum(update + following, following + ahead + after)
    else:
        step = update + following + after
    total = panel[0] + arrival[0] + float((solve + step).sum())
    sampled = sampled_steps(steps, pr, pc) is not None
    return total * (1.0 - ROUNDING) * (1.0 - SAMPLED_ERROR if sampled else 1.0)


def _panel_seconds(pr: int, pc: int, profile: MachineProfile, placement: Placement,
                   kb: np.ndarray, diag: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """[step k]: F_k of the panel's diagonal rank (k mod Pr, k mod Pc), work + wait, as
    `critical_path_time` charges it; `rows`: its rows below block k."""
    getrf = getrf_flops(rows + kb, kb) / (PANEL_RATE * profile.gamma_flops)
    if pr == 1:
        return getrf
    alpha, beta = profile.link(pr * pc, placement, max(1, placement.ranks_per_node // pc))
    base, extra = candidate_words(kb)
    sent, recv, msgs = allgatherv_one_costs(pr, base * WORD, extra * WORD, diag, diag[:, None])
    return getrf + kb * (alpha * msgs[:, 0] + beta * np.maximum(sent, recv)[:, 0])


def _arrival_seconds(pc: int, profile: MachineProfile, placement: Placement,
                     kb: np.ndarray, below: np.ndarray) -> np.ndarray:
    """[step k]: a lower bound on bcast_L's arrival L_k (module doc); `below`[k]: a
    process row's rows below block k (B_k)."""
    if pc == 1:
        return np.zeros(len(kb))
    size = panel_words(kb, below) * WORD
    on_node, across, cross_in = row_hops(pc, profile, placement)
    hops = pc - 1
    crossing = cross_in.sum() - cross_in[np.arange(len(kb)) % pc]
    piece = np.minimum(size, CHUNK_BYTES)
    node_hop = on_node[0] + on_node[1] * piece
    net_hop = across[0] + across[1] * piece
    # the chain with its stream on either link, each increasing in the size (a node
    # hop less in the fill is more than made up by the stream's node_beta size)
    on_net = (across[1] * size + across[0] * chunk_count(size)
              + (crossing - 1) * net_hop + (hops - crossing) * node_hop)
    on_node_stream = (on_node[1] * size + on_node[0] * chunk_count(size)
                      + crossing * net_hop + (hops - crossing - 1) * node_hop)
    chain = np.where(crossing > 0, np.minimum(on_net, on_node_stream), on_node_stream)
    top = pc - 1
    depth = top.bit_length() - 1 + (((top + 1) & top) == 0)
    slots = int(np.count_nonzero(cross_in))
    tree_cross = min(depth, (slots - 1).bit_length() if slots else 0)
    tree = (tree_cross * (across[0] + across[1] * size)
            + (depth - tree_cross) * (on_node[0] + on_node[1] * size))
    return np.where(size > SMALL_BYTES, chain, np.minimum(chain, tree))
