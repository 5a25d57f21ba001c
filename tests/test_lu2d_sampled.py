"""The 2D critical path's sampled steps (`linalg_io.models.lu2d.sampled_steps`, beyond
EXACT_STEPS steps) against walking every step, on a sample of (N, NB, Pr, Pc,
placement): square, flat and tall grids, a grid whose sides are not powers of two, N a
multiple of the block or not, every assumed pivoting, example_cpu and nodes whose ranks
share cores over a network that does not overlap. The thresholds are lowered so that
problems of a few thousand steps sample (every 7th step or so); the sampled seconds
stay within relative SAMPLED_RTOL of the walk's."""

from dataclasses import replace

import numpy as np
import pytest
from linalg_io.models import lu2d
from linalg_io.models.profile import InterNode, load_profile

CPU = load_profile("example_cpu")
CLUSTER = replace(load_profile(), name="test cluster", ranks_per_node=4, cores_per_node=2,
                  inter_node=InterNode(latency_s=5e-6, bandwidth_bytes_per_s=2e9,
                                       overlap=False))
SAMPLED_RTOL = 1e-3


def test_small_problems_walk_every_step():
    assert lu2d.sampled_steps(lu2d.EXACT_STEPS, 64, 64) is None
    sample, exact, _ = lu2d.sampled_steps(lu2d.EXACT_STEPS + 1, 6, 10)
    stride = int(sample[1] - sample[0])
    assert np.gcd(stride, 60) == 1
    np.testing.assert_array_equal(exact, np.arange(lu2d.EXACT_STEPS + 1 - lu2d.TAIL_STEPS,
                                                   lu2d.EXACT_STEPS + 1))
    assert sample[-1] < exact[0] and len(sample) >= lu2d.SAMPLES // 2


@pytest.mark.parametrize("profile, cases", [
    (CPU, [(262144, 64, 16, 16), (262144, 64, 1, 256), (262144, 64, 256, 1),
           (300000, 96, 8, 32), (300000, 96, 24, 10)]),
    (CLUSTER, [(262144, 64, 4, 4), (300000, 96, 8, 8), (262144, 64, 4, 6)]),
], ids=["example_cpu", "shared cores, no overlap"])
def test_sampled_steps_near_the_walk(profile, cases, monkeypatch):
    for n, nb, pr, pc in cases:
        placement = profile.placement(pr * pc)
        for pivoting in ("expected", "none", "worst"):
            monkeypatch.setattr(lu2d, "EXACT_STEPS", 1 << 40)
            walked = lu2d.critical_path_time(n, nb, pr, pc, pivoting, profile, placement)
            monkeypatch.setattr(lu2d, "EXACT_STEPS", 1024)
            monkeypatch.setattr(lu2d, "SAMPLES", 384)
            monkeypatch.setattr(lu2d, "TAIL_STEPS", 256)
            assert lu2d.sampled_steps(-(-n // nb), pr, pc) is not None
            sampled = lu2d.critical_path_time(n, nb, pr, pc, pivoting, profile, placement)
            assert sampled == pytest.approx(walked, rel=SAMPLED_RTOL), (n, nb, pr, pc,
                                                                         pivoting)
            assert sampled != walked        # it sampled


def test_the_record_says_where_it_samples(monkeypatch):
    exact = lu2d.lu2d_costs(262144, 64, 16, 16, "expected").critical_path[1]
    assert exact == lu2d.TIME_FORMULA
    monkeypatch.setattr(lu2d, "EXACT_STEPS", 1024)
    monkeypatch.setattr(lu2d, "SAMPLES", 384)
    monkeypatch.setattr(lu2d, "TAIL_STEPS", 256)
    formula = lu2d.lu2d_costs(262144, 64, 16, 16, "expected").critical_path[1]
    assert formula.startswith(lu2d.TIME_FORMULA)
    # (4096 - 256) // 384 = 10, the first stride prime to 16: 11
    assert "sampled: of 4096 steps the last 256 walked and one in 11 of the others" in formula
    assert f"within {lu2d.SAMPLED_ERROR:g}" in formula


def test_model_lu_prints_where_the_2d_time_samples(monkeypatch):
    from linalg_io.model_command.lu_table import _sampled_lines

    shapes = [(16, 16, 64), (1, 256, 64)]                # (Pr, Pc, NB)
    assert _sampled_lines(262144, shapes) == []          # 4096 steps: every one walked
    monkeypatch.setattr(lu2d, "EXACT_STEPS", 2048)
    monkeypatch.setattr(lu2d, "TAIL_STEPS", 64)
    monkeypatch.setattr(lu2d, "SAMPLES", 256)
    lines = _sampled_lines(262144, shapes)
    assert len(lines) == 1, lines                        # one sampling for both grids
    assert lines[0].startswith("  2D time sampled: of 4096 steps the last 64 walked")
    assert f"within {lu2d.SAMPLED_ERROR:g}" in lines[0]
