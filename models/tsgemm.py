"""Model of the tall-and-skinny GEMM variants: traffic per rank and a roofline time.

Problem (`linalg-io tsgemm --help`): C = A B with A m x k, B k x n (tsm2r, tsm2l, ab), or
C = A^T B with A m x k, B m x n (atb); s = bytes per element. Rows of A (and of B
for atb) are cut into P contiguous blocks m_r (`row_blocks`: the first m mod P
blocks one row longer); the algorithms (linalg_io.tsgemm.distributed) use the same
function, so sizes agree by construction and the counts are checked against the
counting communicator.

Per rank r, the package's own point-to-point schedules (`linalg_io.layout.schedules`;
what they count is what crosses the wire; nothing moves when P = 1):
  tsm2l  B replicated beforehand: no traffic.
  ab     bcast of B (k n s) from rank 0: every other rank receives k n s (binomial
         tree, or a pipelined chain when large).
  atb    allreduce of the k x n partial products: reduce onto rank 0, then bcast
         (binomial, small): each rank sends k n s to its parent and to each child; the
         time takes the reduce and the bcast one after the other (`serial_costs`).
  tsm2r, 1D  A by rows, B by rows (k_r of its k rows on rank r): Bruck allgatherv of
         B: every rank receives (k - k_r) n s.
  tsm2r, 2D  Pr x Pc grid, A block (m_i x k_j) on rank (i, j), B piece k_j x n on
         rank (0, j): bcast down process column j (k_j n s), partial C (m_i x n)
         reduced along process row i onto rank (i, 0) (m_i n s).
Time per rank: max(memory bytes / mem_bw, flops / gamma) + the traffic's alpha msgs +
beta max(sent, received) at the rates of the links it crosses (`RankCosts.links`: the
1D collectives and the 2D broadcast down process columns span all P ranks, the 2D
reduction along a process row Pc consecutive ranks; `MachineProfile.link`), memory
bytes = s (A block + B (piece) + C block), gamma the profile's dgemm rate (doubled for
float32: twice the SIMD lanes); the run's time is the slowest rank's, or where they
share cores the longer of that and the makespan of their work (the network's waits
hold no core: `waiting_makespans`).
"""

from __future__ import annotations

from functools import partial

import numpy as np
from linalg_io.models.costs import RankCosts, link_split, serial_costs, waiting_makespans
from linalg_io.models.profile import MachineProfile, Placement

from linalg_io.errors import InputError
from linalg_io.layout.grid_shapes import square_2d
from linalg_io.layout.schedules import (
    allgatherv_costs,
    allgatherv_node_costs,
    allreduce_costs,
    bcast_costs,
    bcast_node_costs,
    reduce_costs,
    reduce_node_costs,
)

VARIANTS = ("tsm2r", "tsm2l", "atb", "ab")


SIZE_LIMIT = 2**62   # the per-rank arrays hold bytes and flops in 64-bit integers


def check_sizes(variant: str, m: int, n: int, k: int, itemsize: int) -> None:
    """InputError where the operands' bytes or the flops (2 m n k) pass 2^62, beyond the
    64-bit integers of the per-rank arrays (exact Python integers here)."""
    elements = m * k + m * n + k * n
    for what, value, unit in (("A, B and C take", itemsize * elements, "bytes"),
                        ("the product takes", 2 * m * n * k, "flops")):
        if value > SIZE_LIMIT:
            raise InputError(f"tsgemm {variant} m={m} n={n} k={k}: {what} {value:.3g} {unit}, "
                             "beyond the 2^62 (4.6e18) the model counts in")


def row_blocks(total: int, parts: int) -> np.ndarray:
    """Sizes of `parts` contiguous blocks of `total` rows (the first total mod parts get
    one more)."""
    base, extra = divmod(total, parts)
    return np.array([base + (1 if r < extra else 0) for r in range(parts)], dtype=np.int64)


def block_start(total: int, parts: int, index: int) -> int:
    """First row of block `index` of `row_blocks(total, parts)`."""
    return int(row_blocks(total, parts)[:index].sum())


def gamma_for(profile: MachineProfile, itemsize: int) -> float:
    """Flop rate of one rank for this element size (float32: twice the dgemm rate)."""
    return profile.gamma_flops * (8 / itemsize)


def grid_for(variant: str, p: int, dist: str) -> tuple[int, int]:
    """(Pr, Pc) of a distribution: (P, 1) for every 1D layout, the most square 2D grid
    for tsm2r with dist '2d'."""
    if variant == "tsm2r" and dist == "2d":
        return square_2d(p)
    return p, 1


def rank_costs(variant: str, m: int, n: int, k: int, p: int, itemsize: int,
               dist: str = "1d") -> tuple[RankCosts, np.ndarray]:
    """Per-rank traffic and flops (RankCosts) and memory bytes streamed (array)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} is not one of {VARIANTS}")
    s = itemsize
    sent, recv, msgs = np.zeros(p), np.zeros(p), np.zeros(p)
    ranks = np.arange(p)
    if variant == "tsm2r" and dist == "2d":
        pr, pc = grid_for(variant, p, dist)
        rows, cols = row_blocks(m, pr), row_blocks(k, pc)
        i, j = np.divmod(ranks, pc)
        down = tuple(np.asarray(a, dtype=float) for a in bcast_costs(i, pr, cols[j] * n * s))
        along = tuple(np.asarray(a, dtype=float) for a in reduce_costs(j, pc, rows[i] * n * s))
        sent, recv, msgs = (a + b for a, b in zip(down, along))
        flops = 2.0 * rows[i] * cols[j] * n
        memory = s * (rows[i] * cols[j] + cols[j] * n + rows[i] * n).astype(float)
        formula = (f"tsm2r 2D {pr}x{pc}: bcast of B piece k_j n s down process columns, "
                   f"reduce of partial C m_i n s along process rows")
        links = {p: down}     # process columns: stride Pc, the whole grid; rows: Pc ranks
        links[pc] = tuple(a + b for a, b in zip(links.get(pc, (0.0, 0.0, 0.0)), along))
        return RankCosts(sent, recv, msgs, flops, formula, links=links), memory

    rows = row_blocks(m, p)
    flops = 2.0 * rows * k * n
    if variant == "atb":
        memory = s * (rows * k + rows * n + k * n).astype(float)
    else:
        memory = s * (rows * k + k * n + rows * n).astype(float)
    links = None
    # a chain or tree over all P ranks in blocks of ranks per node: one rank of a node
    # sends to another node at a time (the link's second key, `MachineProfile.link`)
    if variant == "ab":
        sent, recv, msgs = bcast_costs(ranks, p, k * n * s)
        links = {(p, 1): (sent, recv, msgs)}
    elif variant == "atb":
        sent, recv, msgs = allreduce_costs(ranks, p, k * n * s)
        # the reduce, then the bcast: a rank's sends and receives overlap only within one
        links = {(p, 1): serial_costs(reduce_costs(ranks, p, k * n * s),
                                      bcast_costs(ranks, p, k * n * s))}
    elif variant == "tsm2r":
        sent, recv, msgs = allgatherv_costs(row_blocks(k, p) * n * s)
    node_traffic = partial(_node_traffic, variant, k * n * s, row_blocks(k, p) * n * s)
    formula = {
        "tsm2l": "B replicated beforehand: 0 bytes; local C_r = A_r B",
        "ab": "bcast of B (k n s) from rank 0: k n s received per rank; local C_r = A_r B",
        "atb": "allreduce of k x n partial A_r^T B_r (reduce onto rank 0, then bcast; "
               "binomial trees when small): k n s from each child and from the parent",
        "tsm2r": "tsm2r 1D: allgatherv of B by rows: (k - k_r) n s received",
    }[variant]
    return RankCosts(np.asarray(sent, dtype=float), np.asarray(recv, dtype=float),
                     np.asarray(msgs, dtype=float), flops, formula, links=links,
                     node_traffic=node_traffic), memory


def _node_traffic(variant: str, nbytes: float, blocks: np.ndarray,
                  placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """Inter-node (sent, received) bytes per rank of a 1D variant's collective over all
    P ranks: the messages between ranks on different nodes."""
    p = placement.p
    nodes = np.arange(p) // placement.ranks_per_node
    if variant == "tsm2l" or p == 1:
        return np.zeros(p), np.zeros(p)
    if variant == "tsm2r":
        return allgatherv_node_costs(blocks, nodes)
    spread = bcast_node_costs(p, nbytes, np.zeros(1), nodes)
    if variant == "ab":
        return spread
    gathered = reduce_node_costs(p, nbytes, np.zeros(1), nodes)
    return spread[0] + gathered[0], spread[1] + gathered[1]


def rank_times(costs: RankCosts, memory: np.ndarray, itemsize: int,
               profile: MachineProfile, placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """(work, wait) per rank: the roofline of the local product and the traffic's time
    on on-node links (work that takes its core), and on the network (a wait that does
    not; `link_split`)."""
    local = np.maximum(memory / profile.mem_bw_bytes_per_s,
                       costs.flops / gamma_for(profile, itemsize))
    links = costs.links or {placement.p: (costs.bytes_sent, costs.bytes_recv, costs.msgs_sent)}
    inside, across = link_split(links, profile, placement)
    return local + inside, np.broadcast_to(across, np.shape(local))


def run_time(costs: RankCosts, memory: np.ndarray, itemsize: int, profile: MachineProfile,
             placement: Placement) -> float:
    """The slowest rank's work + wait (`rank_times`), or the longer of that and the works'
    makespan where the ranks share cores (`waiting_makespans`)."""
    work, wait = rank_times(costs, memory, itemsize, profile, placement)
    return float(waiting_makespans(work[None], wait[None], placement.shared_cores)[0])


def choose_dist(m: int, n: int, k: int, p: int, itemsize: int,
                profile: MachineProfile, placement: Placement | None = None) -> str:
    """tsm2r: '1d' or '2d', whichever the model predicts faster (1D on a tie or P = 1)."""
    if p == 1:
        return "1d"
    placement = placement or profile.placement(p)
    times = {}
    for dist in ("1d", "2d"):
        costs, memory = rank_costs("tsm2r", m, n, k, p, itemsize, dist)
        times[dist] = run_time(costs, memory, itemsize, profile, placement)
    return "2d" if times["2d"] < times["1d"] else "1d"


def model_block(variant: str, m: int, n: int, k: int, p: int, itemsize: int, dist: str,
                profile: MachineProfile, placement: Placement | None = None) -> dict:
    """The record's `model` block, its time the roofline-plus-communication prediction."""
    placement = placement or profile.placement(p)
    costs, memory = rank_costs(variant, m, n, k, p, itemsize, dist)
    block = costs.record_block(profile, placement)
    block["time_s"] = run_time(costs, memory, itemsize, profile, placement)
    block["memory_bytes"] = {"max": float(memory.max()), "mean": float(memory.mean())}
    block["time_formula"] = ("max(memory bytes / mem_bw, flops / gamma) + alpha msgs + "
                             "beta max(sent, recv) per link and collective (atb: the reduce, "
                             "then the bcast), slowest rank (where ranks share cores, at "
                             "least the makespan of their work; waits on the network hold "
                             "no core)")
    return block


def lower_bound(variant: str, m: int, n: int, k: int, p: int, itemsize: int) -> dict | None:
    """Bytes some rank must receive, where a simple argument gives it.

    tsm2l: 0 (B is already everywhere). ab: k n s (a non-root rank needs all of B).
    atb: k n s (every rank ends with C, which depends on every rank's rows).
    tsm2r: none stated (it depends on how A may be laid out)."""
    if variant == "tsm2r":
        return None
    words = 0 if variant == "tsm2l" or p == 1 else k * n
    formula = {"tsm2l": "0: B replicated", "ab": "k n s: a non-root rank must obtain B",
               "atb": "k n s: every rank must obtain C, a function of all ranks' rows"}[variant]
    return {"bytes_per_rank": float(words * itemsize), "formula": formula}
