# cython: language_level=3
"""Whether a model's [step, layer, x class, y class] array is the same along an axis
(`linalg_io.models.conflux._compact`, which then keeps it cut to length 1 there).

same_along(values, axis)
    Whether every element of the 4D float64 array `values` (any strides) has the bits of
    the element with index 0 along `axis` (1, 2 or 3) and the same other indices: NumPy's
    `(values.take([0], axis).view(np.int64) == values.view(np.int64)).all()`, without
    its copies, stopping at the first element that differs (an array that varies along
    the axis mostly does within its first elements).
"""
from libc.stdint cimport int64_t


def same_along(const double[:, :, :, :] values not None, int axis) -> bool:
    if not 1 <= axis <= 3:
        raise ValueError("axis must be 1, 2 or 3")
    cdef Py_ssize_t n0 = values.shape[0], n1 = values.shape[1], n2 = values.shape[2]
    cdef Py_ssize_t n3 = values.shape[3]
    cdef Py_ssize_t s0 = values.strides[0], s1 = values.strides[1]
    cdef Py_ssize_t s2 = values.strides[2], s3 = values.strides[3]
    cdef Py_ssize_t back = values.strides[axis]
    cdef Py_ssize_t i0, i1, i2, i3, at
    cdef bint same = True
    cdef const char* base
    if values.size == 0:
        return True
    base = <const char*> &values[0, 0, 0, 0]
    with nogil:
        i0 = 0
        while same and i0 < n0:
            for i1 in range(n1):
                for i2 in range(n2):
                    for i3 in range(n3):
                        at = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3
                        if (axis == 1 and i1 == 0) or (axis == 2 and i2 == 0) \
                                or (axis == 3 and i3 == 0):
                            continue
                        if (<const int64_t*> (base + at))[0] != (<const int64_t*> (
                                base + at - (i1 if axis == 1 else i2 if axis == 2 else i3)
                                * back))[0]:
                            same = False
                            break
                    if not same:
                        break
                if not same:
                    break
            i0 += 1
    return same
