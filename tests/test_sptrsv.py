"""SpTRSV without MPI jobs: matrices, analysis, model, the GPU staging with a NumPy
stand-in (the real multi-rank solves: test_sptrsv_mpi.py)."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from linalg_io.models.sptrsv import sptrsv_costs
from scipy.sparse.linalg import spsolve_triangular

from linalg_io.errors import InputError
from linalg_io.sptrsv import analysis
from linalg_io.sptrsv.matrices import as_lower, laplacian_ic0, load_matrix

SHALLOW = "rand:1500:0.004:6"


DEEP = "rand:1200:0.002:300"




@pytest.mark.parametrize("nx,dims", [(7, 2), (5, 3)])
def test_ic0_factor_matches_laplacian_on_its_pattern(nx, dims):
    lower = laplacian_ic0(nx, dims)
    n = nx ** dims
    one_d = sp.diags([-np.ones(nx - 1), 2 * np.ones(nx), -np.ones(nx - 1)], [-1, 0, 1])
    eye = sp.identity(nx)
    a = sp.kronsum(one_d, one_d) if dims == 2 else sp.kronsum(sp.kronsum(one_d, one_d), one_d)
    product = (lower @ lower.T).tocsr()
    pattern = sp.csr_matrix(a).astype(bool)
    assert lower.shape == (n, n) and abs(sp.triu(lower, 1)).sum() == 0
    assert lower.nnz == sp.tril(a).nnz
    diff = abs(product - a).multiply(pattern)
    assert diff.max() < 1e-12
    assert eye.shape == (nx, nx)


def test_rand_has_exact_depth_and_is_triangular():
    for depth in (1, 6, 300):
        lower = load_matrix(f"rand:1200:0.002:{depth}")
        assert abs(sp.triu(lower, 1)).sum() == 0
        assert analysis.levels(lower).max() + 1 == depth


def test_upper_is_transpose_and_reversal_is_lower():
    lower = load_matrix("lap3d:4")
    upper = load_matrix("lap3d:4", upper=True)
    assert abs(upper - lower.T).max() == 0
    reversed_lower = as_lower(upper, True)
    assert abs(sp.triu(reversed_lower, 1)).sum() == 0
    b = np.arange(64.0)
    x = spsolve_triangular(upper, b, lower=False)
    y = spsolve_triangular(reversed_lower, b[::-1], lower=True)
    assert np.allclose(x, y[::-1], rtol=1e-13)


def test_mtx_checks(tmp_path):
    square = sp.csr_matrix(np.array([[2.0, 1.0], [1.0, 3.0]]))
    scipy.io.mmwrite(tmp_path / "full.mtx", square)
    with pytest.raises(InputError, match="not lower triangular.*--tril"):
        load_matrix(str(tmp_path / "full.mtx"))
    tril = load_matrix(str(tmp_path / "full.mtx"), take_triangle=True)
    assert tril.toarray().tolist() == [[2.0, 0.0], [1.0, 3.0]]
    triu = load_matrix(str(tmp_path / "full.mtx"), upper=True, take_triangle=True)
    assert triu.toarray().tolist() == [[2.0, 1.0], [0.0, 3.0]]
    scipy.io.mmwrite(tmp_path / "singular.mtx", sp.csr_matrix(np.array([[1.0, 0], [2.0, 0]])))
    with pytest.raises(InputError, match="zero or missing diagonal.*row 1"):
        load_matrix(str(tmp_path / "singular.mtx"))
    scipy.io.mmwrite(tmp_path / "rect.mtx", sp.csr_matrix(np.ones((2, 3))))
    with pytest.raises(InputError, match="must be square"):
        load_matrix(str(tmp_path / "rect.mtx"))
    with pytest.raises(InputError, match="expected lap2d"):
        load_matrix("lap4d:3")
    (tmp_path / "empty.mtx").write_text("%%MatrixMarket matrix coordinate real general\n0 0 0\n")
    with pytest.raises(InputError, match="0 x 0"):
        load_matrix(str(tmp_path / "empty.mtx"))


def test_partitions_balance_and_plan_covers_every_read():
    lower = load_matrix("lap3d:12")
    levels = analysis.levels(lower)
    nnz_per_row = np.diff(lower.indptr)
    owner = analysis.partition_rows(lower, levels, 4, "nnz")
    assert np.all(np.diff(owner) >= 0)
    per_rank = np.bincount(owner, weights=nnz_per_row)
    assert per_rank.max() / per_rank.mean() < 1.01
    by_level = analysis.partition_rows(lower, levels, 4, "level")
    for level in range(levels.max() + 1):
        in_level = levels == level
        if in_level.sum() >= 16:
            share = np.bincount(by_level[in_level], weights=nnz_per_row[in_level], minlength=4)
            assert share.max() <= share.mean() * 1.5 + 8
    for owner_ in (owner, by_level):
        plan = analysis.comm_plan(lower, owner_, levels, 4)
        rows = analysis.row_of_entry(lower)
        cross = owner_[rows] != owner_[lower.indices]
        needed = set(zip(owner_[rows[cross]].tolist(), lower.indices[cross].tolist()))
        assert needed == set(zip(plan.dst.tolist(), plan.row.tolist()))
        assert np.all(plan.src == owner_[plan.row])


def test_model_counts_equal_plan_batches():
    lower = load_matrix(DEEP)
    levels = analysis.levels(lower)
    owner = analysis.partition_rows(lower, levels, 3, "level")
    plan = analysis.comm_plan(lower, owner, levels, 3)
    for algo in ("levelset", "syncfree"):
        costs = sptrsv_costs(lower.indptr, lower.indices, levels, owner, 3, 2, algo)
        batches_out = np.bincount(plan.batch_key(plan.src), minlength=3)
        values_out = np.bincount(plan.src, minlength=3)
        flag = 8 * batches_out if algo == "syncfree" else 0
        assert np.array_equal(costs.bytes_sent, 16 * values_out + flag)
        assert np.array_equal(costs.msgs_sent, batches_out * (2 if algo == "syncfree" else 1))
    locals_ = [analysis.local_system(lower, owner, levels, plan, r) for r in range(3)]
    assert sum(s.n_local for s in locals_) == lower.shape[0]
    assert sum(len(s.outgoing) for s in locals_) == plan.nbatches


def test_model_command_prints_both_algorithms(capsys):
    from linalg_io.cli import main

    for seed in (1, 2):
        assert main(["model", "sptrsv", "--matrix", SHALLOW, "--p", "4", "--nrhs", "2",
                     "--seed", str(seed)]) == 0
        text = capsys.readouterr().out
        lower = load_matrix(SHALLOW, seed=seed)
        assert f" nnz={lower.nnz} " in text.splitlines()[0]
        levels = analysis.levels(lower)
        owner = analysis.partition_rows(lower, levels, 4, "nnz")
        for algo in ("levelset", "syncfree"):
            costs = sptrsv_costs(lower.indptr, lower.indices, levels, owner, 4, 2, algo)
            (line,) = [row.split() for row in text.splitlines() if row.startswith(f"{algo} ")
                       and row.split()[1] == "max"]
            assert [int(x) for x in line[2:5]] == [costs.bytes_sent.max(),
                                                   costs.bytes_recv.max(), costs.msgs_sent.max()]
    assert load_matrix(SHALLOW, seed=1).nnz != load_matrix(SHALLOW, seed=2).nnz


class _DeviceArray(np.ndarray):
    def get(self):
        return np.asarray(self).copy()


def _numpy_as_cupy(monkeypatch, emulator=None):
    """Patch sptrsv_gpu to run on NumPy; the CUDA kernel becomes its sequential meaning, or,
    given the host emulator (tests/cuda_emulator.py), the kernel source itself."""
    import sys
    import types

    import linalg_io.kernels.sptrsv_gpu as gpu

    def device(a, dtype=None, order="K"):
        return np.array(a, dtype=dtype, order=order).view(_DeviceArray)

    stream = types.SimpleNamespace(synchronize=lambda: None)
    standin = types.SimpleNamespace(
        asarray=device, array=device,
        zeros=lambda *a, **k: np.zeros(*a, **k).view(_DeviceArray),
        empty=lambda *a, **k: np.empty(*a, **k).view(_DeviceArray),
        cuda=types.SimpleNamespace(get_current_stream=lambda: stream))
    sparse = types.ModuleType("cupyx.scipy.sparse")
    sparse.csr_matrix = sp.csr_matrix
    for name, module in (("cupyx", types.ModuleType("cupyx")),
                         ("cupyx.scipy", types.ModuleType("cupyx.scipy")),
                         ("cupyx.scipy.sparse", sparse)):
        monkeypatch.setitem(sys.modules, name, module)

    def kernel(grid, block, args):
        colptr, rowidx, val, diag, left, in_degree, x, m, _, _ = args
        for j in range(int(m)):
            assert in_degree[j] == 0, "column scheduled before its dependencies"
            x[j] = left[j] / diag[j]
            for k in range(colptr[j], colptr[j + 1]):
                left[rowidx[k]] -= val[k] * x[j]
                in_degree[rowidx[k]] -= 1

    monkeypatch.setattr(gpu, "require_cupy", lambda: standin)
    monkeypatch.setattr(gpu, "_kernel", lambda: emulator.sptrsv if emulator else kernel)
    return gpu


@pytest.mark.parametrize("kernel", ["sequential", "emulated"])
@pytest.mark.parametrize("spec", ["lap3d:6", "rand:400:0.01:30"])
def test_gpu_local_solve_staging_with_numpy_standin(monkeypatch, request, spec, kernel):
    emulator = request.getfixturevalue("cuda_emulator") if kernel == "emulated" else None
    gpu = _numpy_as_cupy(monkeypatch, emulator)
    lower = load_matrix(spec)
    b = np.random.default_rng(3).standard_normal((lower.shape[0], 2))
    reference = spsolve_triangular(lower, b, lower=True)
    whole = gpu.solve_triangular_gpu(lower, b)
    assert np.abs(whole - reference).max() < 1e-12
    # right-hand sides in Fortran order: the kernel reads rows, so they are copied to C order
    fortran = gpu.solve_triangular_gpu(lower, np.asfortranarray(b))
    assert np.abs(fortran - reference).max() < 1e-12
    levels = analysis.levels(lower)
    owner = analysis.partition_rows(lower, levels, 3, "level")
    plan = analysis.comm_plan(lower, owner, levels, 3)
    for rank in range(3):
        system = analysis.local_system(lower, owner, levels, plan, rank)
        host = np.empty((gpu.GpuLocalSolve.host_rows(system), 2))
        local = gpu.GpuLocalSolve(system, host)
        local.load_rhs(b[system.rows])
        host[:] = reference[system.ghosts]
        for batch in system.incoming:
            local.ghosts_arrived(batch.target_pos, batch.target_pos + batch.local.size)
        for segment in range(system.nsegments):
            local.solve(system.segment_ptr[segment], system.segment_ptr[segment + 1])
        local.finish()
        assert np.abs(local.solution() - reference[system.rows]).max() < 1e-12
        for batch in system.outgoing:
            packed = np.empty((batch.local.size, 2))
            local.pack(batch.local, packed)
            assert np.array_equal(packed, local.solution()[batch.local])


def test_block_arrays_count_duplicate_entries_once():
    """A CSR with a duplicated entry: the CSC sums it into one, and the in-degree the
    kernel waits on must count it once (twice would make the sync-free kernel spin)."""
    from linalg_io.kernels.sptrsv_gpu import block_arrays

    rows, cols = np.array([1, 2, 2, 2]), np.array([0, 0, 1, 1])   # (2, 1) twice
    strict = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32), (rows, cols)),
                           shape=(3, 3))
    strict.has_canonical_format = False
    strict.indices, strict.data = cols.astype(np.int32), np.array([1.0, 2.0, 3.0, 4.0])
    strict.indptr = np.array([0, 0, 1, 4], dtype=np.int32)
    arrays = block_arrays(strict, np.array([1.0, 2.0, 3.0]), 0, 3, 3)
    assert arrays.in_degree.tolist() == [0, 1, 2]
    assert arrays.colptr.tolist() == [0, 2, 3, 3] and arrays.val.dtype == np.float64
    assert sorted(arrays.val.tolist()) == [1.0, 2.0, 7.0]
