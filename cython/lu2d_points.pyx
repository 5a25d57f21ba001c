# cython: language_level=3
# distutils: extra_compile_args = -ffp-contract=off
"""The 2D LU model's critical path at a few process rows per step
(`linalg_io.models.lu2d_runs`: `piece_ends`, `bruck_at`), one step after the other.

distinct_ends(firsts, p)
    [step, i]: the ranks f mod p and (f - 1) mod p of every f of firsts[step] and 0 and
    p - 1, each once, in the order first met; a step with fewer repeats its first.
round_sums(at, value, real, ranks, sizes)
    [step, i]: sum over the rounds m (in the order of `sizes`) of P(q + m) - P(q), q =
    ranks[step, i], P the line through the step's nodes (at, value)[step, j] where
    real[step, j] (at increasing), from 0.0 on: bit for bit NumPy's
    `np.interp(x, at, value)` for P (a node's value at the node, else slope (x -
    at_j) + value_j, slope = (value_{j+1} - value_j) / (at_{j+1} - at_j)) and the sum
    of the rounds' arrays. The file compiles with -ffp-contract=off: a fused
    multiply-add would round once where NumPy rounds twice.
last_at_or_before(starts, ranks)
    [step, i]: the last j with starts[step, j] <= ranks[step, i] (starts sorted along
    j; 0 where none is).
"""
import numpy as np
cimport numpy as cnp

cnp.import_array()


def distinct_ends(const cnp.int64_t[:, ::1] firsts, cnp.int64_t p):
    cdef Py_ssize_t steps = firsts.shape[0], width = firsts.shape[1]
    cdef Py_ssize_t s, j, n, most = 0, e
    cdef cnp.int64_t f, v
    out = np.empty((steps, 2 * width + 2), dtype=np.int64)
    counts = np.empty(steps, dtype=np.int64)
    seen_array = np.full(p, -1, dtype=np.int64)
    cdef cnp.int64_t[:, ::1] o = out
    cdef cnp.int64_t[::1] count = counts
    cdef cnp.int64_t[::1] seen = seen_array
    with nogil:
        for s in range(steps):
            n = 0
            for j in range(-1, width):
                for e in range(2):
                    if j < 0:
                        v = 0 if e == 0 else p - 1
                    else:
                        f = firsts[s, j] - e
                        v = f % p
                        if v < 0:
                            v = v + p
                    if seen[v] != s:
                        seen[v] = s
                        o[s, n] = v
                        n = n + 1
            count[s] = n
            if n > most:
                most = n
        for s in range(steps):
            for j in range(count[s], most):
                o[s, j] = o[s, 0]
    return out[:, :most]


cdef inline double _at(const double* xs, const double* vs, const double* slopes,
                       Py_ssize_t j, double x) noexcept nogil:
    """P(x) for xs[j] <= x < xs[j + 1], or x at the last node j (`round_sums`)."""
    if xs[j] == x:
        return vs[j]
    return slopes[j] * (x - xs[j]) + vs[j]


def round_sums(const double[:, ::1] at, const double[:, ::1] value,
               const cnp.uint8_t[:, ::1] real, const cnp.int64_t[:, ::1] ranks,
               const cnp.int64_t[::1] sizes):
    cdef Py_ssize_t steps = ranks.shape[0], width = ranks.shape[1], nodes_max = at.shape[1]
    cdef Py_ssize_t rounds = sizes.shape[0]
    cdef Py_ssize_t s, i, j, r, nodes, lo, hi, mid
    cdef double x, y, here, acc
    # the rounds by size: each point's windows' ends walk the nodes forward
    order_array = np.argsort(np.asarray(sizes), kind="stable")
    cdef cnp.int64_t[::1] order = order_array
    out = np.empty((steps, width))
    scratch = np.empty((3, max(nodes_max, 1)))
    ends_array = np.empty(max(rounds, 1))
    cdef double[:, ::1] sent = out
    cdef double[:, ::1] buf = scratch
    cdef double[::1] ends = ends_array
    cdef double* xs = &buf[0, 0]
    cdef double* vs = &buf[1, 0]
    cdef double* slopes = &buf[2, 0]
    with nogil:
        for s in range(steps):
            nodes = 0
            for j in range(nodes_max):
                if real[s, j]:
                    xs[nodes] = at[s, j]
                    vs[nodes] = value[s, j]
                    nodes = nodes + 1
            for j in range(nodes - 1):
                slopes[j] = (vs[j + 1] - vs[j]) / (xs[j + 1] - xs[j])
            for i in range(width):
                x = <double>ranks[s, i]
                lo, hi = 0, nodes - 1        # xs[lo] <= x < xs[hi]
                while hi - lo > 1:
                    mid = (lo + hi) >> 1
                    if xs[mid] <= x:
                        lo = mid
                    else:
                        hi = mid
                here = _at(xs, vs, slopes, lo, x)
                j = lo
                for r in range(rounds):
                    y = x + <double>sizes[order[r]]
                    while j < nodes - 1 and xs[j + 1] <= y:
                        j = j + 1
                    ends[order[r]] = _at(xs, vs, slopes, j, y)
                acc = 0.0
                for r in range(rounds):
                    acc = acc + (ends[r] - here)
                sent[s, i] = acc
    return out


def last_at_or_before(const cnp.int64_t[:, ::1] starts, const cnp.int64_t[:, ::1] ranks):
    cdef Py_ssize_t steps = ranks.shape[0], width = ranks.shape[1], runs = starts.shape[1]
    cdef Py_ssize_t s, i, r
    cdef cnp.int64_t q
    out = np.empty((steps, width), dtype=np.int64)
    cdef cnp.int64_t[:, ::1] found = out
    with nogil:
        for s in range(steps):
            for i in range(width):
                q = ranks[s, i]
                r = runs - 1
                while r > 0 and starts[s, r] > q:
                    r = r - 1
                found[s, i] = r
    return out
