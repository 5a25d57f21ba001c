"""Command line of linalg-io: argument parsing only, handed to the runner or a tool.

Run under ``mpiexec -n P``/``srun``, or give ``--np P`` outside MPI and the command
relaunches itself under the venv's mpiexec. Exit codes: 0 success, 1 verification
failed, 2 bad input or usage, 3 environment (no MPI, no GPU asked for but absent).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from linalg_io import helptext
from linalg_io.argtypes import (OneLineParser, byte_size, int_or_auto, nonnegative_int,
                                positive_float, positive_int, rank_counts, seed)
from linalg_io.errors import InputError, LinalgIOError

MPI_COMMANDS = {"info", "lu", "tsgemm", "sptrsv", "pingpong", "calibrate"}
BENCHMARK_COMMANDS = {"lu", "tsgemm", "sptrsv"}

EPILOG = """examples:
  linalg-io info --np 4
  linalg-io lu --algo 2d --n 2048 --nb 64 --grid 2x2 --np 4 --out results.jsonl
  linalg-io lu --algo conflux --n 4096 --grid auto --nb auto --np 8
  linalg-io tsgemm --variant atb --m 4194304 --n 16 --k 16 --np 2
  linalg-io sptrsv --matrix lap3d:64 --algo syncfree --np 4
  linalg-io model lu --n 8192 --p 16
  linalg-io report results.jsonl --out report/
exit codes: 0 ok, 1 verification failed, 2 bad input, 3 environment (MPI/GPU)"""


COMMON_OPTIONS = {
    "np": {"type": positive_int, "metavar": "P",
           "help": "outside MPI: relaunch under the venv's mpiexec with P ranks"},
    "backend": {"choices": ("cpu", "gpu"), "default": "cpu",
                "help": "local kernels on the CPU (Cython/BLAS) or one GPU per rank (CuPy)"},
    "reps": {"type": positive_int, "default": 5, "help": "timed repetitions (5)"},
    "warmup": {"type": nonnegative_int, "default": 1, "help": "untimed repetitions first (1)"},
    "seed": {"type": seed, "default": 0, "help": "seed of the generated inputs (0)"},
    "out": {"metavar": "FILE.jsonl", "help": "append the run's record here"},
    "threads": {"type": positive_int, "default": 1, "help": "BLAS/OpenMP threads per rank (1)"},
    "profile": {"metavar": "MACHINE.json",
                "help": "machine profile for the model's time (default: the shipped one); "
                        "--machine is the same option"},
    "quiet": {"action": "store_true", "help": "no summary line or progress"},
}


ALIASES = {"profile": ("--machine",)}


def common_options(names=tuple(COMMON_OPTIONS)) -> argparse.ArgumentParser:
    """The options of SPEC section 2 that a command uses (a tool takes only its own)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("common options")
    for name in names:
        group.add_argument(f"--{name}", *ALIASES.get(name, ()), **COMMON_OPTIONS[name])
    return common


def add_lu_problem(parser: argparse.ArgumentParser, algos=("2d", "conflux")) -> None:
    parser.add_argument("--algo", choices=algos, default="2d",
                        help="2d: block-cyclic partial pivoting (ScaLAPACK pdgetrf scheme); "
                             "conflux: 2.5D LU with tournament pivoting"
                             + ("; scalapack: the site's pdgetrf (ctypes) on 2d's matrix"
                                if "scalapack" in algos else ""))
    parser.add_argument("--n", type=positive_int,
                        help="matrix order" + (" (from the file with --dist file)"
                                               if "scalapack" in algos else ""))
    parser.add_argument("--nb", type=int_or_auto, default="auto",
                        help="block (2d) or tile size v (conflux); auto: 2d takes 128 when "
                             "every rank holds >= 2048 rows and columns, else 64; conflux: "
                             "the model's choice")
    parser.add_argument("--grid", default="auto",
                        help="PrxPc (2d), PxxPyxC (conflux) or auto (2d: the squarest Pr <= Pc; "
                             "conflux: the model's choice)")
    parser.add_argument("--mem", type=byte_size,
                        help="memory per rank for the model's choice (default: node memory / ranks)")
    parser.add_argument("--objective", choices=("time", "volume"), default="time",
                        help="what conflux's auto grid and tile minimise: the predicted time "
                             "(default) or the wire bytes (sent or received) of the busiest rank")


def add_tsgemm_problem(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variant", choices=("tsm2r", "tsm2l", "atb", "ab"), required=True,
                        help="tsm2r: A(m x k) large regular, n small; tsm2l/ab: m huge; "
                             "atb: C = A^T B with A m x k, B m x n")
    parser.add_argument("--m", type=positive_int, required=True,
                        help="rows of A (the long dimension; atb: rows of A and of B), "
                             "split over the ranks")
    parser.add_argument("--n", type=positive_int, required=True,
                        help="columns of B and of C (small)")
    parser.add_argument("--k", type=positive_int, required=True,
                        help="columns of A: the summed dimension, rows of B (atb: columns "
                             "of A, rows of C; the sum runs over m)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="element type of A, B and C (float64)")
    parser.add_argument("--order", choices=("C", "F"), default="C",
                        help="memory order of the local A and B")
    parser.add_argument("--dist", choices=("auto", "1d", "2d"), default="auto",
                        help="tsm2r: A by rows (Allgather of B) or 2D; auto: the model picks")


def add_sptrsv_problem(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matrix", required=True,
                        help="lap2d:NX | lap3d:NX | rand:N:DENSITY:DEPTH | path.mtx")
    parser.add_argument("--algo", choices=("levelset", "syncfree"), default="levelset",
                        help="levelset: levels in order, point-to-point messages "
                             "between them; syncfree: MPI one-sided puts with flags, each "
                             "task run when its inputs arrive (levelset)")
    parser.add_argument("--upper", action="store_true", help="backward substitution with U")
    parser.add_argument("--tril", action="store_true",
                        help="take the lower (or with --upper, upper) triangle of a .mtx file")
    parser.add_argument("--nrhs", type=positive_int, default=1, help="right-hand sides (1)")
    parser.add_argument("--partition", choices=("nnz", "level"), default="nnz",
                        help="rows in contiguous blocks balanced by nonzeros, or per level")


SCANS = {"lu": ("strong", "weak"), "tsgemm": ("strong", "weak"), "sptrsv": ("strong",)}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="linalg-io", description=__doc__.splitlines()[0], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = common_options()

    def command(name: str, help_text: str, parents=(common,)) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help_text, description=help_text,
                                   parents=list(parents))

    info = command("info", "MPI library, ranks, hosts, BLAS, CuPy/GPUs, built kernels",
                   parents=(common_options(("np", "threads")),))
    info.add_argument("--json", action="store_true", help="print JSON instead of text")

    lu = command("lu", "distributed LU factorization, verified with the HPL scaled residual")
    add_lu_problem(lu, ("2d", "conflux", "scalapack"))
    lu.add_argument("--scalapack-lib", metavar="PATH",
                    help="--algo scalapack: the ScaLAPACK library (default: "
                         "libscalapack-openmpi/-mpich, then libscalapack, through ldconfig)")
    lu.add_argument("--input-layout", metavar="scalapack:MBxNB",
                    help="--algo conflux as a drop-in for pdgetrf: the matrix starts "
                         "block-cyclic (MB x NB blocks on the squarest Pr x Pc grid), is "
                         "redistributed, factored, and L, U and the pivots come back in it")
    lu.add_argument("--redist-mem", type=positive_float, metavar="FRACTION",
                    help="with --input-layout: redistribute in rounds whose buffers stay "
                         "within FRACTION of a rank's local size (default: one Alltoallv)")
    lu.add_argument("--dist", choices=("random", "diagdom", "file"), default="random",
                    help="random: uniform [-0.5,0.5) as HPL; diagdom: no row swaps; file: --file")
    lu.add_argument("--file", help=".npy or dense .mtx matrix (with --dist file)")

    tsgemm = command("tsgemm", "tall-and-skinny GEMM (TSM2R, TSM2L, A^T B, A B), checked against NumPy")
    add_tsgemm_problem(tsgemm)

    sptrsv = command("sptrsv", "distributed sparse triangular solve, checked against SciPy")
    add_sptrsv_problem(sptrsv)

    pingpong = command("pingpong", "one-way latency and bandwidth between ranks 0 and 1",
                       parents=(common_options(("np", "reps", "warmup", "out", "threads",
                                                "quiet")),))
    pingpong.add_argument("--min-bytes", type=byte_size, default=8, metavar="SIZE",
                          help="smallest message (8); the sizes grow 4x from it: 8, 32, 128 ...")
    pingpong.add_argument("--max-bytes", type=byte_size, default=64 * 2**20, metavar="SIZE",
                          help="largest message, always measured itself (64M)")

    calibrate = command("calibrate", "measure alpha, beta, gamma and memory bandwidth; write a profile",
                        parents=(common_options(("np", "reps", "threads", "quiet")),))
    calibrate.add_argument("--write", metavar="PROFILE.json", default="profile.json",
                           help="where to write the machine profile (profile.json)")

    model = commands.add_parser("model", help="predicted words, messages and time per rank (no MPI)",
                                description="predicted words, messages and time per rank (no MPI)")
    families = model.add_subparsers(dest="family", required=True, metavar="FAMILY")
    for family, add_problem in (("lu", add_lu_problem), ("tsgemm", add_tsgemm_problem),
                                ("sptrsv", add_sptrsv_problem)):
        sub = families.add_parser(family, help=f"model of the {family} algorithms")
        add_problem(sub)
        if family == "lu":   # the model shows both algorithms unless told one
            sub.set_defaults(algo=None)
        if family == "sptrsv":
            sub.add_argument("--seed", type=seed, default=0,
                             help="seed of a rand: matrix, as `sptrsv --seed` (0)")
        sub.add_argument("--p", type=rank_counts, required=True,
                         help="number of ranks; with --scan A:B (A, 2A, 4A, ... <= B) or a "
                              "list 4,16,64")
        sub.add_argument("--machine", "--profile", dest="profile", metavar="MACHINE.json",
                         help="machine file (nodes, ranks and cores per node, links; schema in "
                              "the README) or profile for the times (default: the shipped "
                              "one, this machine)")
        sub.add_argument("--scan", choices=SCANS[family],
                         help="predict each P of --p and write one record per P and "
                              "algorithm (--out); strong: the problem fixed"
                              + {"lu": "; weak: --mem-per-rank of the matrix per rank",
                                 "tsgemm": "; weak: --m rows per rank"}.get(family, ""))
        sub.add_argument("--out", metavar="FILE.jsonl", help="with --scan: append the records here")
        if family == "lu":
            sub.add_argument("--all", action="store_true",
                             help="list every candidate (default: the best 10 of each "
                                  "algorithm, and the one `lu --grid auto` runs)")
            sub.add_argument("--mem-per-rank", type=byte_size, metavar="BYTES",
                             help="--scan weak: bytes of the matrix per rank (N grows as "
                                  "sqrt(P))")

    report = commands.add_parser("report", help="tables, plots and an HTML page from records")
    report.add_argument("results", nargs="+", metavar="RESULTS.jsonl")
    report.add_argument("--out", required=True, metavar="DIR",
                        help="directory for the tables (CSV, Markdown), plots (PNG) and "
                             "index.html; created if missing, and files an earlier report "
                             "wrote there but this one does not are removed")

    sweep = commands.add_parser("sweep", help="run a parameter grid from a YAML file")
    sweep.add_argument("file", metavar="SWEEP.yaml")
    sweep.add_argument("--resume", action="store_true", help="skip points already recorded")
    sweep.add_argument("--out", metavar="FILE.jsonl", help="records file (default: from the YAML)")
    sweep.add_argument("--report", metavar="DIR", help="write the report here afterwards")

    slurm = commands.add_parser("slurm", help="sbatch scripts from the templates in slurm/")
    slurm_commands = slurm.add_subparsers(dest="slurm_command", required=True)
    render = slurm_commands.add_parser("render", help="print a ready sbatch script")
    render.add_argument("template", help="template name (slurm/NAME.sbatch) or path")
    render.add_argument("--nodes", type=positive_int, default=1, help="#SBATCH --nodes (1)")
    render.add_argument("--ntasks-per-node", type=positive_int, default=4,
                        help="MPI ranks per node (4)")
    render.add_argument("--gpus-per-task", type=nonnegative_int, default=0,
                        help="GPUs per rank (GPU templates: 1)")
    render.add_argument("--cpus-per-task", type=positive_int, default=1,
                        help="cores per rank, also its --threads (1)")
    render.add_argument("--time", default="00:30:00",
                        help="wall-clock limit, minutes or [D-]HH:MM:SS (00:30:00)")
    render.add_argument("--partition", help="#SBATCH --partition (none: the site's default)")
    render.add_argument("--account", help="#SBATCH --account (none: the site's default)")
    render.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="fill a template placeholder {KEY}")
    return helptext.finish(parser)


def run_mpi_command(args: argparse.Namespace, argv: list[str]) -> int:
    from linalg_io.runner import RunConfig, run_benchmark

    if args.command in BENCHMARK_COMMANDS:
        options = {k: v for k, v in vars(args).items()
                   if k not in {"command", "np", "backend", "reps", "warmup", "seed", "out",
                                "threads", "quiet", "profile"}}
        config = RunConfig(command=args.command, options=options, argv=["linalg-io"] + argv,
                           reps=args.reps, warmup=args.warmup, seed=args.seed, out=args.out,
                           threads=args.threads, backend=args.backend, quiet=args.quiet,
                           profile=args.profile)
        return run_benchmark(config)
    from mpi4py import MPI

    from linalg_io.comm.agree import agreed
    from linalg_io.threads import hold_pools

    module = importlib.import_module(f"linalg_io.tools.{args.command}")
    agreed(MPI.COMM_WORLD, lambda: hold_pools(args.threads))
    return module.main(args, ["linalg-io"] + argv)


def run_local_command(args: argparse.Namespace) -> int:
    if args.command == "model":
        if not args.scan:
            if len(args.p) != 1:
                raise InputError(f"--p {','.join(map(str, args.p))}: one rank count, or --scan")
            args.p = args.p[0]
        from linalg_io.progress import progress

        module = importlib.import_module(f"linalg_io.{args.family}.model_table")
        with progress(f"model {args.family}", not args.scan):   # a scan prints each P
            text = module.model_table(args)   # a scan has printed its rows as they came
        if text:
            print(text)
        return 0
    if args.command == "report":
        from linalg_io.report.build import build_report

        build_report(args.results, args.out)
        return 0
    if args.command == "sweep":
        from linalg_io.sweep import run_sweep

        return run_sweep(args)
    from linalg_io.slurm import render_template

    print(render_template(args))
    return 0


def _world_rank() -> int:
    """This process's rank in COMM_WORLD (0 without MPI)."""
    from mpi4py import MPI

    return MPI.COMM_WORLD.Get_rank() if MPI.Is_initialized() else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        if args.command in MPI_COMMANDS:
            from linalg_io.threads import export_thread_counts

            export_thread_counts(args.threads)   # before NumPy loads a BLAS, whatever the launcher
            from linalg_io.comm.launch import (
                check_launched_size,
                check_same_command,
                follow_launcher,
                relaunch,
                under_mpi_launcher,
            )
            from linalg_io.comm.node import prepare_node, refuse_singleton_step
            from linalg_io.comm.wire import request_monitoring

            request_monitoring()   # before MPI_Init: Open MPI counts the wire traffic
            prepare_node()   # before MPI_Init: waiting ranks yield on a crowded node

            if args.np and not under_mpi_launcher():
                return relaunch(args.np, args.threads, argv)
            follow_launcher()   # a rank of --np's job: ends with it
            refuse_singleton_step()   # srun without PMIx: N singletons, one line
            check_same_command(argv)   # ranks given different commands would deadlock
            if args.np:
                check_launched_size(args.np)
            code = run_mpi_command(args, argv)
            if code != 0:
                from linalg_io.comm.agree import exit_agreed

                exit_agreed(code)
            return code
        return run_local_command(args)
    except LinalgIOError as error:
        if not getattr(error, "agreed", False) or _world_rank() == 0:   # an agreed error once
            print(f"linalg-io: error: {error}", file=sys.stderr, flush=True)
        if args.command in MPI_COMMANDS and "mpi4py.MPI" in sys.modules:
            from linalg_io.comm.agree import exit_agreed

            exit_agreed(error.exit_code)
        return error.exit_code
    except OSError as error:   # a path the user gave: missing, a file for a directory, ...
        print(f"linalg-io: error: {error}", file=sys.stderr, flush=True)
        return InputError.exit_code
    except Exception:
        if args.command in MPI_COMMANDS and "mpi4py.MPI" in sys.modules:
            from linalg_io.comm.agree import abort_world

            abort_world()
        raise
