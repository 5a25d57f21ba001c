"""Command line of linalg-io: parse (the parser is built from `linalg_io.commands`: the
registry's families and the other commands), then hand the command to the runner (a
benchmark family), the family's own `main` (a tool) or the command's module.

Run under ``mpiexec -n P``/``srun``, or give ``--np P`` outside MPI and the command
relaunches itself under the venv's mpiexec. Exit codes: 0 success, 1 verification
failed, 2 bad input or usage, 3 environment (no MPI, no GPU asked for but absent),
5 stalled (`linalg_io.launch.watchdog`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from linalg_io.commands import build_parser
from linalg_io.errors import InputError, LinalgIOError, kernel_import_problem
from linalg_io.families import family
from linalg_io.options import COMMON
from linalg_io.records import run_options

TOOLS = {"info", "calibrate"}   # MPI commands that are no family and write no record
# the exit status of a process whose reader left, as a shell reports one SIGPIPE ended
BROKEN_PIPE_EXIT = 128 + signal.SIGPIPE


def is_mpi_command(command: str) -> bool:
    """Whether `linalg-io COMMAND` runs under MPI (every family and the tools do)."""
    return command in TOOLS or family(command) is not None


def run_mpi_command(args: argparse.Namespace, argv: list[str]) -> int:
    from linalg_io.contract import RunConfig
    from linalg_io.runner import run_benchmark

    chosen = family(args.command)
    if chosen is not None and chosen.benchmark:
        options = {k: v for k, v in vars(args).items()
                   if k != "command" and k not in {o.key for o in COMMON}}
        config = RunConfig(command=args.command, options=options, argv=["linalg-io"] + argv,
                           reps=args.reps, warmup=args.warmup, seed=args.seed, out=args.out,
                           threads=args.threads, backend=args.backend, quiet=args.quiet,
                           profile=args.profile, resolved=run_options(vars(args)),
                           stall_timeout=args.stall_timeout)
        return run_benchmark(config)
    from mpi4py import MPI

    from linalg_io.launch.agree import agreed
    from linalg_io.threads import hold_pools

    main = (chosen.load() if chosen is not None
            else importlib.import_module(f"linalg_io.tools.{args.command}").main)
    agreed(MPI.COMM_WORLD, lambda: hold_pools(args.threads))
    return main(args, ["linalg-io"] + argv)


def run_local_command(args: argparse.Namespace) -> int:
    if args.command == "model":
        if not args.scan:
            if len(args.p) != 1:
                raise InputError(f"--p {','.join(map(str, args.p))}: one rank count, or --scan")
            args.p = args.p[0]
        from linalg_io.progress import progress

        model_table = family(args.family).model_table_function()
        with progress(f"model {args.family}", not args.scan):   # a scan prints each P
            text = model_table(args)   # a scan has printed its rows as they came
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
        if is_mpi_command(args.command):
            from linalg_io.threads import export_thread_counts

            export_thread_counts(args.threads)   # before NumPy loads a BLAS, whatever the launcher
            from linalg_io.comm.wire import request_monitoring
            from linalg_io.launch.node import prepare_node, refuse_singleton_step
            from linalg_io.launch.relaunch import (
                check_launched_size,
                check_same_command,
                follow_launcher,
                relaunch,
                under_mpi_launcher,
            )

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
                from linalg_io.launch.agree import exit_agreed

                exit_agreed(code)
            return code
        return run_local_command(args)
    except LinalgIOError as error:
        return _fail(args, error, once=getattr(error, "agreed", False))
    except BrokenPipeError:
        # the reader of the output left (`| head`): no message, as a tool killed by
        # SIGPIPE leaves none; stdout pointed at /dev/null so that its flush at exit
        # does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT
    except OSError as error:   # a path the user gave: missing, a file for a directory, ...
        print(f"linalg-io: error: {error}", file=sys.stderr, flush=True)
        return InputError.exit_code
    except ImportError as error:
        problem = kernel_import_problem(error)
        if problem is None:
            _abort_if_mpi(args)
            raise
        return _fail(args, problem, once=True)   # every rank fails the same import
    except Exception:
        _abort_if_mpi(args)
        raise


def _fail(args: argparse.Namespace, error: LinalgIOError, once: bool) -> int:
    """Print the error's one line (on rank 0 only when every rank has the same error) and
    leave with its exit code, every rank together under MPI."""
    if not (once and "mpi4py.MPI" in sys.modules and _world_rank() != 0):
        print(f"linalg-io: error: {error}", file=sys.stderr, flush=True)
    if is_mpi_command(args.command) and "mpi4py.MPI" in sys.modules:
        from linalg_io.launch.agree import exit_agreed

        exit_agreed(error.exit_code)
    return error.exit_code


def _abort_if_mpi(args: argparse.Namespace) -> None:
    """An unexpected error on one rank: end the whole job, not just this rank."""
    if is_mpi_command(args.command) and "mpi4py.MPI" in sys.modules:
        from linalg_io.launch.agree import abort_world

        abort_world()
