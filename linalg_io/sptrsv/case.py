"""The runner's view of one SpTRSV run: inputs, analysis, timed solve, verification, model.

Set-up (untimed): every rank builds the same triangular matrix, its levels, the row
partition and the communication plan (`analysis`), then keeps its own rows. A timed
repetition is the solve alone (level-set or synchronization-free). Verification: the
relative residual ||L x - b|| / (||L|| ||x|| + ||b||) (infinity norms, worst column)
below 16 * (max nonzeros per row) * eps, and agreement with
scipy.sparse.linalg.spsolve_triangular on rank 0. Upper-triangular systems are solved
as J U J y = J b, x = J y (J reverses the rows), so all executors see a lower matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.contract import RunConfig
from linalg_io.errors import InputError
from linalg_io.launch.agree import agreed
from linalg_io.launch.node import memory_per_rank, node_rank_and_size
from linalg_io.models.memory import require_memory, sptrsv_bytes
from linalg_io.models.profile import load_profile
from linalg_io.models.sptrsv import sptrsv_costs, sptrsv_lower_bound
from linalg_io.sptrsv import analysis
from linalg_io.sptrsv.matrices import as_lower, load_matrix, matrix_size


def _local_solver_class(backend: str, comm: CountedComm):
    if backend == "gpu":
        from linalg_io.kernels.gpu import select_device_for_node
        from linalg_io.kernels.sptrsv_gpu import GpuLocalSolve

        select_device_for_node(comm.comm)
        return GpuLocalSolve
    from linalg_io.sptrsv.local import CpuLocalSolve

    return CpuLocalSolve


def _executor(algo: str):
    if algo == "levelset":
        from linalg_io.sptrsv.levelset import LevelSet

        return LevelSet
    if algo == "syncfree":
        from linalg_io.sptrsv.syncfree import SyncFree

        return SyncFree
    raise InputError(f"--algo must be levelset or syncfree, got {algo!r}")


class SptrsvCase:
    kernel = "sptrsv"

    def __init__(self, comm: CountedComm, config: RunConfig) -> None:
        options = config.options
        self.comm = comm
        self.algo = options.get("algo", "levelset")
        self.upper = bool(options.get("upper", False))
        self.nrhs = int(options.get("nrhs", 1))
        self.partition = options.get("partition", "nnz")
        self.spec = options["matrix"]
        self.profile = config.profile
        _, self.ranks_on_node = node_rank_and_size(comm.comm)
        executor_class = _executor(self.algo)
        self._check_memory()
        self.matrix = load_matrix(self.spec, self.upper, bool(options.get("tril", False)),
                                  config.seed)
        self.lower = as_lower(self.matrix, self.upper)
        n = self.lower.shape[0]
        self.levels = analysis.levels(self.lower)
        self.owner = analysis.partition_rows(self.lower, self.levels, comm.size, self.partition)
        plan = analysis.comm_plan(self.lower, self.owner, self.levels, comm.size)
        self.system = analysis.local_system(self.lower, self.owner, self.levels, plan, comm.rank)
        rng = np.random.default_rng(config.seed + 1)
        self.b = rng.standard_normal((n, self.nrhs))
        b_lower = self.b[::-1] if self.upper else self.b
        self.b_local = np.ascontiguousarray(b_lower[self.system.rows])
        solver_class = _local_solver_class(config.backend, comm)
        host, window = executor_class.allocate_host(comm, solver_class.host_rows(self.system),
                                                    self.nrhs)
        self.local = solver_class(self.system, host)
        self.executor = executor_class(comm, self.system, self.local, window)
        self.params = {
            "matrix": self.spec, "n": n, "nnz": int(self.lower.nnz), "nrhs": self.nrhs,
            "upper": self.upper, "partition": self.partition,
            "levels": int(self.levels.max()) + 1 if n else 0, "dtype": "float64",
        }

    def _check_memory(self) -> None:
        """Collective: refuse at once a matrix that cannot fit beside the node's other
        ranks (every rank builds the whole of it), from its description alone."""
        available, source = memory_per_rank(self.comm.comm)
        size = matrix_size(self.spec)
        if size is not None:
            need = sptrsv_bytes(*size, self.nrhs)
            agreed(self.comm.comm, lambda: require_memory(
                f"sptrsv --matrix {self.spec} (n={size[0]}, nnz={size[1]})", need, available,
                source))

    def setup_rep(self) -> None:
        self.local.load_rhs(self.b_local)
        self.executor.reset()
        self.local.finish()

    def run(self) -> None:
        self.executor.run()
        self.local.finish()   # a GPU's queued kernels belong to the timed run

    def verify(self) -> dict:
        world = self.comm.comm
        s = self.system
        x_ext = self.local.extended()
        x = x_ext[:s.n_local]
        off = sp.csr_matrix((s.vals, s.cols, s.indptr), shape=(s.n_local, s.n_ext))
        residual = self.b_local - (s.diag[:, None] * x + off @ x_ext)
        row_sums = np.abs(s.diag) + np.asarray(abs(off).sum(axis=1)).ravel()
        local_max = np.concatenate([
            [row_sums.max(initial=0.0)],
            np.abs(residual).max(axis=0, initial=0.0),
            np.abs(x).max(axis=0, initial=0.0),
            np.abs(self.b_local).max(axis=0, initial=0.0),
        ])
        norms = np.empty_like(local_max)
        world.Allreduce(local_max, norms, op=MPI.MAX)
        r = self.nrhs
        norm_l, res, xn, bn = norms[0], norms[1:1 + r], norms[1 + r:1 + 2 * r], norms[1 + 2 * r:]
        value = float(np.max(res / np.maximum(norm_l * xn + bn, np.finfo(float).tiny)))
        max_row_nnz = int(np.diff(self.lower.indptr).max(initial=1))
        threshold = float(16.0 * max_row_nnz * np.finfo(float).eps)
        pieces = world.gather((s.rows, x.copy()), root=0)
        agreement = None
        if self.comm.rank == 0:
            from scipy.sparse.linalg import spsolve_triangular

            x_lower = np.empty_like(self.b)
            for rows, values in pieces:
                x_lower[rows] = values
            x_full = x_lower[::-1] if self.upper else x_lower
            reference = spsolve_triangular(self.matrix, self.b, lower=not self.upper)
            reference = reference.reshape(self.b.shape)
            agreement = float(np.abs(x_full - reference).max()
                              / max(np.abs(reference).max(), np.finfo(float).tiny))
        return {"metric": "rel_residual", "value": value, "threshold": threshold,
                "passed": bool(value < threshold), "scipy_rel_diff": agreement}

    def flops(self) -> float:
        n, nnz = self.lower.shape[0], self.lower.nnz
        return float(self.nrhs * (2 * (nnz - n) + n))

    def model(self) -> dict:
        costs = sptrsv_costs(self.lower.indptr, self.lower.indices, self.levels, self.owner,
                             self.comm.size, self.nrhs, self.algo, self.ranks_on_node)
        # its local solves run one thread whatever --threads (the rates of one)
        profile = load_profile(self.profile, 1).for_run(self.ranks_on_node)
        return costs.record_block(profile, profile.placement(self.comm.size))

    def lower_bound(self) -> dict:
        return sptrsv_lower_bound(self.lower.indptr, self.lower.indices, self.owner,
                                  self.comm.size, self.nrhs)

    def describe(self) -> str:
        side = " upper" if self.upper else ""
        return (f"{self.spec}{side} n={self.params['n']} nnz={self.params['nnz']} "
                f"levels={self.params['levels']} nrhs={self.nrhs} part={self.partition}")


def make_case(comm: CountedComm, config: RunConfig) -> SptrsvCase:
    return SptrsvCase(comm, config)
