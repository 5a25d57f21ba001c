# cython: language_level=3
"""Kernels of a model's [step, layer, x class, y class] arrays (`linalg_io.models.conflux.
_Piece`'s).

same_along(values, axis)
    Whether every element of the 4D float64 array `values` (any strides) has the bits of
    the element with index 0 along `axis` (1, 2 or 3) and the same other indices: NumPy's
    `(values.take([0], axis).view(np.int64) == values.view(np.int64)).all()`, without
    its copies, stopping at the first element that differs (an array that varies along
    the axis mostly does within its first elements; `_compact` then keeps it cut to
    length 1 there).

add_masked(outs, olds, mask, costs)
    One collective's (sent, recv, msgs) masked and added on (`_Piece.add`): with m the
    0/1 `mask` (bool as uint8) and (s, r, g) = m * `costs`, `outs` = `olds` + (s, r, g,
    max(s, r)), element by element (`olds` None: (s, r, g, max(s, r)) alone), each
    array 4D of the outputs' shape (any strides: the broadcast inputs' are 0; an old
    one may be its output itself). NumPy's `old + mask * c` and `np.maximum` bit for
    bit: m * c is exact (m is 0 or 1), so a fused multiply-add rounds as they do.
"""
cimport numpy as cnp
import numpy as np
from libc.math cimport fabs
from libc.stdint cimport int64_t

cnp.import_array()

cdef extern from "compact_masked.h" nogil:
    void masked_terms(Py_ssize_t length, const unsigned char* mask, int mask_step,
                      const double* sent, const double* recv, const double* msgs,
                      int cost_step, double* ts, double* tr, double* tg, double* tt)
    void masked_put(Py_ssize_t length, double* out, const double* old, int old_step,
                    const double* term)


def same_along(const double[:, :, :, :] values not None, int axis) -> bool:
    if not 1 <= axis <= 3:
        raise ValueError("axis must be 1, 2 or 3")
    cdef Py_ssize_t n0 = values.shape[0], n1 = values.shape[1], n2 = values.shape[2]
    cdef Py_ssize_t n3 = values.shape[3]
    cdef Py_ssize_t s0 = values.strides[0], s1 = values.strides[1]
    cdef Py_ssize_t s2 = values.strides[2], s3 = values.strides[3]
    cdef Py_ssize_t back = values.strides[axis]
    cdef Py_ssize_t i0, i1, i2, i3
    cdef bint same = True
    cdef const char* base
    cdef const char* row
    cdef const char* ref
    cdef int64_t first
    if values.size == 0:
        return True
    base = <const char*> &values[0, 0, 0, 0]
    with nogil:
        i0 = 0
        while same and i0 < n0:
            for i1 in range(n1):
                for i2 in range(n2):
                    row = base + i0 * s0 + i1 * s1 + i2 * s2
                    if axis == 3:
                        # a line against its first element
                        first = (<const int64_t*> row)[0]
                        for i3 in range(1, n3):
                            if (<const int64_t*> (row + i3 * s3))[0] != first:
                                same = False
                                break
                    elif (axis == 1 and i1 > 0) or (axis == 2 and i2 > 0):
                        # a line against the line at index 0 along the axis
                        ref = row - (i1 if axis == 1 else i2) * back
                        for i3 in range(n3):
                            if (<const int64_t*> (row + i3 * s3))[0] \
                                    != (<const int64_t*> (ref + i3 * s3))[0]:
                                same = False
                                break
                    if not same:
                        break
                if not same:
                    break
            i0 += 1
    return same


cdef inline void _line_starts(Py_ssize_t* row, const Py_ssize_t* base,
                              const Py_ssize_t* strides, Py_ssize_t i0, Py_ssize_t i1,
                              Py_ssize_t i2) noexcept nogil:
    """The address of each of add_masked's 12 arrays' line (i0, i1, i2, :)."""
    cdef int a
    for a in range(12):
        row[a] = (base[a] + i0 * strides[4 * a] + i1 * strides[4 * a + 1]
                  + i2 * strides[4 * a + 2])


def add_masked(tuple outs, olds, mask, tuple costs):
    first = olds is None
    arrays = outs + costs + (costs + costs[:1] if first else tuple(olds)) + (mask,)
    if len(outs) != 4 or len(costs) != 3 or len(arrays) != 12 \
            or any(array.shape != outs[0].shape or array.ndim != 4 for array in arrays[:11]) \
            or mask.shape != outs[0].shape or mask.ndim != 4 or mask.itemsize != 1 \
            or any(array.itemsize != 8 for array in arrays[:11]) \
            or not all(array.flags.writeable for array in outs):
        raise ValueError("add_masked: four writeable outputs, four olds or None, three costs "
                         "(float64) and the mask (uint8), each 4D of one shape")
    # arrays: the 4 outputs, the 3 costs, the 4 olds (first: the costs again, unread),
    # the mask; each one's address and strides (bytes)
    cdef Py_ssize_t base[12]
    cdef Py_ssize_t strides[48]         # [array][axis]
    cdef Py_ssize_t shape[4]
    cdef int a, axis
    cdef cnp.ndarray array
    for axis in range(4):
        shape[axis] = outs[0].shape[axis]
    for a in range(12):
        array = arrays[a]
        base[a] = <Py_ssize_t> cnp.PyArray_DATA(array)
        for axis in range(4):
            strides[4 * a + axis] = cnp.PyArray_STRIDES(array)[axis]
    cdef Py_ssize_t i0, i1, i2, i3, row[12], step[12]
    cdef double m, s, r, g, top
    cdef bint adding = not first
    cdef double* out_s
    cdef double* out_r
    cdef double* out_g
    cdef double* out_top
    cdef const double* cost_s
    cdef const double* cost_r
    cdef const double* cost_g
    cdef const double* old_s
    cdef const double* old_r
    cdef const double* old_g
    cdef const double* old_top
    cdef const unsigned char* mask_at
    for a in range(11):
        step[a] = strides[4 * a + 3] // 8         # in elements (0: broadcast)
    step[11] = strides[4 * 11 + 3]
    # lines whose outputs are contiguous and whose inputs each step by 0 or 1 element (the
    # costs alike): the C side's vector loops, through a line's four terms
    cdef bint lines = (all(step[a] == 1 for a in range(4))
                       and step[4] == step[5] == step[6] and step[4] in (0, 1)
                       and step[11] in (0, 1)
                       and (first or all(step[a] in (0, 1) for a in range(7, 11))))
    terms_np = np.empty((4, shape[3] if lines else 0))
    cdef double* terms = <double*> cnp.PyArray_DATA(terms_np)
    cdef Py_ssize_t length = shape[3]
    if lines:
        with nogil:
            for i0 in range(shape[0]):
                for i1 in range(shape[1]):
                    for i2 in range(shape[2]):
                        _line_starts(row, base, strides, i0, i1, i2)
                        masked_terms(length, <const unsigned char*> row[11], step[11],
                                     <const double*> row[4], <const double*> row[5],
                                     <const double*> row[6], step[4], terms,
                                     terms + length, terms + 2 * length, terms + 3 * length)
                        for a in range(4):
                            masked_put(length, <double*> row[a],
                                       <const double*> row[7 + a] if adding else NULL,
                                       step[7 + a], terms + a * length)
        return
    with nogil:
        for i0 in range(shape[0]):
            for i1 in range(shape[1]):
                for i2 in range(shape[2]):
                    _line_starts(row, base, strides, i0, i1, i2)
                    out_s, out_r = <double*> row[0], <double*> row[1]
                    out_g, out_top = <double*> row[2], <double*> row[3]
                    cost_s, cost_r = <const double*> row[4], <const double*> row[5]
                    cost_g = <const double*> row[6]
                    old_s, old_r = <const double*> row[7], <const double*> row[8]
                    old_g, old_top = <const double*> row[9], <const double*> row[10]
                    mask_at = <const unsigned char*> row[11]
                    for i3 in range(shape[3]):
                        m = mask_at[i3 * step[11]]
                        s = m * cost_s[i3 * step[4]]
                        r = m * cost_r[i3 * step[5]]
                        g = m * cost_g[i3 * step[6]]
                        # np.maximum: the second where they are equal (a signed zero),
                        # NaN where either is
                        top = s if s > r or s != s else r
                        if adding:
                            s = old_s[i3 * step[7]] + s
                            r = old_r[i3 * step[8]] + r
                            g = old_g[i3 * step[9]] + g
                            top = old_top[i3 * step[10]] + top
                        out_s[i3 * step[0]] = s
                        out_r[i3 * step[1]] = r
                        out_g[i3 * step[2]] = g
                        out_top[i3 * step[3]] = top


def store_classes(const double[:, :, :, :, :] values not None,
                  const int64_t[::1] xclasses not None, const int64_t[::1] yclasses not None,
                  double[:, ::1] stored not None, Py_ssize_t start,
                  double[:, ::1] biggest not None, Py_ssize_t first):
    cdef Py_ssize_t leads = values.shape[0], steps = values.shape[1]
    cdef Py_ssize_t layers = values.shape[2], nx = values.shape[3], ny = values.shape[4]
    cdef Py_ssize_t s, cells = 0
    if xclasses.shape[0] != steps or yclasses.shape[0] != steps:
        raise ValueError("store_classes: a count of classes per step")
    for s in range(steps):
        if not (0 <= xclasses[s] <= nx and 0 <= yclasses[s] <= ny):
            raise ValueError("store_classes: more classes than the values hold")
        cells += xclasses[s] * yclasses[s]
    if stored.shape[0] != leads * layers or biggest.shape[0] != leads * layers \
            or start < 0 or start + cells > stored.shape[1] \
            or first < 0 or first + steps > biggest.shape[1] or nx * ny == 0:
        raise ValueError("store_classes: stored and biggest must hold every row's steps")
    cdef Py_ssize_t lead, layer, x, y, at, row
    cdef double best, size, value
    with nogil:
        for lead in range(leads):
            for layer in range(layers):
                row = lead * layers + layer
                at = start
                for s in range(steps):
                    best = 0.0
                    for x in range(nx):
                        for y in range(ny):
                            value = values[lead, s, layer, x, y]
                            size = fabs(value)
                            if size > best or size != size:
                                best = size if best == best else best
                            if x < xclasses[s] and y < yclasses[s]:
                                stored[row, at] = value
                                at += 1
                    biggest[row, first + s] = best
