"""The runner's view of one tall-and-skinny GEMM run (see linalg_io/runner.py).

Options (`linalg-io tsgemm --help`): variant, m, n, k, dtype, order (memory order of the local A,
and of B for atb; the small operands are C-ordered message buffers), dist (tsm2r:
1d, 2d or auto = the model's cheaper). Inputs are generated per block from the seed
(linalg_io.tsgemm.inputs), so the check regenerates what it needs locally.

Verification: the largest componentwise error |C - C_ref| / (|A| |B|) over all
entries, C_ref in float64 from the regenerated inputs, against inner * eps(dtype),
inner the summed dimension (k; m for atb) -- the classical bound of a dot product
of that length (gamma_inner = inner * eps / 2), with a factor 2 to spare.
The record's params also carry `local_kernel` (which kernel ran, and why BLAS if it
did), `memory_bytes` (A, B and C bytes the local products stream, all ranks) and
`effective_gbps` (memory_bytes / median time).
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid2D
from linalg_io.contract import RunConfig
from linalg_io.errors import InputError
from linalg_io.launch.agree import agreed
from linalg_io.launch.node import memory_per_rank, node_rank_and_size
from linalg_io.models import tsgemm as model
from linalg_io.models.memory import require_memory, tsgemm_bytes_per_rank
from linalg_io.models.profile import load_profile
from linalg_io.tsgemm import distributed
from linalg_io.tsgemm.inputs import block


class TsgemmCase:
    kernel = "tsgemm"

    def __init__(self, comm: CountedComm, config: RunConfig) -> None:
        opts = config.options
        self.comm = comm
        self.variant = opts["variant"]
        self.m, self.n, self.k = int(opts["m"]), int(opts["n"]), int(opts["k"])
        self.dtype = np.dtype(opts.get("dtype", "float64"))
        self.order = opts.get("order", "C")
        self.threads = config.threads
        self.reps = config.reps
        self.seed = config.seed
        self.profile = load_profile(config.profile, config.threads)
        self.placement = self.profile.for_run(node_rank_and_size(comm.comm)[1]).placement(
            comm.size)
        if self.variant not in model.VARIANTS:
            raise InputError(f"--variant {self.variant!r}: expected one of {model.VARIANTS}")
        if self.dtype not in (np.float32, np.float64):
            raise InputError(f"--dtype {self.dtype}: expected float32 or float64")
        self._check_memory()
        dist = opts.get("dist", "auto")
        if self.variant != "tsm2r":
            if dist == "2d":
                raise InputError(f"--dist 2d applies to tsm2r only, not {self.variant}")
            dist = "1d"
        elif dist == "auto":
            dist = model.choose_dist(self.m, self.n, self.k, comm.size, self.dtype.itemsize,
                                     self.profile, self.placement)
        self.dist = dist
        self.grid_shape = model.grid_for(self.variant, comm.size, dist)
        self.device = None
        if config.backend == "gpu":
            from linalg_io.kernels.gpu import select_device_for_node

            self.device = select_device_for_node(comm.comm)
        self.algo = self.variant if self.variant != "tsm2r" else f"tsm2r-{dist}"
        self.run_times: list[float] = []
        self.local_kernel = "none"
        self.result = None
        self.local_out = None  # the local C of the last repetition, reused as the next's buffer
        self._build_inputs()
        self.params = {
            "m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype.name,
            "order": self.order, "dist": dist, "grid": [*self.grid_shape, 1],   # [Pr, Pc, c]
            "variant": self.variant,
        }

    def _check_memory(self) -> None:
        """Collective: refuse at once operands that cannot fit this node's memory."""
        available, source = memory_per_rank(self.comm.comm)
        need = tsgemm_bytes_per_rank(self.variant, self.m, self.n, self.k, self.comm.size,
                                     self.dtype.itemsize)
        what = (f"tsgemm --variant {self.variant} m={self.m} n={self.n} k={self.k} "
                f"{self.dtype.name} on {self.comm.size} ranks")
        agreed(self.comm.comm, lambda: require_memory(what, need, available, source))

    # --- inputs ------------------------------------------------------------
    def _gen(self, name: str, rows: tuple[int, int], cols: tuple[int, int], total_cols: int,
             order: str = "C") -> np.ndarray:
        return block(name, self.seed, rows, cols, total_cols, self.dtype, order)

    def _on_device(self, x: np.ndarray):
        return x if self.device is None else self.device.asarray(x)

    def _build_inputs(self) -> None:
        p, rank, m, n, k = self.comm.size, self.comm.rank, self.m, self.n, self.k
        if self.variant == "tsm2r" and self.dist == "2d":
            pr, pc = self.grid_shape
            self.grid = Grid2D.create(self.comm, pr, pc)
            i, j = self.grid.myrow, self.grid.mycol
            self.rows = self._span(m, pr, i)
            self.cols = self._span(k, pc, j)
            self.a_local = self._on_device(self._gen("A", self.rows, self.cols, k, self.order))
            self.b_piece_ref = self._gen("B", self.cols, (0, n), n)
            self.b_piece = np.zeros_like(self.b_piece_ref)
            return
        self.rows = self._span(m, p, rank)
        if self.variant == "atb":
            self.a_local = self._on_device(self._gen("A", self.rows, (0, k), k, self.order))
            self.b_local = self._on_device(self._gen("B", self.rows, (0, n), n, self.order))
            return
        self.a_local = self._on_device(self._gen("A", self.rows, (0, k), k, self.order))
        self.b_ref = self._gen("B", (0, k), (0, n), n)
        if self.variant == "tsm2l":
            self.b_full = self._on_device(self.b_ref)
        elif self.variant == "ab":
            self.b_full = np.zeros_like(self.b_ref)
        else:
            self.piece_rows = model.row_blocks(k, p)
            self.b_piece = self._gen("B", self._span(k, p, rank), (0, n), n)
            self.b_full = np.zeros_like(self.b_ref)

    @staticmethod
    def _span(total: int, parts: int, index: int) -> tuple[int, int]:
        start = model.block_start(total, parts, index)
        return start, start + int(model.row_blocks(total, parts)[index])

    # --- runner interface --------------------------------------------------
    def setup_rep(self) -> None:
        """Clear what the communication must deliver, so the check sees it arrive."""
        if self.variant == "ab":
            self.b_full[:] = self.b_ref if self.comm.rank == 0 else 0
        elif self.variant == "tsm2r" and self.dist == "2d":
            self.b_piece[:] = self.b_piece_ref if self.grid.myrow == 0 else 0
        elif self.variant == "tsm2r":
            self.b_full[:] = 0
        self.result = None

    def run(self) -> None:
        start = time.perf_counter()
        out = self.local_out
        if self.variant == "tsm2l":
            result, kernel = distributed.tsm2l(self.a_local, self.b_full, self.threads, out)
        elif self.variant == "ab":
            result, kernel = distributed.ab(self.comm, self.a_local, self.b_full, self.threads,
                                            out)
        elif self.variant == "atb":
            result, kernel = distributed.atb(self.comm, self.a_local, self.b_local, self.threads)
        elif self.dist == "2d":
            result, kernel = distributed.tsm2r_2d(self.grid, self.a_local, self.b_piece,
                                                  self.threads, out)
        else:
            result, kernel = distributed.tsm2r_1d(self.comm, self.a_local, self.b_piece,
                                                  self.b_full, self.piece_rows, self.threads,
                                                  out)
        if self.device is None and self.variant != "atb":
            self.local_out = result if self.dist != "2d" or self.grid.pc == 1 else None
        if self.device is not None and result is not None:
            self.device.cuda.Device().synchronize()
        self.run_times.append(time.perf_counter() - start)
        self.result, self.local_kernel = result, kernel

    def _reference(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(C_ref, |A| |B|) in float64 for the part of C this rank holds (None: none)."""
        raw, k, n = self.comm.comm, self.k, self.n
        if self.variant == "atb":
            a = np.asarray(self._gen("A", self.rows, (0, k), k), dtype=np.float64)
            b = np.asarray(self._gen("B", self.rows, (0, n), n), dtype=np.float64)
            ref, scale = a.T @ b, np.abs(a).T @ np.abs(b)
            raw.Allreduce(MPI.IN_PLACE, ref)
            raw.Allreduce(MPI.IN_PLACE, scale)
            return ref, scale
        if self.variant == "tsm2r" and self.dist == "2d":
            a = np.asarray(self._gen("A", self.rows, self.cols, k), dtype=np.float64)
            b = self.b_piece_ref.astype(np.float64)
            ref, scale = a @ b, np.abs(a) @ np.abs(b)
            if self.grid.pc > 1:
                row = self.grid.row_comm.comm
                total = np.empty_like(ref) if self.grid.mycol == 0 else None
                total_scale = np.empty_like(scale) if self.grid.mycol == 0 else None
                row.Reduce(ref, total, root=0)
                row.Reduce(scale, total_scale, root=0)
                ref, scale = total, total_scale
            return ref, scale
        a = np.asarray(self._gen("A", self.rows, (0, k), k), dtype=np.float64)
        b = self.b_ref.astype(np.float64)
        return a @ b, np.abs(a) @ np.abs(b)

    def verify(self) -> dict:
        raw = self.comm.comm
        ref, scale = self._reference()
        error = 0.0
        if ref is not None and ref.size:
            result = self.result if isinstance(self.result, np.ndarray) else self.result.get()
            tiny = np.finfo(np.float64).tiny
            error = float(np.max(np.abs(result.astype(np.float64) - ref)
                                 / np.maximum(scale, tiny)))
        error = raw.allreduce(error, op=MPI.MAX)
        inner = self.m if self.variant == "atb" else self.k
        threshold = inner * float(np.finfo(self.dtype).eps)
        # the timed reps only: a warm-up holds the GPU's compile and autotuning
        median = raw.allreduce(float(np.median(self.run_times[-self.reps:])), op=MPI.MAX)
        _, memory = model.rank_costs(self.variant, self.m, self.n, self.k, self.comm.size,
                                     self.dtype.itemsize, self.dist)
        self.params["local_kernel"] = self.local_kernel
        self.params["memory_bytes"] = float(memory.sum())
        self.params["effective_gbps"] = float(memory.sum() / median / 1e9) if median > 0 else None
        return {"metric": "max_rel_err", "value": error, "threshold": threshold,
                "passed": bool(error <= threshold), "inner_dim": inner}

    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def model(self) -> dict:
        return model.model_block(self.variant, self.m, self.n, self.k, self.comm.size,
                                 self.dtype.itemsize, self.dist, self.profile, self.placement)

    def lower_bound(self) -> dict | None:
        return model.lower_bound(self.variant, self.m, self.n, self.k, self.comm.size,
                                 self.dtype.itemsize)

    def describe(self) -> str:
        return (f"m={self.m} n={self.n} k={self.k} {self.dtype.name} order={self.order} "
                f"dist={self.dist} grid={self.grid_shape[0]}x{self.grid_shape[1]}")


def make_case(comm: CountedComm, config: RunConfig) -> TsgemmCase:
    return TsgemmCase(comm, config)
