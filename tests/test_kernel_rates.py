"""`linalg_io.tools.kernel_rates`: the dgemm curve `calibrate` fits to the update's
measured shares of gamma, and the shares' timing (with a clock that is not a clock)."""

import numpy as np
import pytest
from linalg_io.models.rates import GEMM_K_HALF, gemm_efficiency, getrf_flops

from linalg_io.tools import kernel_rates as kr


@pytest.mark.parametrize("k_half", [GEMM_K_HALF, 14.0, 300.0])
def test_fit_recovers_the_curve_it_is_given(k_half):
    """Shares on the curve of h at k = 64, 128, 256: the fit is h (to the search's
    tolerance)."""
    shares = gemm_efficiency(np.array(kr.UPDATE_KS, dtype=float), k_half)
    assert kr.fit_k_half(kr.UPDATE_KS, shares) == pytest.approx(k_half, abs=0.01)


def test_fit_of_noisy_shares_lies_between_those_of_each_k():
    """The shares measured on this 2-core machine (1 thread: 0.82, 0.93, 1.01): each k
    alone gives h of 16.6, 13.2 and 0; least squares lies among them, and shares at or
    above 1 everywhere give 0 (every k at gamma)."""
    h = kr.fit_k_half(kr.UPDATE_KS, [0.82, 0.93, 1.01])
    alone = [kr.fit_k_half([k], [share]) for k, share in zip(kr.UPDATE_KS, [0.82, 0.93, 1.01])]
    assert alone[0] == pytest.approx(16.6, abs=0.1) and alone[1] == pytest.approx(13.2, abs=0.1)
    assert alone[2] == 0.0 and 0 < h < alone[0]
    assert kr.fit_k_half(kr.UPDATE_KS, [1.0, 1.1, 1.05]) == 0.0


def test_shares_are_the_flops_over_the_timed_seconds():
    """With a 'clock' that answers a fixed second per call (the action still runs): the
    update's shares are 2 m n k / gamma and the panel's getrf flops over gamma (its
    copy timed apart and taken off: 1 s - 0.25 s)."""
    answers = iter([1.0] * len(kr.UPDATE_KS) + [1.0, 0.25])
    calls = []

    def timed(action):
        calls.append(action())
        return next(answers)

    gamma = 1e9
    shares = kr.update_shares(gamma, timed)
    assert shares == [2.0 * kr.UPDATE_ORDER**2 * k / gamma for k in kr.UPDATE_KS]
    assert [c.shape for c in calls] == [(kr.UPDATE_ORDER, kr.UPDATE_ORDER)] * len(kr.UPDATE_KS)
    panel = kr.panel_share(gamma, timed)
    assert panel == pytest.approx(getrf_flops(kr.PANEL_ROWS, kr.PANEL_COLUMNS) / 0.75 / gamma)


def test_best_time_times_the_call_after_an_untimed_one():
    """calibrate's `best_time` times the second of two calls after each barrier (the
    first wakes the BLAS pool that slept through the barrier's wait): with an action
    slow on every second call, it sees only slow calls, twice as many calls as timed."""
    import time

    from linalg_io.tools.calibrate import best_time

    calls = []

    def action():
        calls.append(None)
        if len(calls) % 2 == 0:
            time.sleep(0.05)

    assert best_time(action, 3) >= 0.05
    assert len(calls) == 6
