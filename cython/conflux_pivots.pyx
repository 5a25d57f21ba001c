# cython: language_level=3
"""The 2.5D LU's expected pivots on a random matrix, step after step
(`linalg_io.models.conflux_pivots`, "uniform"; its module doc gives the rule).

tournament_steps(rows, widths, first_step, dust, active, owned, differing=None)
    for the steps k = first_step + t, t < len(active) (active and owned None: t <
    len(differing), no table written, the rows and differing alone): active[t] = rows
    (the active rows of each process row before step k, updated in place: the state the
    next call goes on from), owned[t] = the pivots each gives: the step's merge tree
    (roles r = (x - k) mod Px, r >= q folds onto r - q, the butterfly pairs neighbouring
    sets up to one set) summed bottom-up, n = min(w, n_1 + n_2) candidates standing for
    r = r_1 + r_2 rows, then split top-down: the first set keeps min(max(W w_1/(w_1 +
    w_2), W - n_2), n_1) of the W winners, w_i = n_i (r_i/n_i)^(1/4) (0 where n_i = 0;
    the exponent `linalg_io.models.conflux_pivots.TOURNAMENT_POOL_EXPONENT`); a share leaving
    fewer than `dust` rows takes them all; rows -= owned[t]; differing[t] (where given)
    the process rows whose active or owned differs from the row before's (`changes`
    counted per step). O(Px) per step; where only the first H < Px process rows hold
    rows (tiles dealt cyclically, fewer tiles than process rows: rows[x] = 0 from H on,
    and 0 they stay), O(H + log Px): a subtree of empty sets is all 0 (its n, r and
    weight), merging one onto a set leaves the set as it was, and the shares its leaves
    get lie in [-u, 0], u an ulp of the winners above them, which the dust rule makes 0
    (checked: a ValueError where one is not), so only the tree's nodes above the H
    rows' leaves (a few ranges a level) are computed, the same operations on the same
    values as over every node. The tables may then be H' wide, H <= H' <= Px: the first
    H' process rows' (the others' 0).
changes(active, owned)
    (step, process row) flat, in row-major order: where active or owned [step, process
    row] differs from the process row before; two passes, no [step, Px] temporary.

The fourth root is two square roots, each correctly rounded (IEEE 754), so its bits are
those of any CPU's, scalar or vector; a power function's are not (NumPy's float64 power
is libm's pow on one CPU and SIMD code of other bits on another, and costs several
times two square roots). The loop below only adds, subtracts, multiplies, divides,
takes square roots and compares, a product only stored or divided, never added to, so
no fused multiply-add can change a result.
"""
import numpy as np
cimport numpy as cnp

cnp.import_array()


cdef inline double _smaller(double a, double b) noexcept nogil:
    return b if b < a else a


cdef inline Py_ssize_t _wrapped(Py_ssize_t i, Py_ssize_t px) noexcept nogil:
    """i mod Px for 0 <= i < 2 Px."""
    return i - px if i >= px else i


cdef inline double _first(double winners, double n1, double w1, double n2,
                          double w2) noexcept nogil:
    """The winners the first of two merged sets keeps (w_i: its weight, 0 if n_i = 0)."""
    cdef double total = w1 + w2
    cdef double first = winners * w1 / total if total > 0 else 0.0
    cdef double floor = winners - n2
    if floor > first:
        first = floor
    return _smaller(first, n1)


cdef extern from *:
    """
    #include <math.h>
    #if defined(__AVX__)
    #include <immintrin.h>
    #endif
    /* weight[i] = n (r/n)^(1/4) for lo <= i < hi (n = sets[i], r = stood[i]; r/n = 1
       where n = 0, a weight of 0): vector square roots where the CPU has them (GCC
       keeps sqrt scalar while it may set errno), the same bits as the scalar tail's */
    static inline void lio_weights(const double* sets, const double* stood,
                                   double* weight, Py_ssize_t lo, Py_ssize_t hi) {
        Py_ssize_t i = lo;
    #if defined(__AVX__)
        const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
        for (; i + 4 <= hi; i += 4) {
            __m256d n = _mm256_loadu_pd(sets + i);
            __m256d some = _mm256_cmp_pd(n, zero, _CMP_GT_OQ);
            __m256d ratio = _mm256_blendv_pd(
                one, _mm256_div_pd(_mm256_loadu_pd(stood + i), _mm256_blendv_pd(one, n, some)),
                some);
            _mm256_storeu_pd(weight + i, _mm256_mul_pd(n, _mm256_sqrt_pd(_mm256_sqrt_pd(ratio))));
        }
    #endif
        for (; i < hi; i++) {
            double ratio = sets[i] > 0 ? stood[i] / sets[i] : 1.0;
            weight[i] = sets[i] * sqrt(sqrt(ratio));
        }
    }
    """
    void lio_weights(const double* sets, const double* stood, double* weight,
                     Py_ssize_t lo, Py_ssize_t hi) noexcept nogil


cdef void _leaves(const double* rows, double* sets, double* stood, Py_ssize_t start,
                  Py_ssize_t px, double w) noexcept nogil:
    """Leaf j of a merge tree without folds: role (start + j) mod Px's set, min(rows, w)
    candidates standing for its rows."""
    cdef Py_ssize_t j, head = px - start
    for j in range(head):
        sets[j] = _smaller(rows[start + j], w)
        stood[j] = rows[start + j]
    for j in range(start):
        sets[head + j] = _smaller(rows[j], w)
        stood[head + j] = rows[j]


cdef void _unrotated(double* share_row, const double* leaves, Py_ssize_t start,
                     Py_ssize_t px) noexcept nogil:
    """share_row[(start + j) mod Px] = leaves[j] (the leaves' winners to their rows)."""
    cdef Py_ssize_t j, head = px - start
    for j in range(head):
        share_row[start + j] = leaves[j]
    for j in range(start):
        share_row[j] = leaves[head + j]


cdef void _dusted(double* share, const double* rows, double dust,
                  Py_ssize_t px) noexcept nogil:
    """A share that would leave fewer than `dust` rows takes them all."""
    cdef Py_ssize_t i
    for i in range(px):
        share[i] = rows[i] if rows[i] - share[i] < dust else share[i]


cdef Py_ssize_t _differing(const double* rows, const double* share,
                           Py_ssize_t px) noexcept nogil:
    """The process rows whose active rows or pivots differ from the row before's."""
    cdef Py_ssize_t i, count = 0
    for i in range(1, px):
        count += (rows[i] != rows[i - 1]) | (share[i] != share[i - 1])
    return count


cdef double _taken(double* rows, const double* share, Py_ssize_t px) noexcept nogil:
    """rows -= share; the most rows left (0 at least: a max, in any order the same)."""
    cdef Py_ssize_t i, k
    cdef double most[8]
    for i in range(px):
        rows[i] = rows[i] - share[i]
    for k in range(8):
        most[k] = 0.0
    for i in range(px - px % 8):     # eight maxima side by side, not one chain
        k = i % 8
        most[k] = rows[i] if rows[i] > most[k] else most[k]
    for i in range(px - px % 8, px):
        most[0] = rows[i] if rows[i] > most[0] else most[0]
    for k in range(1, 8):
        most[0] = most[k] if most[k] > most[0] else most[0]
    return most[0]


cdef void _merge_level(double* sets, double* stood, double w, Py_ssize_t lo,
                       Py_ssize_t hi) noexcept nogil:
    """The sets lo .. hi-1 of the tree, each two children merged: min(w, n_1 + n_2)
    candidates standing for r_1 + r_2 rows."""
    cdef Py_ssize_t i
    for i in range(lo, hi):
        sets[i] = _smaller(w, sets[2 * i] + sets[2 * i + 1])
        stood[i] = stood[2 * i] + stood[2 * i + 1]


cdef void _split_level(double* winners, const double* sets, const double* weight,
                       Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t i
    cdef double first
    for i in range(lo, hi):
        first = _first(winners[i], sets[2 * i], weight[2 * i], sets[2 * i + 1],
                       weight[2 * i + 1])
        winners[2 * i] = first
        winners[2 * i + 1] = winners[i] - first


cdef enum:
    # disjoint ranges of a tree level's nodes above a cyclic range of roles (4 at the
    # leaves: the roles and their folds, each in two pieces where it wraps; no more above)
    MOST_RANGES = 8
    # levels of a merge tree (q < 2^63)
    MOST_LEVELS = 64


cdef Py_ssize_t _merged(Py_ssize_t* lo, Py_ssize_t* hi, Py_ssize_t count) noexcept nogil:
    """The ranges [lo, hi) sorted, the empty ones dropped, those that overlap or meet
    joined, in place; their count."""
    cdef Py_ssize_t i, j, a, b, kept = 0
    for i in range(1, count):      # insertion sort by lo (a handful)
        a, b = lo[i], hi[i]
        j = i - 1
        while j >= 0 and lo[j] > a:
            lo[j + 1], hi[j + 1] = lo[j], hi[j]
            j -= 1
        lo[j + 1], hi[j + 1] = a, b
    for i in range(count):
        if hi[i] <= lo[i]:
            continue
        if kept and lo[i] <= hi[kept - 1]:
            if hi[i] > hi[kept - 1]:
                hi[kept - 1] = hi[i]
        else:
            lo[kept], hi[kept] = lo[i], hi[i]
            kept += 1
    return kept


cdef Py_ssize_t _leaf_ranges(Py_ssize_t* lo, Py_ssize_t* hi, Py_ssize_t start,
                             Py_ssize_t holding, Py_ssize_t px, Py_ssize_t q) noexcept nogil:
    """The leaves j < q (heap nodes q + j) whose role j or folded role j + q is one of
    process rows 0 .. holding - 1 (role r is row (start + r) mod Px): the roles from r0
    = (Px - start) mod Px on, `holding` of them, cyclic."""
    cdef Py_ssize_t r0 = (px - start) % px, count = 0, piece, a, b
    cdef Py_ssize_t piece_lo[2]
    cdef Py_ssize_t piece_hi[2]
    piece_lo[0], piece_hi[0] = r0, r0 + holding if r0 + holding < px else px
    piece_lo[1], piece_hi[1] = 0, r0 + holding - px if r0 + holding > px else 0
    for piece in range(2):
        a, b = piece_lo[piece], piece_hi[piece]
        if a >= b:
            continue
        if a < q:
            lo[count], hi[count] = q + a, q + (b if b < q else q)
            count += 1
        if b > q:
            lo[count], hi[count] = q + (a if a > q else q) - q, q + b - q
            count += 1
    return _merged(lo, hi, count)


cdef Py_ssize_t _parents(const Py_ssize_t* lo, const Py_ssize_t* hi, Py_ssize_t count,
                         Py_ssize_t* up_lo, Py_ssize_t* up_hi) noexcept nogil:
    """The parents (heap: node i's is i / 2) of the nodes in the ranges."""
    cdef Py_ssize_t i
    for i in range(count):
        up_lo[i], up_hi[i] = lo[i] // 2, (hi[i] - 1) // 2 + 1
    return _merged(up_lo, up_hi, count)


cdef inline void _leaf(double* sets, double* stood, const double* rows, Py_ssize_t j,
                       Py_ssize_t start, Py_ssize_t px, Py_ssize_t q, double w) noexcept nogil:
    """Leaf j's set (heap node q + j): role j's rows, with role j + q's folded onto it
    where there is one (its own and the partner's sets kept at 2q + 2j, 2q + 2j + 1)."""
    cdef Py_ssize_t role = _wrapped(start + j, px), partner, e
    cdef Py_ssize_t i = q + j
    cdef double mine = _smaller(rows[role], w), theirs
    if j + q < px:
        partner = _wrapped(role + q, px)
        theirs = _smaller(rows[partner], w)
        sets[i] = _smaller(w, mine + theirs)
        stood[i] = rows[role] + rows[partner]
        e = 2 * q + 2 * j
        sets[e], stood[e] = mine, rows[role]
        sets[e + 1], stood[e + 1] = theirs, rows[partner]
    else:
        sets[i], stood[i] = mine, rows[role]


cdef inline bint _share(double* share_row, Py_ssize_t row, double share, Py_ssize_t holding,
                        double dust) noexcept nogil:
    """share_row[row] = share on a row that holds rows; else whether the dust rule would
    leave the share of a row of 0 rows other than 0 (the sparse tree's error)."""
    if row < holding:
        share_row[row] = share
        return False
    return not (0.0 - share < dust)


cdef void _cleared(double* sets, double* stood, double* weight, Py_ssize_t lo,
                   Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(lo, hi):
        sets[i] = 0.0
        stood[i] = 0.0
        weight[i] = 0.0


def tournament_steps(double[::1] rows not None, const double[::1] widths not None,
                     Py_ssize_t first_step, double dust,
                     double[:, ::1] active, double[:, ::1] owned,
                     cnp.int64_t[::1] differing = None) -> None:
    cdef bint tables = active is not None
    cdef Py_ssize_t px = rows.shape[0]
    cdef Py_ssize_t wide = active.shape[1] if tables else 0
    cdef Py_ssize_t steps = active.shape[0] if tables else (
        differing.shape[0] if differing is not None else -1)
    if px < 1 or steps < 0 or (not tables and owned is not None) or (tables and (
            owned is None or owned.shape[0] != steps or not 1 <= wide <= px
            or owned.shape[1] != wide)) \
            or first_step < 0 or first_step + steps > widths.shape[0] \
            or (differing is not None and differing.shape[0] != steps):
        raise ValueError("active and owned must be [steps, H'], 1 <= H' <= Px, within the "
                         "widths; differing [steps]; or both None and differing given")
    # the process rows holding rows: those before the last one's end (0 after it)
    cdef Py_ssize_t holding = px
    while holding > 0 and rows[holding - 1] == 0:
        holding -= 1
    if tables and wide < holding:
        raise ValueError("tables narrower than the process rows that hold rows")
    cdef bint sparse = 0 < holding < px
    cdef Py_ssize_t q = 1
    while 2 * q <= px:
        q *= 2
    # the merge tree as a heap (root 1, children 2i and 2i + 1, role j's set at q + j),
    # then two entries per folded role j < Px - q: its own set (2q + 2j) and the
    # partner's (2q + 2j + 1)
    cdef Py_ssize_t size = 2 * q + 2 * (px - q)
    # every set's n, r and weight n (r/n)^(1/4) (entries 2 .. size-1)
    sets_np, stood_np, weight_np = (np.zeros(size) for _ in range(3))
    cdef double* sets = <double*> cnp.PyArray_DATA(sets_np)
    cdef double* stood = <double*> cnp.PyArray_DATA(stood_np)
    cdef double* weight = <double*> cnp.PyArray_DATA(weight_np)
    cdef double[::1] winners = np.zeros(2 * q)
    # the step's shares before the dust rule, by process row
    cdef double[::1] share_row = np.zeros(px)
    cdef Py_ssize_t t, k, i, j, start, role, partner, e
    cdef double w, first, mine, theirs
    # sparse: each level's ranges of nodes (level 0 the leaves q .. 2q - 1, level d the
    # nodes q >> d .. (2q >> d) - 1), the root's level, a share off the holding rows
    cdef Py_ssize_t range_lo[MOST_LEVELS * MOST_RANGES]
    cdef Py_ssize_t range_hi[MOST_LEVELS * MOST_RANGES]
    cdef Py_ssize_t ranges[MOST_LEVELS]
    cdef Py_ssize_t top = 0, d, r, lo, hi, folded
    cdef bint dusty = False
    while (q >> top) > 1:
        top += 1
    # the most active rows of a process row (only fall): at most w, each leaf of a Px a
    # power of two is one row's set whose r/n is 1, no ratio to take
    cdef double widest = 0.0
    for i in range(px):
        widest = rows[i] if rows[i] > widest else widest
    with nogil:
        for t in range(steps):
            k = first_step + t
            w = widths[k]
            start = k % px
            if sparse:
                ranges[0] = _leaf_ranges(range_lo, range_hi, start, holding, px, q)
                for d in range(top):
                    ranges[d + 1] = _parents(
                        range_lo + d * MOST_RANGES, range_hi + d * MOST_RANGES, ranges[d],
                        range_lo + (d + 1) * MOST_RANGES, range_hi + (d + 1) * MOST_RANGES)
                for r in range(ranges[0]):
                    for i in range(range_lo[r], range_hi[r]):
                        _leaf(sets, stood, &rows[0], i - q, start, px, q, w)
                for d in range(1, top + 1):
                    for r in range(d * MOST_RANGES, d * MOST_RANGES + ranges[d]):
                        _merge_level(sets, stood, w, range_lo[r], range_hi[r])
                for d in range(1 if q == px and widest <= w else 0, top):
                    for r in range(d * MOST_RANGES, d * MOST_RANGES + ranges[d]):
                        lio_weights(sets, stood, weight, range_lo[r], range_hi[r])
                for r in range(ranges[0]):
                    lo, hi = range_lo[r], range_hi[r]
                    if q == px and widest <= w:
                        for i in range(lo, hi):
                            weight[i] = sets[i]
                    folded = px - q if hi - q > px - q else hi - q
                    if lo - q < folded:
                        lio_weights(sets, stood, weight, 2 * lo, 2 * q + 2 * folded)
            else:
                if q == px:         # no folds: the leaves the rows from the root's on
                    _leaves(&rows[0], sets + q, stood + q, start, px, w)
                for j in range(q if q < px else 0):
                    _leaf(sets, stood, &rows[0], j, start, px, q, w)
                j = q // 2
                while j >= 1:       # level by level, the leaves' parents first (SIMD)
                    _merge_level(sets, stood, w, j, 2 * j)
                    j //= 2
                if q == px and widest <= w:     # the leaves' r/n are 1: their weights n
                    lio_weights(sets, stood, weight, 2, q)
                    for i in range(q, size):
                        weight[i] = sets[i]
                else:
                    lio_weights(sets, stood, weight, 2, size)
            winners[1] = _smaller(w, sets[1])
            if sparse:
                for d in range(top, 0, -1):     # the root's level first
                    for r in range(d * MOST_RANGES, d * MOST_RANGES + ranges[d]):
                        _split_level(&winners[0], sets, weight, range_lo[r], range_hi[r])
                for r in range(ranges[0]):
                    for i in range(range_lo[r], range_hi[r]):
                        j = i - q
                        role = _wrapped(start + j, px)
                        if j + q < px:
                            partner = _wrapped(role + q, px)
                            e = 2 * q + 2 * j
                            first = _first(winners[i], sets[e], weight[e], sets[e + 1],
                                           weight[e + 1])
                            dusty |= _share(&share_row[0], role, first, holding, dust)
                            dusty |= _share(&share_row[0], partner, winners[i] - first,
                                            holding, dust)
                        else:
                            dusty |= _share(&share_row[0], role, winners[i], holding, dust)
            else:
                j = 1
                while j < q:        # level by level: each level's splits independent (SIMD)
                    _split_level(&winners[0], sets, weight, j, 2 * j)
                    j *= 2
                if q == px:
                    _unrotated(&share_row[0], &winners[q], start, px)
                for j in range(q if q < px else 0):
                    role = _wrapped(start + j, px)
                    if j + q < px:
                        partner = _wrapped(role + q, px)
                        e = 2 * q + 2 * j
                        first = _first(winners[q + j], sets[e], weight[e], sets[e + 1],
                                       weight[e + 1])
                        share_row[role] = first
                        share_row[partner] = winners[q + j] - first
                    else:
                        share_row[role] = winners[q + j]
            # each share, all of a process row's rows where it would leave less than
            # `dust`; the tables; the rows whose (a, p) differ from the row before's; the
            # rows left (sparse: the rows past the holding ones 0 before and after, their
            # shares 0, as the dust rule makes them)
            _dusted(&share_row[0], &rows[0], dust, holding if sparse else px)
            if tables:
                for i in range(holding if sparse else wide):
                    active[t, i] = rows[i]
                    owned[t, i] = share_row[i]
                for i in range(holding if sparse else wide, wide):
                    active[t, i] = rows[i]
                    owned[t, i] = rows[i]
            if differing is not None:
                differing[t] = _differing(&rows[0], &share_row[0],
                                          holding + 1 if sparse else px)
            widest = _taken(&rows[0], &share_row[0], holding if sparse else px)
            if sparse:      # the nodes written, 0 again for the next step's ranges
                for d in range(top + 1):
                    for r in range(d * MOST_RANGES, d * MOST_RANGES + ranges[d]):
                        _cleared(sets, stood, weight, range_lo[r], range_hi[r])
                for r in range(ranges[0]):
                    lo, hi = range_lo[r], range_hi[r]
                    folded = px - q if hi - q > px - q else hi - q
                    if lo - q < folded:
                        _cleared(sets, stood, weight, 2 * lo, 2 * q + 2 * folded)
    if dusty:
        raise ValueError("tournament_steps: a share of a process row holding no rows "
                         "that the dust rule does not make 0")


def changes(const double[:, :] active not None, const double[:, :] owned not None) -> tuple:
    cdef Py_ssize_t steps = active.shape[0], px = active.shape[1], k, x, m = 0
    if owned.shape[0] != steps or owned.shape[1] != px:
        raise ValueError("active and owned must have one shape")
    with nogil:
        for k in range(steps):
            for x in range(1, px):
                if active[k, x] != active[k, x - 1] or owned[k, x] != owned[k, x - 1]:
                    m += 1
    step_np, row_np = np.empty(m, dtype=np.intp), np.empty(m, dtype=np.intp)
    cdef Py_ssize_t[::1] step = step_np, row = row_np
    m = 0
    with nogil:
        for k in range(steps):
            for x in range(1, px):
                if active[k, x] != active[k, x - 1] or owned[k, x] != owned[k, x - 1]:
                    step[m], row[m] = k, x
                    m += 1
    return step_np, row_np
