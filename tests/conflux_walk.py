"""The reference the fast COnfLUX model is held to: the per-rank walk of every step.

This is `models/conflux.py`'s `conflux_plan_counts` before the rank classes (commit
5419b77): full [layer, x, y] arrays, every schedule added on a mask of ranks, one step
at a time. Its counts are unchanged; its time takes the pieces of the current model
(the pivot ids' broadcast a piece I_k of its own; the traffic of each piece split by
the span of its communicators and charged at that link's rates), computed here the
slow way, rank by rank: where a group's members share nodes
(`linalg_io.models.conflux_nodes.node_groups`), each of its collectives' messages are
listed one by one (sender, receiver, bytes) between world ranks, and those whose ends
sit on different nodes are counted apart (`Messages`), on the links the model times
them on. tests/test_model_fast.py checks the two agree.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from linalg_io.models.conflux import WORD, link_keys
from linalg_io.models.conflux_nodes import HOP, NET, NODE, node_groups, timed_links
from linalg_io.models.conflux_pivots import DUST, TOURNAMENT_POOL_EXPONENT
from linalg_io.models.costs import link_split, waiting_makespans
from linalg_io.models.rates import PANEL_RATE, gemm_efficiency, getrf_flops

from linalg_io.layout.conflux_layout import StepPlan, butterfly_size
from linalg_io.layout.schedules import (
    SMALL_BYTES,
    allgatherv_costs,
    bcast_costs,
    binomial_child_positions,
    bruck_rounds,
    chunk_count,
    gatherv_costs,
    reduce_costs,
    scatterv_costs,
)


class Messages:
    """The messages of one collective on every instance of a group, between world ranks,
    and the (sent, received, messages) per rank [layer, x, y] of those whose ends sit on
    different nodes (ranks_per_node consecutive world ranks to a node)."""

    def __init__(self, shape: tuple, ranks_per_node: int) -> None:
        self.shape, self.per_node = shape, ranks_per_node
        self.across = [np.zeros(int(np.prod(shape))) for _ in range(3)]

    def send(self, sender: int, receiver: int, nbytes: float, count: float = 1.0) -> None:
        if nbytes > 0 and sender // self.per_node != receiver // self.per_node:
            self.across[0][sender] += nbytes
            self.across[1][receiver] += nbytes
            self.across[2][sender] += count

    def costs(self) -> tuple:
        return tuple(a.reshape(self.shape) for a in self.across)

    def bcast(self, ranks: list, root: int, nbytes: float) -> None:
        """A chain from the root (> SMALL_BYTES) or the binomial tree."""
        p = len(ranks)
        for q in range(p):
            if nbytes > SMALL_BYTES:
                if q < p - 1:
                    self.send(ranks[(root + q) % p], ranks[(root + q + 1) % p], nbytes,
                              chunk_count(nbytes))
            else:
                for child in binomial_child_positions(q, p):
                    self.send(ranks[(root + q) % p], ranks[(root + child) % p], nbytes)

    def reduce(self, ranks: list, root: int, nbytes: float) -> None:
        """The chain root+1 -> ... -> root, or the binomial tree upside down."""
        p = len(ranks)
        for q in range(p):
            if nbytes > SMALL_BYTES:
                if q > 0:
                    self.send(ranks[(root + q) % p], ranks[(root + q + 1) % p], nbytes,
                              chunk_count(nbytes))
            else:
                for child in binomial_child_positions(q, p):
                    self.send(ranks[(root + child) % p], ranks[(root + q) % p], nbytes)

    def gather(self, ranks: list, root: int, counts) -> None:
        """gatherv onto the root: one message per member."""
        for j, rank in enumerate(ranks):
            if j != root:
                self.send(rank, ranks[root], counts[j])

    def scatter(self, ranks: list, root: int, counts) -> None:
        """scatterv from the root: one message per member."""
        for j, rank in enumerate(ranks):
            if j != root:
                self.send(ranks[root], rank, counts[j])

    def bruck(self, ranks: list, counts) -> None:
        """allgatherv: in round (h, m) member j sends blocks j .. j+m-1 to j - h."""
        p = len(ranks)
        for h, m in bruck_rounds(p):
            for j in range(p):
                self.send(ranks[j], ranks[(j - h) % p],
                          sum(counts[(j + i) % p] for i in range(m)))

    def butterfly(self, ranks: list, shift: int, block: float) -> None:
        """The tournament's messages (`linalg_io.lu.tournament`), roles shifted."""
        p = len(ranks)
        q = butterfly_size(p)

        def real(role: int) -> int:
            return ranks[(role + shift) % p]

        for role in range(q, p):
            self.send(real(role), real(role - q), block)
            self.send(real(role - q), real(role), block)
        for role in range(q):
            bit = 1
            while bit < q:
                self.send(real(role), real(role ^ bit), block)
                bit *= 2


def merge_tree(px: int, k: int):
    """The tournament's merges at step k: a process row (int) or a pair (first, second)."""
    q = butterfly_size(px)
    nodes = [((r + k) % px, (r + q + k) % px) if r + q < px else (r + k) % px
             for r in range(q)]
    while len(nodes) > 1:
        nodes = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes), 2)]
    return nodes[0]


def tournament_pivots(active, w, k, beta=TOURNAMENT_POOL_EXPONENT):
    """The expected pivots per process row of one step, merge by merge (recursive)."""
    candidates = np.minimum(active, w)

    @cache
    def size(node):
        if isinstance(node, tuple):
            (n1, r1), (n2, r2) = size(node[0]), size(node[1])
            return min(w, n1 + n2), r1 + r2
        return candidates[node], active[node]

    def weight(n, rows):
        return n * (rows / n) ** beta if n > 0 else 0.0

    owned = np.zeros(len(active))

    def split(node, winners):
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


def pivot_counts(plan, pivots):
    """[step, process row] active rows before each step and pivots owned, step by step."""
    t = plan.tiles
    if isinstance(pivots, str) and pivots == "none":
        owned = [np.bincount(t.owner_row(np.arange(k * t.v, k * t.v + t.width(k))),
                             minlength=t.px).astype(float) for k in range(t.ntiles)]
    elif isinstance(pivots, str):
        rows = t.rows_per_proc.astype(float)
        owned = []
        for k in range(t.ntiles):
            share = (tournament_pivots(rows, t.width(k), k) if pivots == "uniform"
                     else rows / rows.sum() * t.width(k))
            share = np.where(rows - share < DUST, rows, share)
            owned.append(share)
            rows = rows - share
    else:
        owned = [np.bincount(t.owner_row(np.asarray(ids)), minlength=t.px).astype(float)
                 for ids in pivots]
    active = [t.rows_per_proc.astype(float)]
    for share in owned[:-1]:
        active.append(active[-1] - share)
    return np.array(active), np.array(owned)


def _fibre_scatter(rows_bytes, slices, lk, shape, axis):
    per_layer = scatterv_costs(np.multiply.outer(rows_bytes, slices), lk)
    out = []
    for a in per_layer:
        layered = np.moveaxis(a, -1, 0)
        out.append(np.broadcast_to(layered[:, :, None] if axis == "x" else layered[:, None, :],
                                   shape))
    return tuple(out)


def walk(n, v, px, py, c, pivots="none", profile=None, placement=None) -> dict:
    """Per-rank totals [layer, x, y] (sent, recv, msgs, flops), "across" {group: (sent,
    recv) between nodes} of the groups whose members share nodes and, with a profile, the
    critical-path time M(F_0) + sum_k [M(I_k) + M(S_k) + M(U_k + F_{k+1})]; with Py > 1
    and a core per rank (the look-ahead's sends started early) M(F_0) + sum_k M(I_k) +
    max over the ranks of sum_k [S_k + U_k + F_{k+1}]. With c = 1 and Px > 1, S_k on
    column ky_k (k >= 1) keeps of its pivot rows' allgather, on the links that overlap,
    only its excess over the rest of update k-1 there (`models/conflux.py _overlapped`)."""
    plan = StepPlan.create(n, v, px, py, c)
    tiles = plan.tiles
    p = c * px * py
    shape = (c, px, py)
    spans = link_keys(px, py, c, placement)
    groups = node_groups(px, py, c, placement)
    names = list(spans)
    index = {g: i for i, g in enumerate(names)}
    # [sent, recv, msgs, serial (sum of max(sent, recv) per collective)][group] per rank
    book = np.zeros((4, len(names)) + shape)
    flops = np.zeros(shape)
    L, X, Y = np.meshgrid(np.arange(c), np.arange(px), np.arange(py), indexing="ij")
    world = (L * px + X) * py + Y
    active, owned_all = pivot_counts(plan, pivots)
    q = butterfly_size(px)
    rounds = q.bit_length() - 1
    slow_flops = np.zeros(shape)
    pieces = []

    def add(group, mask, costs, across=None):
        """A collective's costs on `group`; `across` (part, schedule, calls): its part
        between nodes (HOP or NET), its `Messages` method and the arguments of each
        instance of the group (its members' world ranks first), for a group whose
        members share nodes: the messages between nodes kept apart."""
        if group.split("@")[0] in groups and across is not None:
            part, schedule, calls = across
            messages = Messages(shape, placement.ranks_per_node)
            for call in calls:
                getattr(messages, schedule)(list(call[0]), *call[1:])
            between = messages.costs()
            add(group + part, mask, between)
            add(group + NODE, mask, tuple(np.asarray(c_, dtype=float) - b_
                                          for c_, b_ in zip(costs, between)))
            return
        out, into, count = (mask * np.asarray(a, dtype=float) for a in costs)
        booked = book[:, index[group]]
        booked[0] += out
        booked[1] += into
        booked[2] += count
        booked[3] += np.maximum(out, into)

    def snapshot():
        """(the book, flops) so far: a piece's traffic is the difference of two."""
        return book.copy(), flops + slow_flops

    def piece(before, after):
        """(work, wait) per rank: flops and on-node messages, messages on the network."""
        moved = after[0] - before[0]
        traffic = {g: tuple(moved[:, i]) for i, g in enumerate(names) if moved[:, i].any()}
        links = timed_links(traffic, spans)   # (a group that sent nothing takes no time)
        inside, across = link_split(links, profile, placement)
        return (inside + (after[1] - before[1]) / profile.gamma_flops,
                np.broadcast_to(across, shape))

    def overlapping(before, after, mask):
        """(on the node, on the network) per rank of the traffic between two snapshots on
        `mask`, on the links whose messages move while the ranks compute."""
        moved = (after[0] - before[0]) * mask
        traffic = {g: tuple(moved[:, i]) for i, g in enumerate(names)}
        links = {key: costs for key, costs in timed_links(traffic, spans).items()
                 if profile.overlaps(key[0] if isinstance(key, tuple) else key, placement)}
        return link_split(links, profile, placement) if links else (0.0, 0.0)

    everyone = np.ones(shape, dtype=bool)
    previous_w = 0
    for step in plan.steps():
        owned = owned_all[step.k]
        w, ky, lk, kx = step.w, step.ky, step.lk, step.kx
        s = step.slices.astype(float)
        a = active[step.k][X]
        p_x = owned[X]
        b = a - p_x
        t_y = tiles.trailing_cols(step.k).astype(float)
        t = t_y[Y]
        sl = s[L]
        on_panel = Y == ky
        root = L == lk
        on_fibre = (L - lk) % c
        along_row = (Y - ky) % py
        down_col = (X - kx) % px
        start = snapshot()
        add("fibre@column", on_panel, reduce_costs(on_fibre, c, a * w * WORD),
            (HOP, "reduce", [(world[:, x_, ky], lk, a[0, x_, 0] * w * WORD)
                             for x_ in range(px)]))
        players = on_panel & root
        block = w * (w + 1) * WORD
        role = (X - step.k) % px
        if px > 1:
            folded = role >= q
            partner_folds = role < px - q
            n_sent = np.where(folded, 1, rounds + partner_folds)
            add("col@column", players, (n_sent * block, n_sent * block, n_sent),
                (NET, "butterfly", [(world[lk, :, ky], step.k, block)]))
        merges = np.where(role >= q, 0, rounds + (role < px - q))
        panel_flops = players * (getrf_flops(a, w) + merges * getrf_flops(2 * w, w))
        flops += panel_flops
        slow_flops += panel_flops * (1.0 / PANEL_RATE - 1.0)
        after_panel = snapshot()
        header_root = (lk * px + kx) * py + ky
        add("world", everyone, bcast_costs((world - header_root) % p, p, (w + 1) * WORD))
        after_ids = snapshot()
        solvers = root & (everyone if plan.redundant_u else X == kx)
        add("row", solvers, bcast_costs(along_row, py, w * w * WORD),
            (HOP, "bcast", [(world[lk, x_, :], ky, w * w * WORD) for x_ in range(px)]))
        flops += players * b * w * w
        slow_flops += players * b * w * w * (1.0 / PANEL_RATE - 1.0)
        add("fibre", everyone, reduce_costs(on_fibre, c, p_x * t * WORD),
            (HOP, "reduce", [(world[:, x_, y_], lk, owned[x_] * t_y[y_] * WORD)
                             for x_ in range(px) for y_ in range(py)]))
        column_blocks = np.outer(t_y, owned) * WORD
        before_rows = snapshot()
        if plan.redundant_u:
            spread = allgatherv_costs(column_blocks)
        else:
            spread = gatherv_costs(column_blocks, kx)
        add("col", root, tuple(np.transpose(a_)[None] for a_ in spread),
            (NET, "bruck", [(world[lk, :, y_], column_blocks[y_]) for y_ in range(py)])
            if plan.redundant_u else
            (NET, "gather", [(world[lk, :, y_], kx, column_blocks[y_]) for y_ in range(py)]))
        rows_moved = None
        if profile is not None and plan.redundant_u and px > 1 and step.k > 0:
            # the look-ahead: column ky's allgather, started in update k-1, beside the rest
            # of that update (2 a w_{k-1} t on the column)
            moved = overlapping(before_rows, snapshot(), on_panel & root)
            gemm = gemm_efficiency(float(previous_w))
            window = on_panel * root * 2.0 * a * previous_w * t / (gemm * profile.gamma_flops)
            rows_moved = moved, window * (max(1.0, p / placement.shared_cores)
                                          if placement.shared_cores else 1.0)
        previous_w = w
        flops += solvers * w * w * t
        slow_flops += solvers * w * w * t * (1.0 / PANEL_RATE - 1.0)
        if c > 1:
            add("fibre@column", on_panel,
                _fibre_scatter(b[0, :, 0] * WORD, s, lk, shape, axis="x"),
                (NET, "scatter", [(world[:, x_, ky], lk, b[0, x_, 0] * WORD * s)
                                  for x_ in range(px)]))
        add("row", everyone, bcast_costs(along_row, py, b * sl * WORD),
            (HOP, "bcast", [(world[l_, x_, :], ky, b[l_, x_, 0] * s[l_] * WORD)
                            for l_ in range(c) for x_ in range(px)]))
        if c > 1:
            u_from = everyone if plan.redundant_u else X == kx
            add("fibre@row" if u_from is not everyone else "fibre", u_from,
                _fibre_scatter(t_y * WORD, s, lk, shape, axis="y"),
                (NET, "scatter", [(world[:, x_, y_], lk, t_y[y_] * WORD * s)
                                  for x_ in (range(px) if plan.redundant_u else [kx])
                                  for y_ in range(py)]))
            if not plan.redundant_u:
                add("col", everyone, bcast_costs(down_col, px, sl * t * WORD),
                    (HOP, "bcast", [(world[l_, :, y_], kx, s[l_] * t_y[y_] * WORD)
                                    for l_ in range(c) for y_ in range(py)]))
        before_update = snapshot()
        flops += 2.0 * b * sl * t
        efficiency = gemm_efficiency(np.maximum(sl, 1.0))
        slow_flops += 2.0 * b * sl * t * (1.0 / efficiency - 1.0)
        if profile is not None:
            s_k = piece(after_ids, before_update)
            if rows_moved is not None:
                # S_k keeps of the moved part only its excess over the update's rest
                (inside, across), window = rows_moved
                excess = np.maximum(inside + across - window, 0.0)
                s_k = (s_k[0] - inside, np.maximum(s_k[1] - across, 0.0) + excess)
            pieces.append((piece(start, after_panel), piece(after_panel, after_ids),
                           s_k, piece(before_update, snapshot())))
    sent, recv, msgs = book[:3].sum(axis=1)
    out = {"sent": sent, "recv": recv, "msgs": msgs, "flops": flops,
           "across": {group: tuple(sum(book[i, index[key]] for key in spans
                                       if key.split("@")[0] == group and key.endswith((HOP, NET)))
                                   for i in (0, 1)) for group in groups}}
    if profile is not None:
        cores = placement.shared_cores

        def makespan(work, wait):
            return float(waiting_makespans(work.reshape(1, -1), wait.reshape(1, -1), cores)[0])

        total = makespan(*pieces[0][0])
        own = np.zeros(shape)
        for k, (_, i_k, s_k, u_k) in enumerate(pieces):
            f_next = pieces[k + 1][0] if k + 1 < len(pieces) else (0.0 * u_k[0], 0.0 * u_k[1])
            total += makespan(*i_k)
            if py == 1 or cores is not None:
                total += makespan(*s_k) + makespan(u_k[0] + f_next[0], u_k[1] + f_next[1])
            else:
                own += sum(part[0] + part[1] for part in (s_k, u_k, f_next))
        out["time_s"] = total + own.max()
    return out
