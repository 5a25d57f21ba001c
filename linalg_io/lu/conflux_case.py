"""The runner's case for `lu --algo conflux`: the 2.5D LU with tournament pivoting.

`make_conflux_case(comm, config)` runs the choice of --grid (PxxPyxC or auto), --nb (v or
auto), --objective and --mem (`linalg_io.lu.choice.choose_lu`, agreed across the ranks
by `linalg_io.lu.run_choice`): with auto the model picks the shape and tile with the
least predicted time (--objective time) or the least wire bytes on the busiest rank
(--objective volume) within --mem bytes per rank (default: the node's memory over the
ranks on the node); across nodes without a network in the machine file, the links
measured at the start first (`run_choice`; the record's `network_probe`, and the
prediction at those rates). Each rank generates (or reads) only
its own tiles, on layer 0; the other layers start at zero.

Verification (HPL, threshold 16), distributed: the factors stay where they were
computed (L rows, U rows and diagonal blocks, each kept once); a block forward and
backward substitution solves L U x = P b with one Allreduce of w values per step
(`linalg_io.lu.solve_conflux`); the residual b - A x and ||A||_inf are computed where A
lives (layer 0, each rank on its own block) and summed on rank 0. The growth factor
max|U|/max|A| and the smallest pivot relative to max|A| go into `verify`
(`linalg_io.lu.hpl.conditioning`: numerically singular below N eps). None of this is
counted traffic (it runs after the timed reps).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid3D
from linalg_io.launch.agree import agreed
from linalg_io.launch.node import node_rank_and_size
from linalg_io.layout.conflux_layout import StepPlan
from linalg_io.layout.generate import vector_entries
from linalg_io.lu.conflux import ConfluxLU, HostKernels, HostMatrix
from linalg_io.lu.hpl import conditioning, hpl_flops, hpl_scaled_residual, hpl_verify_block
from linalg_io.lu.matrix_source import open_source, require_finite
from linalg_io.lu.run_choice import agreed_choice, probe_record, probe_words
from linalg_io.lu.solve_conflux import conflux_solve
from linalg_io.models import conflux as model
from linalg_io.models.costs import traffic_block
from linalg_io.models.lu2d import lu_lower_bound
from linalg_io.models.phase_time import conflux_phase_seconds
from linalg_io.models.profile import load_profile
from linalg_io.tools.network_probe import with_links


class ConfluxCase:
    kernel = "lu"
    algo = "conflux"

    def __init__(self, comm: CountedComm, config) -> None:
        opts = config.options
        self.comm = comm
        self.profile = load_profile(config.profile, config.threads)
        self.source = open_source(opts.get("dist", "random"), opts.get("n"), config.seed,
                                  opts.get("file"))
        self.n = n = self.source.n
        self.seed = config.seed
        node_rank, ranks_on_node = node_rank_and_size(comm.comm)
        self.choice = agreed_choice(comm, "conflux", n, opts, self.profile, ranks_on_node)
        self.profile = with_links(self.profile, self.choice.link_probe)
        self.network_probe = probe_record(self.choice)
        self.placement = self.choice.placement
        self.px, self.py, self.c = self.choice.grid
        self.v = self.choice.nb
        self.grid = Grid3D.create(comm, self.px, self.py, self.c)
        self.step_plan = StepPlan.create(n, self.v, self.px, self.py, self.c)
        rows = self.step_plan.tiles.local_rows(self.grid.x)
        cols = self.step_plan.tiles.local_cols(self.grid.y)
        # A lives on layer 0; the other layers start at zero
        self.original = self.source.local_block(rows, cols) if self.grid.layer == 0 else None
        agreed(comm.comm, lambda: require_finite(self.original))
        self.shape = (len(rows), len(cols))
        if config.backend == "gpu":
            from linalg_io.kernels.gpu import select_device_for_rank
            from linalg_io.lu.conflux_gpu import DeviceKernels, DeviceMatrix

            select_device_for_rank(node_rank)
            self.matrix = DeviceMatrix(self.shape)
            kernels = DeviceKernels()
        else:
            self.matrix = HostMatrix(np.zeros(self.shape, order="F"))
            kernels = HostKernels()
        self.lu = ConfluxLU(self.grid, self.step_plan, self.matrix, kernels)
        self.phase_clock = self.lu.clock
        self.params = {"n": n, "nb": self.v, "grid": [self.px, self.py, self.c],
                       "matrix": self.source.describe(), "pivoting": "tournament",
                       "mem_per_rank": int(self.choice.memory),
                       "objective": self.choice.objective}

    def setup_rep(self) -> None:
        self.matrix.load(self.original)
        self.lu.reset()
        self.matrix.finish()

    def run(self) -> None:
        self.lu.factor()
        self.matrix.finish()   # a GPU's last queued swaps and updates belong to the run

    def flops(self) -> float:
        return hpl_flops(self.n)

    def describe(self) -> str:
        return (f"N={self.n} v={self.v} grid={self.px}x{self.py}x{self.c} "
                f"matrix={self.source.describe()}{probe_words(self.choice)}")

    def _pivot_assumption(self) -> str:
        return "none" if self.source.kind == "diagdom" else "uniform"

    def model(self) -> dict:
        """A priori prediction (pivots: none for diagdom, uniform otherwise), plus the
        exact count for the pivots this run chose (`given_pivots`)."""
        block = model.record_block(self.n, self.v, self.px, self.py, self.c, self.profile,
                                   self._pivot_assumption(), self.placement)
        exact = model.conflux_costs(self.n, self.v, self.px, self.py, self.c, self.lu.pivots)
        block["given_pivots"] = traffic_block(exact)
        block["time_by_phase"] = conflux_phase_seconds(self.n, self.v, self.px, self.py, self.c,
                                                       self.profile, self.placement,
                                                       self._pivot_assumption())
        return block

    def lower_bound(self) -> dict:
        words = model.memory_words(self.n, self.v, self.px, self.py, self.c)
        return lu_lower_bound(self.n, self.comm.size, words, model.MEMORY)

    # --- verification ------------------------------------------------------
    def verify(self) -> dict:
        raw = self.comm.comm
        n = self.n
        factors = self.lu.factors
        u_max = max([np.abs(np.triu(lu00)).max(initial=0.0) for _, _, lu00 in factors.diag]
                    + [np.abs(u_t).max(initial=0.0) for _, _, u_t in factors.u_rows] + [0.0])
        u_max = raw.allreduce(u_max, op=MPI.MAX)
        min_pivot = raw.allreduce(min([np.abs(np.diag(lu00)).min() for _, _, lu00 in factors.diag]
                                      + [np.inf]), op=MPI.MIN)
        b = vector_entries(self.seed, n, np.arange(n))
        x = conflux_solve(raw, self.lu.factors, self.lu.pivots, self.n, self.v,
                          self.step_plan.tiles.ntiles, b)
        # residual pieces where A lives: layer 0, each rank on its block
        ax = np.zeros(n)
        row_abs = np.zeros(n)
        a_max = 0.0
        if self.original is not None:
            rows = self.step_plan.tiles.local_rows(self.grid.x)
            cols = self.step_plan.tiles.local_cols(self.grid.y)
            ax[rows] = self.original @ x[cols]
            row_abs[rows] = np.abs(self.original).sum(axis=1)
            a_max = float(np.abs(self.original).max(initial=0.0))
        ax_sum = np.zeros(n) if raw.rank == 0 else None
        abs_sum = np.zeros(n) if raw.rank == 0 else None
        raw.Reduce(ax, ax_sum, op=MPI.SUM, root=0)
        raw.Reduce(row_abs, abs_sum, op=MPI.SUM, root=0)
        a_max = raw.allreduce(a_max, op=MPI.MAX)
        if raw.rank != 0:
            return {}
        scaled = hpl_scaled_residual(float(np.abs(b - ax_sum).max()), float(abs_sum.max()),
                                     float(np.abs(x).max()), float(np.abs(b).max()), n)
        return hpl_verify_block(scaled, **conditioning(min_pivot, u_max, a_max, n))


def make_conflux_case(comm: CountedComm, config) -> ConfluxCase:
    return ConfluxCase(comm, config)
