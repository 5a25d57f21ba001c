"""The runner's case for `lu --algo conflux --input-layout scalapack:MBxNB`: the 2.5D LU
as a drop-in for pdgetrf (`linalg_io.lu.dropin`).

The matrix (the same source and seed as every `lu` run) starts block-cyclic in
MB x NB blocks on the squarest Pr x Pc grid (row-major, as `--algo 2d`/`scalapack`);
each repetition restores that block and calls `DropInLU.factor`: redistribute to the
2.5D tiles (relabelled), factor, and bring L\\U and the pivots back into the
block-cyclic layout. The 2.5D grid and tile come from --grid/--nb (PxxPyxC, v) or the
model, as for `--algo conflux`; --redist-mem bounds the redistribution's buffers.

The record's traffic shows the redistribution apart (phases `redistribute_in`,
`redistribute_out`); `params.part_times_s` the seconds of each part per repetition
(the slowest rank's); `model` is exact for the run's pivots: the 2.5D LU's counts
plus 8 bytes per entry that changes owner, in and out.

Verification (HPL, threshold 16) uses only what a pdgetrf caller gets back: the
interchanges in `ipiv` are applied to b, then forward and backward substitution with
the block-cyclic L\\U (`lu2d_solve`, no further interchanges; the factors are first
moved to NB x NB blocks when MB != NB), and the residual from the original blocks.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid2D
from linalg_io.comm.redistribute import redistribute
from linalg_io.contract import RunConfig
from linalg_io.errors import InputError
from linalg_io.launch.agree import agreed
from linalg_io.launch.node import node_rank_and_size
from linalg_io.layout.generate import vector_entries
from linalg_io.layout.grid_shapes import square_2d
from linalg_io.layout.layouts import Descriptor, conflux_tiles, parse_scalapack
from linalg_io.layout.redist_plan import RedistPlan
from linalg_io.lu.dropin import DropInLU
from linalg_io.lu.hpl import hpl_flops, hpl_verify_block
from linalg_io.lu.lu2d import LU2DParams
from linalg_io.lu.matrix_source import open_source, require_finite
from linalg_io.lu.run_choice import agreed_choice, probe_record, probe_words
from linalg_io.lu.solve2d import local_blocks_residual, lu2d_solve
from linalg_io.models import conflux as model
from linalg_io.models.costs import RankCosts
from linalg_io.models.lu2d import lu_lower_bound
from linalg_io.models.profile import load_profile

PARTS = ("redistribute_in", "factor", "redistribute_out")


class DropInCase:
    kernel = "lu"
    algo = "conflux"

    def __init__(self, comm: CountedComm, config: RunConfig) -> None:
        options = config.options
        if config.backend != "cpu":
            raise InputError("lu --input-layout runs on the CPU only; use --backend cpu")
        mb, nb = parse_scalapack(options["input_layout"])
        self.comm, self.config = comm, config
        source = open_source(options.get("dist", "random"), options.get("n"), config.seed,
                             options.get("file"))
        self.n = n = source.n
        pr, pc = square_2d(comm.size)
        self.desc = Descriptor(n, n, mb, nb, pr, pc)
        _, ranks_on_node = node_rank_and_size(comm.comm)
        self.choice = agreed_choice(comm, "conflux", n, options,
                                    load_profile(config.profile, config.threads),
                                    ranks_on_node)
        self.network_probe = probe_record(self.choice)
        self.dropin = DropInLU(self.desc, comm, self.choice.shape, relabel=True,
                               mem_fraction=options.get("redist_mem"))
        self.rows, self.cols = self.desc.layout().local_indices(comm.rank)
        self.a_orig = source.local_block(self.rows, self.cols)
        agreed(comm.comm, lambda: require_finite(self.a_orig))
        self.a = np.empty_like(self.a_orig, order="F")
        self.ipiv = None
        self.part_times: list[dict] = []
        px, py, c, v = self.choice.shape
        unrelabelled = RedistPlan(self.desc.layout(comm.size), conflux_tiles(n, v, px, py, c))
        self.params = {
            "n": n, "nb": v, "grid": [px, py, c], "dist": source.kind,
            "matrix": source.describe(), "seed": config.seed, "pivoting": "tournament",
            "input_layout": f"scalapack:{mb}x{nb}", "input_grid": [pr, pc],
            "redist_mem": options.get("redist_mem"),
            "redistribute_in_entries": {"moved": self.dropin.plan_in.moved(),
                                        "without_relabelling": unrelabelled.moved(),
                                        "total": n * n}}

    def setup_rep(self) -> None:
        np.copyto(self.a, self.a_orig)
        self.ipiv = None

    def run(self) -> None:
        _, self.ipiv = self.dropin.factor(self.a)
        self.part_times.append(self.dropin.part_times)

    def flops(self) -> float:
        return hpl_flops(self.n)

    def describe(self) -> str:
        px, py, c = self.params["grid"]
        return (f"N={self.n} input={self.params['input_layout']}@{self.desc.pr}x{self.desc.pc} "
                f"v={self.params['nb']} grid={px}x{py}x{c}{probe_words(self.choice)}")

    # --- record --------------------------------------------------------------------
    def _costs(self) -> tuple[RankCosts, dict]:
        """Exact per-rank counts (process order): the 2.5D LU for this run's pivots, plus
        the redistribution in and out; and the redistribution's bytes per phase."""
        d = self.dropin
        lu = model.conflux_costs(self.n, d.v, d.px, d.py, d.c, d.lu.pivots)
        order = np.argsort(d.process_of)        # process -> its role in the 2.5D grid

        def by_process(values: np.ndarray) -> np.ndarray:
            return np.asarray(values, dtype=float)[order]

        phases = {"redistribute_in": (d.plan_in,), "redistribute_out": d.plans_out}
        moved = {}
        for name, plans in phases.items():
            costs = [plan.costs() for plan in plans]
            moved[name] = tuple(sum(c[key] for c in costs) * scale for key, scale in
                                (("sent", 8.0), ("received", 8.0), ("msgs", 1), ("wire_msgs", 1)))

        def total(values: np.ndarray, index: int) -> np.ndarray:
            return by_process(values) + sum(m[index] for m in moved.values())

        wire_sent, wire_recv, wire_msgs = lu.wire()
        costs = RankCosts(total(lu.bytes_sent, 0), total(lu.bytes_recv, 1),
                          total(lu.msgs_sent, 2), by_process(lu.flops),
                          f"{lu.formula}; plus the redistribution in and out: 8 bytes per "
                          "entry that changes owner, one Alltoallv per move or round",
                          wire_sent=total(wire_sent, 0), wire_recv=total(wire_recv, 1),
                          wire_msgs=total(wire_msgs, 3))
        return costs, moved

    def model(self) -> dict:
        costs, moved = self._costs()
        block = costs.record_block(load_profile(self.config.profile, self.config.threads))
        block["redistribution"] = {
            name: {"bytes_sent": {"max": float(s.max()), "mean": float(s.mean())},
                   "bytes_recv": {"max": float(r.max()), "mean": float(r.mean())},
                   "per_rank_bytes_sent": s.tolist()}
            for name, (s, r, _, _) in moved.items()}
        return block

    def lower_bound(self) -> dict:
        d = self.dropin
        words = model.memory_words(self.n, d.v, d.px, d.py, d.c)
        return lu_lower_bound(self.n, self.comm.size, words, model.MEMORY)

    # --- verification ------------------------------------------------------------------
    def verify(self) -> dict:
        raw = self.comm.comm
        times = np.array([[rep[part] for part in PARTS] for rep in self.part_times])
        slowest = np.empty_like(times)
        raw.Allreduce(times, slowest, op=MPI.MAX)
        self.params["part_times_s"] = {part: slowest[:, i].tolist()
                                       for i, part in enumerate(PARTS)}
        n = self.n
        b = vector_entries(self.config.seed, n, np.arange(n))
        pivots = np.zeros(n, dtype=np.int64)
        pivots[self.rows] = self.ipiv[:len(self.rows)] - 1
        raw.Allreduce(MPI.IN_PLACE, pivots, op=MPI.MAX)
        permuted = b.copy()
        for i, p in enumerate(pivots.tolist()):
            permuted[i], permuted[p] = permuted[p], permuted[i]
        x = self._solve(permuted)
        upper = self.rows[:, None] <= self.cols[None, :]
        u_max = raw.allreduce(float(np.abs(self.a[upper]).max(initial=0.0)), op=MPI.MAX)
        a_max = raw.allreduce(float(np.abs(self.a_orig).max(initial=0.0)), op=MPI.MAX)
        check = local_blocks_residual(self.comm, self.rows, self.cols, self.a_orig, x, b)
        return hpl_verify_block(check.pop("scaled_residual"), **check,
                                growth_factor=u_max / a_max if a_max > 0 else float("inf"))

    def _solve(self, permuted_b: np.ndarray) -> np.ndarray:
        """x with L U x = permuted_b, from the block-cyclic factors (NB x NB blocks)."""
        desc, nb = self.desc, self.desc.nb
        grid = Grid2D.create(self.comm, desc.pr, desc.pc)
        square = Descriptor(desc.m, desc.n, nb, nb, desc.pr, desc.pc)
        factors = self.a
        if desc.mb != nb:
            factors = redistribute(self.comm, RedistPlan(desc.layout(), square.layout()), self.a)
        return lu2d_solve(grid, factors, np.arange(self.n), LU2DParams(self.n, nb), permuted_b)


def make_dropin_case(comm: CountedComm, config: RunConfig) -> DropInCase:
    return DropInCase(comm, config)
