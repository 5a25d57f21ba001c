"""Every option of `linalg-io`, as data: the common options, each kernel family's problem
(which `linalg_io.families` gives its family), the commands that are no family, and
`parser_for`, which builds the argparse parser from commands (`linalg_io.commands` hands
it all of them). The sweep (which options a run takes, their types and choices, which go
beside `args`) reads the same tables.

An `Option` is one option (or positional argument) as argparse takes it, plus what the
sweep needs: `sweep` ("args": in a sweep run's args; "beside": given beside args, in
the run or in defaults; "sweep": the sweep sets it itself).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from linalg_io.argtypes import (
    OneLineParser,
    byte_size,
    int_or_auto,
    nonnegative_int,
    positive_float,
    positive_int,
    rank_counts,
    seconds_or_off,
    seed,
)
from linalg_io.helptext import DESCRIPTION, DefaultsShown
from linalg_io.version import __version__

EPILOG = """examples:
  linalg-io info --np 4
  linalg-io lu --algo 2d --n 2048 --nb 64 --grid 2x2 --np 4 --out results.jsonl
  linalg-io lu --algo conflux --n 4096 --grid auto --nb auto --np 8
  linalg-io tsgemm --variant atb --m 4194304 --n 16 --k 16 --np 2
  linalg-io sptrsv --matrix lap3d:64 --algo syncfree --np 4
  linalg-io model lu --n 8192 --p 16
  linalg-io report results.jsonl --out report/
exit codes: 0 ok, 1 verification failed, 2 bad input, 3 environment (MPI/GPU),
  5 stalled (no progress within --stall-timeout)"""


@dataclass(frozen=True)
class Option:
    """One option: `name` as on the command line without the dashes ("n", "min-bytes"),
    or a positional argument's name."""

    name: str
    help: str | None = None
    type: Callable | None = None
    default: Any = None
    choices: tuple | None = None
    metavar: str | None = None
    flag: bool = False              # store_true
    required: bool = False
    aliases: tuple[str, ...] = ()   # further spellings ("--machine")
    dest: str | None = None         # default: the name with - as _
    positional: bool = False
    nargs: str | None = None
    append: bool = False
    sweep: str = "args"             # "args", "beside" or "sweep" (module doc)

    @property
    def key(self) -> str:
        """The argparse dest: the key of the parsed namespace and of a sweep's args."""
        return self.dest or self.name.replace("-", "_")

    @property
    def word(self) -> str:
        """The option as written on a command line: "--n"."""
        return self.name if self.positional else f"--{self.name}"

    def add_to(self, parser) -> None:
        if self.positional:
            kwargs = {"nargs": self.nargs, "metavar": self.metavar, "help": self.help}
            parser.add_argument(self.name, **{k: v for k, v in kwargs.items() if v is not None})
            return
        kwargs: dict[str, Any] = {"help": self.help}
        if self.flag:
            kwargs["action"] = "store_true"
        elif self.append:
            kwargs.update(action="append", default=list(self.default or []),
                          metavar=self.metavar)
        else:
            kwargs.update(type=self.type, default=self.default, choices=self.choices,
                          metavar=self.metavar)
        if self.required:
            kwargs["required"] = True
        if self.dest:
            kwargs["dest"] = self.dest
        parser.add_argument(self.word, *self.aliases,
                            **{k: v for k, v in kwargs.items() if v is not None})


@dataclass(frozen=True)
class Command:
    """A (sub)command: its help, the common options it takes (by name, in `COMMON`'s
    order), its own options, and its subcommands (`dest`: where argparse puts which)."""

    name: str
    help: str
    options: tuple[Option, ...] = ()
    common: tuple[str, ...] = ()
    subcommands: tuple[Command, ...] = ()
    dest: str | None = None
    metavar: str | None = None
    defaults: dict = field(default_factory=dict)

    def all_options(self) -> tuple[Option, ...]:
        """The common options it takes, then its own, in --help order."""
        return tuple(o for o in COMMON if o.name in self.common) + self.options


# --- the common options of the MPI commands ------------------------------------------------
COMMON = (
    Option("np", "outside MPI: relaunch under the venv's mpiexec with P ranks", positive_int,
           metavar="P", sweep="beside"),
    Option("backend", "local kernels on the CPU (Cython/BLAS) or one GPU per rank (CuPy)",
           choices=("cpu", "gpu"), default="cpu", sweep="beside"),
    Option("reps", "timed repetitions (5)", positive_int, 5, sweep="beside"),
    Option("warmup", "untimed repetitions first (1)", nonnegative_int, 1,
           sweep="beside"),
    Option("seed", "seed of the generated inputs (0)", seed, 0, sweep="beside"),
    Option("out", "append the run's record here", metavar="FILE.jsonl",
           sweep="sweep"),
    Option("threads", "BLAS/OpenMP threads per rank (1)", positive_int, 1,
           sweep="beside"),
    Option("profile", "machine profile for the model's time (default: the shipped one); "
           "--machine is the same option", metavar="MACHINE.json", aliases=("--machine",),
           sweep="beside"),
    Option("quiet", "no summary line or progress", flag=True),
    Option("stall-timeout", "end the run (exit 5, one line) when a rank sees no progress "
           "for this long; default max(60 s, 20 x the model's time per repetition), 300 s "
           "for the set-up; off: never", seconds_or_off, metavar="SECONDS|off",
           sweep="beside"),
)
EVERY_COMMON = tuple(o.name for o in COMMON)


# --- the problems of the three benchmark families (also `model FAMILY`'s) -----------------
def lu_problem(algos: tuple[str, ...] = ("2d", "conflux"), algo_default: str | None = "2d"
               ) -> tuple[Option, ...]:
    return (
        Option("algo", "2d: block-cyclic partial pivoting (ScaLAPACK pdgetrf scheme); "
               "conflux: 2.5D LU with tournament pivoting"
               + ("; scalapack: the site's pdgetrf (ctypes) on 2d's matrix"
                  if "scalapack" in algos else "")
               + ("; hpl: HPL (make hpl) in-process with 2d's N, NB and grid"
                  if "hpl" in algos else ""),
               choices=algos, default=algo_default),
        Option("n", "matrix order" + (" (from the file with --dist file)"
                                      if "scalapack" in algos else ""), positive_int),
        Option("nb", "block (2d) or tile size v (conflux); auto: 2d takes 128 when every rank "
               "holds >= 2048 rows and columns, else 64; conflux: the model's choice",
               int_or_auto, "auto"),
        Option("grid", "PrxPc (2d), PxxPyxC (conflux) or auto (the model's fastest grid; "
               "2d: ties to the squarest Pr <= Pc, scalapack and hpl as 2d)", default="auto"),
        Option("mem", "memory per rank for the model's choice (default: node memory / ranks)",
               byte_size),
        Option("objective", "what conflux's auto grid and tile minimise: the predicted time "
               "(default) or the wire bytes (sent or received) of the busiest rank",
               choices=("time", "volume"), default="time"),
    )


TSGEMM_PROBLEM = (
    Option("variant", "tsm2r: A(m x k) large regular, n small; tsm2l/ab: m huge; atb: C = "
           "A^T B with A m x k, B m x n", choices=("tsm2r", "tsm2l", "atb", "ab"),
           required=True),
    Option("m", "rows of A (the long dimension; atb: rows of A and of B), split over the ranks",
           positive_int, required=True),
    Option("n", "columns of B and of C (small)", positive_int, required=True),
    Option("k", "columns of A: the summed dimension, rows of B (atb: columns of A, rows of C; "
           "the sum runs over m)", positive_int, required=True),
    Option("dtype", "element type of A, B and C (float64)", choices=("float64", "float32"),
           default="float64"),
    Option("order", "memory order of the local A and B", choices=("C", "F"), default="C"),
    Option("dist", "tsm2r: A by rows (Allgather of B) or 2D; auto: the model picks",
           choices=("auto", "1d", "2d"), default="auto"),
)

SPTRSV_PROBLEM = (
    Option("matrix", "lap2d:NX | lap3d:NX | rand:N:DENSITY:DEPTH | path.mtx", required=True),
    Option("algo", "levelset: levels in order, point-to-point messages between them; "
           "syncfree: MPI one-sided puts with flags, each task run when its inputs arrive "
           "(levelset)", choices=("levelset", "syncfree"), default="levelset"),
    Option("upper", "backward substitution with U", flag=True),
    Option("tril", "take the lower (or with --upper, upper) triangle of a .mtx file", flag=True),
    Option("nrhs", "right-hand sides (1)", positive_int, 1),
    Option("partition", "rows in contiguous blocks balanced by nonzeros, or per level",
           choices=("nnz", "level"), default="nnz"),
)

LU_RUN = (
    Option("hpl", "--algo hpl: HPL's library (default: libhpl-linalg-io.so of `make hpl` in "
           "the venv, then through ldconfig)", metavar="PATH"),
    Option("scalapack-lib", "--algo scalapack: the ScaLAPACK library (default: "
           "libscalapack-openmpi/-mpich, then libscalapack, through ldconfig)", metavar="PATH"),
    Option("input-layout", "--algo conflux as a drop-in for pdgetrf: the matrix starts "
           "block-cyclic (MB x NB blocks on the squarest Pr x Pc grid), is redistributed, "
           "factored, and L, U and the pivots come back in it", metavar="scalapack:MBxNB"),
    Option("redist-mem", "with --input-layout: redistribute in rounds whose buffers stay "
           "within FRACTION of a rank's local size (default: one Alltoallv)", positive_float,
           metavar="FRACTION"),
    Option("dist", "random: uniform [-0.5,0.5) as HPL; diagdom: no row swaps; file: --file",
           choices=("random", "diagdom", "file"), default="random"),
    Option("file", ".npy or dense .mtx matrix (with --dist file)"),
)


def model_options(scans: tuple[str, ...], scan_help: str) -> tuple[Option, ...]:
    """The options every `model FAMILY` takes after the family's problem: P, the machine,
    the scan (`scans`, with `scan_help` after strong's meaning) and its records file."""
    return (
        Option("p", "number of ranks; with --scan A:B (A, 2A, 4A, ... <= B) or a list 4,16,64",
               rank_counts, required=True),
        Option("machine", "machine file (nodes, ranks and cores per node, links; schema in the "
               "README) or profile for the times (default: the shipped one, this machine)",
               metavar="MACHINE.json", aliases=("--profile",), dest="profile"),
        Option("scan", "predict each P of --p and write one record per P and algorithm "
               "(--out); strong: the problem fixed" + scan_help, choices=scans),
        Option("out", "with --scan: append the records here", metavar="FILE.jsonl"),
    )

# `model lu` and `model tsgemm` (sptrsv's local solves run one thread per rank)
MODEL_THREADS = Option("threads", "threads per rank: the machine's rates for a rank of T "
                       "threads, its T cores (default: the machine file's threads_per_rank, "
                       "else 1)", positive_int, metavar="T")


PINGPONG_OPTIONS = (
    Option("min-bytes", "smallest message (8); the sizes grow 4x from it: 8, 32, 128 ...",
           byte_size, 8, metavar="SIZE"),
    Option("max-bytes", "largest message, always measured itself (64M)", byte_size,
           64 * 2**20, metavar="SIZE"),
)


SLURM_RENDER = Command("render", "print a ready sbatch script", (
    Option("template", "template name (slurm/NAME.sbatch) or path", positional=True),
    Option("nodes", "#SBATCH --nodes (1)", positive_int, 1),
    Option("ntasks-per-node", "MPI ranks per node (4)", positive_int, 4),
    Option("gpus-per-task", "GPUs per rank (GPU templates: 1)", nonnegative_int, 0),
    Option("cpus-per-task", "cores per rank, also its --threads (1)", positive_int, 1),
    Option("time", "wall-clock limit, minutes or [D-]HH:MM:SS (00:30:00)", default="00:30:00"),
    Option("partition", "#SBATCH --partition (none: the site's default)"),
    Option("account", "#SBATCH --account (none: the site's default)"),
    Option("set", "fill a template placeholder {KEY}", metavar="KEY=VALUE", append=True),
))


# --- the commands that are no kernel family (the families: linalg_io.families) -----------
INFO = Command("info", "MPI library, ranks, hosts, BLAS, CuPy/GPUs, built kernels",
               (Option("json", "print JSON instead of text", flag=True),), ("np", "threads"))
CALIBRATE = Command(
    "calibrate", "measure alpha, beta, gamma and memory bandwidth; write a profile", (
        Option("write", "where to write the machine profile (profile.json)",
               default="profile.json", metavar="PROFILE.json"),
    ), ("np", "reps", "threads", "quiet"))
REPORT = Command("report", "tables, plots and an HTML page from records", (
    Option("results", positional=True, nargs="+", metavar="RESULTS.jsonl"),
    Option("out", "directory for the tables (CSV, Markdown), plots (PNG) and index.html; "
           "created if missing, and files an earlier report wrote there but this one "
           "does not are removed", required=True, metavar="DIR"),
))
SWEEP = Command("sweep", "run a parameter grid from a YAML file", (
    Option("file", positional=True, metavar="SWEEP.yaml"),
    Option("resume", "skip points already recorded", flag=True),
    Option("out", "records file (default: from the YAML)", metavar="FILE.jsonl"),
    Option("report", "write the report here afterwards", metavar="DIR"),
))
SLURM = Command("slurm", "sbatch scripts from the templates in slurm/",
                subcommands=(SLURM_RENDER,), dest="slurm_command")


def _common_parser(names: tuple[str, ...]) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("common options")
    for option in COMMON:
        if option.name in names:
            option.add_to(group)
    return common


def _add(commands, command: Command) -> None:
    parents = [_common_parser(command.common)] if command.common else []
    parser = commands.add_parser(command.name, help=command.help, description=command.help,
                                 parents=parents, formatter_class=DefaultsShown)
    for option in command.options:
        option.add_to(parser)
    if command.defaults:
        parser.set_defaults(**command.defaults)
    if command.subcommands:
        sub = parser.add_subparsers(dest=command.dest, required=True,
                                    **({"metavar": command.metavar} if command.metavar else {}))
        for subcommand in command.subcommands:
            _add(sub, subcommand)


def parser_for(commands: tuple[Command, ...]) -> argparse.ArgumentParser:
    """The argparse parser of `linalg-io` with these commands (`linalg_io.commands`)."""
    parser = OneLineParser(prog="linalg-io", description=DESCRIPTION, epilog=EPILOG,
                           formatter_class=DefaultsShown)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        _add(subparsers, command)
    parser.add_argument("--version", action="version", version=f"linalg-io {__version__}")
    return parser
