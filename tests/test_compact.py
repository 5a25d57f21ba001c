"""`linalg_io._kernels.compact`: `same_along`, the check `models.conflux._compact` makes
before it cuts a piece's array to length 1 along an axis, `add_masked`, a piece's
sums of one more collective (`_Piece.add`), and `store_classes`, a spreading's rows of
some steps' values (`models.rank_classes.BlockSpread.add`)."""

import numpy as np
import pytest
from linalg_io._kernels.compact import add_masked, same_along, store_classes


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


@pytest.mark.parametrize("shape", [(5, 1, 6, 1), (3, 4, 1, 8), (1, 1, 1, 1), (2, 3, 4, 5)])
@pytest.mark.parametrize("outs_kind", ["contiguous", "strided", "in place"])
def test_add_masked_any_layout_is_numpy_bit_for_bit(shape, outs_kind):
    """Rows merged across axes of length 1 and contiguous axes (one long row), broadcast
    inputs copied into rows of their own, outputs strided (the general loop) or written
    over the olds: NumPy's sums bit for bit, every element."""
    rng = np.random.default_rng(sum(shape))
    mask = rng.random(shape) < 0.5
    costs = (rng.standard_normal(shape) * 1e3, rng.standard_normal(shape[:3] + (1,)) * 1e3,
             np.round(rng.random((1,) + shape[1:]) * 9))
    olds = [rng.standard_normal(shape) for _ in range(4)]
    products = [mask * c for c in costs]
    want = [o + w for o, w in zip(olds, [*products, np.maximum(products[0], products[1])])]
    if outs_kind == "contiguous":
        outs = tuple(np.empty(shape) for _ in range(4))
    elif outs_kind == "strided":
        outs = tuple(np.empty(shape[:3] + (2 * shape[3],))[..., ::2] for _ in range(4))
    else:
        outs = tuple(olds)
    add_masked(outs, tuple(olds), mask.view(np.uint8),
               tuple(np.broadcast_to(c, shape) for c in costs))
    for got, expected in zip(outs, want):
        assert np.ascontiguousarray(got).tobytes() == expected.tobytes()


@pytest.mark.parametrize("mask_along", [False, True], ids=["mask broadcast", "mask varies"])
@pytest.mark.parametrize("costs_along", [False, True], ids=["costs broadcast", "costs vary"])
@pytest.mark.parametrize("olds_kind", [None, "in place", "own", "broadcast"])
def test_add_masked_lines_are_numpy_bit_for_bit(mask_along, costs_along, olds_kind):
    """Contiguous outputs whose mask and costs each step by 0 or 1 element along the last
    axis (the C side's vector loops, 19 elements a line: a vector's remainder too): the
    costs' NaNs, -0.0 (products by a False -0.0), sent = recv and opposite zeros kept as
    NumPy keeps them, onto no olds, the outputs themselves, olds of their own or olds
    constant along the line."""
    rng = np.random.default_rng(int(mask_along) + 2 * int(costs_along))
    shape = (3, 2, 5, 19)
    last = shape[3] if costs_along else 1
    mask = rng.random((3, 1, 5, shape[3] if mask_along else 1)) < 0.6
    sent = rng.standard_normal((3, 2, 5, last)) * 1e5
    recv = rng.standard_normal((3, 2, 5, last)) * 1e5
    msgs = np.round(rng.random((3, 2, 5, last)) * 9)
    sent[0, 0, :2], recv[0, 0, :2] = -0.0, 0.0
    recv[1, 1, 1] = sent[1, 1, 1]
    sent[2, 1, 3], recv[2, 0, 4] = np.nan, np.nan
    costs = (sent, recv, msgs)
    products = [mask * c for c in costs]
    want = [*products, np.maximum(products[0], products[1])]
    outs = tuple(np.empty(shape) for _ in range(4))
    olds = None
    if olds_kind == "in place":
        olds = outs
        for out in outs:
            out[...] = rng.standard_normal(shape)
    elif olds_kind == "own":
        olds = tuple(rng.standard_normal(shape) for _ in range(4))
    elif olds_kind == "broadcast":
        olds = tuple(rng.standard_normal((3, 2, 5, 1)) for _ in range(4))
    if olds is not None:
        want = [np.array(o) + w for o, w in zip(olds, want)]
    add_masked(outs, None if olds is None else tuple(np.broadcast_to(o, shape) for o in olds),
               np.broadcast_to(mask, shape).view(np.uint8),
               tuple(np.broadcast_to(c, shape) for c in costs))
    for got, expected in zip(outs, want):
        assert got.tobytes() == np.broadcast_to(expected, shape).tobytes()


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


def _stored_by_numpy(values: np.ndarray, xclasses: np.ndarray, yclasses: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(the rows' own classes' cells step by step, [row, step] the largest |value|): the
    moved axes, `compress` and `np.abs(...).max` the kernel replaced."""
    lead, steps, layers, nx, ny = values.shape
    rows = np.moveaxis(values, 2, 1).reshape(lead * layers, steps, nx * ny)
    cells = ((np.arange(nx) < xclasses[:, None])[:, :, None]
             & (np.arange(ny) < yclasses[:, None])[:, None, :])
    return rows.reshape(len(rows), -1).compress(cells.ravel(), axis=1), np.abs(rows).max(axis=2)


@pytest.mark.parametrize("layout", ["contiguous", "broadcast", "reversed"])
def test_store_classes_is_numpy_bit_for_bit(layout):
    """Each row's (lead x layers + layer) own cells of each step, from a column on,
    and each step's largest |value| from a step on, as NumPy's: steps of fewer classes
    than the values hold (their padding read for the max only), of none along an axis,
    -0.0 (stored as it is, its |value| +0.0), a NaN (the max NaN), values broadcast along
    layers or read backwards; the columns before and after left as they were."""
    rng = np.random.default_rng(len(layout))
    lead, steps, layers, nx, ny = 3, 5, 2, 4, 6
    values = rng.standard_normal((lead, steps, layers, nx, ny)) * 1e3
    values[0, 1, 0, :, :] = -0.0
    values[2, 3, 1, 3, 5] = np.nan          # padding of a step of 2 x classes: the max alone
    if layout == "broadcast":
        values = np.broadcast_to(values[:, :, :1], values.shape)
    elif layout == "reversed":
        values = values[:, :, :, ::-1, ::-1]
    xclasses = np.array([4, 2, 1, 2, 0])
    yclasses = np.array([6, 3, 6, 5, 2])
    want, want_big = _stored_by_numpy(values, xclasses, yclasses)
    start, first = 3, 2
    stored = np.full((lead * layers, start + want.shape[1] + 4), 7.5)
    biggest = np.full((lead * layers, first + steps + 1), 7.5)
    store_classes(values, xclasses, yclasses, stored, start, biggest, first)
    assert stored[:, start:start + want.shape[1]].tobytes() == want.tobytes()
    assert biggest[:, first:first + steps].tobytes() == want_big.tobytes()
    assert (stored[:, :start] == 7.5).all() and (stored[:, start + want.shape[1]:] == 7.5).all()
    assert (biggest[:, :first] == 7.5).all() and (biggest[:, -1] == 7.5).all()
    if layout == "contiguous":
        assert np.isnan(biggest[2 * layers + 1, first + 3])
        assert np.signbit(stored[0, start + 24]) and biggest[0, first + 1] == 0.0


def test_store_classes_refuses_what_does_not_fit():
    values = np.zeros((2, 3, 1, 4, 5))
    classes = np.array([4, 4, 4])
    stored, biggest = np.zeros((2, 60)), np.zeros((2, 3))
    with pytest.raises(ValueError, match="store_classes"):
        store_classes(values, classes[:2], classes, stored, 0, biggest, 0)
    with pytest.raises(ValueError, match="store_classes"):
        store_classes(values, classes + 1, classes, stored, 0, biggest, 0)
    with pytest.raises(ValueError, match="store_classes"):
        store_classes(values, classes, np.array([5, 5, 5]), stored, 1, biggest, 0)
    with pytest.raises(ValueError, match="store_classes"):
        store_classes(values, classes, classes, stored, 0, biggest, 1)
    with pytest.raises(ValueError, match="store_classes"):
        store_classes(values, classes, classes, np.zeros((3, 60)), 0, biggest, 0)
