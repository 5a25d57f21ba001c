"""The runner's view of an LU run (`linalg-io lu`): inputs, one factorization per rep,
HPL verification, model and lower bound. `--algo conflux` is delegated to
linalg_io.lu.conflux_case; this module is the 2D block-cyclic LU (lu2d.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid2D
from linalg_io.comm.node import node_rank_and_size
from linalg_io.comm.phase_clock import PhaseClock
from linalg_io.errors import InputError
from linalg_io.layout.blockcyclic import default_nb, owned_indices
from linalg_io.layout.generate import vector_entries
from linalg_io.layout.grid_shapes import parse_grid, square_2d
from linalg_io.lu.hpl import conditioning, hpl_flops, hpl_verify_block
from linalg_io.lu.lu2d import LU2D_PHASES, LU2DParams, lu2d
from linalg_io.lu.matrix_source import check_finite, open_source
from linalg_io.lu.solve2d import hpl_residual, lu2d_solve, upper_stats
from linalg_io.models.costs import traffic_block
from linalg_io.models.lu2d import lu2d_costs, lu2d_plan_counts, lu_lower_bound
from linalg_io.models.phase_time import lu2d_phase_seconds
from linalg_io.models.profile import load_profile


def make_case(comm: CountedComm, config: Any):
    """The case object of `linalg-io lu` (see linalg_io.runner)."""
    check_memory(comm, config)
    options = config.options
    algo = options.get("algo")
    if options.get("scalapack_lib") and algo != "scalapack":
        raise InputError("--scalapack-lib goes with --algo scalapack")
    if options.get("input_layout") and algo != "conflux":
        raise InputError("--input-layout goes with --algo conflux (the drop-in for pdgetrf)")
    if options.get("redist_mem") and not options.get("input_layout"):
        raise InputError("--redist-mem goes with --input-layout")
    if algo == "scalapack":
        from linalg_io.lu.scalapack_case import make_scalapack_case

        return make_scalapack_case(comm, config)
    if algo == "conflux" and options.get("input_layout"):
        from linalg_io.lu.dropin_case import make_dropin_case

        return make_dropin_case(comm, config)
    if algo == "conflux":
        from linalg_io.lu.conflux_case import make_conflux_case

        return make_conflux_case(comm, config)
    return LU2DCase(comm, config)


def check_memory(comm: CountedComm, config: Any) -> None:
    """Collective: refuse at once an N that cannot fit the memory per rank (--mem, else
    this node's memory over its ranks), before any set-up or grid search. With --dist
    file and no --n the order comes from the file, which already holds the matrix."""
    from linalg_io.comm.agree import agreed
    from linalg_io.comm.node import memory_per_rank
    from linalg_io.lu.fits import check_lu_memory

    options = config.options
    if options.get("n") is None:
        return
    if options.get("mem"):   # the same on every rank, so the collective below is on all
        available, source = options["mem"], "--mem"
    else:
        available, source = memory_per_rank(comm.comm)
        source += "; --mem sets it"
    algo = options.get("algo") or "2d"
    if algo == "conflux" and options.get("input_layout"):
        algo = "dropin"
    agreed(comm.comm, lambda: check_lu_memory(int(options["n"]), comm.size, (algo,),
                                              available, source))


def _agree_error(comm: CountedComm, message: str | None) -> None:
    """Raise InputError on every rank if any rank has a message (lowest rank's wins)."""
    messages = comm.comm.allgather(message)
    failed = [(rank, m) for rank, m in enumerate(messages) if m is not None]
    if failed:
        rank, text = failed[0]
        raise InputError(text if len(failed) == comm.size else f"rank {rank}: {text}")


class LU2DCase:
    kernel = "lu"
    algo = "2d"

    def __init__(self, comm: CountedComm, config: Any) -> None:
        options = config.options
        self.config = config
        if config.backend != "cpu":
            raise InputError("lu --algo 2d runs on the CPU only; use --backend cpu")
        source, problem = None, None
        try:
            source = open_source(options.get("dist", "random"), options.get("n"), config.seed,
                                 options.get("file"))
        except InputError as error:
            problem = str(error)
        _agree_error(comm, problem)
        n = source.n
        grid_text = options.get("grid", "auto") or "auto"
        pr, pc = square_2d(comm.size) if grid_text == "auto" else parse_grid(grid_text, comm.size, 2)
        nb = options.get("nb", "auto") or "auto"
        nb = default_nb(n, pr, pc) if nb == "auto" else int(nb)
        if not 1 <= nb <= n:
            raise InputError(f"--nb must lie in 1..N = {n}, got {nb}")
        self.grid = Grid2D.create(comm, pr, pc)
        _, self.ranks_on_node = node_rank_and_size(comm.comm)
        self.lu_params = LU2DParams(n=n, nb=nb)
        self.params = {"n": n, "nb": nb, "grid": [pr, pc, 1], "dist": source.kind,
                       "matrix": source.describe(), "seed": config.seed}
        rows = owned_indices(n, nb, self.grid.myrow, pr)
        cols = owned_indices(n, nb, self.grid.mycol, pc)
        self.a_orig = source.local_block(rows, cols)
        _agree_error(comm, check_finite(self.a_orig))
        self.a = np.empty_like(self.a_orig, order="F")
        self.b = vector_entries(config.seed, n, np.arange(n))
        self.pivots: np.ndarray | None = None
        self.pivoting = "none" if source.kind == "diagdom" else "expected"
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
        profile = load_profile(self.config.profile)
        placement = profile.for_run(self.ranks_on_node).placement(pr * pc)
        band = {piv: lu2d_costs(n, nb, pr, pc, piv) for piv in ("none", "expected", "worst")}
        block = band[self.pivoting].record_block(profile, placement)
        plan = lu2d_plan_counts(n, nb, pr, pc, self.pivoting)
        block["pivoting"] = self.pivoting
        for key, field in (("sent", "by_phase"), ("recv", "recv_by_phase")):
            busiest = int(np.argmax(sum(plan[key].values()).reshape(-1)))
            block[field] = {phase: float(v.reshape(-1)[busiest])
                            for phase, v in plan[key].items() if v.any()}
        block["bytes_sent_band"] = {piv: float(costs.bytes_sent.max())
                                    for piv, costs in band.items()}
        block["given_pivots"] = traffic_block(lu2d_costs(n, nb, pr, pc, self.pivots))
        block["time_by_phase"] = lu2d_phase_seconds(n, nb, pr, pc, profile, placement,
                                                    self.pivoting)
        return block

    def lower_bound(self) -> dict:
        n, p = self.lu_params.n, self.grid.comm.size
        mem = self.config.options.get("mem")
        if mem:
            return lu_lower_bound(n, p, mem / 8, "the --mem memory per rank")
        return lu_lower_bound(n, p, n * n / p, "N^2/P, the 2D layout's memory per rank")

    def describe(self) -> str:
        return (f"N={self.lu_params.n} NB={self.lu_params.nb} "
                f"grid={self.grid.pr}x{self.grid.pc}")
