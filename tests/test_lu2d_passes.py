"""The 2D model's faster passes give the very numbers of the ones they replace: the running
sums of `lu2d_runs` (numpy's cumsum), `_owned_after` (numroc's difference) and
`schedules.allgatherv_bytes` (`allgatherv_costs`' bytes; its windows NumPy's rounds),
bit for bit."""

import numpy as np
import pytest
from linalg_io.models.lu2d import _owned_after
from linalg_io.models.lu2d_runs import _running_sum

from linalg_io.layout.blockcyclic import numroc
from linalg_io.layout.schedules import allgatherv_bytes, allgatherv_costs, bruck_rounds


@pytest.mark.parametrize("shape", [(3, 50), (50, 3), (40, 40), (300, 70), (70, 300), (1, 9),
                                   (9, 1)])
@pytest.mark.parametrize("axis", [0, 1])
def test_running_sum_is_cumsum_bit_for_bit(shape, axis):
    values = np.random.default_rng(sum(shape) + axis).random(shape) * 1e3 - 400.0
    got = _running_sum(values.copy(), axis)
    assert got.tobytes() == np.cumsum(values, axis=axis).tobytes()


@pytest.mark.parametrize("n,nb,p", [(1000, 7, 13), (4096, 64, 8), (99, 10, 1), (100, 100, 3),
                                    (16777216, 128, 1024)])
def test_owned_after_is_numrocs_difference(n, nb, p):
    rng = np.random.default_rng(n + p)
    ends = np.sort(rng.integers(0, n + 1, 40))
    ranks = rng.integers(0, p, (40, 6))
    want = numroc(n, nb, ranks, p) - numroc(ends[:, None], nb, ranks, p)
    got = _owned_after(n, nb, ends, ranks, p)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_allgatherv_bytes_are_allgatherv_costs_and_the_windows():
    rng = np.random.default_rng(3)
    blocks = rng.integers(0, 9, (4, 11)).astype(float)
    blocks[1] = 5.0                                   # one communicator of equal blocks
    blocks[2, ::3] = 0.0
    sent, recv = allgatherv_bytes(blocks)
    full = allgatherv_costs(blocks)
    assert sent.tobytes() == full[0].tobytes() and recv.tobytes() == full[1].tobytes()
    # rank q sends its window q .. q+m-1 (cyclic) in every round
    p = blocks.shape[1]
    windows = [sum(blocks[c, (q + np.arange(m)) % p].sum() for _, m in bruck_rounds(p))
               for c in range(4) for q in range(p)]
    assert np.array_equal(sent.reshape(-1), windows)
    assert np.array_equal(recv, blocks.sum(axis=1, keepdims=True) - blocks)


def numpy_windows(counts: np.ndarray) -> np.ndarray:
    """What rank q sends in a Bruck allgatherv of the blocks `counts` [..., rank],
    NumPy's way: cyclic prefix sums (np.cumsum of the blocks twice), each round's
    window a difference of two of them, the rounds summed in order from zeros."""
    p = counts.shape[-1]
    prefix = np.zeros(counts.shape[:-1] + (2 * p + 1,))
    prefix[..., 1:] = np.cumsum(np.concatenate([counts, counts], axis=-1), axis=-1)
    windows = np.zeros(counts.shape)
    for _, m in bruck_rounds(p):
        windows += prefix[..., m:m + p] - prefix[..., :p]
    return windows


@pytest.mark.parametrize("shape", [(7, 1024), (3, 5, 13), (40, 96), (1, 2), (2, 1)])
def test_allgatherv_windows_are_numpys_rounds_bit_for_bit(shape):
    """`allgatherv_bytes`' sent bytes (compiled: `lu2d_points.bruck_windows`, a row at a
    time) are NumPy's rounds', bit for bit, on fractional blocks (expected pivots), with
    communicators of equal blocks among them (their own closed form)."""
    rng = np.random.default_rng(sum(shape))
    blocks = rng.random(shape) * rng.integers(1, 10**6, shape) / 3.0
    blocks[..., ::4] = 0.0
    blocks.reshape(-1, shape[-1])[0] = 0.75          # one communicator of equal blocks
    want = numpy_windows(blocks)
    equal = (blocks == blocks[..., :1]).all(axis=-1)
    sent, _ = allgatherv_bytes(blocks)
    assert sent[~equal].tobytes() == want[~equal].tobytes()
    assert np.array_equal(sent[equal], want[equal])


@pytest.mark.parametrize("axis", [0, 1])
def test_running_sum_of_whole_numbers_and_views(axis):
    values = np.random.default_rng(4 + axis).integers(-50, 50, (9, 13))
    assert np.array_equal(_running_sum(values.copy(), axis), np.cumsum(values, axis=axis))
    floats = np.random.default_rng(axis).random((12, 10))
    view = floats.copy()[:, ::2]
    assert _running_sum(view, axis).tobytes() == np.cumsum(floats[:, ::2], axis=axis).tobytes()
