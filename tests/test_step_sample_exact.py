"""`step_sample`'s shortcuts, bit for bit: `_smooth_weights` solves its fit a band of the
identity's columns at a time on one BLAS thread (the weights of one least-squares solve
of the whole identity on one thread, for the sample sizes `model lu` takes, N = 2^22, P
= 2^20: up to 5287 blocks, and a band's edge); `StepSample.smeared` leaves a layer
axis of length 1 out of its transforms (those over every axis)."""

import hashlib

import numpy as np
import pytest
from linalg_io.models import step_sample
from linalg_io.models.rates import BLAS
from linalg_io.models.step_sample import StepSample, _shift_kernel


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


@pytest.mark.parametrize("shape, stride", [((4, 1, 64, 256), 3), ((2, 1, 128, 32), 7),
                                           ((3, 2, 32, 64), 5)])
def test_smeared_without_a_layer_axis(shape, stride):
    rng = np.random.default_rng(3)
    totals = rng.random(shape) * rng.integers(1, 1 << 40, shape)
    sample = StepSample(steps=10, rows=np.arange(10), sampled=np.ones(10, dtype=bool),
                        stride=stride, block=1, stop=10, weight=np.ones(10), shift=(0, 1, 0))
    dims = shape[-3:]
    every_axis = np.fft.irfftn(np.fft.rfftn(totals, axes=(-3, -2, -1))
                               * _shift_kernel(dims, (0, 1, 0), stride), s=dims,
                               axes=(-3, -2, -1))
    assert sample.smeared(totals).tobytes() == every_axis.tobytes()
