"""`step_sample`'s shortcuts, bit for bit: `_smooth_weights` solves its fit a band of the
identity's columns at a time on one BLAS thread (the weights of one least-squares solve
of the whole identity on one thread, for the sample sizes `model lu` takes, N = 2^22, P
= 2^20: up to 5287 blocks, and a band's edge); `StepSample.smeared` transforms only
the axes its shift moves along (to rounding those over every axis). And, to rounding,
its average within each part that `arcs` cuts (shifted copies or transforms)."""

import hashlib

import numpy as np
import pytest
from linalg_io.models import step_sample
from linalg_io.models.rates import BLAS
from linalg_io.models.step_sample import StepSample


def _whole_identity(blocks, stride, first, stop, degree):
    half = (stop - 1 - first) / 2.0

    def vander(x):
        return np.polynomial.chebyshev.chebvander((x - first - half) / half, degree)

    means = vander(blocks).mean(axis=1)
    with BLAS.limit(limits=1, user_api="blas"):
        fit = np.linalg.lstsq(means, np.eye(len(blocks)), rcond=None)[0]
    error = vander(np.arange(first, stop)).sum(axis=0) - stride * means.sum(axis=0)
    return stride + error @ fit


@pytest.mark.parametrize("count, start, stride, stop, degree, block", [
    (5287, 2, 3, 15864, 6, 1), (2590, 2, 3, 7772, 6, 1), (2298, 4, 7, 16089, 6, 1),
    (step_sample.FIT_COLUMNS + 1, 3, 5, 1300, 6, 1), (5, 1025, 3072, 15544, 2, 1024)])
def test_banded_fit_is_the_whole_identity_fit(count, start, stride, stop, degree, block):
    blocks = (start + stride * block * np.arange(count))[:, None] + np.arange(block)
    got = step_sample._smooth_weights(blocks, stride * block, 1, stop, degree)
    want = _whole_identity(blocks, stride * block, 1, stop, degree)
    assert hashlib.sha1(got.tobytes()).hexdigest() == hashlib.sha1(want.tobytes()).hexdigest()


@pytest.mark.parametrize("shape, shift, stride", [((4, 1, 64, 256), (0, 1, 0), 3),
                                                  ((2, 1, 128, 32), (0, 1, 0), 7),
                                                  ((3, 2, 32, 64), (0, 1, 0), 5),
                                                  ((2, 2, 16, 24), (1, 0, 5), 9)])
def test_smeared_along_the_moved_axes_alone(shape, shift, stride):
    """`StepSample.smeared` transforms only the axes its shift moves along (bit for bit:
    tests/test_step_sample_kernel.py): to rounding the average over every axis (the
    kernel is 1 along the others)."""
    rng = np.random.default_rng(3)
    totals = rng.random(shape) * rng.integers(1, 1 << 40, shape)
    sample = StepSample(steps=10, rows=np.arange(10), sampled=np.ones(10, dtype=bool),
                        stride=stride, block=1, stop=10, weight=np.ones(10), shift=shift)
    dims = shape[-3:]
    half = stride // 2
    every = np.zeros(dims)
    np.add.at(every, tuple((np.arange(-half, half + 1) * d) % n for d, n in zip(shift, dims)),
              1.0 / (2 * half + 1))
    every_axis = np.fft.irfftn(np.fft.rfftn(totals, axes=(-3, -2, -1)) * np.fft.rfftn(every),
                               s=dims, axes=(-3, -2, -1))
    np.testing.assert_allclose(sample.smeared(totals.copy()), every_axis, rtol=1e-13)


@pytest.mark.parametrize("shape, shift, arcs, stride", [
    ((2, 1, 48, 20), (0, 1, 1), (0, 13, 7), 5),        # a shifted copy at a time
    ((2, 2, 48, 20), (1, 3, 0), (0, 29, 0), 5),
    ((1, 1, 40, 24), (0, 2, 1), (0, 9, 0), 33),        # past ROLLED_SHIFTS: transforms
])
def test_smeared_in_arcs_averages_each_part_alone(shape, shift, arcs, stride):
    """With `arcs`, each part of the grid (the first ranks of an axis, that hold a tile
    more, and the others) is averaged over the cyclic shifts by m `shift` within itself
    (m = -(stride // 2) .. stride // 2): a rank's value never leaves its part, and each
    part's sum is kept."""
    rng = np.random.default_rng(5)
    totals = rng.random(shape)
    sample = StepSample(steps=10, rows=np.arange(10), sampled=np.ones(10, dtype=bool),
                        stride=stride, block=1, stop=10, weight=np.ones(10), shift=shift,
                        arcs=arcs)
    half = stride // 2
    want = np.empty_like(totals)
    cuts = [[slice(0, a), slice(a, n)] if a else [slice(0, n)]
            for a, n in zip(arcs, shape[-3:])]
    for layers in cuts[0]:
        for xs in cuts[1]:
            for ys in cuts[2]:
                part = totals[..., layers, xs, ys]
                want[..., layers, xs, ys] = sum(
                    np.roll(part, [m * d for d in shift], axis=(-3, -2, -1))
                    for m in range(-half, half + 1)) / (2 * half + 1)
                assert want[..., layers, xs, ys].sum() == pytest.approx(part.sum(), rel=1e-12)
    got = sample.smeared(totals.copy())
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
