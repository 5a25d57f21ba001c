"""A proven lower bound on the 2D LU model's time, in O(steps): what the 2D grid search
(`linalg_io.lu.choice.bounded_2d`) may skip without evaluating it.

`time_seconds(n, nb, pr, pc, profile, placement)` bounds `critical_path_time` of
`linalg_io.models.lu2d` (pivoting "expected", as `lu_scan` and `model lu` time a 2D
grid) from below. That time is

    M(F_0) + L_0 + sum_k [M(S_k) + max(M(U_k + F_{k+1}), A_k + L_{k+1})]

(where the row's link does not overlap: max(M(U_k + F_{k+1}), A_k) + L_{k+1}), each M
the slowest rank's work + wait, or with shared cores the makespan of the works plus the
longest wait (`costs.waiting_makespans`): either way M >= every rank's work + wait, and
with C shared cores M >= the sum of the works over C. Per step k (block k ends at e_k,
kb_k wide, rate = gamma gemm(NB)), at the rank (r, c) = ((k+1) mod Pr,
(k+1) mod Pc), the owner of block k+1: the process row with the most rows below block k
(B_k) and the process column with the most trailing columns (T_k), also the
look-ahead's column and the panel k+1's diagonal row; terms of every other rank >= 0:

  U_k      2 B_k kb_k T_k / rate; with shared cores also 2 kb_k (N - e_k)^2 / rate / C
           (every rank's update: the rows and the columns are split among the grid);
  F_{k+1}  of that rank, as the model charges it: getrf ((b + kb) kb^2 - kb^3/3) at
           panel_rate gamma on its b rows below block k+1, and (Pr > 1) its kb candidate
           allgatherv's alpha msgs + beta max(sent, recv) on the panel's link
           (`allgatherv_one_costs`, the same call);
  A_k      its first min(kb_{k+1}, T_k) columns of U_k (in the look-ahead's term, >= 0);
  S_k      the trsm kb_k^2 T_k at panel_rate gamma, plus (Pr > 1) on the column's link
           the larger of: bcast_U's mean bytes over the process rows (the Bruck
           allgatherv's receiver gets every pivot row it does not own, `bruck_at`: total
           - own, and the pivot rows total kb_k: kb_k (Pr - 1)/Pr rows of T_k words), and
           the diagonal row's swap and bcast_U: its pivots "expected", each other row r
           with b_r > 0 rows below block k owns s_r = kb b_r / (N - e_k + kb) > 0 of
           them, so the diagonal row sends the swapped rows sum s_r = kb (N - e_k -
           b_d)/(N - e_k + kb) in min(Pr - 1, steps - 1 - k) messages (the rows holding
           a block after k, but itself) and receives them again in bcast_U: 2 sum s_r
           rows of T_k words;
  L_{k+1}  bcast_L's arrival (`lu2d._l_arrival`, `row_hops`' links and crossings) at a
           size s = 8 panel_words(kb, B_{k+1}) bytes <= the largest row's, which it
           takes: a chain (size > SMALL_BYTES) streams beta size + alpha chunks on the
           network (where a hop on the last rank's path crosses nodes and the network's
           hop is the slower) or on the node, and fills its other hops with a piece each;
           both forms grow with the size (the node-stream form's one node hop less in
           the fill, where every hop crosses, is made up by its node_beta size), so
           the lesser of the two at s is a bound; a binomial tree (<= SMALL_BYTES) pays
           its levels at their links' alpha + beta size; at s <= SMALL_BYTES the lesser
           of the chain's and the tree's.

So, for the pivoting a run's record assumes ("expected"; every term but the diagonal
row's swap holds for any pivoting),

  time >= F_0 + L_0 + sum_k [S_k + max(U_k + F_{k+1}, F_{k+1} + A_k + L_{k+1})]
(no overlap: U_k + F_{k+1} + L_{k+1}), less ROUNDING for the sums' order. Where the
model samples the steps (`lu2d.sampled_steps`, over EXACT_STEPS of them) its sum is an
estimate within lu2d.SAMPLED_ERROR of every step's (measured, not proven): the bound is
taken that much lower there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from linalg_io.models.lu2d import SAMPLED_ERROR, row_hops, sampled_steps
from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.models.rates import getrf_flops

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
    blocks = _blocks(n, nb)
    kb, ends, k = blocks.kb, blocks.ends, blocks.k
    steps = len(k)
    below = _owned_from(n, nb, pr, 1)
    trail = _owned_from(n, nb, pc, 1)
    gamma = profile.gamma_flops
    rate = float(profile.local.gemm(np.float64(nb))) * gamma
    cores = placement.shared_cores
    work = 2.0 * below * kb                              # the update's flops per column
    update = work * trail / rate
    if cores is not None:
        update = np.maximum(update, 2.0 * kb * (n - ends) ** 2 / rate / cores)
    diag = k % pr
    diag_below = _owned_from(n, nb, pr, pr)
    panel = _panel_seconds(pr, pc, profile, placement, blocks, diag, diag_below)
    solve = kb * kb * trail / (profile.local.panel * gamma)
    if pr > 1:
        col_alpha, col_beta = profile.link(pr * pc, placement)
        left = n - ends                                  # rows below block k, every row's
        swapped = kb * (left - diag_below) / (left + kb)
        diagonal = (col_alpha * np.minimum(pr - 1, steps - 1 - k) * (trail > 0)
                    + col_beta * WORD * 2.0 * swapped * trail)
        solve = solve + np.maximum(col_beta * WORD * kb * (pr - 1) / pr * trail, diagonal)
    arrival = _arrival_seconds(pc, profile, placement, kb, blocks.head + below * kb)
    first_cols = np.minimum(blocks.kb_next, trail)
    ahead = work * first_cols / rate
    following = np.append(panel[1:], 0.0)
    after = np.append(arrival[1:], 0.0)
    if profile.overlaps(pc, placement):
        step = np.maximum(update + following, following + ahead + after)
    else:
        step = update + following + after
    total = panel[0] + arrival[0] + float((solve + step).sum())
    sampled = sampled_steps(steps, pr, pc) is not None
    return total * (1.0 - ROUNDING) * (1.0 - SAMPLED_ERROR if sampled else 1.0)


@dataclass(frozen=True)
class _Blocks:
    """[step k] arrays of (N, NB), shared by every grid: the block columns' widths kb
    (and kb_{k+1}, 0 after the last), ends, k, and the `panel_words` of a row with no
    rows below."""

    kb: np.ndarray
    kb_next: np.ndarray
    ends: np.ndarray
    k: np.ndarray
    head: np.ndarray


@lru_cache(maxsize=2)
def _blocks(n: int, nb: int) -> _Blocks:
    starts, widths = block_columns(n, nb)
    kb = widths.astype(float)
    return _Blocks(kb=kb, kb_next=np.append(kb[1:], 0.0), ends=starts + widths,
                   k=np.arange(len(starts)), head=panel_words(kb, 0.0))


def _owned_from(n: int, nb: int, p: int, ahead: int) -> np.ndarray:
    """[step k]: the indices after block k (of NB, block-cyclic over p processes) that
    the owner of block k + `ahead` holds (numroc(N) - numroc(end of block k) of process
    (k + ahead) mod p): blocks j = k + ahead, j + p, .. up to the last, B - 1, every one
    NB wide but the last (N - (B - 1) NB); whole numbers, as floats."""
    last = -(-n // nb) - 1
    left = last - (np.arange(last + 1) + ahead)           # B - 1 - j, < 0: none
    owned = np.where(left >= 0, left // p + 1, 0) * nb
    short = (left >= 0) & (left % p == 0)                 # the last block among them
    return (owned - short * (nb * (last + 1) - n)).astype(float)


def _panel_seconds(pr: int, pc: int, profile: MachineProfile, placement: Placement,
                   blocks: _Blocks, diag: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """[step k]: F_k of the panel's diagonal rank (k mod Pr, k mod Pc), work + wait, as
    `critical_path_time` charges it; `rows`: its rows below block k. The diagonal
    rank's pivot search costs the same at every step of one width: timed at the first
    and the last step (every block column but the last is NB wide)."""
    kb = blocks.kb
    getrf = getrf_flops(rows + kb, kb) / (profile.local.panel * profile.gamma_flops)
    if pr == 1:
        return getrf
    alpha, beta = profile.link(pr * pc, placement, max(1, placement.ranks_per_node // pc))
    ends = [0, -1]
    base, extra = candidate_words(kb[ends])
    sent, recv, msgs = allgatherv_one_costs(pr, base * WORD, extra * WORD, diag[ends],
                                            diag[ends][:, None])
    search = kb[ends] * (alpha * msgs[:, 0] + beta * np.maximum(sent, recv)[:, 0])
    return getrf + np.where(blocks.k < len(kb) - 1, search[0], search[1])


def _arrival_seconds(pc: int, profile: MachineProfile, placement: Placement,
                     kb: np.ndarray, words: np.ndarray) -> np.ndarray:
    """[step k]: a lower bound on bcast_L's arrival L_k (module doc); `words`[k]: the
    `panel_words` of a process row with B_k rows below block k."""
    if pc == 1:
        return np.zeros(len(kb))
    size = words * WORD
    on_node, across, cross_in = row_hops(pc, profile, placement)
    hops = pc - 1
    crossing = cross_in.sum() - cross_in[np.arange(len(kb)) % pc]
    piece = np.minimum(size, CHUNK_BYTES)
    node_hop = on_node[0] + on_node[1] * piece
    net_hop = across[0] + across[1] * piece
    chunks = chunk_count(size)
    # the chain with its stream on either link, each increasing in the size (a node
    # hop less in the fill is more than made up by the stream's node_beta size)
    on_net = (across[1] * size + across[0] * chunks
              + (crossing - 1) * net_hop + (hops - crossing) * node_hop)
    on_node_stream = (on_node[1] * size + on_node[0] * chunks
                      + crossing * net_hop + (hops - crossing - 1) * node_hop)
    chain = np.where(crossing > 0, np.minimum(on_net, on_node_stream), on_node_stream)
    if (size > SMALL_BYTES).all():
        return chain
    top = pc - 1
    depth = top.bit_length() - 1 + (((top + 1) & top) == 0)
    slots = int(np.count_nonzero(cross_in))
    tree_cross = min(depth, (slots - 1).bit_length() if slots else 0)
    tree = (tree_cross * (across[0] + across[1] * size)
            + (depth - tree_cross) * (on_node[0] + on_node[1] * size))
    return np.where(size > SMALL_BYTES, chain, np.minimum(chain, tree))
