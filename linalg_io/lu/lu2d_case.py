"""The runner's case for `lu --algo 2d`: the 2D block-cyclic LU with partial pivoting
(`linalg_io.lu.lu2d`) on the chosen Pr x Pc grid and NB (`linalg_io.lu.choice`), one
factorization per rep, HPL verification, model and lower bound.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid2D
from linalg_io.comm.phase_clock import PhaseClock
from linalg_io.contract import RunConfig
from linalg_io.errors import InputError
from linalg_io.launch.agree import agreed
from linalg_io.launch.node import node_rank_and_size
from linalg_io.layout.blockcyclic import owned_indices
from linalg_io.layout.generate import vector_entries
from linalg_io.layout.words import WORD
from linalg_io.lu.hpl import conditioning, hpl_flops, hpl_verify_block
from linalg_io.lu.lu2d import LU2D_PHASES, LU2DParams, lu2d
from linalg_io.lu.matrix_source import open_source, require_finite
from linalg_io.lu.run_choice import agreed_choice, probe_record, probe_words
from linalg_io.lu.solve2d import hpl_residual, lu2d_solve, upper_stats
from linalg_io.models.costs import traffic_block
from linalg_io.models.lu2d import lu2d_costs, lu2d_plan_counts, lu_lower_bound
from linalg_io.models.phase_time import lu2d_phase_seconds
from linalg_io.models.profile import load_profile
from linalg_io.tools.network_probe import with_links


class LU2DCase:
    kernel = "lu"
    algo = "2d"

    def __init__(self, comm: CountedComm, config: RunConfig) -> None:
        options = config.options
        self.config = config
        if config.backend != "cpu":
            raise InputError(f"lu --algo {self.algo} runs on the CPU only; use --backend cpu")
        source = agreed(comm.comm, lambda: open_source(options.get("dist", "random"),
                                                       options.get("n"), config.seed,
                                                       options.get("file")))
        n = source.n
        self.profile = load_profile(config.profile, config.threads)
        _, self.ranks_on_node = node_rank_and_size(comm.comm)
        self.choice = agreed_choice(comm, self.algo, n, options, self.profile, self.ranks_on_node)
        self.profile = with_links(self.profile, self.choice.link_probe)
        self.network_probe = probe_record(self.choice)
        (pr, pc), nb = self.choice.grid, self.choice.nb
        self.grid = Grid2D.create(comm, pr, pc)
        self.lu_params = LU2DParams(n=n, nb=nb)
        self.params = {"n": n, "nb": nb, "grid": self.choice.record_grid, "dist": source.kind,
                       "matrix": source.describe(), "seed": config.seed}
        rows = owned_indices(n, nb, self.grid.myrow, pr)
        cols = owned_indices(n, nb, self.grid.mycol, pc)
        self.a_orig = source.local_block(rows, cols)
        agreed(comm.comm, lambda: require_finite(self.a_orig))
        self.a = np.empty_like(self.a_orig, order="F")
        self.b = vector_entries(config.seed, n, np.arange(n))
        self.pivots: np.ndarray | None = None
        self.pivot_assumption = "none" if source.kind == "diagdom" else "expected"
        self.phase_clock = PhaseClock(LU2D_PHASES)

    def setup_rep(self) -> None:
        np.copyto(self.a, self.a_orig)
        self.pivots = None

    def run(self) -> None:
        self.pivots = lu2d(self.grid, self.a, self.lu_params, self.phase_clock)

    def verify(self) -> dict:
        x = lu2d_solve(self.grid, self.a, self.pivots, self.lu_params, self.b)
        check = hpl_residual(self.grid, self.a_orig, x, self.b, self.lu_params)
        raw = self.grid.comm.comm
        n, nb = self.lu_params.n, self.lu_params.nb
        min_pivot, u_max = upper_stats(self.a, owned_indices(n, nb, self.grid.myrow, self.grid.pr),
                                       owned_indices(n, nb, self.grid.mycol, self.grid.pc))
        signal = conditioning(raw.allreduce(min_pivot, op=MPI.MIN),
                              raw.allreduce(u_max, op=MPI.MAX),
                              raw.allreduce(float(np.abs(self.a_orig).max(initial=0.0)),
                                            op=MPI.MAX), n)
        return hpl_verify_block(check.pop("scaled_residual"), **check, **signal)

    def flops(self) -> float:
        return hpl_flops(self.lu_params.n)

    def model(self) -> dict:
        n, nb, pr, pc = self.lu_params.n, self.lu_params.nb, self.grid.pr, self.grid.pc
        profile, placement = self.profile, self.choice.placement
        band = {piv: lu2d_costs(n, nb, pr, pc, piv) for piv in ("none", "expected", "worst")}
        block = band[self.pivot_assumption].record_block(profile, placement)
        counts = lu2d_plan_counts(n, nb, pr, pc, self.pivot_assumption)
        block["pivoting"] = self.pivot_assumption
        for key, field in (("sent", "by_phase"), ("recv", "recv_by_phase")):
            busiest = int(np.argmax(sum(counts[key].values()).reshape(-1)))
            block[field] = {phase: float(v.reshape(-1)[busiest])
                            for phase, v in counts[key].items() if v.any()}
        block["bytes_sent_band"] = {piv: float(costs.bytes_sent.max())
                                    for piv, costs in band.items()}
        block["given_pivots"] = traffic_block(lu2d_costs(n, nb, pr, pc, self.pivots))
        block["time_by_phase"] = lu2d_phase_seconds(n, nb, pr, pc, profile, placement,
                                                    self.pivot_assumption)
        return block

    def lower_bound(self) -> dict:
        n, p = self.lu_params.n, self.grid.comm.size
        mem = self.config.options.get("mem")
        if mem:
            return lu_lower_bound(n, p, mem / WORD, "the --mem memory per rank")
        return lu_lower_bound(n, p, n * n / p, "N^2/P, the 2D layout's memory per rank")

    def describe(self) -> str:
        return (f"N={self.lu_params.n} NB={self.lu_params.nb} "
                f"grid={self.grid.pr}x{self.grid.pc}{probe_words(self.choice)}")


def make_lu2d_case(comm: CountedComm, config: RunConfig) -> LU2DCase:
    return LU2DCase(comm, config)
