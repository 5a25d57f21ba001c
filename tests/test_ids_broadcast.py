"""The 2.5D model's pivot ids' broadcast per world rank (`linalg_io.models.conflux.
_tree_sums`, `_chain_sums`): with P a power of two and a binomial tree, its folded sums
equal bit for bit the rounded convolution of the roots' counts with the tree's
per-position costs (the spectra's product, the way for any other P), a chain's its
closed form; the widths of one run's steps convolved together (`_ids_broadcast`) as
each width's own summed."""

import numpy as np
import pytest
from linalg_io.models.conflux import (
    _chain_sums,
    _children_spectrum,
    _ids_broadcast,
    _tree_costs,
    _tree_sums,
)

from linalg_io.layout.conflux_layout import StepPlan
from linalg_io.layout.schedules import SMALL_BYTES
from linalg_io.layout.words import WORD


def _convolved(count: np.ndarray, p: int, nbytes: int) -> tuple:
    """One width's sums per world rank."""
    if nbytes <= SMALL_BYTES:
        return _tree_sums(nbytes * count, count, p)
    return _chain_sums(count, nbytes)


def _by_spectra(count: np.ndarray, p: int, nbytes: int) -> list[np.ndarray]:
    """The cyclic convolution by transforms of length P."""
    spectrum = np.fft.rfft(count)
    return [np.rint(np.fft.irfft(spectrum * np.fft.rfft(cost), n=p))
            for cost in _tree_costs(p, nbytes)]


def _by_positions(count: np.ndarray, p: int, nbytes: int) -> list[np.ndarray]:
    """sum over the roots of the costs at (r - root) mod P, one root at a time."""
    costs = _tree_costs(p, nbytes)
    return [sum(count[root] * np.roll(cost, root) for root in range(p)) for cost in costs]


@pytest.mark.parametrize("p", [2, 4, 64, 1 << 12, 1 << 20])
@pytest.mark.parametrize("nbytes", [8, 513 * 8, SMALL_BYTES])
def test_folded_sums_equal_the_spectra(p, nbytes):
    rng = np.random.default_rng(p + nbytes)
    count = np.zeros(p)
    count[rng.integers(0, p, min(p, 5000))] = rng.integers(1, 40, min(p, 5000))
    got = _convolved(count, p, nbytes)
    for a, b in zip(got, _by_spectra(count, p, nbytes)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if p <= 64:
        for a, b in zip(got, _by_positions(count, p, nbytes)):
            assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("p, nbytes", [(6, 8), (96, 4104), (64, SMALL_BYTES + 8)])
def test_other_broadcasts_by_the_spectra(p, nbytes):
    """P not a power of two, or a chain: the spectra's product, as the positions give."""
    count = np.arange(p, dtype=float) % 7
    for a, b in zip(_convolved(count, p, nbytes), _by_positions(count, p, nbytes)):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("p, nbytes", [(97, 4104), (1 << 12 | 1, 8), (65521, 4104),
                                       (3 << 14, SMALL_BYTES + 8)])
def test_other_p_by_a_longer_linear_convolution(p, nbytes):
    """P not a power of two (a prime, 2^12 + 1, 3 x 2^14) by the linear convolution on a
    power of two >= 2 P - 1, folded: the rounded cyclic one of length P, bit for bit, and
    the positions' sums where P is small."""
    rng = np.random.default_rng(p)
    count = np.zeros(p)
    count[rng.integers(0, p, min(p, 3000))] = rng.integers(1, 40, min(p, 3000))
    got = _convolved(count, p, nbytes)
    assert len(_children_spectrum(p)) == (1 << (2 * p - 2).bit_length()) // 2 + 1
    for a, b in zip(got, _by_spectra(count, p, nbytes)):
        assert a.shape == (p,) and a.tobytes() == b.tobytes() and a.sum() > 0
    if p < 100:
        for a, b in zip(got, _by_positions(count, p, nbytes)):
            assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("n, v, grid", [(1000, 64, (3, 2, 2)), (777, 32, (5, 1, 1)),
                                        (520, 16, (2, 4, 2)), (4500, 2048, (2, 1, 1))])
def test_widths_convolved_together_as_each_on_its_own(n, v, grid):
    """A run whose last panel is narrower (two widths), its trees' widths convolved
    together: per world rank the sums of each width's own by positions, bit for bit;
    the v = 2048 grid's full panels take the chain (more than SMALL_BYTES of ids)."""
    plan = StepPlan.create(n, v, *grid)
    p = int(np.prod(grid))
    w = np.array([step.w for step in plan.steps()])
    assert len(np.unique(w)) == 2
    ids = _ids_broadcast(plan, w, p)
    want = [np.zeros(p) for _ in range(3)]
    for width in np.unique(w):
        count = np.bincount(ids["roots"][w == width], minlength=p).astype(float)
        for total, part in zip(want, _by_positions(count, p, int(width + 1) * WORD)):
            total += part
    for key, total in zip(("sent", "recv", "msgs"), want):
        assert ids[key].tobytes() == total.tobytes() and total.sum() > 0
