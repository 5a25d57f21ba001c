"""`linalg_io._kernels.compact`: `same_along`, the check `models.conflux._compact` makes
before it cuts a piece's array to length 1 along an axis, and `add_masked`, a piece's
sums of one more collective (`_Piece.add`)."""

import numpy as np
import pytest
from linalg_io._kernels.compact import add_masked, same_along


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


@pytest.mark.parametrize("adding", [False, True], ids=["first", "onto old sums"])
def test_add_masked_is_numpy_bit_for_bit(adding):
    """old + mask * cost for sent, recv, msgs and old serial + np.maximum(mask * sent,
    mask * recv), with inputs broadcast along different axes (strides 0), a reversed
    view, negative costs and -0.0 (whose products by a False are -0.0), equal sent and
    recv and opposite zeros (np.maximum keeps the second) and NaNs (kept), and an old
    array written in place."""
    rng = np.random.default_rng(5 + adding)
    shape = (4, 2, 7, 9)
    mask = rng.random((4, 1, 7, 1)) < 0.6
    sent = rng.standard_normal((4, 2, 1, 9)) * 1e5
    recv = rng.standard_normal((1, 2, 7, 9))[:, :, ::-1] * 1e5
    msgs = np.round(rng.random((4, 1, 1, 1)) * 9)
    sent[0, 0, 0, :3], recv[0, 0, :3, :3] = -0.0, 0.0
    recv[0, 1, 0, 0] = sent[1, 1, 0, 0]
    sent[2, 1, 0, 4], recv[0, 0, 5, 7] = np.nan, np.nan
    costs = (sent, recv, msgs)
    products = [mask * c for c in costs]
    want = [*products, np.maximum(products[0], products[1])]
    olds = None
    if adding:
        olds = [rng.standard_normal(shape) * 1e5, rng.standard_normal((4, 2, 7, 1)),
                np.round(rng.random(shape) * 9), -np.zeros(shape)]
        want = [o + w for o, w in zip(olds, want)]
    outs = tuple(np.empty(shape) for _ in range(3)) + (olds[3] if adding else np.empty(shape),)
    add_masked(outs, None if olds is None else tuple(np.broadcast_to(o, shape) for o in olds),
               np.broadcast_to(mask, shape).view(np.uint8),
               tuple(np.broadcast_to(c, shape) for c in costs))
    for got, expected in zip(outs, want):
        assert got.tobytes() == np.broadcast_to(expected, shape).tobytes()
    if adding:
        assert outs[3] is not None and np.shares_memory(outs[3], olds[3])


def test_add_masked_refuses_arrays_that_do_not_match():
    shape = (2, 3, 4, 5)
    arrays = tuple(np.zeros(shape) for _ in range(4))
    costs = tuple(np.zeros(shape) for _ in range(3))
    mask = np.zeros(shape, dtype=np.uint8)
    with pytest.raises(ValueError, match="add_masked"):
        add_masked(arrays, None, mask, costs[:2])
    with pytest.raises(ValueError, match="add_masked"):
        add_masked(arrays, None, np.zeros(shape), costs)
    with pytest.raises(ValueError, match="add_masked"):
        add_masked(arrays, None, mask, costs[:2] + (np.zeros((2, 3, 4, 6)),))
    with pytest.raises(ValueError, match="add_masked"):
        add_masked(arrays[:3] + (np.broadcast_to(0.0, shape),), None, mask, costs)
