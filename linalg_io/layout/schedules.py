"""Point-to-point schedules of the package's collectives, as pure math (no MPI).

`linalg_io.comm.collectives` runs them with the counting communicator's Send/Recv;
the models count them with the functions here. Every byte then crosses the wire in
a message the package itself sends, so the bytes Open MPI's monitoring sees are the
bytes counted (`linalg_io.comm.wire`), and the model predicts both exactly. On a
communicator of p ranks with root r, positions q = (rank - r) mod p:

bcast, n bytes      n <= SMALL_BYTES: binomial tree (ceil(log2 p) rounds): q != 0
                    receives n once, from q - lowbit(q); q sends n to q + m for every
                    power of two m < lowbit(q) (root: m < p) with q + m < p.
                    n > SMALL_BYTES: pipelined chain r -> r+1 -> ... -> r-1 in pieces of
                    CHUNK_BYTES: every rank but the root receives n, every rank but
                    the last (q = p-1) sends n, in chunk_count(n) messages.
reduce (sum)        n <= SMALL_BYTES: the binomial tree upside down: q != 0 sends n to
                    its parent once; q receives n from each child.
                    n > SMALL_BYTES: pipelined chain r+1 -> r+2 -> ... -> r-1 -> r:
                    every rank but r+1 receives n, every rank but r sends n, in
                    chunk_count(n) messages.
allreduce (sum)     reduce onto rank 0, then bcast from it.
allgatherv          Bruck: ceil(log2 p) rounds; in round i (h = 2^i) rank q sends the
                    blocks q .. q+m-1 (m = min(h, p-h)) to q-h and receives q+h ..
                    q+h+m-1 from q+h: a rank receives every block but its own once,
                    and sends its own block in every round, block q+j in the rounds
                    with m > j (equal blocks of n: (p-1) n each way), one message per
                    round whose blocks are not all empty.
gatherv / scatterv  linear: the root exchanges each non-empty block with its rank
                    directly, one message each.
Messages to oneself never happen (the root's own block is a local copy).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from linalg_io._kernels.lu2d_points import bruck_nonempty, bruck_windows

CHUNK_BYTES = 1 << 20     # pipelined chain piece (1 MiB)
SMALL_BYTES = 1 << 14     # up to this a bcast/reduce takes the binomial tree (16 KiB)
SCIPY_FFT_SIZE = 1 << 20  # transforms this long and longer: SciPy's (`_transforms`)


def chunk_count(nbytes: float | np.ndarray) -> np.ndarray:
    """Messages of a chain hop moving `nbytes` (0 for nothing)."""
    n = np.asarray(nbytes, dtype=float)
    return np.where(n > 0, np.maximum(1.0, np.ceil(n / CHUNK_BYTES)), 0.0)


def chunk_bounds(nitems: int, itemsize: int) -> list[tuple[int, int]]:
    """[start, stop) item ranges of the chain's pieces of a buffer of `nitems` items."""
    per = max(1, CHUNK_BYTES // itemsize)
    return [(start, min(start + per, nitems)) for start in range(0, nitems, per)]


def uses_chain(nbytes: float) -> bool:
    return nbytes > SMALL_BYTES


def lowbit_span(q: np.ndarray, p: int) -> np.ndarray:
    """lowbit(q) for q > 0; for the root (q = 0) the smallest power of two >= p."""
    q = np.asarray(q, dtype=np.int64)
    top = 1 << max(0, int(p - 1).bit_length())
    return np.where(q > 0, q & -q, top)


def binomial_children(q: np.ndarray, p: int) -> np.ndarray:
    """Children of position q in the binomial tree over p ranks: the powers of two m
    below lowbit(q) (the root: below p) with q + m < p, that is below min(lowbit(q),
    p - q): bit_length(min(lowbit(q), p - q) - 1) of them (the exponent `np.frexp`
    gives, exact for any count of ranks below 2^53)."""
    q = np.asarray(q, dtype=np.int64)
    reach = np.minimum(lowbit_span(q, p), p - q)
    return np.asarray(np.frexp(np.maximum(reach - 1, 0))[1], dtype=np.int64)


def binomial_parent(q: int, p: int) -> int:
    return q - int(lowbit_span(np.array(q), p))


def binomial_child_positions(q: int, p: int) -> list[int]:
    """Children of q, in the order a bcast sends to them (largest subtree first)."""
    span = int(lowbit_span(np.array(q), p))
    out, m = [], span >> 1
    while m >= 1:
        if q + m < p:
            out.append(q + m)
        m >>= 1
    return out


def positions(rank: np.ndarray, root: np.ndarray | int, p: int) -> np.ndarray:
    return (np.asarray(rank) - np.asarray(root)) % p


def _tree_operands(q: np.ndarray, p: int, nbytes) -> tuple:
    """(q, n, the binomial children of q (a function: only a tree needs them), chain?,
    the shape of the result), for a bcast or a reduce: q and its children kept at q's
    shape, n and chain at n's (each part of the costs at the shape it varies along,
    broadcast only where q's and n's meet)."""
    q = np.asarray(q, dtype=np.int64)
    n = np.asarray(nbytes, dtype=float)
    return (q, n, lambda: binomial_children(q, p), n > SMALL_BYTES,
            np.broadcast_shapes(q.shape, n.shape))


def chosen(chain: np.ndarray, if_chain: Callable[[], np.ndarray],
           if_tree: Callable[[], np.ndarray]) -> np.ndarray:
    """np.where(chain, if_chain(), if_tree()), the same values: where every element
    takes one branch, that one alone evaluated (as float)."""
    if chain.all():
        return np.asarray(if_chain(), dtype=float)
    if not chain.any():
        return np.asarray(if_tree(), dtype=float)
    return np.where(chain, if_chain(), if_tree())


def bcast_costs(q: np.ndarray, p: int, nbytes: float | np.ndarray) -> tuple[np.ndarray, ...]:
    """(sent, received, messages) of the ranks at positions q of a bcast of n bytes."""
    q, n, children, chain, shape = _tree_operands(q, p, nbytes)
    if p <= 1:
        return (np.zeros(shape),) * 3
    sent = n * chosen(chain, lambda: (q < p - 1) * 1.0, children)
    msgs = chosen(chain, lambda: (q < p - 1) * chunk_count(n), lambda: children() * (n > 0))
    return sent, n * (q > 0), msgs


def reduce_costs(q: np.ndarray, p: int, nbytes: float | np.ndarray) -> tuple[np.ndarray, ...]:
    """(sent, received, messages) of the ranks at positions q (root q = 0) of a sum."""
    q, n, children, chain, shape = _tree_operands(q, p, nbytes)
    if p <= 1:
        return (np.zeros(shape),) * 3
    recv = n * chosen(chain, lambda: q != 1, children)
    msgs = (q > 0) * chosen(chain, lambda: chunk_count(n), lambda: n > 0)
    return n * (q > 0), recv, msgs


def bruck_rounds(p: int) -> list[tuple[int, int]]:
    """(h, m) per round of the Bruck allgather over p ranks."""
    rounds, h = [], 1
    while h < p:
        rounds.append((h, min(h, p - h)))
        h += min(h, p - h)
    return rounds


def allgatherv_costs(counts_bytes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(sent, received, messages) per rank of the Bruck allgatherv of the blocks
    (bytes of rank j's block in counts_bytes[..., j]; leading axes are independent
    communicators of the same size). A round's window q .. q+m-1 is a difference of
    cyclic prefix sums (O(p log p), not O(p^2)); with equal blocks, m of them."""
    counts = np.asarray(counts_bytes, dtype=float)
    sent, recv = allgatherv_bytes(counts)
    return sent, recv, bruck_messages(counts > 0)


def allgatherv_bytes(counts_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sent, received) of `allgatherv_costs`, without its messages."""
    counts = np.asarray(counts_bytes, dtype=float)
    p = counts.shape[-1]
    recv = counts.sum(axis=-1, keepdims=True) - counts    # every block but its own, once
    sizes = sum(m for _, m in bruck_rounds(p))
    sent = np.broadcast_to(counts[..., :1] * sizes, counts.shape).copy()   # equal blocks
    unequal = ~(counts == counts[..., :1]).all(axis=-1)
    # each round's window q .. q+m-1, summed round by round (compiled: a row at a time)
    sent[unequal] = bruck_windows(counts[unequal], _round_order(p))
    return sent, recv


def bruck_messages(nonempty: np.ndarray) -> np.ndarray:
    """Messages per rank of a Bruck allgatherv whose non-empty blocks are `nonempty`
    [..., rank]: one per round whose window holds one."""
    p = nonempty.shape[-1]
    msgs = np.full(nonempty.shape, float(len(bruck_rounds(p))))  # every window holds one ...
    some_empty = ~nonempty.all(axis=-1)                          # ... but where some are empty
    # each round's windows that hold one (compiled: a row at a time)
    msgs[some_empty] = bruck_nonempty(
        np.ascontiguousarray(nonempty[some_empty], dtype=np.uint8).reshape(-1, p),
        _round_order(p))
    return msgs


def _cyclic_prefix(values: np.ndarray) -> np.ndarray:
    """[..., 2p + 1] sums of the first j entries of `values` repeated twice."""
    dtype = np.cumsum(np.zeros(1, dtype=values.dtype)).dtype     # cumsum's (int: int64)
    prefix = np.empty(values.shape[:-1] + (2 * values.shape[-1] + 1,), dtype=dtype)
    prefix[..., 0] = 0
    np.cumsum(np.concatenate([values, values], axis=-1), axis=-1, out=prefix[..., 1:])
    return prefix


def allgatherv_one_costs(p: int, base, extra, owner,
                         ranks: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """`allgatherv_costs` of blocks of `base` bytes but rank `owner`'s, base + extra >
    base (arguments broadcast over leading axes; result [..., rank]) in O(p): a rank q
    sends `extra` once in every round whose window q .. q+m-1 holds the owner, that is
    whose m exceeds d = (owner - q) mod p. `ranks`: the ranks [..., i] to give (default
    all)."""
    base, extra, owner = (np.asarray(a)[..., None] for a in (base, extra, owner))
    ranks = np.arange(p) if ranks is None else np.asarray(ranks)
    sizes, total = _round_sizes(p)
    d = owner - ranks                   # mod p: both ranks of the p
    d = np.where(d < 0, d + p, d)
    held = _rounds_beyond(p)[d]
    sent = base * total + extra * held
    recv = base * float(p - 1) + extra * (ranks != owner)
    msgs = np.where(base > 0, float(len(sizes)), held)
    return sent, recv, msgs


@lru_cache(maxsize=8)
def _rounds_beyond(p: int) -> np.ndarray:
    """[d]: the Bruck rounds over p ranks whose m exceeds d, d = 0 .. p-1, as floats."""
    sizes = _round_sizes(p)[0]
    held = (len(sizes) - np.searchsorted(sizes, np.arange(p), side="right")).astype(float)
    held.flags.writeable = False
    return held


@lru_cache(maxsize=64)
def _round_order(p: int) -> np.ndarray:
    """The m of the Bruck rounds over p ranks, in their order (int64)."""
    sizes = np.array([m for _, m in bruck_rounds(p)], dtype=np.int64)
    sizes.flags.writeable = False
    return sizes


@lru_cache(maxsize=64)
def _round_sizes(p: int) -> tuple[np.ndarray, float]:
    """(the m of the Bruck rounds over p ranks, sorted; their sum)."""
    sizes = np.sort(_round_order(p))
    sizes.flags.writeable = False
    return sizes, float(sizes.sum())


def _linear(counts_bytes: np.ndarray, root: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each rank's block but the root's, the root's total of them, is_root)."""
    counts = np.asarray(counts_bytes, dtype=float)
    is_root = np.arange(counts.shape[-1]) == root
    others = np.where(is_root, 0.0, counts)
    return others, np.where(is_root, others.sum(axis=-1, keepdims=True), 0.0), is_root


def gatherv_costs(counts_bytes: np.ndarray, root: int) -> tuple[np.ndarray, ...]:
    """(sent, received, messages) per rank of a linear gatherv onto `root`."""
    others, at_root, _ = _linear(counts_bytes, root)
    return others, at_root, (others > 0) * 1.0


def scatterv_costs(counts_bytes: np.ndarray, root: int) -> tuple[np.ndarray, ...]:
    """(sent, received, messages) per rank of a linear scatterv from `root`."""
    others, at_root, is_root = _linear(counts_bytes, root)
    return at_root, others, np.where(is_root, (others > 0).sum(axis=-1, keepdims=True), 0) * 1.0


def allreduce_costs(rank: np.ndarray, p: int, nbytes: float) -> tuple[np.ndarray, ...]:
    """(sent, received, messages) per rank of reduce onto rank 0 then bcast from it."""
    q = positions(rank, 0, p)
    reduced = reduce_costs(q, p, nbytes)
    spread = bcast_costs(q, p, nbytes)
    return tuple(a + b for a, b in zip(reduced, spread))


def bcast_node_costs(p: int, nbytes: float, roots: np.ndarray,
                     nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sent, received) bytes per rank of a communicator of p ranks that cross nodes,
    summed over bcasts of `nbytes` from each of `roots` (rank i on node nodes[i]): the
    tree's or the chain's edges (q's parent q - lowbit(q), or q - 1) whose two ends sit
    on different nodes."""
    q = np.arange(1, p)
    parent_pos = q - 1 if uses_chain(nbytes) else q - (q & -q)
    roots = np.asarray(roots, dtype=np.int64)[:, None]
    child, parent = (roots + q) % p, (roots + parent_pos) % p
    crossing = (nodes[child] != nodes[parent]) * float(nbytes)
    return (np.bincount(parent.ravel(), crossing.ravel(), minlength=p),
            np.bincount(child.ravel(), crossing.ravel(), minlength=p))


def transform_size(p: int) -> int:
    """The length of the transforms of a cyclic convolution of P terms
    (`cyclic_convolution`): P a power of two, else the power of two >= 2 P - 1 (the
    linear convolution, folded onto P): NumPy's transforms of a length with a large
    prime factor (Bluestein's) take several times those of the power of two twice as
    long (0.5 s each at P = 1048573)."""
    return p if p & (p - 1) == 0 else 1 << (2 * p - 2).bit_length()


def spectrum_of(x: np.ndarray, p: int) -> np.ndarray:
    """The real transform of `x` (P terms), `transform_size(p)` long, for
    `cyclic_convolution`."""
    size = transform_size(p)
    return _transforms(size).rfft(x, n=size)


def _transforms(size: int):
    """The FFT module for transforms of `size`: SciPy's from SCIPY_FFT_SIZE on (a third
    faster than NumPy's at 2^21), imported on first use (0.2 s, which a small P's
    transforms would never repay), else NumPy's. Either's convolutions of integers
    round to the same integers."""
    if size < SCIPY_FFT_SIZE:
        return np.fft
    from scipy import fft

    return fft


def cyclic_convolution(product: np.ndarray, p: int) -> np.ndarray:
    """The cyclic convolution of two sequences of P terms, `product` their transforms'
    product (`spectrum_of` each): the inverse transform, its term r + P added onto term
    r where it is the linear convolution."""
    size = transform_size(p)
    linear = _transforms(size).irfft(product, n=size)
    if size == p:
        return linear
    cyclic = linear[:p].copy()
    cyclic[:p - 1] += linear[p:2 * p - 1]
    return cyclic


def bcast_node_costs_counted(p: int, nbytes: float, root_counts: np.ndarray,
                             nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`bcast_node_costs` of root_counts[r] bcasts from each rank r, in O(p) or O(p log p)
    a distance instead of O(p) a root. An edge joins position q to q - d (d = lowbit(q)
    on the tree, 1 on the chain) and crosses nodes where its two ranks do, which for the
    child rank X = r + q depends on X and d alone, not on the root: the received bytes
    are sum_d [X and X - d on different nodes] x (the root counts cyclically convolved
    with the positions of distance d), the sent bytes likewise at the parent X, with X +
    d. The tree's positions of distance d are q = d mod 2d, their parents q = 0 mod 2d:
    where 2d divides p, whole residue classes, whose convolution is a sum of the counts
    per residue; else an FFT (`cyclic_convolution`; the distances whose edges cross at
    every rank in one). Exact: integer counts."""
    recv, sent = np.zeros(p), np.zeros(p)
    if p <= 1:
        return sent, recv
    chain = uses_chain(nbytes)
    ranks = np.arange(p)
    nodes = np.asarray(nodes)
    counts = np.asarray(root_counts, dtype=float)
    spectrum = None     # the root counts', made the first time an FFT is needed

    def by_fft(positions: np.ndarray) -> np.ndarray:
        """Per rank X: the bcasts in which X sits at one of `positions`."""
        nonlocal spectrum
        if spectrum is None:
            spectrum = spectrum_of(counts, p)
        where = np.bincount(positions, minlength=p).astype(float)
        return np.rint(cyclic_convolution(spectrum * spectrum_of(where, p), p))

    for out, sign in ((recv, -1), (sent, 1)):
        everywhere = []
        for d in [1] if chain else [1 << i for i in range((p - 1).bit_length())]:
            crossing = nodes != np.roll(nodes, -sign * d)      # X's and X + sign d's
            if not crossing.any():
                continue
            # the positions of the edges' children (sign -1) or parents
            if chain:
                at = ranks[1:] if sign < 0 else ranks[:-1]
            else:
                at = np.arange(d, p, 2 * d) - (0 if sign < 0 else d)
            if not chain and p % (2 * d) == 0:                # at: one residue mod 2d
                per_residue = np.roll(counts.reshape(-1, 2 * d).sum(axis=0), at[0])
                out += np.tile(per_residue, p // (2 * d)) * crossing
            elif crossing.all():
                everywhere.append(at)
            else:
                out += by_fft(at) * crossing
        if everywhere:
            out += by_fft(np.concatenate(everywhere))
    return sent * float(nbytes), recv * float(nbytes)


def reduce_node_costs(p: int, nbytes: float, roots: np.ndarray,
                      nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`bcast_node_costs` of reduces onto `roots`: the binomial tree's edges upside down,
    or the chain r+1 -> r+2 -> ... -> r-1 -> r."""
    if not uses_chain(nbytes):
        sent, recv = bcast_node_costs(p, nbytes, roots, nodes)
        return recv, sent
    q = np.arange(1, p)
    roots = np.asarray(roots, dtype=np.int64)[:, None]
    sender, receiver = (roots + q) % p, (roots + (q + 1) % p) % p
    crossing = (nodes[sender] != nodes[receiver]) * float(nbytes)
    return (np.bincount(sender.ravel(), crossing.ravel(), minlength=p),
            np.bincount(receiver.ravel(), crossing.ravel(), minlength=p))


def allgatherv_node_costs(counts_bytes: np.ndarray,
                          nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sent, received) bytes per rank of the Bruck allgatherv (`allgatherv_costs`) in
    messages between ranks on different nodes (rank i on node nodes[i]; leading axes of
    `counts_bytes` are independent communicators of the same size and placement)."""
    counts = np.asarray(counts_bytes, dtype=float)
    p = counts.shape[-1]
    prefix = _cyclic_prefix(counts)
    q = np.arange(p)
    sent, recv = np.zeros(counts.shape), np.zeros(counts.shape)
    for h, m in bruck_rounds(p):
        window = prefix[..., m:m + p] - prefix[..., :p]   # q sends blocks q..q+m-1 to q-h
        crossing = (nodes[q] != nodes[(q - h) % p]) * window
        sent += crossing
        recv[..., (q - h) % p] += crossing                # a permutation: no repeats
    return sent, recv
