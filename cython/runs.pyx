# cython: language_level=3
"""Kernels of `linalg_io.models.rank_classes`: a step's ranks classed, runs split by
residue.

sorted_classes(features, order)
    (of, rep, count) of `step_classes`: the ranks of each step in the order
    order[step] (sorted by a combination of the features), a class begun wherever
    some feature ([step, rank] floats, any strides) differs from the rank before's in
    that order; of[step, rank] its class (numbered in that order from 0), rep[step,
    class] its first rank in that order (0 for the padding of steps with fewer classes),
    count[step, class] its ranks; NumPy's take_along_axis of every feature, its
    comparisons and cumsum, put_along_axis and bincount, without their [step, rank]
    temporaries.

feature_runs(features)
    (flat, values, varying): flat the ranks (step n + rank, ascending) where some
    feature ([step, rank] floats, any strides) differs from the rank before's (rank 0
    of every step among them), values[f, i] feature f there, varying[f] 1 where
    feature f differs from the rank before's at some rank of some step: every feature
    compared at every rank, in one pass (NumPy's comparisons of each feature's shifted
    views, without their [step, rank] temporaries, and its gathers).

residue_runs(step, start, end, of_run, period)
    (first, step, start, end, of_run): the runs [start, end) of ranks x (ordered by step,
    then rank) on the ranks x = d q + r of each residue r < d = `period`, as runs of q:
    ceil((start - r) / d) .. ceil((end - r) / d), a run kept where it holds a rank of
    residue r, consecutive kept runs of a step in one class merged; residue r's runs are
    first[r] .. first[r + 1] - 1 of the outputs. O(sum over the runs of min(length, d)),
    where a pass over every run per residue is O(d runs).
"""
import numpy as np
cimport numpy as cnp

cnp.import_array()


def _feature_views(tuple features, Py_ssize_t steps, Py_ssize_t n, str kernel):
    """(bases, strides) of each feature, [step, rank] float64 of any strides (broadcast
    ones are 0): its data's address and its two strides in bytes."""
    cdef cnp.ndarray array
    cdef Py_ssize_t f, count_f = len(features)
    bases = np.empty(count_f, dtype=np.uintp)
    strides = np.empty((count_f, 2), dtype=np.intp)
    for f in range(count_f):
        feature = features[f]
        if not (isinstance(feature, np.ndarray) and feature.dtype == np.float64
                and feature.shape == (steps, n)):
            raise ValueError(f"{kernel}: every feature [step, rank] float64, alike")
        array = feature
        bases[f] = <size_t> cnp.PyArray_DATA(array)
        strides[f, 0], strides[f, 1] = array.strides[0], array.strides[1]
    return bases, strides


def sorted_classes(tuple features not None, const cnp.int64_t[:, ::1] order not None):
    cdef Py_ssize_t steps = order.shape[0], n = order.shape[1], count_f = len(features)
    cdef Py_ssize_t s, i, f, c, size = 0, a, b
    bases_np, strides_np = _feature_views(features, steps, n, "sorted_classes")
    cdef size_t[::1] bases = bases_np
    cdef Py_ssize_t[:, ::1] strides = strides_np
    for s in range(steps):
        for i in range(n):
            if not 0 <= order[s, i] < n:
                raise ValueError("sorted_classes: order holds ranks 0 .. n - 1")
    of_np = np.empty((steps, n), dtype=np.int64)
    cdef cnp.int64_t[:, ::1] of = of_np
    cdef const char* row
    cdef bint differs
    with nogil:
        for s in range(steps):
            c = 0
            if n:
                of[s, order[s, 0]] = 0
            for i in range(1, n):
                a, b = order[s, i], order[s, i - 1]
                differs = False
                for f in range(count_f):
                    row = <const char*> bases[f] + s * strides[f, 0]
                    if (<const double*> (row + a * strides[f, 1]))[0] \
                            != (<const double*> (row + b * strides[f, 1]))[0]:
                        differs = True
                        break
                c += differs
                of[s, a] = c
            if c + 1 > size:
                size = c + 1
    rep_np = np.zeros((steps, size), dtype=np.int64)
    count_np = np.zeros((steps, size), dtype=np.int64)
    cdef cnp.int64_t[:, ::1] rep = rep_np, count = count_np
    with nogil:
        for s in range(steps):
            for i in range(n):
                a = order[s, i]
                c = of[s, a]
                if count[s, c] == 0:
                    rep[s, c] = a
                count[s, c] += 1
    return of_np, rep_np, count_np


def feature_runs(tuple features not None):
    cdef Py_ssize_t count_f = len(features), steps, n, s, i, f
    if not count_f:
        raise ValueError("feature_runs: one feature at least")
    shape = tuple(np.shape(features[0]))
    if len(shape) != 2:
        raise ValueError("feature_runs: every feature [step, rank] float64, alike")
    steps, n = shape
    bases_np, strides_np = _feature_views(features, steps, n, "feature_runs")
    cdef size_t[::1] bases = bases_np
    cdef Py_ssize_t[:, ::1] strides = strides_np
    new_np = np.zeros((steps, n), dtype=np.uint8)
    varying_np = np.zeros(count_f, dtype=np.uint8)
    cdef cnp.uint8_t[:, ::1] new = new_np
    cdef cnp.uint8_t[::1] varying = varying_np
    cdef const char* row
    cdef Py_ssize_t stride
    cdef bint differs
    with nogil:
        for s in range(steps):
            if n:
                new[s, 0] = 1
            for f in range(count_f):
                row = <const char*> bases[f] + s * strides[f, 0]
                stride = strides[f, 1]
                for i in range(1, n):
                    differs = ((<const double*> (row + i * stride))[0]
                               != (<const double*> (row + (i - 1) * stride))[0])
                    if differs:
                        new[s, i] = 1
                        varying[f] = 1
    # the runs' first ranks, flat (step n + rank), and each feature's value there
    flat_np = np.flatnonzero(new_np)
    values_np = np.empty((count_f, len(flat_np)))
    cdef const cnp.int64_t[::1] flat = flat_np
    cdef double[:, ::1] values = values_np
    cdef Py_ssize_t runs = flat.shape[0], j
    with nogil:
        for f in range(count_f):
            for j in range(runs):
                s, i = flat[j] // n, flat[j] % n
                values[f, j] = (<const double*> (<const char*> bases[f] + s * strides[f, 0]
                                                 + i * strides[f, 1]))[0]
    return flat_np, values_np, varying_np


cdef void _residue_pass(const cnp.int64_t[::1] step, const cnp.int64_t[::1] start,
                        const cnp.int64_t[::1] end, const cnp.int64_t[::1] of_run,
                        Py_ssize_t period, cnp.int64_t[::1] last_step,
                        cnp.int64_t[::1] last_of, cnp.int64_t[::1] place,
                        cnp.int64_t[:, ::1] out) noexcept nogil:
    """One pass over the runs, residue by residue each run holds: a run of another step
    or class than the residue's last one begins a run there (place[residue] += 1); with
    `out` (step, start, end, class rows), written at place (the run before extended)."""
    cdef Py_ssize_t runs = step.shape[0], i, o, cover, residue, at
    cdef bint fill = out.shape[0] > 0
    for i in range(runs):
        cover = end[i] - start[i]
        if cover > period:
            cover = period
        for o in range(cover):
            residue = (start[i] + o) % period
            if step[i] != last_step[residue] or of_run[i] != last_of[residue]:
                last_step[residue] = step[i]
                last_of[residue] = of_run[i]
                place[residue] += 1
                if fill:
                    at = place[residue] - 1
                    out[0, at] = step[i]
                    out[1, at] = (start[i] - residue + period - 1) // period
                    out[3, at] = of_run[i]
            if fill:
                out[2, place[residue] - 1] = (end[i] - residue + period - 1) // period


def residue_runs(const cnp.int64_t[::1] step not None, const cnp.int64_t[::1] start not None,
                 const cnp.int64_t[::1] end not None, const cnp.int64_t[::1] of_run not None,
                 Py_ssize_t period):
    cdef Py_ssize_t runs = step.shape[0], i
    if period < 1:
        raise ValueError("residue_runs: a period of 1 or more")
    if start.shape[0] != runs or end.shape[0] != runs or of_run.shape[0] != runs:
        raise ValueError("residue_runs: step, start, end and of_run of every run")
    for i in range(runs):
        if not 0 <= start[i] <= end[i]:
            raise ValueError("residue_runs: runs of ranks 0 <= start <= end")
    counts_np = np.zeros(period, dtype=np.int64)
    last_step_np = np.full(period, -1, dtype=np.int64)
    last_of_np = np.full(period, -1, dtype=np.int64)
    cdef cnp.int64_t[::1] counts = counts_np, last_step = last_step_np, last_of = last_of_np
    cdef cnp.int64_t[:, ::1] out = np.empty((0, 0), dtype=np.int64)
    with nogil:
        _residue_pass(step, start, end, of_run, period, last_step, last_of, counts, out)
    first_np = np.concatenate([[0], np.cumsum(counts_np)]).astype(np.int64)
    out_np = np.empty((4, int(first_np[period])), dtype=np.int64)
    place_np = first_np[:period].copy()
    cdef cnp.int64_t[::1] place = place_np
    out = out_np
    last_step[:] = -1
    last_of[:] = -1
    with nogil:
        _residue_pass(step, start, end, of_run, period, last_step, last_of, place, out)
    return first_np, *out_np
