"""`StepSample.smeared` with its kernel kept between calls (`step_sample._shift_kernel`)
equals, bit for bit, the kernel's transform computed afresh each call (along the axes
the shift moves), on several shapes, shifts, strides and leading axes, the kernel
reused and replaced."""

import numpy as np
from linalg_io.models.step_sample import StepSample


def _fresh(sample: StepSample, totals: np.ndarray) -> np.ndarray:
    """The average's transform along the axes the shift moves (`smeared`'s), afresh."""
    dims = totals.shape[-3:]
    moved = tuple(axis for axis, d, n in zip((-3, -2, -1), sample.shift, dims) if d % n)
    half = sample.stride // 2
    m = np.arange(-half, half + 1)
    places = np.zeros([dims[axis] for axis in moved])
    np.add.at(places, tuple((m * sample.shift[axis]) % dims[axis] for axis in moved),
              1.0 / len(m))
    kernel = np.fft.rfftn(places)
    shape = [1, 1, 1]
    for axis, size in zip(moved, kernel.shape):
        shape[axis] = size
    return np.fft.irfftn(np.fft.rfftn(totals, axes=moved) * kernel.reshape(shape),
                         s=[dims[axis] for axis in moved], axes=moved)


def test_kept_kernel_smears_alike():
    rng = np.random.default_rng(1)
    for dims, shift, stride in [((2, 64, 32), (1, 0, 0), 7), ((3, 5, 7), (1, 2, 3), 8),
                                ((4, 6, 9), (0, 1, 0), 63), ((1, 1, 16), (0, 0, 3), 5)]:
        sample = StepSample(steps=1, rows=np.zeros(1, dtype=np.int64),
                            sampled=np.zeros(1, dtype=bool), stride=stride, block=1, stop=1,
                            weight=np.ones(1), shift=shift)
        for lead in [(), (3,), (2, 2)]:
            totals = rng.random(lead + dims) * 1e6
            want = _fresh(sample, totals)
            assert sample.smeared(totals).tobytes() == want.tobytes()
