"""The 2.5D model's walk a block of steps at a time (`conflux.WALK_CELLS`: memory) gives
every figure of walking the steps at once, bit for bit: per-rank totals through
`rank_classes.BlockSpread` (`spread` of every step, taken a block at a time), the
critical path's per-step parts one block after another; and the sampled steps' chunks
(`CHUNK_CELLS`) evaluated in such blocks add up to the same as whole."""

from dataclasses import replace

import numpy as np
import pytest
from linalg_io.models import conflux
from linalg_io.models.profile import InterNode, load_profile
from linalg_io.models.rank_classes import BlockSpread, run_classes, spread
from sample_budget import budget

CPU = load_profile("example_cpu")
SHARED = replace(load_profile(), name="shared cores", ranks_per_node=4, cores_per_node=2,
                 inter_node=InterNode(latency_s=5e-6, bandwidth_bytes_per_s=2e9,
                                      overlap=False))
NODES = replace(CPU, ranks_per_node=4, nodes=4096)


def _arrays(counts: dict):
    """(name, array or number) of every figure of `conflux_plan_counts`."""
    for key in ("sent", "recv", "msgs", "flops", "time_s"):
        yield key, counts[key]
    for group, pair in counts.get("by_group", {}).items():
        yield f"{group} sent", pair[0]
        yield f"{group} recv", pair[1]


def _assert_same_bits(whole: dict, blocks: dict, what: str) -> None:
    for (key, a), (_, b) in zip(_arrays(whole), _arrays(blocks), strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), f"{key}, {what}"


@pytest.mark.parametrize("profile", [CPU, SHARED, NODES], ids=["cpu", "shared cores", "nodes"])
def test_walk_in_blocks_equals_the_walk_at_once(profile, monkeypatch):
    cases = [(2000, 128, 8, 8, 1, "uniform"), (3000, 128, 16, 4, 1, "proportional"),
             (2000, 64, 4, 8, 2, "none"), (3000, 128, 64, 1, 1, "uniform"),
             (3000, 128, 8, 2, 4, "proportional")]
    for n, v, px, py, c, pivots in cases:
        placement = profile.placement(px * py * c)
        args = (n, v, px, py, c, pivots, profile, placement)
        assert conflux.step_sample(n, v, px, py, c, placement, pivots) is None
        monkeypatch.setattr(conflux, "WALK_CELLS", 1 << 40)       # one block
        whole = conflux.conflux_plan_counts(*args, by_group=True)
        for cells in (1, 700):                                    # a step, a few steps
            monkeypatch.setattr(conflux, "WALK_CELLS", cells)
            _assert_same_bits(whole, conflux.conflux_plan_counts(*args, by_group=True),
                              f"N={n} v={v} {px}x{py}x{c} {pivots}, blocks of {cells} cells")


@pytest.mark.parametrize("profile", [CPU, NODES], ids=["cpu", "nodes"])
def test_sampled_chunks_in_blocks_equal_them_whole(profile, monkeypatch):
    budget(monkeypatch, exact=1 << 12, cells=1 << 11, least=conflux.SAMPLE_ROWS)
    monkeypatch.setattr(conflux, "CHUNK_CELLS", 3000)
    for n, v, px, py, c in ((20000, 64, 32, 32, 1), (20000, 64, 16, 32, 2)):
        placement = profile.placement(px * py * c)
        args = (n, v, px, py, c, "proportional", profile, placement)
        assert conflux.step_sample(n, v, px, py, c, placement, "proportional") is not None
        monkeypatch.setattr(conflux, "WALK_CELLS", 1 << 40)
        whole = conflux.conflux_plan_counts(*args, by_group=True)
        monkeypatch.setattr(conflux, "WALK_CELLS", 1)
        _assert_same_bits(whole, conflux.conflux_plan_counts(*args, by_group=True),
                          f"N={n} v={v} {px}x{py}x{c}, sampled")


@pytest.mark.parametrize("seed", range(3))
def test_block_spread_is_spread_bit_for_bit(seed):
    """Values with remainders below the unit of their sums (whose rounding depends on
    the order they add up in): blocks of any size, the same bits as `spread` whole."""
    rng = np.random.default_rng(seed)
    steps, px, py = 40, 29, 11
    fx = rng.integers(0, 4, (steps, px))
    fy = rng.integers(0, 3, (steps, py))
    xs, ys = run_classes([fx]), run_classes([fy])
    values = rng.standard_normal((3, steps, 2, xs.size, ys.size)) * 10.0 ** rng.integers(
        -3, 9, (3, steps, 1, 1, 1))
    values[2] = 0.0
    whole = spread(values, xs, ys)
    for block in (1, 3, 17):
        blocks = BlockSpread(xs, ys)
        for first in range(0, steps, block):
            blocks.add(values[:, first:first + block])
        assert blocks.totals().tobytes() == whole.tobytes(), block
