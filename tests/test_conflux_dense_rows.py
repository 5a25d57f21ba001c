"""The 2.5D model's walk sizes its class grid by the most classes of any step: where
the pivot counts differ along the process rows (c = 1, the Bruck windows), every
process row is a class and the walk's [step, layer, x class, y class] arrays hold Px
rows a step, which the sampling threshold counts (`conflux.dense_pivots`)."""

from dataclasses import replace

import numpy as np
from linalg_io.models import conflux
from linalg_io.models.conflux_classes import panel_widths, step_ranks
from linalg_io.models.conflux_pivots import pivot_changes, pivot_counts
from linalg_io.models.profile import load_profile

from linalg_io.layout.conflux_layout import StepPlan


def _x_classes(n: int, v: int, px: int, py: int, c: int) -> int:
    """The most process-row classes of any step of the walk (every step)."""
    plan = StepPlan.create(n, v, px, py, c)
    widths = panel_widths(plan.tiles)
    layer = np.arange(c)
    slices = (widths[:, None] // c + (layer[None, :] < widths[:, None] % c)).astype(float)
    active, owned = pivot_counts(plan, "uniform")
    return step_ranks(plan, slices, active, owned, pivot_changes(plan, "uniform"), {}).xs.size


def test_unequal_pivots_make_every_process_row_a_class():
    # 90 tiles on 8 process rows: rows of 12 and 11 tiles, the pivots unequal
    assert conflux.dense_pivots(1440, 16, 8, 2, 1, "uniform")
    assert _x_classes(1440, 16, 8, 2, 1) == 8
    assert conflux.class_cells(8, 2, 1, {}, True) == 8 * 2
    # 96 tiles on 8 rows: equal, alike on every process row; c > 1 gathers (no windows)
    assert not conflux.dense_pivots(1536, 16, 8, 2, 1, "uniform")
    assert _x_classes(1536, 16, 8, 2, 1) <= conflux.FEW_CLASSES
    assert not conflux.dense_pivots(1440, 16, 8, 2, 2, "uniform")


def test_dense_grid_is_sampled_not_walked():
    # the weak scan's P = 65536 candidate whose walk took 23168 x 256 x 35 cells an
    # array (1.55 GiB each): now its cells are counted and its steps sampled
    profile = replace(load_profile("example_cpu"), nodes=8192)
    placement = profile.placement(65536)
    assert conflux.dense_pivots(2965504, 128, 256, 256, 1, "uniform")
    sample = conflux.step_sample(2965504, 128, 256, 256, 1, placement, "uniform")
    assert sample is not None and len(sample.rows) < sample.steps // 16
    cells = conflux.class_cells(256, 256, 1, conflux.node_groups(256, 256, 1, placement), True)
    assert len(sample.rows) * cells <= 2 * conflux.SAMPLE_CELLS
