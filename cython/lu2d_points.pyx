# cython: language_level=3
# distutils: extra_compile_args = -ffp-contract=off
"""The 2D LU model's critical path at a few process rows per step
(`linalg_io.models.lu2d_runs`: `piece_ends`, `bruck_at`), one step after the other.

distinct_ends(firsts, p, shifted, sizes)
    [step, i]: the ranks f mod p and (f - 1) mod p of 0, of every f of firsts[step] and
    of every f - m and f - m + 1 of f in shifted[step] and m in `sizes`, each once, in
    the order first met; a step with fewer repeats its first.
bruck_points(at, value, real, ranks, sizes, run, blocks, reach, equal, all_rounds)
    ([step, i] sent, own, messages) of rank q = ranks[step, i] in run[step, i]: own its
    run's block; messages the rounds m of `sizes` beyond the distance from q to
    reach[step, run] (the next non-empty block), 0 at least; sent its block times
    `all_rounds` where equal[step] (every block alike), else the sum over the rounds m
    (in the order of `sizes`) of P(q + m) - P(q), P the line through the step's nodes
    (at, value)[step, j] where real[step, j] (at increasing), from 0.0 on: bit for bit
    NumPy's `np.interp(x, at, value)` for P (a node's value at the node, else slope
    (x - at_j) + value_j, slope = (value_{j+1} - value_j) / (at_{j+1} - at_j)) and the
    sum of the rounds' arrays (at a node x - at_j is 0, and slope 0 + value_j is value_j:
    no test). A rank's node is that of its run (the last real node at or before the
    run's start: no search), its windows' ends walk the nodes forward, round by round,
    and where `sizes` ascend (p a power of two) each end is summed as it is found. The
    file compiles with -ffp-contract=off: a fused multiply-add would round once where
    NumPy rounds twice.
last_at_or_before(starts, ranks)
    [step, i]: the last j with starts[step, j] <= ranks[step, i] (starts sorted along
    j; 0 where none is).
bruck_windows(values, sizes)
    [row, q]: the sum over the Bruck rounds m of `sizes` (in that order, from 0.0 on) of
    what rank q's window q .. q + m - 1 (cyclic) holds of values[row] (C-contiguous
    2D): each a difference P(q + m) - P(q) of the row's prefix sums over it twice
    (P(j) the sum of its first j entries, each the one before plus the next, as
    np.cumsum makes them), bit for bit `linalg_io.layout.schedules.allgatherv_bytes`'
    NumPy rounds (a [row, 2p + 1] prefix and a pass over [row, p] per round), a row at
    a time in the caches.
bruck_nonempty(nonempty, sizes)
    [row, q]: the Bruck rounds m of `sizes` whose window q .. q + m - 1 (cyclic) holds a
    non-zero entry of nonempty[row] (uint8, C-contiguous 2D), as a float: a count per
    round where the row's prefix counts (over it twice) rise across the window, the
    NumPy passes of `linalg_io.layout.schedules.bruck_messages` a row at a time.
gather(values, steps, index)
    [step, i]: values[steps[step], index[step, i]] (`steps` None: values[step, ...]),
    np.take_along_axis(values[steps], index, axis=1) without its index arrays; every
    index within `values`.
add_dense(highs, lows, stored, x_line, lines, widths, y_off, units)
    `linalg_io.models.rank_classes.BlockSpread.totals`' dense steps, in place: for each
    step s in order, each row r and each rank (x, y) of highs[r] [px, py], the value
    g = stored[r, lines[s, x_line[s, x]] + y_off[s, y]] (the step's value of the rank's
    classes: its process row's line of widths[s] values, its column's place in it),
    split into h,
    the multiple of units[r] nearest it (np.round's: half to even), and g - h;
    highs[r, x, y] += h, lows[r, x, y] += g - h (where not 0: adding +0 changes
    nothing). Every rank's additions come in the order of the steps, as a pass over P
    ranks per step would make them, bit for bit; the ranks go a tile at a time (all
    steps on a tile of whole process rows), each line a tile's process rows use read
    and split once per step, gathered along the tile's y, then added to each of them (a
    step has fewer lines, classes, than process rows), DENSE_FUSED steps' in one pass
    over the tile's sums (each sum's additions one after the other, in the order of
    the steps). Every offset within `stored`.
add_at(totals, rows, added, at)
    totals[rows[i], at[j]] += added[i, j] for each i and j, in order: NumPy's
    `total[at] = total[at] + added[i]` of each row (`at` distinct), one pass, without
    its gathered copy.
add_differences(values, above, below, first, per_edge, local, touched, row, at)
    `linalg_io.models.rank_classes._differences`' sums of one row of one chunk, in
    place: each pair i's term a_i = values[above[i]] (- values[below[i]] where `below`
    is not empty), its weight a_i - a_{i-1}, or a_i at its x edge's first pair
    (`first`, `per_edge`: the edges' first pairs and counts); the weights summed per
    cell `local[i]` in pair order from 0 (np.bincount's sums, `touched` cells; `local`
    empty: a cell a pair), then row[at[j]] = row[at[j]] + sum_j (`at` empty: row[j]).
add_product(values, above, below, y_first, y_count, y_right, cell_base, y_at, place,
            touched, row, at, column)
    `add_differences` where a chunk's pairs are every x edge e with the y edges y_first[e]
    .. + y_count[e] of its step, without their arrays: pair (e, j)'s term values[above[e]
    + y_right[j]] (- values[below[e] + y_right[j]]), its cell cell_base[e] + y_at[j];
    the weights summed per cell place[cell] (`touched` of them, then row[at[j]] (`at`
    empty: row[j]) as there), or (`place` empty) each added to row[column[cell]]
    (`column` empty: row[i], i the pair), in the same order, bit for bit.
mark_product(cell_base, y_first, y_count, y_at, marked)
    marked[cell] = 1 at the cell of every pair of `add_product`'s.
mark_terms(values, right, left, nonzero)
    nonzero[i] = 1 where values[r, right[i]] - values[r, left[i]] != 0 in some row r of
    the C-contiguous 2D `values` (`_weighted_pairs`' kinds of pairs whose term is not 0:
    NumPy's `(take(right) - take(left) != 0).any(axis=0)`, without the taken arrays,
    each i stopping at its first such row; those marked already are skipped).
product_cells(cell_base, y_first, y_count, y_at)
    The cells of `add_product`'s pairs, in order.
add_corners(highs, lows, stored, rows, steps, x_first, x_runs, y_first, y_runs,
            line_first, widths, x_start, y_start, x_key, y_key, units, px)
    `linalg_io.models.rank_classes.BlockSpread.totals`' corners, in place: for each row
    r of `rows` (one at a time: its sums stay in the caches) and each step s of
    `steps`, in order, whose runs tile the ranks (x runs x_first[s] .. + x_runs[s]
    ascending from rank 0, likewise y), the value V(a, b) of each pair of an x run a
    and a y run b, stored[r, line_first[s] + x_key[a] widths[s] + y_key[b]] (the step's
    lines of widths[s] values: its classes' cells, or its pairs' own), split into H,
    the multiple of units[r] nearest it (np.round's: half to even), and its remainder
    L; each pair adds, at its rectangle's first corner, rank x_start[a] py + y_start[b]
    (px py = the length of a row of `highs` and `lows`), the second difference of H
    to `highs` and of L to `lows`: E(a, b) = H(a, b) - H(a - 1, b) (H(a - 1, .) = 0 at
    a step's first x run), E(a, b) - E(a, b - 1) (0 at its first y run), likewise L,
    each where not 0 (in the order of the steps, then a, then b). Summed up along x
    and y, a rank's sum is its own values' over the steps: a pair's corners (x1, y1),
    (x0, y1) and (x1, y0) are those (x0, y0) of the pairs after it, one corner a pair
    where the four of each rectangle made four times the scattered adds. The H's
    differences are exact (multiples of the unit far below 2^53 of it); the L's round
    below the unit's last bits. The pairs are made here from the runs, not handed in
    (arrays of every pair's edges and values, a row at a time, cost more than the
    corners); each step's lines are split into H and L once (a value is read by every
    pair of its classes, and again as the next x run's line below).
changed_runs(stored, steps, x_first, x_runs, x_key, y_first, y_runs, y_key, line_first,
             lines, widths, x_changed, y_changed)
    For each step s of `steps` and each of its runs after its first (x runs x_first[s]
    .. + x_runs[s], likewise y), changed[i] = 1 where its values in the row `stored`
    differ from the run before it (at some place: !=, so -0.0 and 0.0 are alike), else
    0: an x run's values are its line, the widths[s] values from line_first[s] +
    x_key[i] widths[s]; a y run's its column, the value at y_key[j] of each line (of
    those of the x runs that change, where they are fewer than the step's lines[s]:
    the others repeat one of them) (`BlockSpread.totals`: a row's runs merged where
    its values do not change).
running_sum(total, axis)
    np.cumsum of the C-contiguous 2D `total` along `axis` (0 or 1), in place, bit for
    bit: each sum the one before plus the next value, in order (down the rows, a row
    added to the one before at a time; along a row, four rows' sums side by side, each
    its own chain).
shifted_means(grids, shift, count)
    Each grid [a, b, c] of the C-contiguous 4D `grids`, in place: every cell p the mean
    of the `count` cells p - m shift, m = -(count // 2) .. count - 1 - count // 2, each
    axis cyclic (`linalg_io.models.step_sample.StepSample.smeared`). The cells p, p +
    shift, p + 2 shift, ... form orbits of L cells, each a cycle: a mean is that of a
    window of `count` consecutive cells of its orbit (whole turns of it where count >=
    L: their sum times the turns, then the rest), each window's sum a block's suffix
    plus the next block's prefix (blocks of the window's length along the orbit): at
    most 2 count additions per sum, O(a b c) a grid whatever `count`. Where the shift
    is (0, 1, d) (the roots' process rows one on, their columns d), each layer's plane
    is skewed instead (its row x'' rolled by x'' d, so that a mean's cells lie in one
    column of `count` consecutive rows) and the windows summed so, whole rows at a time
    (an orbit's cells lie a row apart in memory). A shift that moves no cell leaves the
    grids as they are.
"""
import math

import numpy as np
cimport numpy as cnp
from libc.math cimport nearbyint

cnp.import_array()

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__AVX512F__)
    #include <immintrin.h>
    #endif
    /* high[y] = split_high[at[y]] (and low[y] = split_low[at[y]] where `both`) for
       y < n: AVX-512's gathers where the CPU has them (GCC leaves this loop scalar, a
       store an element); AVX2's four-wide gathers ran slower than the scalar loop on
       AMD's Zen 3 (docs/MEASUREMENTS.md) */
    static inline void lio_gather_lines(double* restrict high, double* restrict low,
                                        const double* restrict split_high,
                                        const double* restrict split_low,
                                        const int64_t* restrict at, Py_ssize_t n,
                                        int both) {
        Py_ssize_t y = 0;
    #if defined(__AVX512F__)
        for (; y + 8 <= n; y += 8) {
            __m512i k = _mm512_loadu_si512((const void*)(at + y));
            _mm512_storeu_pd(high + y, _mm512_i64gather_pd(k, split_high, 8));
            if (both)
                _mm512_storeu_pd(low + y, _mm512_i64gather_pd(k, split_low, 8));
        }
    #endif
        for (; y < n; y++) {
            high[y] = split_high[at[y]];
            if (both)
                low[y] = split_low[at[y]];
        }
    }
    /* out[y] = ((out[y] + parts[0][y]) + parts[1][y]) + ... for y < n: count <= 8
       parts, each sum's additions in that order, the sum read and written once */
    #define LIO_PART(i) sum += p##i[y];
    #define LIO_ADD_PARTS(count, body) case count: \
        for (Py_ssize_t y = 0; y < n; y++) { double sum = out[y]; body out[y] = sum; } \
        break;
    static inline void lio_add_parts(double* restrict out, const double** parts,
                                     Py_ssize_t count, Py_ssize_t n) {
        const double* restrict p0 = count > 0 ? parts[0] : 0;
        const double* restrict p1 = count > 1 ? parts[1] : 0;
        const double* restrict p2 = count > 2 ? parts[2] : 0;
        const double* restrict p3 = count > 3 ? parts[3] : 0;
        const double* restrict p4 = count > 4 ? parts[4] : 0;
        const double* restrict p5 = count > 5 ? parts[5] : 0;
        const double* restrict p6 = count > 6 ? parts[6] : 0;
        const double* restrict p7 = count > 7 ? parts[7] : 0;
        switch (count) {
        LIO_ADD_PARTS(1, LIO_PART(0))
        LIO_ADD_PARTS(2, LIO_PART(0) LIO_PART(1))
        LIO_ADD_PARTS(3, LIO_PART(0) LIO_PART(1) LIO_PART(2))
        LIO_ADD_PARTS(4, LIO_PART(0) LIO_PART(1) LIO_PART(2) LIO_PART(3))
        LIO_ADD_PARTS(5, LIO_PART(0) LIO_PART(1) LIO_PART(2) LIO_PART(3) LIO_PART(4))
        LIO_ADD_PARTS(6, LIO_PART(0) LIO_PART(1) LIO_PART(2) LIO_PART(3) LIO_PART(4)
                         LIO_PART(5))
        LIO_ADD_PARTS(7, LIO_PART(0) LIO_PART(1) LIO_PART(2) LIO_PART(3) LIO_PART(4)
                         LIO_PART(5) LIO_PART(6))
        LIO_ADD_PARTS(8, LIO_PART(0) LIO_PART(1) LIO_PART(2) LIO_PART(3) LIO_PART(4)
                         LIO_PART(5) LIO_PART(6) LIO_PART(7))
        }
    }
    """
    void lio_gather_lines(double* high, double* low, const double* split_high,
                          const double* split_low, const cnp.int64_t* at, Py_ssize_t n,
                          bint both) noexcept nogil
    void lio_add_parts(double* out, const double** parts, Py_ssize_t count,
                       Py_ssize_t n) noexcept nogil


cdef inline Py_ssize_t _put(cnp.int64_t f, cnp.int64_t p, cnp.int64_t step,
                            cnp.int64_t* seen, cnp.int64_t* row, Py_ssize_t n) noexcept nogil:
    """Add f mod p and (f - 1) mod p to the step's `row` of n ranks where not yet in it."""
    cdef cnp.int64_t v
    cdef int e
    for e in range(2):
        v = f - e
        # mod p: f within a period of 0 .. p-1 (as the callers' are) without a division
        if v < 0:
            v = v + p
        elif v >= p:
            v = v - p
        if v < 0 or v >= p:
            v = v % p
            if v < 0:
                v = v + p
        if seen[v] != step:
            seen[v] = step
            row[n] = v
            n = n + 1
    return n


def distinct_ends(const cnp.int64_t[:, ::1] firsts, cnp.int64_t p,
                  const cnp.int64_t[:, ::1] shifted, const cnp.int64_t[::1] sizes):
    cdef Py_ssize_t steps = firsts.shape[0], width = firsts.shape[1]
    cdef Py_ssize_t more = shifted.shape[1], rounds = sizes.shape[0]
    cdef Py_ssize_t s, j, r, n, most = 0, size = 2 * (width + 2 * more * rounds) + 2
    out = np.empty((steps, size), dtype=np.int64)
    counts = np.empty(steps, dtype=np.int64)
    seen_array = np.full(p, -1, dtype=np.int64)
    cdef cnp.int64_t[:, ::1] o = out
    cdef cnp.int64_t[::1] count = counts
    cdef cnp.int64_t[::1] seen_view = seen_array
    cdef cnp.int64_t* seen = &seen_view[0]
    cdef cnp.int64_t* row
    cdef cnp.int64_t f
    with nogil:
        for s in range(steps):
            row = &o[s, 0]
            n = _put(0, p, s, seen, row, 0)
            for j in range(width):
                n = _put(firsts[s, j], p, s, seen, row, n)
            for j in range(more):
                f = shifted[s, j]
                if j > 0 and f == shifted[s, j - 1]:
                    continue          # the same ranks again
                for r in range(rounds):
                    n = _put(f - sizes[r], p, s, seen, row, n)
                    n = _put(f - sizes[r] + 1, p, s, seen, row, n)
            count[s] = n
            if n > most:
                most = n
        for s in range(steps):
            for j in range(count[s], most):
                o[s, j] = o[s, 0]
    return out[:, :most]


cdef inline double _at(const double* xs, const double* vs, const double* slopes,
                       Py_ssize_t j, double x) noexcept nogil:
    """P(x) for xs[j] <= x < xs[j + 1], or x at the last node j (its slope 0): at a node
    the product is 0 (finite slopes: the nodes ascend), so the value is value_j's
    (`bruck_points`)."""
    return slopes[j] * (x - xs[j]) + vs[j]


def bruck_points(const double[:, ::1] at, const double[:, ::1] value,
                 const cnp.uint8_t[:, ::1] real, const cnp.int64_t[:, ::1] ranks,
                 const cnp.int64_t[::1] sizes, const cnp.int64_t[:, ::1] run,
                 const double[:, ::1] blocks, const cnp.int64_t[:, ::1] reach,
                 const cnp.uint8_t[::1] equal, double all_rounds):
    cdef Py_ssize_t steps = ranks.shape[0], width = ranks.shape[1], nodes_max = at.shape[1]
    cdef Py_ssize_t rounds = sizes.shape[0], runs = blocks.shape[1]
    cdef Py_ssize_t s, i, j, r, nodes, last
    cdef cnp.int64_t dist, beyond
    cdef double x, y, here, acc
    cdef bint ascending = (np.diff(np.asarray(sizes)) >= 0).all()
    # the rounds by size: each point's windows' ends walk the nodes forward
    order_array = np.argsort(np.asarray(sizes), kind="stable")
    by_size_array = np.asarray(sizes, dtype=float)[order_array]
    out = np.empty((steps, width))
    own_array = np.empty((steps, width))
    msgs_array = np.empty((steps, width))
    scratch = np.empty((3, max(nodes_max, 1)))
    ends_array = np.empty(max(rounds, 1))
    node_of_array = np.empty(max(runs, 1), dtype=np.int64)
    cdef cnp.int64_t[::1] order_view = order_array
    cdef double[::1] by_size_view = by_size_array
    cdef double[:, ::1] sent = out
    cdef double[:, ::1] own = own_array
    cdef double[:, ::1] msgs = msgs_array
    cdef double[:, ::1] buf = scratch
    cdef double[::1] ends_view = ends_array
    cdef cnp.int64_t[::1] node_of_view = node_of_array
    cdef double* xs = &buf[0, 0]
    cdef double* vs = &buf[1, 0]
    cdef double* slopes = &buf[2, 0]
    cdef double* ends = &ends_view[0]
    cdef cnp.int64_t* node_of = &node_of_view[0]
    cdef const cnp.int64_t* order = &order_view[0] if rounds else NULL
    cdef const double* by_size = &by_size_view[0] if rounds else NULL
    cdef const cnp.int64_t* q
    cdef const cnp.int64_t* in_run
    cdef double* row
    with nogil:
        for s in range(steps):
            in_run = &run[s, 0]
            for i in range(width):
                own[s, i] = blocks[s, in_run[i]]
                dist = reach[s, in_run[i]] - ranks[s, i]
                if dist < 0:
                    dist = 0
                beyond = 0
                for r in range(rounds):
                    beyond = beyond + (sizes[r] > dist)
                msgs[s, i] = <double>beyond
            if equal[s]:          # every block alike: m blocks each round
                for i in range(width):
                    sent[s, i] = own[s, i] * all_rounds
                continue
            # the nodes (run j's start, j < runs, in node node_of[j]: the last real one
            # at or before it; a rank's run is real)
            nodes = 0
            for j in range(nodes_max):
                if real[s, j]:
                    xs[nodes] = at[s, j]
                    vs[nodes] = value[s, j]
                    nodes = nodes + 1
                if j < runs:
                    node_of[j] = nodes - 1
            last = nodes - 1
            for j in range(last):
                slopes[j] = (vs[j + 1] - vs[j]) / (xs[j + 1] - xs[j])
            slopes[last] = 0.0
            q = &ranks[s, 0]
            row = &sent[s, 0]
            for i in range(width):
                x = <double>q[i]
                j = node_of[in_run[i]]
                here = _at(xs, vs, slopes, j, x)
                acc = 0.0
                if ascending:
                    for r in range(rounds):
                        y = x + by_size[r]
                        while j < last and xs[j + 1] <= y:
                            j = j + 1
                        acc = acc + (_at(xs, vs, slopes, j, y) - here)
                else:
                    for r in range(rounds):
                        y = x + by_size[r]
                        while j < last and xs[j + 1] <= y:
                            j = j + 1
                        ends[order[r]] = _at(xs, vs, slopes, j, y)
                    for r in range(rounds):
                        acc = acc + (ends[r] - here)
                row[i] = acc
    return out, own_array, msgs_array


def last_at_or_before(const cnp.int64_t[:, ::1] starts, const cnp.int64_t[:, ::1] ranks):
    cdef Py_ssize_t steps = ranks.shape[0], width = ranks.shape[1], runs = starts.shape[1]
    cdef Py_ssize_t s, i, j, r
    cdef cnp.int64_t q
    out = np.empty((steps, width), dtype=np.int64)
    cdef cnp.int64_t[:, ::1] found = out
    with nogil:
        for s in range(steps):
            for i in range(width):
                # the starts sorted: the last j <= q is the count of those after the first
                q = ranks[s, i]
                r = 0
                for j in range(1, runs):
                    r = r + (starts[s, j] <= q)
                found[s, i] = r
    return out


# `changed_runs` keeps the answers for pairs of keys where a step has at most this many
MEMO_KEYS = 1024


# the ranks of a tile of `add_dense`: its process rows share the lines gathered for a
# step (a gathered value costs several added ones), and its sums (both parts, 2 MB) are
# read and written once per DENSE_FUSED steps: L3 holds them
DENSE_TILE = 131072
# `add_dense` adds this many steps' parts in one pass over a tile's sums: each sum read
# and written once for them (its additions still one after the other, in order)
cdef enum:
    DENSE_FUSED = 4


def bruck_windows(const double[:, ::1] values not None,
                  const cnp.int64_t[::1] sizes not None):
    cdef Py_ssize_t rows = values.shape[0], p = values.shape[1], count = sizes.shape[0]
    cdef Py_ssize_t r, q, j, i
    for i in range(count):
        if not 0 < sizes[i] <= p:
            raise ValueError("bruck_windows: a round's size within 1 .. p")
    out = np.empty((rows, p))
    cdef double[:, ::1] sums = out
    prefix_np = np.empty(2 * p + 1)
    cdef double* prefix = <double*> cnp.PyArray_DATA(prefix_np)
    cdef double total
    with nogil:
        for r in range(rows):
            prefix[0] = 0.0
            for j in range(2 * p):
                prefix[j + 1] = prefix[j] + values[r, j if j < p else j - p]
            for q in range(p):
                total = 0.0
                for i in range(count):
                    total = total + (prefix[q + sizes[i]] - prefix[q])
                sums[r, q] = total
    return out


def bruck_nonempty(const cnp.uint8_t[:, ::1] nonempty not None,
                   const cnp.int64_t[::1] sizes not None):
    cdef Py_ssize_t rows = nonempty.shape[0], p = nonempty.shape[1], count = sizes.shape[0]
    cdef Py_ssize_t r, q, j, i
    for i in range(count):
        if not 0 < sizes[i] <= p:
            raise ValueError("bruck_nonempty: a round's size within 1 .. p")
    out = np.empty((rows, p))
    cdef double[:, ::1] msgs = out
    prefix_np = np.empty(2 * p + 1, dtype=np.int64)
    cdef cnp.int64_t* prefix = <cnp.int64_t*> cnp.PyArray_DATA(prefix_np)
    cdef double total
    with nogil:
        for r in range(rows):
            prefix[0] = 0
            for j in range(2 * p):
                prefix[j + 1] = prefix[j] + (nonempty[r, j if j < p else j - p] != 0)
            for q in range(p):
                total = 0.0
                for i in range(count):
                    if prefix[q + sizes[i]] > prefix[q]:
                        total = total + 1.0
                msgs[r, q] = total
    return out


def add_dense(double[:, ::1] highs, double[:, ::1] lows, const double[:, ::1] stored,
              const cnp.int64_t[:, ::1] x_line, const cnp.int64_t[:, ::1] lines,
              const cnp.int64_t[::1] widths, const cnp.int64_t[:, ::1] y_off,
              const double[::1] units):
    cdef Py_ssize_t rows = highs.shape[0], steps = x_line.shape[0], px = x_line.shape[1]
    cdef Py_ssize_t py = y_off.shape[1], most = lines.shape[1], widest = 1
    if lows.shape[0] != rows or stored.shape[0] != rows or units.shape[0] != rows \
            or highs.shape[1] != px * py or lows.shape[1] != px * py \
            or y_off.shape[0] != steps or lines.shape[0] != steps \
            or widths.shape[0] != steps:
        raise ValueError("add_dense: shapes do not match")
    cdef Py_ssize_t s
    for s in range(steps):
        widest = max(widest, widths[s])
    # whole process rows where they fit: a line is then read once per tile it is used in
    cdef Py_ssize_t ty = min(py, DENSE_TILE)
    cdef Py_ssize_t tx = min(px, max(1, DENSE_TILE // ty)), area = tx * ty
    # a line read and split (in order: the prefetcher follows), then gathered along the
    # tile's y into its slot; for each of the DENSE_FUSED steps added at once, each
    # line's slot, the visit (tile and step) that filled it, and each process row's slot
    split_np = np.empty(2 * widest)
    high_np, low_np = np.empty(DENSE_FUSED * area), np.empty(DENSE_FUSED * area)
    cdef double* split_high = <double*> cnp.PyArray_DATA(split_np)
    cdef double* split_low = split_high + widest
    cdef double* high_rows = <double*> cnp.PyArray_DATA(high_np)
    cdef double* low_rows = <double*> cnp.PyArray_DATA(low_np)
    slot_np = np.empty(DENSE_FUSED * most, dtype=np.intp)
    stamp_np = np.full(DENSE_FUSED * most, -1, dtype=np.intp)
    taken_np = np.empty(DENSE_FUSED * tx, dtype=np.intp)
    lowed_np = np.empty(DENSE_FUSED * tx, dtype=np.uint8)
    cdef Py_ssize_t* slot = <Py_ssize_t*> cnp.PyArray_DATA(slot_np)
    cdef Py_ssize_t* stamp = <Py_ssize_t*> cnp.PyArray_DATA(stamp_np)
    cdef Py_ssize_t* taken = <Py_ssize_t*> cnp.PyArray_DATA(taken_np)
    cdef unsigned char* lowed = <unsigned char*> cnp.PyArray_DATA(lowed_np)
    cdef const double* high_parts[DENSE_FUSED]
    cdef const double* low_parts[DENSE_FUSED]
    cdef Py_ssize_t r, x, i, j, l, k, filled, fused, highs_in, lows_in
    cdef Py_ssize_t x0, y0, x1, y1, width, s0, visit = 0
    cdef const double* line
    cdef const cnp.int64_t* at
    cdef double unit, inverse, g, h
    cdef bint some_low
    with nogil:
        for r in range(rows):
            # u a power of two: g / u and g (1/u) are the same float
            unit = units[r]
            inverse = 1.0 / unit
            x0 = 0
            while x0 < px:
                x1 = min(px, x0 + tx)
                y0 = 0
                while y0 < py:
                    y1 = min(py, y0 + ty)
                    width = y1 - y0
                    s0 = 0
                    while s0 < steps:
                        fused = min(DENSE_FUSED, steps - s0)
                        # each step's lines the tile uses, gathered
                        for j in range(fused):
                            s = s0 + j
                            at = &y_off[s, y0]
                            visit += 1
                            filled = 0
                            for x in range(x0, x1):
                                l = x_line[s, x]
                                if stamp[j * most + l] != visit:
                                    stamp[j * most + l] = visit
                                    slot[j * most + l] = filled
                                    line = &stored[r, lines[s, l]]
                                    some_low = False
                                    for i in range(widths[s]):
                                        g = line[i]
                                        h = nearbyint(g * inverse) * unit
                                        split_high[i] = h
                                        split_low[i] = g - h
                                        some_low = some_low or g != h
                                    lowed[j * tx + filled] = some_low
                                    lio_gather_lines(high_rows + j * area + filled * width,
                                                     low_rows + j * area + filled * width,
                                                     split_high, split_low, at, width,
                                                     some_low)
                                    filled += 1
                                taken[j * tx + x - x0] = slot[j * most + l]
                        # each process row's sums read and written once for the fused
                        # steps, their parts added in the order of the steps
                        for x in range(x0, x1):
                            highs_in = 0
                            lows_in = 0
                            for j in range(fused):
                                k = taken[j * tx + x - x0]
                                high_parts[highs_in] = high_rows + j * area + k * width
                                highs_in += 1
                                if lowed[j * tx + k]:
                                    low_parts[lows_in] = low_rows + j * area + k * width
                                    lows_in += 1
                            lio_add_parts(&highs[r, x * py + y0], high_parts, highs_in, width)
                            lio_add_parts(&lows[r, x * py + y0], low_parts, lows_in, width)
                        s0 += fused
                    y0 = y1
                x0 = x1


def add_at(double[:, ::1] totals, const cnp.int64_t[::1] rows, const double[:, ::1] added,
           const cnp.int64_t[::1] at):
    cdef Py_ssize_t i, j, count = at.shape[0]
    if added.shape[0] != rows.shape[0] or added.shape[1] != count:
        raise ValueError("add_at: added must be [rows, at]")
    cdef double* total
    with nogil:
        for i in range(rows.shape[0]):
            total = &totals[rows[i], 0]
            for j in range(count):
                total[at[j]] = total[at[j]] + added[i, j]


cdef void _add_sums(double[::1] row, const double[::1] sums, const cnp.int64_t[::1] at,
                    Py_ssize_t touched) noexcept nogil:
    """row[at[j]] += sums[j] for j < touched (`at` empty: row[j])."""
    cdef Py_ssize_t j
    for j in range(touched):
        if at.shape[0] > 0:
            row[at[j]] = row[at[j]] + sums[j]
        else:
            row[j] = row[j] + sums[j]


def add_differences(const double[::1] values, const cnp.int64_t[::1] above,
                    const cnp.int64_t[::1] below, const cnp.int64_t[::1] first,
                    const cnp.int64_t[::1] per_edge, const cnp.int64_t[::1] local,
                    Py_ssize_t touched, double[::1] row, const cnp.int64_t[::1] at):
    cdef Py_ssize_t edges = first.shape[0], e, i, j
    cdef bint two = below.shape[0] > 0, summed = local.shape[0] > 0
    cdef bint placed = at.shape[0] > 0
    cdef double term, last, weight
    sums_array = np.zeros(touched if summed else 0)
    cdef double[::1] sums = sums_array
    with nogil:
        for e in range(edges):
            last = 0.0
            for i in range(first[e], first[e] + per_edge[e]):
                term = values[above[i]] - values[below[i]] if two else values[above[i]]
                weight = term if i == first[e] else term - last
                last = term
                if summed:
                    sums[local[i]] = sums[local[i]] + weight
                else:
                    j = at[i] if placed else i
                    row[j] = row[j] + weight
        if summed:
            _add_sums(row, sums, at, touched)


def add_product(const double[::1] values, const cnp.int64_t[::1] above,
                const cnp.int64_t[::1] below, const cnp.int64_t[::1] y_first,
                const cnp.int64_t[::1] y_count, const cnp.int64_t[::1] y_right,
                const cnp.int64_t[::1] cell_base, const cnp.int64_t[::1] y_at,
                const cnp.int64_t[::1] place, Py_ssize_t touched, double[::1] row,
                const cnp.int64_t[::1] at, const cnp.int64_t[::1] column):
    cdef Py_ssize_t edges = above.shape[0], e, j, i = 0, cell
    cdef bint two = below.shape[0] > 0, summed = place.shape[0] > 0
    cdef bint mapped = column.shape[0] > 0
    cdef double term, last, weight
    sums_array = np.zeros(touched if summed else 0)
    cdef double[::1] sums = sums_array
    with nogil:
        for e in range(edges):
            last = 0.0
            for j in range(y_first[e], y_first[e] + y_count[e]):
                term = (values[above[e] + y_right[j]] - values[below[e] + y_right[j]]
                        if two else values[above[e] + y_right[j]])
                weight = term if j == y_first[e] else term - last
                last = term
                cell = cell_base[e] + y_at[j]
                if summed:
                    sums[place[cell]] = sums[place[cell]] + weight
                else:
                    cell = column[cell] if mapped else i
                    row[cell] = row[cell] + weight
                i += 1
        if summed:
            _add_sums(row, sums, at, touched)


def mark_product(const cnp.int64_t[::1] cell_base, const cnp.int64_t[::1] y_first,
                 const cnp.int64_t[::1] y_count, const cnp.int64_t[::1] y_at,
                 cnp.uint8_t[::1] marked):
    cdef Py_ssize_t e, j
    with nogil:
        for e in range(cell_base.shape[0]):
            for j in range(y_first[e], y_first[e] + y_count[e]):
                marked[cell_base[e] + y_at[j]] = 1


def mark_terms(const double[:, ::1] values, const cnp.int64_t[::1] right,
               const cnp.int64_t[::1] left, cnp.uint8_t[::1] nonzero):
    cdef Py_ssize_t i, r, count = right.shape[0], rows = values.shape[0]
    if left.shape[0] != count or nonzero.shape[0] != count:
        raise ValueError("mark_terms: right, left and nonzero must be as long")
    with nogil:
        for i in range(count):
            if nonzero[i]:
                continue
            for r in range(rows):
                if values[r, right[i]] - values[r, left[i]] != 0:
                    nonzero[i] = 1
                    break


def product_cells(const cnp.int64_t[::1] cell_base, const cnp.int64_t[::1] y_first,
                  const cnp.int64_t[::1] y_count, const cnp.int64_t[::1] y_at):
    cdef Py_ssize_t e, j, i = 0
    cells_array = np.empty(int(np.asarray(y_count).sum()), dtype=np.int64)
    cdef cnp.int64_t[::1] cells = cells_array
    with nogil:
        for e in range(cell_base.shape[0]):
            for j in range(y_first[e], y_first[e] + y_count[e]):
                cells[i] = cell_base[e] + y_at[j]
                i += 1
    return cells_array


def add_corners(double[:, ::1] highs, double[:, ::1] lows, const double[:, ::1] stored,
                const cnp.int64_t[::1] rows, const cnp.int64_t[::1] steps,
                const cnp.int64_t[::1] x_first, const cnp.int64_t[::1] x_runs,
                const cnp.int64_t[::1] y_first, const cnp.int64_t[::1] y_runs,
                const cnp.int64_t[::1] line_first, const cnp.int64_t[::1] widths,
                const cnp.int64_t[::1] x_start, const cnp.int64_t[::1] y_start,
                const cnp.int64_t[::1] x_key, const cnp.int64_t[::1] y_key,
                const double[::1] units, Py_ssize_t px):
    cdef Py_ssize_t py = highs.shape[1] // px, total = stored.shape[1]
    cdef Py_ssize_t count = line_first.shape[0]
    cdef Py_ssize_t r, i, s, a, b, k, j, base, begin, end, widest = 0
    for i in range(steps.shape[0]):
        s = steps[i]
        end = line_first[s + 1] if s + 1 < count else total
        widest = max(widest, end - line_first[s])
    split_np = np.empty(2 * max(widest, 1))
    cdef double* split_high = <double*> cnp.PyArray_DATA(split_np)
    cdef double* split_low = split_high + max(widest, 1)
    cdef double unit, inverse, value, e_high, e_low, d_high, d_low
    cdef double last_high, last_low
    cdef const double* values
    cdef Py_ssize_t line, above
    cdef double* out_high
    cdef double* out_low
    with nogil:
        for r in range(rows.shape[0]):
            out_high, out_low = &highs[rows[r], 0], &lows[rows[r], 0]
            # u a power of two: v / u and v (1/u) are the same float
            unit = units[rows[r]]
            inverse = 1.0 / unit
            for i in range(steps.shape[0]):
                s = steps[i]
                begin = line_first[s]
                end = line_first[s + 1] if s + 1 < count else total
                values = &stored[rows[r], begin]
                for j in range(end - begin):
                    value = values[j]
                    split_high[j] = nearbyint(value * inverse) * unit
                    split_low[j] = value - split_high[j]
                above = -1
                for a in range(x_first[s], x_first[s] + x_runs[s]):
                    line = x_key[a] * widths[s]
                    base = x_start[a] * py
                    last_high = last_low = 0.0
                    for b in range(y_first[s], y_first[s] + y_runs[s]):
                        k = y_key[b]
                        e_high = split_high[line + k]
                        e_low = split_low[line + k]
                        if above >= 0:
                            e_high = e_high - split_high[above + k]
                            e_low = e_low - split_low[above + k]
                        d_high = e_high - last_high
                        d_low = e_low - last_low
                        last_high, last_low = e_high, e_low
                        if d_high != 0.0:
                            out_high[base + y_start[b]] += d_high
                        if d_low != 0.0:
                            out_low[base + y_start[b]] += d_low
                    above = line


cdef inline cnp.uint8_t _changed(const double* values, Py_ssize_t a, Py_ssize_t b,
                                 const cnp.int64_t* offsets, Py_ssize_t count,
                                 Py_ssize_t pair, Py_ssize_t visit, cnp.int64_t* seen,
                                 cnp.uint8_t* memo) noexcept nogil:
    """Whether values[a + offsets[j]] != values[b + offsets[j]] for some j < count; the
    answer kept for `pair` at `visit` (pair -1: not kept)."""
    cdef Py_ssize_t j
    cdef cnp.uint8_t differ = 0
    if pair >= 0 and seen[pair] == visit:
        return memo[pair]
    for j in range(count):
        if values[a + offsets[j]] != values[b + offsets[j]]:
            differ = 1
            break
    if pair >= 0:
        seen[pair], memo[pair] = visit, differ
    return differ


def changed_runs(const double[::1] stored, const cnp.int64_t[::1] steps,
                 const cnp.int64_t[::1] x_first, const cnp.int64_t[::1] x_runs,
                 const cnp.int64_t[::1] x_key, const cnp.int64_t[::1] y_first,
                 const cnp.int64_t[::1] y_runs, const cnp.int64_t[::1] y_key,
                 const cnp.int64_t[::1] line_first, const cnp.int64_t[::1] lines,
                 const cnp.int64_t[::1] widths, cnp.uint8_t[::1] x_changed,
                 cnp.uint8_t[::1] y_changed):
    if x_changed.shape[0] != x_key.shape[0] or y_changed.shape[0] != y_key.shape[0]:
        raise ValueError("changed_runs: x_changed, y_changed must be as long as the keys")
    cdef Py_ssize_t most = 1, keys = 1, t
    for t in range(steps.shape[0]):
        most = max(most, x_runs[steps[t]], widths[steps[t]])
        keys = max(keys, lines[steps[t]], widths[steps[t]])
    # a pair of keys compared once a step and axis where the keys are few (the runs of
    # a step repeat a few pairs of classes): its answer, and the visit that made it
    keys = keys if keys <= MEMO_KEYS else 0
    # the places compared: along a line (x runs), and each line's start (y runs: the
    # lines of the x runs that change, where fewer than the step's lines)
    along_np, used_np = np.arange(most, dtype=np.int64), np.empty(most, dtype=np.int64)
    memo_np = np.zeros(keys * keys, dtype=np.uint8)
    seen_np = np.full(keys * keys, -1, dtype=np.int64)
    cdef cnp.int64_t* along = <cnp.int64_t*> cnp.PyArray_DATA(along_np)
    cdef cnp.int64_t* used = <cnp.int64_t*> cnp.PyArray_DATA(used_np)
    cdef cnp.uint8_t* memo = <cnp.uint8_t*> cnp.PyArray_DATA(memo_np)
    cdef cnp.int64_t* seen = <cnp.int64_t*> cnp.PyArray_DATA(seen_np)
    cdef const double* values = &stored[0]
    cdef Py_ssize_t i, j, s, width, count, base, visit = 0
    with nogil:
        for t in range(steps.shape[0]):
            s = steps[t]
            width = widths[s]
            base = line_first[s]
            used[0] = x_key[x_first[s]] * width
            count = 1
            visit += 1
            for i in range(x_first[s] + 1, x_first[s] + x_runs[s]):
                x_changed[i] = _changed(values, base + x_key[i] * width,
                                        base + x_key[i - 1] * width, along, width,
                                        x_key[i - 1] * keys + x_key[i] if keys else -1,
                                        visit, seen, memo)
                if x_changed[i]:
                    used[count] = x_key[i] * width
                    count += 1
            if count >= lines[s]:
                count = lines[s]
                for j in range(count):
                    used[j] = j * width
            visit += 1
            for i in range(y_first[s] + 1, y_first[s] + y_runs[s]):
                y_changed[i] = _changed(values, base + y_key[i], base + y_key[i - 1], used,
                                        count, y_key[i - 1] * keys + y_key[i] if keys else -1,
                                        visit, seen, memo)


def running_sum(double[:, ::1] total, int axis):
    cdef Py_ssize_t lines = total.shape[0], width = total.shape[1], i, j
    cdef double a0, a1, a2, a3
    cdef double* r0
    cdef double* r1
    cdef double* r2
    cdef double* r3
    with nogil:
        if axis == 0:
            for i in range(1, lines):
                r0 = &total[i - 1, 0]
                r1 = &total[i, 0]
                for j in range(width):
                    r1[j] = r0[j] + r1[j]
        else:
            i = 0
            while i + 4 <= lines:
                r0 = &total[i, 0]
                r1 = &total[i + 1, 0]
                r2 = &total[i + 2, 0]
                r3 = &total[i + 3, 0]
                a0, a1, a2, a3 = r0[0], r1[0], r2[0], r3[0]
                for j in range(1, width):
                    a0 = a0 + r0[j]
                    a1 = a1 + r1[j]
                    a2 = a2 + r2[j]
                    a3 = a3 + r3[j]
                    r0[j] = a0
                    r1[j] = a1
                    r2[j] = a2
                    r3[j] = a3
                i = i + 4
            while i < lines:
                r0 = &total[i, 0]
                a0 = r0[0]
                for j in range(1, width):
                    a0 = a0 + r0[j]
                    r0[j] = a0
                i = i + 1
    return np.asarray(total)


def gather(const double[:, ::1] values, steps, const cnp.int64_t[:, ::1] index):
    cdef Py_ssize_t count = index.shape[0], width = index.shape[1], s, i, row
    cdef const cnp.int64_t[::1] at
    cdef bint every = steps is None
    if not every:
        at = steps
    out = np.empty((count, width))
    cdef double[:, ::1] found = out
    cdef const double* line
    with nogil:
        for s in range(count):
            row = s if every else at[s]
            line = &values[row, 0]
            for i in range(width):
                found[s, i] = line[index[s, i]]
    return out


def shifted_means(double[:, :, :, ::1] grids, tuple shift, Py_ssize_t count):
    cdef Py_ssize_t figures = grids.shape[0], n0 = grids.shape[1], n1 = grids.shape[2]
    cdef Py_ssize_t n2 = grids.shape[3]
    if count < 1 or len(shift) != 3:
        raise ValueError("shifted_means: count >= 1 and a shift of three axes")
    cdef Py_ssize_t cells = n0 * n1 * n2
    if figures == 0 or cells == 0:
        return
    cdef Py_ssize_t d0 = shift[0] % n0, d1 = shift[1] % n1, d2 = shift[2] % n2
    cdef Py_ssize_t length = math.lcm(n0 // math.gcd(n0, d0), n1 // math.gcd(n1, d1),
                                      n2 // math.gcd(n2, d2))
    if length == 1:
        return      # nothing moves: every mean its own cell's
    if d0 == 0 and d1 == 1:
        _skewed_planes(grids, d2, count)
        return
    # the cells orbit by orbit, each from its first cell in memory order
    order_np = np.empty(cells, dtype=np.intp)
    seen_np = np.zeros(cells, dtype=np.uint8)
    cdef Py_ssize_t* order = <Py_ssize_t*> cnp.PyArray_DATA(order_np)
    cdef unsigned char* seen = <unsigned char*> cnp.PyArray_DATA(seen_np)
    # the window's whole turns of an orbit and the rest; its first cell `back` places
    # before its mean's own (the largest m)
    cdef Py_ssize_t turns = count // length, rest = count % length
    cdef Py_ssize_t back = (count - 1 - count // 2) % length
    cdef Py_ssize_t extent = length + rest - 1 if rest else length
    buffers = np.empty((2, extent))
    cdef double* line = <double*> cnp.PyArray_DATA(buffers)
    cdef double* prefix = line + extent
    cdef Py_ssize_t p, k = 0, t, i0, i1, i2, o, i, j, within
    cdef Py_ssize_t* cycle
    cdef double* grid
    cdef double total, window
    with nogil:
        for p in range(cells):
            if seen[p]:
                continue
            i0, i1, i2 = p // (n1 * n2), (p // n2) % n1, p % n2
            for t in range(length):
                j = (i0 * n1 + i1) * n2 + i2
                seen[j] = 1
                order[k] = j
                k += 1
                i0 += d0
                if i0 >= n0:
                    i0 -= n0
                i1 += d1
                if i1 >= n1:
                    i1 -= n1
                i2 += d2
                if i2 >= n2:
                    i2 -= n2
        for f in range(figures):
            grid = &grids[f, 0, 0, 0]
            for o in range(cells // length):
                cycle = order + o * length
                total = 0.0
                for t in range(length):
                    line[t] = grid[cycle[t]]
                    total = total + line[t]
                for t in range(extent - length):
                    line[length + t] = line[t]
                if rest:
                    _block_sums(line, prefix, extent, 1, rest)
                within = 0
                for i in range(length):
                    # the window of the mean at cell i + back of the orbit: cells i ..
                    # i + rest - 1 after the whole turns
                    window = 0.0
                    if rest:
                        window = line[i] + prefix[i + rest - 1] if within else line[i]
                        within += 1
                        if within == rest:
                            within = 0
                    j = i + back
                    if j >= length:
                        j -= length
                    grid[cycle[j]] = (turns * total + window) / count if turns else \
                        window / count


cdef void _skewed_planes(double[:, :, :, ::1] grids, Py_ssize_t step, Py_ssize_t count):
    """`shifted_means` where the shift is (0, 1, step): each plane [x, y] (rows of y)
    skewed, row x'' (from -(count - 1 - count // 2) to its rows + count // 2) the plane's
    row x'' mod rows rolled by x'' step, so that a mean's cells T[x - m, y - m step] lie
    in one column z = y - x step of `count` consecutive skewed rows: each row's window
    sums a block's suffix plus the next block's prefix (blocks of `count` rows), whole
    rows at a time, then rolled back."""
    cdef Py_ssize_t figures = grids.shape[0], layers = grids.shape[1]
    cdef Py_ssize_t rows = grids.shape[2], width = grids.shape[3]
    cdef Py_ssize_t ahead = count - 1 - count // 2, extent = rows + count - 1
    skewed_np, prefix_np = np.empty((extent, width)), np.empty((extent, width))
    row_np = np.empty(width)
    cdef double* skewed = <double*> cnp.PyArray_DATA(skewed_np)
    cdef double* prefix = <double*> cnp.PyArray_DATA(prefix_np)
    cdef double* window = <double*> cnp.PyArray_DATA(row_np)
    cdef Py_ssize_t f, l, i, x, y, z, shift
    cdef double* plane
    cdef double* into
    cdef const double* source
    with nogil:
        for f in range(figures):
            for l in range(layers):
                plane = &grids[f, l, 0, 0]
                for i in range(extent):
                    # skewed[i, z] = T[(i - ahead) mod rows, (z + (i - ahead) step) mod width]
                    x = (i - ahead) % rows
                    if x < 0:
                        x += rows
                    shift = ((i - ahead) * step) % width
                    if shift < 0:
                        shift += width
                    source = plane + x * width
                    into = skewed + i * width
                    for z in range(width - shift):
                        into[z] = source[z + shift]
                    for z in range(width - shift, width):
                        into[z] = source[z + shift - width]
                _block_sums(skewed, prefix, extent, width, count)
                for x in range(rows):
                    if x % count:
                        for z in range(width):
                            window[z] = skewed[x * width + z] + prefix[(x + count - 1) * width + z]
                    else:
                        for z in range(width):
                            window[z] = skewed[x * width + z]
                    # T[x, y] = window[(y - x step) mod width] / count
                    shift = (x * step) % width
                    into = plane + x * width
                    for y in range(shift):
                        into[y] = window[y - shift + width] / count
                    for y in range(shift, width):
                        into[y] = window[y - shift] / count


cdef void _block_sums(double* values, double* prefix, Py_ssize_t extent, Py_ssize_t width,
                      Py_ssize_t block) noexcept nogil:
    """`shifted_means`' windows: in blocks of `block` rows of `width` values from row 0
    on, prefix[i] the sum of row i's block from its first row to row i, values[i] (in
    place) from row i to its block's last: a window of `block` rows from row i is
    values[i] plus, where i is not a block's first row, prefix[i + block - 1]."""
    cdef Py_ssize_t start = 0, end, i, z
    while start < extent:
        end = min(start + block, extent)
        for z in range(width):
            prefix[start * width + z] = values[start * width + z]
        for i in range(start + 1, end):
            for z in range(width):
                prefix[i * width + z] = prefix[(i - 1) * width + z] + values[i * width + z]
        for i in range(end - 2, start - 1, -1):
            for z in range(width):
                values[i * width + z] = values[i * width + z] + values[(i + 1) * width + z]
        start = end
