"""The 2.5D model's sampled steps (`linalg_io.models.conflux.step_sample`, beyond
EXACT_CELLS) against walking every step, on small problems with the thresholds lowered
so that they sample with few steps (fewer than `model lu` ever takes): a process
column's members on one node or not, one layer or more, Py = 1, ranks sharing cores,
process rows of unequal rows. The time and the per-rank maxima of bytes and flops stay
within relative SAMPLED_RTOL of the walk's, the messages within MSGS_RTOL; the record
and `model lu` say where they sample."""

from dataclasses import replace

import numpy as np
import pytest
from linalg_io.models import conflux, step_sample
from linalg_io.models.profile import load_profile
from linalg_io.models.step_sample import StepSample
from sample_budget import budget

from linalg_io.layout.conflux_layout import TileMap

CPU = load_profile("example_cpu")
BIG = replace(CPU, nodes=8192)          # 2^20 ranks
NODES = replace(CPU, name="16 ranks a node", ranks_per_node=16, cores_per_node=16, nodes=64)
SHARED = replace(NODES, name="16 ranks on 8 cores", cores_per_node=8)
SAMPLED_RTOL = 1e-2
MSGS_RTOL = 0.1
MAXIMA = ("bytes_recv_max", "bytes_sent_max", "flops_max", "time_s")


def _few_samples(monkeypatch) -> None:
    budget(monkeypatch, exact=0, cells=0)
    monkeypatch.setattr(conflux, "SAMPLE_ROWS", 48)
    budget(monkeypatch, least=48)


def test_midpoints_integrate_smooth_terms():
    sample = StepSample.midpoints(4096, 2 * 64 * 16, 200, 40, 6, block=16, shift=True)
    assert np.gcd(sample.stride, 2 * 64 * 16) == 1
    assert sample.rows[0] == 0 and sample.rows[-1] == 4095 and sample.tail >= 40
    blocks = sample.rows[sample.sampled].reshape(-1, 16)
    assert (np.diff(blocks, axis=1) == 1).all()                      # consecutive steps
    assert len(set(blocks[:, 0] % 16)) == 1                          # each in one phase
    k = np.arange(4096)
    for term in (np.ones(4096), (1 - k / 4096.0) ** 2, (4096.0 - k) ** 3):
        assert sample.total(term[sample.rows]) == pytest.approx(term.sum(), rel=1e-12)
    assert sample.stop == 4096 - sample.tail                        # many cells
    # four cells: the head's end, less than a cell, a block more (not extrapolated)
    few = StepSample.midpoints(4096, 2 * 64 * 16, 64, 40, 6, block=16, shift=True)
    blocks = few.rows[few.sampled].reshape(-1, 16)
    cells = (4096 - 40 - 1) // (few.stride * 16)
    assert cells <= step_sample.FEW_CELLS and len(blocks) == cells + 1 and few.tail == 40
    assert blocks[-1, 0] > cells * few.stride * 16
    for term in (np.ones(4096), (1 - k / 4096.0) ** 2, (4096.0 - k) ** 3):
        assert few.total(term[few.rows]) == pytest.approx(term.sum(), rel=1e-12)


def test_small_problems_walk_every_step():
    assert conflux.step_sample(65536, 128, 64, 4, 1, NODES.placement(256), "uniform") is None
    assert conflux.step_sample(2**24, 512, 1024, 1024, 1, BIG.placement(2**20),
                               [np.arange(512)]) is None           # a run's pivots
    # 192 steps of 2^18 cells of classes each: a sample of 75 of them put the received
    # bytes 9% and the flops 14% over the walk's
    assert conflux.step_sample(24576, 128, 8192, 64, 2, BIG.placement(2**20),
                               "uniform") is None


@pytest.mark.parametrize("profile, n, grid", [
    (NODES, 65536, (64, 4, 1, 128)),       # a column's members share nodes
    (NODES, 65536, (32, 4, 2, 128)),       # and two layers
    (NODES, 65536, (128, 1, 2, 128)),      # Py = 1
    (SHARED, 65536, (64, 4, 1, 128)),      # ranks share cores
    (NODES, 65536, (16, 16, 1, 128)),      # no group shares nodes
    (NODES, 60000, (32, 8, 1, 128)),       # unequal process rows
], ids=["column on nodes", "two layers", "Py=1", "shared cores", "apart", "unequal rows"])
def test_sampled_steps_near_the_walk(profile, n, grid, monkeypatch):
    px, py, c, v = grid
    placement = profile.placement(px * py * c)
    walked = conflux.candidate_row(n, 2.0**40, profile, placement, grid)
    _few_samples(monkeypatch)
    sample = conflux.step_sample(n, v, px, py, c, placement, "uniform")
    assert sample is not None and len(sample.rows) <= sample.steps // 4
    sampled = conflux.candidate_row(n, 2.0**40, profile, placement, grid)
    rtol = (SAMPLED_RTOL if TileMap(n, v, px, 1).even_rows
            else conflux.SAMPLED_UNEQUAL_ERROR)
    for key in MAXIMA:
        assert sampled[key] == pytest.approx(walked[key], rel=rtol), key
    assert sampled["msgs_max"] == pytest.approx(walked["msgs_max"], rel=MSGS_RTOL)
    assert sampled["bytes_recv_mean"] == pytest.approx(walked["bytes_recv_mean"], rel=1e-9)
    assert sampled["time_s"] != walked["time_s"]          # it sampled


def test_sampled_steps_of_unequal_rows_near_the_walk(monkeypatch):
    """Unequal rows at many process rows (N = 131071: the last process row one row
    short), sampled as `model lu` samples them (its thresholds): each block's roots put
    on every process row in turn (`shift`), the time and the per-rank maxima within
    SAMPLED_UNEQUAL_ERROR of the walk's (a root of a sampled step that kept its work
    for the block's every step put the time 8% over)."""
    n, grid = 131071, (1024, 16, 2, 128)
    px, py, c, v = grid
    placement = BIG.placement(px * py * c)
    sample = conflux.step_sample(n, v, px, py, c, placement, "uniform")
    assert sample is not None and sample.shift is not None
    assert not TileMap(n, v, px, 1).even_rows
    sampled = conflux.candidate_row(n, 2.0**40, BIG, placement, grid)
    assert f"within {conflux.SAMPLED_UNEQUAL_ERROR:g}" in conflux.record_block(
        n, v, px, py, c, BIG, placement=placement, per_rank=False)["time_formula"]
    budget(monkeypatch, exact=1 << 60)
    walked = conflux.candidate_row(n, 2.0**40, BIG, placement, grid)
    assert walked["sampled_steps"] is None and sampled["sampled_steps"] is not None
    for key in MAXIMA:
        assert sampled[key] == pytest.approx(walked[key], rel=conflux.SAMPLED_UNEQUAL_ERROR), key
    assert sampled["msgs_max"] == pytest.approx(walked["msgs_max"],
                                                rel=conflux.SAMPLED_MSGS_ERROR)


@pytest.mark.parametrize("grid", [(251, 1, 2, 128), (251, 2, 1, 128)],
                         ids=["two layers", "one layer"])
def test_pivot_tables_too_large_to_walk_are_sampled(grid, monkeypatch):
    """Few classes a step but many process rows whose tournament counts differ (Px =
    251, not a power of two): the walk would hold two [step, Px] tables of steps x Px
    cells. Beyond TABLE_CELLS the steps are sampled, no more than TABLE_CELLS // Px of
    them but SAMPLE_LEAST (`pivots_at` makes the tables at those alone), within the
    errors the table states of the walk's figures (P = 2 x 65521: 10.1 GB walked)."""
    n, (px, py, c, v) = 60000, grid
    placement = NODES.placement(px * py * c)
    steps = -(-n // v)
    assert steps * px <= conflux.TABLE_CELLS
    assert conflux.step_sample(n, v, px, py, c, placement, "uniform") is None
    walked = conflux.candidate_row(n, 2.0**40, NODES, placement, grid)
    monkeypatch.setattr(conflux, "TABLE_CELLS", 1 << 14)
    sample = conflux.step_sample(n, v, px, py, c, placement, "uniform")
    assert sample is not None and len(sample.rows) < steps / 2
    sampled = conflux.candidate_row(n, 2.0**40, NODES, placement, grid)
    assert walked["sampled_steps"] is None
    assert sampled["sampled_steps"] == (len(sample.rows), steps)
    assert not TileMap(n, v, px, 1).even_rows
    for key in MAXIMA:
        assert sampled[key] == pytest.approx(walked[key], rel=conflux.SAMPLED_UNEQUAL_ERROR), key
    assert sampled["msgs_max"] == pytest.approx(walked["msgs_max"],
                                                rel=conflux.SAMPLED_MSGS_ERROR)
    assert sampled["time_s"] != walked["time_s"]          # it sampled


@pytest.mark.parametrize("n, p, grid", [
    (400000, 2**16, (1024, 32, 2, 128)),   # three cells, a fifth of the head left: 7% under
    (262144, 2**18, (512, 64, 8, 512)),    # blocks of 2 steps on 64 columns: 15% over
    (393216, 2**16, (512, 16, 8, 512)),    # 1.5 tiles a row, blocks of 8: 23% over
], ids=["few cells", "short blocks", "short blocks, unequal rows"])
def test_sampled_grids_of_few_tiles_a_row(n, p, grid, monkeypatch):
    """Grids of one to six tiles a process row, sampled as `model lu` samples them: the
    cells cover the head (its last steps walked, not extrapolated), blocks shorter than
    the roots' period averaged over the roots' columns as well as their rows, and rows
    of a tile more apart from those of one less (`StepSample.arcs`); the time and the
    per-rank maxima within SAMPLED_ERROR (SAMPLED_UNEQUAL_ERROR) of the walk's."""
    px, py, c, v = grid
    placement = BIG.placement(p)
    sample = conflux.step_sample(n, v, px, py, c, placement, "uniform")
    even = TileMap(n, v, px, 1).even_rows
    assert sample is not None and len(sample.rows) < sample.steps // 2
    if sample.block < py:
        assert sample.shift[2] == sample.block % py
        assert sample.arcs == (0, 0 if even else sample.steps % px, 0)
    sampled = conflux.candidate_row(n, 2.0**40, BIG, placement, grid)
    budget(monkeypatch, exact=1 << 60)
    walked = conflux.candidate_row(n, 2.0**40, BIG, placement, grid)
    assert walked["sampled_steps"] is None and sampled["sampled_steps"] is not None
    rtol = conflux.SAMPLED_ERROR if even else conflux.SAMPLED_UNEQUAL_ERROR
    for key in MAXIMA:
        assert sampled[key] == pytest.approx(walked[key], rel=rtol), key


def test_the_record_says_where_it_samples(monkeypatch):
    args = (65536, 128, 64, 4, 1, NODES)
    exact = conflux.record_block(*args)
    assert exact["time_formula"] == conflux.TIME_FORMULA
    assert "sampled" not in exact["formula"]
    _few_samples(monkeypatch)
    block = conflux.record_block(*args)
    assert block["time_formula"].startswith(conflux.TIME_FORMULA + "; sampled: of 512 steps")
    assert f"within {conflux.SAMPLED_ERROR:g}" in block["time_formula"]
    assert block["formula"].endswith(block["time_formula"][len(conflux.TIME_FORMULA):])
    assert block["time_s"] == pytest.approx(exact["time_s"], rel=SAMPLED_RTOL)


def test_model_lu_prints_where_the_25d_figures_sample(monkeypatch):
    from linalg_io.model_command.lu_table import _sampled_lines_25d

    placement = NODES.placement(256)
    grids = [(64, 4, 1, 128), (16, 16, 1, 128)]

    def rows() -> list[dict]:
        return [conflux.candidate_row(65536, 2.0**40, NODES, placement, grid) for grid in grids]

    assert _sampled_lines_25d(rows()) == []
    _few_samples(monkeypatch)
    lines = _sampled_lines_25d(rows())
    assert len(lines) == 1
    assert lines[0].startswith("  2.5D figures from sampled steps (approximate: time, bytes "
                               f"and flops within {conflux.SAMPLED_ERROR:g} "
                               f"({conflux.SAMPLED_UNEQUAL_ERROR:g} where the process rows "
                               "hold unequal rows), messages within "
                               f"{conflux.SAMPLED_MSGS_ERROR:g}")
    assert "64x4x1 v=128 (" in lines[0] and "16x16x1 v=128 (" in lines[0]


def test_chunks_add_up(monkeypatch):
    """The sampled rows taken one at a time (`CHUNK_CELLS`, memory) give the figures of
    taking them at once."""
    _few_samples(monkeypatch)
    for grid in ((64, 4, 1, 128), (32, 4, 2, 128), (128, 1, 2, 128)):
        placement = NODES.placement(grid[0] * grid[1] * grid[2])
        whole = conflux.candidate_row(65536, 2.0**40, NODES, placement, grid)
        monkeypatch.setattr(conflux, "CHUNK_CELLS", 1)
        chunked = conflux.candidate_row(65536, 2.0**40, NODES, placement, grid)
        monkeypatch.setattr(conflux, "CHUNK_CELLS", 1 << 20)
        for key in (*MAXIMA, "msgs_max", "bytes_recv_mean"):
            assert chunked[key] == pytest.approx(whole[key], rel=1e-12), (grid, key)


def test_the_largest_problems_take_a_bounded_sample():
    """N = 2^24 on 2^20 ranks (more than MANY_RANKS): the grids `model lu` weighs (every
    fourth of each tile's, and the last, the tallest) walk their 2^15 to 2^17 steps
    within MANY_EXACT_CELLS cells of classes, or sample about MANY_SAMPLE_CELLS cells'
    worth (MANY_SAMPLE_LEAST, or SAMPLE_BLOCKS blocks, at least; and where a few cells
    leave the head's last steps, those)."""
    from linalg_io.lu.choice import TILE_SIZES, busy_grids

    placement = BIG.placement(2**20)
    for v in TILE_SIZES:
        grids = busy_grids(2**24, v, 2**20)
        for px, py, c in grids[::4] + grids[-1:]:
            sample = conflux.step_sample(2**24, v, px, py, c, placement, "uniform")
            cells = conflux.class_cells(px, py, c, conflux.node_groups(px, py, c, placement))
            if sample is None:
                assert 2**24 // v * cells <= conflux.MANY_EXACT_CELLS, (px, py, c, v)
                continue
            least = max(conflux.MANY_SAMPLE_LEAST, conflux.MANY_SAMPLE_CELLS // cells,
                        conflux.SAMPLE_BLOCKS * sample.block)
            # (and, a few cells, the head's last steps, less than a cell)
            assert len(sample.rows) <= (least * 1.5 + sample.block + 1
                                        + sample.stride * sample.block), (px, py, c, v)


@pytest.mark.parametrize("py", [1, 2])
def test_a_column_of_a_class_per_row_samples_fewer_steps(py, monkeypatch):
    """A 509 x Py x 1 grid whose every process row is a class (509 of them, 400 tiles:
    the last 109 hold none) samples COLUMN_CELLS / (Px Py) steps, SAMPLE_FEWEST at
    least, not SAMPLE_LEAST (here lowered to 20 and made 40 of 400 steps), in blocks of
    its columns' roles (Py, or 2 Py where they go reflected; not a node's 8 process rows
    at Py = 2): the time and the maxima within SAMPLED_RTOL of the walk's, the messages
    within MSGS_RTOL."""
    n, grid = 400 * 128, (509, py, 1, 128)
    placement = NODES.placement(509 * py)
    budget(monkeypatch, exact=1 << 60)
    walked = conflux.candidate_row(n, 2**40, NODES, placement, grid)
    assert walked["sampled_steps"] is None
    budget(monkeypatch, exact=0, cells=0, least=40)
    least = conflux.step_sample(n, 128, *grid[:3], placement, "uniform")
    monkeypatch.setattr(conflux, "COLUMN_CELLS", 509 * py * 10)
    monkeypatch.setattr(conflux, "SAMPLE_FEWEST", 20)
    fewest = conflux.step_sample(n, 128, *grid[:3], placement, "uniform")
    assert len(fewest.rows) < len(least.rows) < 400
    assert fewest.block in (py, 2 * py)
    sampled = conflux.candidate_row(n, 2**40, NODES, placement, grid)
    assert sampled["sampled_steps"] == (len(fewest.rows), 400)
    for key in MAXIMA:
        assert sampled[key] == pytest.approx(walked[key], rel=SAMPLED_RTOL), key
    assert sampled["msgs_max"] == pytest.approx(walked["msgs_max"], rel=MSGS_RTOL)
    # not where the process rows are few classes (Px a power of two, every row alike)
    even = (1024 * 128, 128, 512, 1, 1, NODES.placement(512), "uniform")
    fewer = conflux.step_sample(*even)
    monkeypatch.setattr(conflux, "COLUMN_CELLS", 1 << 40)
    assert len(fewer.rows) == len(conflux.step_sample(*even).rows)


def _chunk_sizes(monkeypatch) -> list:
    """40 sampled steps a grid (none walked whole), and the list that each evaluation's
    steps a chunk (`_chunked`'s per_chunk) go into."""
    budget(monkeypatch, exact=0, cells=0, least=40)
    sizes, by_chunks = [], conflux._chunked
    monkeypatch.setattr(conflux, "_chunked",
                        lambda *a: sizes.append(a[8]) or by_chunks(*a))
    return sizes


def test_a_column_of_a_class_per_row_takes_steps_a_chunk(monkeypatch):
    """That P x 1 x 1 grid (509 rows of 400 tiles) takes COLUMN_CHUNK sampled steps at
    once, not the one its cells allow (`CHUNK_CELLS` of 509 here), with the figures of
    one at a time; a grid of few classes a row keeps the cells' count."""
    n, grid = 400 * 128, (509, 1, 1, 128)
    placement = NODES.placement(509)
    sizes = _chunk_sizes(monkeypatch)
    monkeypatch.setattr(conflux, "CHUNK_CELLS", 509)
    chunked = conflux.candidate_row(n, 2**40, NODES, placement, grid)
    monkeypatch.setattr(conflux, "COLUMN_CHUNK", 1)
    single = conflux.candidate_row(n, 2**40, NODES, placement, grid)
    assert sizes == [4, 1] and chunked["sampled_steps"] == single["sampled_steps"]
    for key in (*MAXIMA, "msgs_max", "bytes_recv_mean"):
        assert chunked[key] == pytest.approx(single[key], rel=1e-12), key
    sizes.clear()
    conflux.candidate_row(1024 * 128, 2**40, NODES, NODES.placement(512), (512, 1, 1, 128))
    assert sizes == [1]


def test_a_chunk_makes_its_own_pivot_tables(monkeypatch):
    """Where a sample's pivot counts come from the tournament's kept states (509 process
    rows of 400 tiles, two layers: few classes, one chunk by its cells), a chunk takes
    TABLE_CELLS / Px sampled steps at most, each its own [steps, Px] tables: the figures
    those of the whole sample at once, to rounding."""
    n, grid = 400 * 128, (509, 1, 2, 128)
    placement = NODES.placement(1018)
    assert conflux.from_states(n, 128, 509, "uniform", 0)
    sizes = _chunk_sizes(monkeypatch)
    whole = conflux.candidate_row(n, 2**40, NODES, placement, grid)
    monkeypatch.setattr(conflux, "TABLE_CELLS", 509 * 3)
    chunked = conflux.candidate_row(n, 2**40, NODES, placement, grid)
    assert sizes[-1] == 3 and sizes[0] > whole["sampled_steps"][0]
    assert chunked["sampled_steps"] == whole["sampled_steps"]
    for key in (*MAXIMA, "msgs_max", "bytes_recv_mean"):
        assert chunked[key] == pytest.approx(whole[key], rel=1e-12), key


@pytest.mark.parametrize("n, grid", [
    (65536, (32, 4, 2, 128)),     # a column's members share nodes, two layers
    (65536, (4, 32, 2, 128)),     # a row's
    (60000, (32, 8, 1, 128)),     # unequal process rows: no shift
], ids=["column on nodes", "row on nodes", "unequal rows"])
def test_sampled_groups_chunked_equal_unchunked(n, grid, monkeypatch):
    """The sampled "by_group" bytes, summed chunk by chunk (a sampled step a chunk) into
    the counts' spreading, equal the unchunked path's (by_phase keeps it) to rounding;
    the groups add up to the bytes less the pivot ids'; and the record's time is the
    candidate row's (the same chunked path)."""
    px, py, c, v = grid
    placement = NODES.placement(px * py * c)
    _few_samples(monkeypatch)
    monkeypatch.setattr(conflux, "CHUNK_CELLS", 1)
    args = (n, v, px, py, c, "uniform", NODES, placement)
    chunks, by_chunks = [], conflux._chunked
    monkeypatch.setattr(conflux, "_chunked", lambda *a: chunks.append(a[-1]) or by_chunks(*a))
    chunked = conflux.conflux_plan_counts(*args, by_group=True)
    assert chunks and chunks[0] is not None              # the groups went the chunked way
    whole = conflux.conflux_plan_counts(*args, by_group=True, by_phase=True)
    assert chunked["sample"] is not None and len(chunked["sample"].rows) > 50
    assert set(chunked["by_group"]) == set(whole["by_group"])
    assert any(key.endswith(conflux.ACROSS) for key in chunked["by_group"])
    for key in ("sent", "recv", "msgs", "flops"):
        np.testing.assert_allclose(chunked[key], whole[key], rtol=1e-12, err_msg=key)
    for group, parts in whole["by_group"].items():
        np.testing.assert_allclose(chunked["by_group"][group], parts, rtol=1e-12,
                                   atol=1e-12 * np.abs(parts).max(), err_msg=group)
    np.testing.assert_array_equal(chunked["id_roots"][0], whole["id_roots"][0])
    np.testing.assert_array_equal(chunked["id_roots"][1], whole["id_roots"][1])
    assert chunked["placement"] == whole["placement"]
    assert chunked["time_s"] == pytest.approx(whole["time_s"], rel=1e-12)
    ids = whole["by_phase"]["push_pivots"]["links"]["world"]
    for i, key in enumerate(("sent", "recv")):
        groups = sum(chunked["by_group"][group][i] for group in conflux.COMM_GROUPS
                     if group in chunked["by_group"])
        np.testing.assert_allclose(groups, chunked[key] - ids[i], rtol=1e-12,
                                   atol=1e-12 * chunked[key].max(), err_msg=key)
    row = conflux.candidate_row(n, 2.0**40, NODES, placement, (px, py, c, v))
    assert conflux.record_block(*args[:5], NODES, "uniform", placement)["time_s"] == row["time_s"]


@pytest.mark.parametrize("profile, n, grid", [
    (CPU, 40000 + 3, (32, 32, 2, 128)),    # the last tile 3 columns: its broadcasts trees
    (CPU, 120007, (96, 4, 2, 128)),        # unequal rows, the last tile 7 rows
    (NODES, 40000 + 3, (32, 16, 2, 128)),  # a column's members on shared nodes
], ids=["narrow last tile", "unequal rows", "column on nodes"])
def test_sampled_spreading_of_the_pairs_with_a_term_is_bit_for_bit(profile, n, grid,
                                                                   monkeypatch):
    """`rank_classes._differences` on only the pairs of edges with a term
    (`_weighted_pairs`, forced: FEW_PAIRS 0) gives the row of every pair's (FEW_PAIRS
    lifted), bit for bit, having left pairs out."""
    from linalg_io.models import rank_classes

    _few_samples(monkeypatch)
    placement = profile.placement(grid[0] * grid[1] * grid[2])
    kept = []
    weighted = rank_classes._weighted_pairs

    def counted(*args):
        pairs = weighted(*args)
        kept.append((len(pairs[0]), args[-1]))
        return pairs

    monkeypatch.setattr(rank_classes, "_weighted_pairs", counted)
    monkeypatch.setattr(rank_classes, "FEW_PAIRS", 0)
    some = conflux.candidate_row(n, 2.0**40, profile, placement, grid)
    assert some["sampled_steps"] is not None
    assert kept and all(few <= every for few, every in kept)
    assert any(few < every for few, every in kept)
    monkeypatch.setattr(rank_classes, "_weighted_pairs", weighted)
    monkeypatch.setattr(rank_classes, "FEW_PAIRS", 10**9)
    assert conflux.candidate_row(n, 2.0**40, profile, placement, grid) == some


@pytest.mark.parametrize("n, p, grid, averaged", [
    (262143, 2**14, (512, 32, 1, 128), False),   # unequal rows in tiles of as many
    (1234567, 2**18, (32, 8192, 1, 128), True),  # the columns' parts apart (arcs)
])
def test_the_counts_sample_keeps_the_shift_where_the_rows_are_parted(n, p, grid, averaged):
    """`step_sample` decides whether a grid's counts are averaged over the roots' places
    like its times (`StepSample.counted`): not where the process rows hold unequal rows
    and no arcs part them (a row's bytes would blend with its neighbours'), else so."""
    px, py, c, v = grid
    sample = conflux.step_sample(n, v, px, py, c, BIG.placement(p), "uniform")
    assert sample.shift is not None and sample.counts_shift is averaged
    counted = sample.counted()
    assert (counted is sample) is averaged
    assert counted.shift == (sample.shift if averaged else None)
    assert (counted.rows == sample.rows).all() and (counted.weight == sample.weight).all()
