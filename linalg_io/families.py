"""The kernel families of linalg-io: one entry per command that writes records.

Each `Family` holds everything the rest of the package needs to know about it: its
name (the command and its records' `kernel`), its options, the code that runs it (a
benchmark's case factory, or a tool's own `main`), its `model` command and model table,
what the summary line says one repetition times, and which of its parameters the report
reads as the problem's size and as its configuration. The command line
(`linalg_io.commands`), the runner, the sweep, `linalg_io.run`, the Slurm templates,
the summary line and the report read this registry and nothing else about families.

A family outside the package registers itself from the environment:
``LINALG_IO_FAMILIES="package.module:ATTRIBUTE ..."`` names `Family` objects that
every process of a run (the CLI, its relaunched ranks, a sweep's points) adds on first
use of the registry.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from linalg_io.argtypes import byte_size, seed
from linalg_io.options import (
    EVERY_COMMON,
    LU_RUN,
    MODEL_THREADS,
    PINGPONG_OPTIONS,
    SPTRSV_PROBLEM,
    TSGEMM_PROBLEM,
    Command,
    Option,
    lu_problem,
    model_options,
)

PLUGINS_VARIABLE = "LINALG_IO_FAMILIES"


def load_object(spec: str) -> object:
    """'package.module:name' -> that module's attribute (the module is imported)."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Family:
    """One kernel family (module doc). Its `entry` is a benchmark's case factory
    ``make_case(comm, config)`` (`linalg_io.runner`) or a tool's ``main(args, argv)``."""

    name: str                             # its command and its records' `kernel`
    help: str                             # the command's one line of help
    options: tuple[Option, ...]           # its own options (the common ones: `common`)
    entry: str                            # "module:function" that runs it (below)
    benchmark: bool = True                # False: a tool that times and records by itself
    common: tuple[str, ...] = EVERY_COMMON   # the common options it takes (linalg_io.options)
    timed: str = "the kernel only"        # what one repetition's time covers (summary line)
    sizes: tuple[str, ...] = ()           # report: the parameters that size the problem
    configuration: tuple[str, ...] = ()   # report: parameters of how it ran, not what ran
    model_problem: tuple[Option, ...] | None = None   # `model NAME`'s problem; None: none
    model_extra: tuple[Option, ...] = ()  # `model NAME`'s own options after the common ones
    model_table: str | None = None        # "module:function" printing `model NAME`
    scans: tuple[str, ...] = ()           # `model NAME --scan` choices
    scan_help: str = ""                   # what its scans other than strong keep fixed

    def command(self) -> Command:
        """Its `linalg-io NAME` command."""
        return Command(self.name, self.help, self.options, self.common)

    def model_command(self) -> Command | None:
        """Its `linalg-io model NAME` command, None without a model."""
        if self.model_problem is None:
            return None
        return Command(self.name, f"model of the {self.name} algorithms",
                       self.model_problem + model_options(self.scans, self.scan_help)
                       + self.model_extra)

    def load(self) -> Callable:
        """The function of `entry` (imported now)."""
        return load_object(self.entry)

    def model_table_function(self) -> Callable:
        """The function of `model_table` (imported now): model_table(args) -> text."""
        return load_object(self.model_table)

    def report_configuration(self) -> frozenset[str]:
        """The parameters that say how a run ran (the grid always does)."""
        return frozenset(self.configuration) | {"grid"}


LU = Family(
    "lu", "distributed LU factorization, verified with the HPL scaled residual",
    lu_problem(("2d", "conflux", "scalapack", "hpl")) + LU_RUN, "linalg_io.lu.case:make_case",
    timed="factorization only", sizes=("n",),
    configuration=("nb", "objective", "input_layout", "redist_mem"),
    model_problem=lu_problem(algo_default=None),   # both algorithms unless told
    model_extra=(MODEL_THREADS,
                 Option("all", "list every candidate (default: the best 10 of each "
                        "algorithm, and the one `lu --grid auto` runs)", flag=True),
                 Option("mem-per-rank", "--scan weak: bytes of the matrix per rank (N grows "
                        "as sqrt(P))", byte_size, metavar="BYTES")),
    model_table="linalg_io.model_command.lu_table:model_table", scans=("strong", "weak"),
    scan_help="; weak: --mem-per-rank of the matrix per rank")

TSGEMM = Family(
    "tsgemm", "tall-and-skinny GEMM (TSM2R, TSM2L, A^T B, A B), checked against NumPy",
    TSGEMM_PROBLEM, "linalg_io.tsgemm.case:make_case", timed="the product only",
    sizes=("m", "n", "k"), configuration=("order", "dist"),   # dist: its distribution of A
    model_problem=TSGEMM_PROBLEM, model_extra=(MODEL_THREADS,),
    model_table="linalg_io.model_command.tsgemm_table:model_table",
    scans=("strong", "weak"), scan_help="; weak: --m rows per rank")

SPTRSV = Family(
    "sptrsv", "distributed sparse triangular solve, checked against SciPy",
    SPTRSV_PROBLEM, "linalg_io.sptrsv.case:make_case", timed="the solve only",
    sizes=("matrix",), configuration=("partition",),
    model_problem=SPTRSV_PROBLEM + (
        Option("seed", "seed of a rand: matrix, as `sptrsv --seed` (0)", seed, 0),),
    model_table="linalg_io.model_command.sptrsv_table:model_table", scans=("strong",))

PINGPONG = Family(
    "pingpong", "one-way latency and bandwidth between ranks 0 and 1", PINGPONG_OPTIONS,
    "linalg_io.tools.pingpong:main", benchmark=False,
    common=("np", "reps", "warmup", "out", "threads", "quiet"))

_BUILT_IN = (LU, TSGEMM, SPTRSV, PINGPONG)
_REGISTRY: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add `family` to the registry (replacing one of the same name); returns it."""
    registry()[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove a family from the registry (a test's own, when it is done)."""
    registry().pop(name, None)


def registry() -> dict[str, Family]:
    """Every family by name, in command order: the package's, then those the environment
    names (module doc), loaded on the first call."""
    if not _REGISTRY:
        _REGISTRY.update({family.name: family for family in _BUILT_IN})
        for spec in os.environ.get(PLUGINS_VARIABLE, "").split():
            family = load_object(spec)
            if not isinstance(family, Family):
                raise TypeError(f"{PLUGINS_VARIABLE}: {spec} is not a Family")
            _REGISTRY[family.name] = family
    return _REGISTRY


def family(name: str) -> Family | None:
    """The family called `name`, None for a command or kernel that is none."""
    return registry().get(name)


def benchmarks() -> tuple[str, ...]:
    """The names of the benchmark families (those the runner runs, a sweep sweeps)."""
    return tuple(name for name, one in registry().items() if one.benchmark)
