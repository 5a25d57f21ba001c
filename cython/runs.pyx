# cython: language_level=3
"""The runs of `linalg_io.models.rank_classes.RunClasses` split by residue, in one pass.

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


def residue_runs(const cnp.int64_t[::1] step not None, const cnp.int64_t[::1] start not None,
                 const cnp.int64_t[::1] end not None, const cnp.int64_t[::1] of_run not None,
                 Py_ssize_t period):
    cdef Py_ssize_t runs = step.shape[0], i, o, cover, residue, at
    if period < 1:
        raise ValueError("residue_runs: a period of 1 or more")
    if start.shape[0] != runs or end.shape[0] != runs or of_run.shape[0] != runs:
        raise ValueError("residue_runs: step, start, end and of_run of every run")
    for i in range(runs):
        if not 0 <= start[i] <= end[i]:
            raise ValueError("residue_runs: runs of ranks 0 <= start <= end")
    first_np = np.zeros(period + 1, dtype=np.int64)
    last_step_np = np.full(period, -1, dtype=np.int64)
    last_of_np = np.full(period, -1, dtype=np.int64)
    cdef cnp.int64_t[::1] first = first_np, last_step = last_step_np, last_of = last_of_np
    with nogil:
        for i in range(runs):
            cover = end[i] - start[i]
            if cover > period:
                cover = period
            for o in range(cover):
                residue = (start[i] + o) % period
                if step[i] != last_step[residue] or of_run[i] != last_of[residue]:
                    first[residue + 1] += 1
                    last_step[residue] = step[i]
                    last_of[residue] = of_run[i]
        for residue in range(period):
            first[residue + 1] += first[residue]
    total = int(first_np[period])
    out_np = [np.empty(total, dtype=np.int64) for _ in range(4)]
    cdef cnp.int64_t[::1] out_step = out_np[0], out_start = out_np[1]
    cdef cnp.int64_t[::1] out_end = out_np[2], out_of = out_np[3]
    at_np = first_np[:period].copy()
    cdef cnp.int64_t[::1] place = at_np
    last_step[:] = -1
    last_of[:] = -1
    with nogil:
        for i in range(runs):
            cover = end[i] - start[i]
            if cover > period:
                cover = period
            for o in range(cover):
                residue = (start[i] + o) % period
                if step[i] != last_step[residue] or of_run[i] != last_of[residue]:
                    at = place[residue]
                    place[residue] += 1
                    out_step[at] = step[i]
                    out_start[at] = (start[i] - residue + period - 1) // period
                    out_of[at] = of_run[i]
                    last_step[residue] = step[i]
                    last_of[residue] = of_run[i]
                else:
                    at = place[residue] - 1
                out_end[at] = (end[i] - residue + period - 1) // period
    return first_np, *out_np
