"""The runner's case for `lu --algo NAME` where NAME is another library's LU in this
process (an in-process adapter of `linalg_io.lu.external.ADAPTERS`; `--algo hpl`).

The library runs on the ranks of the run, with the N, NB and Pr x Pc grid (row-major)
`--algo 2d` would take (`linalg_io.lu.choice`, the same --grid/--nb rules), on its own
matrix (HPL: HPL_pdmatgen, uniform in [-0.5, 0.5) from HPL's fixed seed; --seed and
--dist do not apply). Each repetition: a fresh matrix (untimed), then the
library's factorization between the runner's wire counter's start and stop, so the
record's `traffic.wire` is one factorization's (with what the library times with it:
HPL's triangular solve for x). The record's `library` block has the library's name,
version and file, what its own timer covers, and its own time and GFLOP/s per
repetition; `time_by_phase` its timers' split; `verify` its own residual check and
verdict.

Traffic: the library sends straight to MPI, so the logical counter sees none
(`logical_unavailable`). No model block: the package has no model of the library's
broadcasts.
"""

from __future__ import annotations

import importlib

import numpy as np

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.phase_clock import OTHER, PhaseClock
from linalg_io.contract import RunConfig
from linalg_io.errors import InputError
from linalg_io.launch.agree import agreed
from linalg_io.launch.node import node_rank_and_size
from linalg_io.layout.words import WORD
from linalg_io.lu.external import ADAPTERS
from linalg_io.lu.hpl import hpl_flops, hpl_verify_block
from linalg_io.lu.run_choice import agreed_choice, probe_record, probe_words
from linalg_io.models.lu2d import lu_lower_bound
from linalg_io.models.profile import load_profile


class ExternalLUCase:
    kernel = "lu"

    def __init__(self, comm: CountedComm, config: RunConfig) -> None:
        options = config.options
        self.algo = options["algo"]
        self.config = config
        if config.backend != "cpu":
            raise InputError(f"lu --algo {self.algo} runs on the CPU only; use --backend cpu")
        if options.get("dist", "random") != "random" or options.get("file"):
            raise InputError(f"lu --algo {self.algo} factors the library's own random matrix: "
                             "--dist random only")
        if options.get("n") is None:
            raise InputError(f"lu --algo {self.algo} needs --n")
        adapter = importlib.import_module(ADAPTERS[self.algo])
        path = options.get(self.algo)
        self.library = agreed(comm.comm, lambda: adapter.open_library(adapter.find(path)))
        from threadpoolctl import threadpool_limits

        threadpool_limits(config.threads)   # the BLAS the library loaded, too
        n = int(options["n"])
        self.logical_unavailable = (f"{self.library.label} sends its messages straight to "
                                    "MPI, past the package's counting communicator")
        _, ranks_on_node = node_rank_and_size(comm.comm)
        self.choice = agreed_choice(comm, self.algo, n, options,
                                    load_profile(config.profile, config.threads), ranks_on_node)
        self.network_probe = probe_record(self.choice)
        (self.pr, self.pc), self.nb, self.n = self.choice.grid, self.choice.nb, n
        self.library_comm = comm.comm.Dup()
        agreed(comm.comm, lambda: self.library.setup(self.library_comm, n, self.nb, self.pr,
                                                     self.pc))
        self.params = {"n": n, "nb": self.nb, "grid": self.choice.record_grid, "dist": "random",
                       "matrix": f"{self.library.label}'s own generator", "seed": None,
                       "library": self.library.label, "library_version": self.library.version,
                       "library_path": self.library.path}
        self.phase_clock = PhaseClock(self.library.phases) if self.library.phases else None
        self.library_times: list[float] = []

    def setup_rep(self) -> None:
        self.library.prepare()

    def run(self) -> None:
        factored = self.library.factor()
        self.library_times.append(factored.library_s)
        if self.phase_clock is not None and factored.phases:
            named = {name: factored.phases.get(name, 0.0) for name in self.phase_clock.phases}
            other = max(0.0, factored.rank_s - sum(named.values()))
            self.phase_clock.runs.append({**named, OTHER: other, "total": factored.rank_s})

    def verify(self) -> dict:
        checked = self.library.check()
        return hpl_verify_block(checked.scaled_residual, library_verdict=checked.verdict,
                                library_threshold=checked.threshold, **checked.details)

    def library_block(self) -> dict:
        """The library's own numbers for the timed repetitions (the last --reps)."""
        times = self.library_times[-self.config.reps:] if self.config.reps else []
        gflops = [hpl_flops(self.n) / t / 1e9 if t > 0 else None for t in times]
        return {"name": self.library.label, "version": self.library.version,
                "path": self.library.path, "blas": getattr(self.library, "blas", None),
                "times": self.library.times, "times_s": times,
                "time_s": float(np.median(times)) if times else None,
                "best_s": float(min(times)) if times else None,
                "gflops_per_rep": gflops,
                "gflops": hpl_flops(self.n) / float(np.median(times)) / 1e9 if times else None}

    def flops(self) -> float:
        return hpl_flops(self.n)

    def model(self) -> None:
        return None

    def lower_bound(self) -> dict:
        p = self.pr * self.pc
        mem = self.config.options.get("mem")
        if mem:
            return lu_lower_bound(self.n, p, mem / WORD, "the --mem memory per rank")
        return lu_lower_bound(self.n, p, self.n * self.n / p, "N^2/P, the 2D layout's memory "
                              "per rank")

    def describe(self) -> str:
        return (f"N={self.n} NB={self.nb} grid={self.pr}x{self.pc} "
                f"lib={self.library.label} {self.library.version}{probe_words(self.choice)}")


def make_external_case(comm: CountedComm, config: RunConfig) -> ExternalLUCase:
    return ExternalLUCase(comm, config)
