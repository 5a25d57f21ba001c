"""`linalg_io._kernels.compact.same_along`: the check `models.conflux._compact` makes
before it cuts a piece's array to length 1 along an axis."""

import numpy as np
import pytest
from linalg_io._kernels.compact import same_along


def _numpy(values: np.ndarray, axis: int) -> bool:
    """The NumPy comparison it replaced: every element's bits those of index 0."""
    first = values.take([0], axis=axis)
    return bool((np.ascontiguousarray(first).view(np.int64)
                 == np.ascontiguousarray(values).view(np.int64)).all())


@pytest.mark.parametrize("axis", [1, 2, 3])
def test_same_along_is_the_bitwise_comparison(axis):
    """Arrays the same along the axis (broadcast, or a strided view of such), differing
    in one element anywhere, in the sign of a zero, or in a NaN's payload."""
    rng = np.random.default_rng(axis)
    base = rng.standard_normal((5, 3, 4, 6))
    same = np.broadcast_to(base.take([0], axis=axis), base.shape)
    cases = [same, np.ascontiguousarray(same), same[:, :, ::-1][::2], base,
             np.zeros((0, 3, 4, 6)), np.ones((2, 1, 1, 1))]
    for index in [(0, 2, 3, 5), (4, 1, 0, 0), (3, 2, 3, 1)]:
        changed = np.array(same)
        changed[index] = np.nextafter(changed[index], np.inf)
        cases.append(changed)
    signed = np.zeros((2, 3, 4, 6))
    signed[(1,) + (1,) * 3] = -0.0
    nan = np.full((2, 3, 4, 6), np.nan)
    nan.view(np.int64)[(0,) + (2,) * 3] += 1
    cases += [signed, nan]
    seen = set()
    for values in cases:
        want = _numpy(values, axis)
        seen.add(want)
        assert same_along(values, axis) == want
    assert seen == {True, False}
