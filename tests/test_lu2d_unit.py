"""2D LU pieces that need no MPI: block-cyclic maps, the pivot plan, the model, inputs."""

import numpy as np
import pytest
from linalg_io.models.lu2d import closed_form_words, lu2d_costs, lu2d_plan_counts, lu_lower_bound

from linalg_io.errors import InputError
from linalg_io.layout.blockcyclic import (
    counts_from,
    default_nb,
    global_to_local,
    local_to_global,
    numroc,
    owned_indices,
    owner,
)
from linalg_io.lu.matrix_source import check_finite, open_source


@pytest.mark.parametrize("n,nb,p", [(10, 3, 4), (64, 8, 3), (7, 10, 2), (100, 7, 6), (1, 1, 1)])
def test_blockcyclic_maps_agree_with_brute_force(n, nb, p):
    every = np.arange(n)
    owners = (every // nb) % p
    for proc in range(p):
        mine = every[owners == proc]
        assert numroc(n, nb, proc, p) == len(mine)
        assert np.array_equal(owned_indices(n, nb, proc, p), mine)
        local = np.arange(len(mine))
        assert np.array_equal(local_to_global(local, nb, proc, p), mine)
        assert np.array_equal(global_to_local(mine, nb, p), local)
        assert np.all(owner(mine, nb, p) == proc)
    for g0 in range(n + 1):
        assert counts_from(g0, n, nb, p).tolist() == [
            int(np.sum((every >= g0) & (owners == q))) for q in range(p)]


def test_row_moves_compose_the_interchanges():
    from linalg_io.layout.blockcyclic import row_moves

    rng = np.random.default_rng(1)
    for _ in range(50):
        j0, kb, n = 8, 5, 40
        ipiv = np.array([j0 + i + rng.integers(0, n - j0 - i) for i in range(kb)])
        rows = np.arange(n)
        for i, p in enumerate(ipiv):
            rows[[j0 + i, p]] = rows[[p, j0 + i]]
        moves = row_moves(ipiv, j0)
        assert {q: int(rows[q]) for q in range(n) if rows[q] != q} == moves
        # every position below the top block that changed holds a row of the top block
        assert all(j0 <= r < j0 + kb for q, r in moves.items() if q >= j0 + kb)


@pytest.mark.parametrize("n,nb,pr,pc", [(1024, 64, 2, 2), (2048, 64, 2, 4), (1000, 96, 4, 4),
                                        (300, 32, 1, 3), (300, 32, 3, 1), (257, 16, 2, 3)])
def test_model_band_and_closed_form(n, nb, pr, pc):
    none = lu2d_plan_counts(n, nb, pr, pc, "none")
    worst = lu2d_plan_counts(n, nb, pr, pc, "worst")
    assert np.all(sum(none["recv"].values()) <= sum(worst["recv"].values()))
    assert np.all(none["msgs"] <= worst["msgs"])
    total_none = sum(none["sent"].values())
    total_worst = sum(worst["sent"].values())
    total_expected = sum(lu2d_plan_counts(n, nb, pr, pc, "expected")["sent"].values())
    assert np.all(total_none <= total_worst)
    assert np.all(total_none <= total_expected + 1e-6)
    assert np.all(total_expected <= total_worst + 1e-6)
    if pr == 1:      # no row swaps between process rows: the band is one value
        assert np.array_equal(total_none, total_worst)
    # the closed form's leading terms describe the average rank ("worst" is a per-rank
    # bound, not one matrix's pivots: no average to describe)
    for piv, total in (("none", total_none), ("expected", total_expected)):
        words = sum(closed_form_words(n, nb, pr, pc, piv).values())
        assert total.mean() / 8 == pytest.approx(words, rel=0.12)
    flops = lu2d_costs(n, nb, pr, pc).flops
    assert flops.sum() == pytest.approx(2 * n**3 / 3, rel=0.25)


def test_model_large_2x2_below_scalapack():
    worst = lu2d_costs(8192, 128, 2, 2, "worst").bytes_sent.max()
    assert worst <= 267e6
    bound = lu_lower_bound(8192, 4, 8192**2 / 4, "N^2/P")
    assert bound["bytes_per_rank"] == pytest.approx(8 * 2 * 8192**3 / (3 * 4 * 4096))
    assert bound["mem_words"] == 8192**2 / 4
    assert bound["formula"].endswith("sqrt(M)) words per rank, M = N^2/P = 1.678e+07 words")


def test_default_nb():
    assert default_nb(8192, 1, 2) == 128
    assert default_nb(1024, 2, 2) == 64
    assert default_nb(10, 1, 1) == 10


def test_matrix_source_files(tmp_path):
    from scipy.io import mmwrite

    matrix = np.arange(36, dtype=float).reshape(6, 6) + 1
    np.save(tmp_path / "a.npy", matrix)
    mmwrite(str(tmp_path / "a.mtx"), matrix)
    rows, cols = np.array([1, 4]), np.array([0, 5, 2])
    for name in ("a.npy", "a.mtx"):
        source = open_source("file", None, path=str(tmp_path / name))
        assert source.n == 6
        block = source.local_block(rows, cols)
        assert block.flags.f_contiguous
        assert np.array_equal(block, matrix[np.ix_(rows, cols)])
    generated = open_source("random", 50, seed=3)
    assert generated.local_block(np.arange(3), np.arange(2)).shape == (3, 2)

    np.save(tmp_path / "rect.npy", np.ones((3, 4)))
    np.save(tmp_path / "cplx.npy", np.ones((3, 3), dtype=complex))
    (tmp_path / "bad.npy").write_bytes(b"not a numpy file")
    (tmp_path / "a.txt").write_text("1 2\n3 4\n")
    for path, needle in (("rect.npy", "square"), ("cplx.npy", "not real"),
                         ("bad.npy", "cannot be read"), ("a.txt", "unknown format"),
                         ("missing.npy", "does not exist")):
        with pytest.raises(InputError, match=needle):
            open_source("file", None, path=str(tmp_path / path))
    with pytest.raises(InputError, match="does not match"):
        open_source("file", 5, path=str(tmp_path / "a.npy"))
    with pytest.raises(InputError, match="--file"):
        open_source("file", None)
    with pytest.raises(InputError, match="--n"):
        open_source("random", None)
    with pytest.raises(InputError, match="read only with --dist file"):
        open_source("random", 6, path=str(tmp_path / "a.npy"))
    nan = np.ones((2, 2), order="F")
    nan[1, 0] = np.nan
    assert "non-finite" in check_finite(nan)
    assert check_finite(np.ones((2, 2))) is None
