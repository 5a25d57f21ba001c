# cython: language_level=3
# distutils: extra_compile_args = -ffp-contract=off
"""A process column's crossings between nodes at every member, for the 2.5D LU model
(`linalg_io.models.conflux_nodes.Members`, `bruck_across`): [row, member] tables
whose every element is its own short loop, where NumPy would pass over the whole table
once per bit or round (a column of 2^17 members on shared nodes: 17 passes each).
`nodes` [g] is each member's node; member m's neighbours are taken mod g.

butterfly_counts(nodes, shifts)
    [i, member] the tournament's exchanges with a partner on another node at the roles
    shifted by shifts[i] (0 <= shift < g): role = (member - shift) mod g; q the largest
    power of two <= g; role >= q folds onto role - q, role < q with role + q < g
    receives role + q's fold, and role < q exchanges with role ^ bit for each bit < q;
    the partner of role t is member (t + shift) mod g.
hops_table(nodes, roots)
    (cross_in, cross_out, parent, children, from_root) [i, member] at roots[i] (0 <=
    root < g): q = (member - root) mod g, span = lowbit(q) (q = 0: the least power of
    two >= g); cross_in / cross_out: member - 1 / member + 1 on another node; parent:
    q > 0 and member root + q - span on another node; children (float): the powers of
    two m < g with m < span and q + m < g whose member root + q + m is on another node;
    from_root: the root on another node.
bruck_across(counts, nodes, hs, ms)
    (sent, recv, msgs) [row, member] between nodes of the Bruck allgatherv of blocks
    counts[row] (C-contiguous): in each round (hs[i], ms[i]), in order, member q sends
    its window q .. q + m - 1 (cyclic), P(q + m) - P(q) with P the prefix sums of the
    row twice over (each the one before plus the next, as np.cumsum makes them), to q
    - h where the two sit on different nodes: sent[q] and recv[q - h] add the window,
    msgs[q] adds 1 where it is > 0; each element's additions in the order of the rounds,
    bit for bit NumPy's pass per round. With `every`, also the allgatherv's own (sent,
    messages) on and between nodes (`linalg_io.layout.schedules.allgatherv_costs` of
    rows of unequal blocks, bit for bit): each member's windows summed over the rounds
    in order, and the rounds whose window holds a block > 0.
"""
import numpy as np
cimport numpy as cnp

cnp.import_array()


cdef inline double _apart(const cnp.int64_t* nodes, Py_ssize_t at, Py_ssize_t g,
                          cnp.int64_t mine) noexcept nogil:
    """1.0 where member at mod g (0 <= at < 2g) sits on another node than `mine`."""
    if at >= g:
        at = at - g
    return 1.0 if nodes[at] != mine else 0.0


def butterfly_counts(const cnp.int64_t[::1] nodes not None,
                     const cnp.int64_t[::1] shifts not None):
    cdef Py_ssize_t g = nodes.shape[0], rows = shifts.shape[0]
    cdef Py_ssize_t q = 1, i, real, role, shift, partner, bit
    cdef cnp.int64_t mine
    cdef double count
    while 2 * q <= g:
        q *= 2
    for i in range(rows):
        if not 0 <= shifts[i] < g:
            raise ValueError("butterfly_counts: a shift within 0 .. g - 1")
    out = np.empty((rows, g))
    cdef double[:, ::1] table = out
    with nogil:
        for i in range(rows):
            shift = shifts[i]
            for real in range(g):
                role = real - shift
                if role < 0:
                    role = role + g
                mine = nodes[real]
                count = 0.0
                partner = -1
                if role >= q:
                    partner = role - q
                elif role + q < g:
                    partner = role + q
                if partner >= 0:
                    count = count + _apart(&nodes[0], partner + shift, g, mine)
                if role < q:
                    bit = 1
                    while bit < q:
                        count = count + _apart(&nodes[0], (role ^ bit) + shift, g, mine)
                        bit = bit * 2
                table[i, real] = count
    return out


def hops_table(const cnp.int64_t[::1] nodes not None, const cnp.int64_t[::1] roots not None):
    cdef Py_ssize_t g = nodes.shape[0], rows = roots.shape[0]
    cdef Py_ssize_t top = 1, i, member, root, q, span, m
    cdef cnp.int64_t mine
    cdef double children
    while top < g:
        top *= 2
    for i in range(rows):
        if not 0 <= roots[i] < g:
            raise ValueError("hops_table: a root within 0 .. g - 1")
    cross_in_np = np.empty((rows, g), dtype=bool)
    cross_out_np = np.empty((rows, g), dtype=bool)
    parent_np = np.empty((rows, g), dtype=bool)
    children_np = np.empty((rows, g))
    from_root_np = np.empty((rows, g), dtype=bool)
    cdef cnp.npy_bool[:, ::1] cross_in = cross_in_np, cross_out = cross_out_np
    cdef cnp.npy_bool[:, ::1] parent = parent_np, from_root = from_root_np
    cdef double[:, ::1] kids = children_np
    with nogil:
        for i in range(rows):
            root = roots[i]
            for member in range(g):
                mine = nodes[member]
                cross_in[i, member] = mine != nodes[member - 1 if member > 0 else g - 1]
                cross_out[i, member] = mine != nodes[member + 1 if member + 1 < g else 0]
                from_root[i, member] = mine != nodes[root]
                q = member - root
                if q < 0:
                    q = q + g
                span = q & -q if q > 0 else top
                parent[i, member] = q > 0 and _apart(&nodes[0], root + q - span, g, mine) > 0
                children = 0.0
                m = 1
                while m < g and m < span and q + m < g:
                    children = children + _apart(&nodes[0], root + q + m, g, mine)
                    m = m * 2
                kids[i, member] = children
    return cross_in_np, cross_out_np, parent_np, children_np, from_root_np


def bruck_across(const double[:, ::1] counts not None, const cnp.int64_t[::1] nodes not None,
                 const cnp.int64_t[::1] hs not None, const cnp.int64_t[::1] ms not None,
                 bint every=False):
    cdef Py_ssize_t rows = counts.shape[0], p = counts.shape[1], rounds = hs.shape[0]
    cdef Py_ssize_t r, j, i, q, t, h, m
    cdef double window, total, held
    if nodes.shape[0] != p or ms.shape[0] != rounds:
        raise ValueError("bruck_across: a node per member and a size per round")
    for i in range(rounds):
        if not (0 < hs[i] < p and 0 < ms[i] <= p):
            raise ValueError("bruck_across: a round's distance within 1 .. p - 1")
    sent_np, recv_np, msgs_np = np.zeros((rows, p)), np.zeros((rows, p)), np.zeros((rows, p))
    cdef double[:, ::1] sent = sent_np, recv = recv_np, msgs = msgs_np
    cdef Py_ssize_t kept = rows if every else 0
    every_sent_np, every_msgs_np = np.empty((kept, p)), np.empty((kept, p))
    cdef double[:, ::1] every_sent = every_sent_np, every_msgs = every_msgs_np
    prefix_np = np.empty(2 * p + 1)
    cdef double* prefix = <double*> cnp.PyArray_DATA(prefix_np)
    # (every) each member's distance to the next block > 0, cyclic (p: none): a window
    # q .. q + m - 1 holds one where m exceeds it
    reach_np = np.empty(p if every else 0, dtype=np.int64)
    cdef cnp.int64_t[::1] reach = reach_np
    cdef cnp.int64_t nearest
    with nogil:
        for r in range(rows):
            prefix[0] = 0.0
            for j in range(2 * p):
                prefix[j + 1] = prefix[j] + counts[r, j if j < p else j - p]
            if every:
                nearest = 2 * p
                for j in range(2 * p - 1, -1, -1):
                    if counts[r, j if j < p else j - p] > 0:
                        nearest = j
                    if j < p:
                        reach[j] = nearest - j if nearest - j < p else p
                for q in range(p):
                    total = 0.0
                    held = 0.0
                    for i in range(rounds):
                        total = total + (prefix[q + ms[i]] - prefix[q])
                        if ms[i] > reach[q]:
                            held = held + 1.0
                    every_sent[r, q] = total
                    every_msgs[r, q] = held
            for i in range(rounds):
                h, m = hs[i], ms[i]
                for q in range(p):
                    t = q - h
                    if t < 0:
                        t = t + p
                    if nodes[q] == nodes[t]:
                        continue
                    window = prefix[q + m] - prefix[q]
                    sent[r, q] = sent[r, q] + window
                    recv[r, t] = recv[r, t] + window
                    if window > 0:
                        msgs[r, q] = msgs[r, q] + 1.0
    if every:
        return sent_np, recv_np, msgs_np, every_sent_np, every_msgs_np
    return sent_np, recv_np, msgs_np
