"""`linalg-io sweep SWEEP.yaml [--resume] [--out F] [--report DIR]`: run a parameter grid.

The sweep file (YAML)::

    out: results/lu.jsonl          # records file (relative to the working directory);
                                   # --out overrides it
    defaults:                      # common options of every run (a run may override)
      np: 4
      reps: 3
      warmup: 1
      timeout: 300                 # seconds per point, then the point is killed
    runs:
      - command: lu                # lu | tsgemm | sptrsv
        np: [4, 8]                 # a list anywhere expands to a cartesian grid
        args: {algo: 2d, n: [1024, 2048], nb: 64, grid: auto, dist: [random, diagdom]}
      - command: sptrsv
        args: {matrix: "lap2d:256", algo: syncfree, upper: true}   # flags take true/false

Top-level keys: ``out``, ``description``, ``defaults``, ``runs``. Keys of ``defaults``
and of a run: ``np``, ``reps``, ``warmup``, ``seed``, ``threads``, ``backend``,
``profile``, ``timeout``; a run also has ``command`` and ``args`` (the command's own
options, named as on its command line without dashes: ``nrhs``, ``min-bytes`` or
``min_bytes``). Names, types and choices are checked against the option table
(`linalg_io.options`) before anything runs.

Each point runs as its own process, ``python -m linalg_io CMD ARGS --np P``, in a
session of its own, so a failing point is reported and the sweep goes on; the sweep
exits 0 when every point passed, else with the worst code of its points (5 stalled: a
rank saw no progress within its deadline, `--stall-timeout` > 3 environment > 2 bad
input > 1 verification failed or killed). A stalled point is such a failure: the
sweep goes on with the next point. A point writes its
record into a file of its own beside OUT; the sweep appends it to OUT (one atomic
write, ``--out`` in its command naming OUT) once the point has ended by itself, or
after a timeout (the progress line says so). ^C or SIGTERM (``timeout``, scancel,
kill) ends the running point and every process it started, ranks included
(`linalg_io.session`), discards what it wrote, prints the summary of what ran and
exits 130 (^C) or 143 (SIGTERM); so does a point that the same signal ended first
(scancel and Slurm's time limit signal every process of a job at once).
``--resume`` skips a point whose options, as the command line parses them, and rank
count are a record's ``options`` and ``nranks`` (order and written-out defaults do not
matter); a record without ``options`` (an older version's) matches a point with its
very command words, ``--out`` aside. A skipped point keeps its record's verdict (a
FAILED record fails the sweep). At the end a summary table of the records this sweep
wrote or skipped on is printed (never an older record of a point that failed now), and
with ``--report`` the report of the whole records file is written.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from linalg_io.commands import build_parser, command_options
from linalg_io.errors import InputError
from linalg_io.families import benchmarks
from linalg_io.options import COMMON, Option
from linalg_io.records import run_options

TOP_KEYS = ("out", "description", "defaults", "runs")
# the keys beside args: the options the option table gives there, and the point's timeout
COMMON_KEYS = tuple(o.key for o in COMMON if o.sweep == "beside") + ("timeout",)
RUN_KEYS = ("command", "args") + COMMON_KEYS
NOT_IN_ARGS = {o.key for o in COMMON if o.sweep != "args"}
EXIT_WORDS = {1: "verification failed", 2: "bad input", 3: "environment", 5: "stalled"}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
POLL_S = 0.1   # how often a running point looks for a stop request


@dataclass(frozen=True)
class SweepPoint:
    """One run of the grid: its command line (without --out) and how to show it."""

    argv: tuple[str, ...]
    label: str
    timeout: float | None
    args: tuple[tuple[str, Any], ...] = ()


@dataclass
class Launched:
    """What a launcher reports about one finished point."""

    returncode: int
    output: str
    timed_out: bool = False
    interrupted: bool = False


Launcher = Callable[[list[str], "float | None"], Launched]


class StopRequest:
    """The first ^C or SIGTERM the sweep received (the handler only notes it: the sweep
    stops its point and itself where it is safe to)."""

    signum: int | None = None

    def note(self, signum: int, frame: Any = None) -> None:
        if self.signum is None:
            self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)


STOP = StopRequest()


def launch_subprocess(command: list[str], timeout: float | None) -> Launched:
    """Run `command` in a session of its own; on timeout or a stop request (`STOP`) end
    that session whole, the processes it started included (`end_session`)."""
    from linalg_io.session import end_session

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            try:
                output, _ = process.communicate(timeout=POLL_S)
                return Launched(process.returncode, output)
            except subprocess.TimeoutExpired:
                pass
            timed_out = deadline is not None and time.monotonic() > deadline
            if timed_out or STOP.signum is not None:
                end_session(process)
                output, _ = process.communicate()
                return Launched(process.returncode, output, timed_out=timed_out,
                                interrupted=not timed_out)
    except BaseException:
        end_session(process)
        raise


# --- reading and checking the sweep file -------------------------------------------------

@cache
def _parser() -> argparse.ArgumentParser:
    """The CLI's parser (built once from the registry): a point's key parses by it."""
    return build_parser()


def _check_value(where: str, name: str, value: Any, option: Option) -> str | None:
    """The command-line text of `value` for `option` (None: a false flag)."""
    if option.flag:
        if not isinstance(value, bool):
            raise InputError(f"{where}: {name} is a flag, give true or false (got {value!r})")
        return "" if value else None
    if isinstance(value, (bool, dict, list)) or value is None:
        raise InputError(f"{where}: {name} must be a single number or string, got {value!r}")
    text = str(value)
    if option.type is not None:
        try:
            option.type(text)
        except (ValueError, TypeError, argparse.ArgumentTypeError) as error:
            raise InputError(f"{where}: {name}={value!r} is not valid: {error}") from None
    if option.choices is not None and text not in option.choices:
        raise InputError(f"{where}: {name}={value!r} is not one of "
                         f"{', '.join(map(str, option.choices))}")
    return text


def _mapping(where: str, value: Any, allowed: tuple[str, ...] | None = None) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a mapping (key: value), got {type(value).__name__}")
    if allowed is not None:
        unknown = [str(k) for k in value if k not in allowed]
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} "
                             f"(known: {', '.join(allowed)})")
    return value


def _cartesian(where: str, items: dict[str, Any]) -> list[dict[str, Any]]:
    """{a: [1, 2], b: 3} -> [{a: 1, b: 3}, {a: 2, b: 3}] (keys keep their order)."""
    keys = list(items)
    choices = [v if isinstance(v, list) else [v] for v in items.values()]
    for key, values in zip(keys, choices):
        if not values:
            raise InputError(f"{where}: {key}: an empty list expands to no runs")
    return [dict(zip(keys, combo)) for combo in itertools.product(*choices)]


def _point(where: str, command: str, options: dict[str, Option],
           common: dict[str, Any], args: dict[str, Any]) -> SweepPoint:
    argv = [command]
    shown = []
    for key, value in args.items():
        dest = str(key).replace("-", "_")
        if dest == "out":
            raise InputError(f"{where}: args.out: the sweep sets --out itself "
                             "(give out: in the sweep file, or --out)")
        if dest in NOT_IN_ARGS:
            raise InputError(f"{where}: args.{key}: give {key} beside args (in the run or "
                             "in defaults), not inside")
        if dest not in options:
            known = sorted(d for d in options if d not in NOT_IN_ARGS)
            raise InputError(f"{where}: args.{key}: {command} has no option --{key} "
                             f"(its options: {', '.join(known)})")
        text = _check_value(where, f"args.{key}", value, options[dest])
        if text is None:
            continue
        argv.append(options[dest].word)
        if text:
            argv.append(text)
        shown.append(f"{key}={value}" if text else str(key))
    given = {str(k).replace("-", "_") for k in args}
    missing = [o.word for d, o in options.items() if o.required and d not in given]
    if missing:
        raise InputError(f"{where}: {command} needs {', '.join(missing)} in args")
    if "np" not in common:
        raise InputError(f"{where}: no np (give np: P in the run or in defaults)")
    for key in COMMON_KEYS:
        if key in common and key not in ("np", "timeout"):
            argv += [options[key].word, _check_value(where, key, common[key], options[key])]
    argv += ["--np", _check_value(where, "np", common["np"], options["np"])]
    timeout = common.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or timeout <= 0):
        raise InputError(f"{where}: timeout must be a positive number of seconds, got {timeout!r}")
    # keys beside args that change what runs, so that two points never share a label
    shown += [f"{key}={common[key]}" for key in ("threads", "backend", "seed", "profile")
              if key in common]
    label = " ".join([command] + shown + [f"P={common['np']}"])
    return SweepPoint(argv=tuple(argv), label=label, timeout=timeout,
                      args=tuple((str(k), v) for k, v in args.items()))


def load_sweep(path: str | os.PathLike) -> tuple[str | None, list[SweepPoint]]:
    """Read and check a sweep file; return its `out` and its points in order."""
    import yaml

    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such sweep file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read: {error}") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)   # YAML's message spans several lines
        raise InputError(f"{path}: not valid YAML: {getattr(error, 'problem', None) or error}"
                         + (f" at line {where.line + 1}, column {where.column + 1}"
                            if where else "")) from None
    document = _mapping(str(path), document, TOP_KEYS)
    out = document.get("out")
    if out is not None and not isinstance(out, str):
        raise InputError(f"{path}: out must be a file name, got {out!r}")
    defaults = _mapping(f"{path}: defaults", document.get("defaults") or {}, COMMON_KEYS)
    runs = document.get("runs")
    if not isinstance(runs, list) or not runs:
        raise InputError(f"{path}: runs must be a non-empty list of runs")
    points = []
    for index, run in enumerate(runs):
        where = f"{path}: runs[{index}]"
        run = _mapping(where, run, RUN_KEYS)
        command = run.get("command")
        if command not in benchmarks():
            raise InputError(f"{where}: command must be one of {', '.join(benchmarks())}, "
                             f"got {command!r}")
        options = command_options(command)
        args = _mapping(f"{where}: args", run.get("args") or {})
        common = {**defaults, **{k: v for k, v in run.items() if k in COMMON_KEYS}}
        for common_point in _cartesian(where, common):
            for args_point in _cartesian(where, args):
                points.append(_point(where, command, options, common_point, args_point))
    return out, points


# --- running ------------------------------------------------------------------------------

def run_key(command: str, nranks: Any, options: dict[str, Any]) -> str:
    """What --resume compares: a run's command, rank count and options (the record's
    `kernel`, `nranks` and `options`, `linalg_io.records.run_options`)."""
    return json.dumps([command, nranks, options], sort_keys=True, default=str)


def words_key(argv: list[str] | tuple[str, ...]) -> str:
    """A command line's words less its --out: how a record without `options` (written by
    an older version) compares."""
    words, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not word.startswith("--out="):
            words.append(word)
    return json.dumps(words)


def point_key(point: SweepPoint, recorded: dict[str, dict] | None = None) -> str:
    """The key of a point: its options as the CLI will parse them (defaults filled in, so
    reordered options or a default written out name the same run); or, where `recorded`
    holds no run of that key but an older record of its very words, that one's key."""
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()):
        parsed = vars(_parser().parse_args(list(point.argv)))
    key = run_key(parsed["command"], parsed["np"], run_options(parsed))
    if recorded is not None and key not in recorded and words_key(point.argv) in recorded:
        return words_key(point.argv)
    return key


def record_key(record: dict) -> str | None:
    """The key of a record: from its `options` (`run_key`), else from its command words."""
    if isinstance(record.get("options"), dict):
        return run_key(record.get("kernel"), record.get("nranks"), record["options"])
    command = record.get("command")
    if isinstance(command, list) and command:
        return words_key(command[1:])
    return None


def records_by_command(out: Path) -> dict[str, dict]:
    """The last record of each run (`record_key`) in the records file."""
    from linalg_io.records import check_records_file, read_records

    if not out.exists():
        return {}
    check_records_file(out)   # before any point runs
    found = {}
    for record in read_records([out]):
        key = record_key(record)
        if key is not None:
            found[key] = record
    return found


def asked_params(point: SweepPoint, record: dict) -> str:
    """The parameters the sweep asked for, 'auto' ones with the record's choice:
    'n=1024 grid=auto(2x2) nb=auto(128)' (algo and variant have their own column)."""
    from linalg_io.report.labels import format_grid

    chosen = record.get("params") or {}
    words = []
    for key, value in point.args:
        if key in ("algo", "variant") or value is False:
            continue
        if value is True:
            words.append(key)
        elif value == "auto" and key in chosen:
            words.append(f"{key}=auto({format_grid(chosen[key], record.get('algo'))})")
        else:
            words.append(f"{key}={value}")
    return " ".join(words)


def _outcome(launched: Launched, seconds: float, timeout: float | None,
             wrote_record: bool) -> tuple[str, int]:
    """The progress word of a finished point and its exit code for the sweep's."""
    if launched.timed_out:
        return f"TIMEOUT after {timeout:g}s" + (" (after writing its record)"
                                                  if wrote_record else ""), 1
    code = launched.returncode
    if code in (0, 1) and not wrote_record:
        return f"ERROR (exit {code}, no record written) {seconds:.1f}s", 1
    if code == 0:
        return f"PASSED {seconds:.1f}s", 0
    if code == 1:
        return f"FAILED {seconds:.1f}s", 1
    if code in EXIT_WORDS:
        return f"ERROR (exit {code}: {EXIT_WORDS[code]}) {seconds:.1f}s", code
    return f"ERROR (exit {code}) {seconds:.1f}s", 1


def _tail(output: str, lines: int = 15) -> str:
    """The last lines of a point's output, without the MPI launcher's rulers."""
    kept = [line for line in output.rstrip().splitlines() if line.strip(" -")][-lines:]
    return "".join(f"    | {line}\n" for line in kept)


def _point_file(out: Path) -> Path:
    """Where a point writes its record, beside OUT (the sweep moves it into OUT)."""
    return out.with_name(f".{out.name}.{os.getpid()}.point")


def _naming_out(record: dict, out: Path) -> dict:
    """The record with `--out OUT` in its command instead of the point's own file."""
    command = list(record.get("command") or [])
    if "--out" in command[:-1]:
        command[command.index("--out") + 1] = str(out)
    return {**record, "command": command}


def _stopped_with(launched: Launched, grace_s: float = 1.0) -> bool:
    """The point ended by a stop signal that reached the sweep too (scancel and Slurm's
    time limit signal every process of the job at once, so the point may end before
    the sweep's handler has run): wait briefly for the sweep's own signal."""
    stop_codes = {-signum for signum in STOP_SIGNALS} | {128 + signum for signum in STOP_SIGNALS}
    if launched.returncode not in stop_codes:
        return False
    deadline = time.monotonic() + grace_s
    while STOP.signum is None and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return STOP.signum is not None


def _run_points(points: list[SweepPoint], out: Path, recorded: dict, done: set,
                launch: Launcher, codes: list[int], counts: dict, this_sweep: dict) -> None:
    """Run (or skip) each point in turn, printing its progress line; a skipped point
    keeps the status of its record (a FAILED one fails the sweep)."""
    from linalg_io.records import append_record, read_records

    total = len(points)
    point_file = _point_file(out)
    for number, point in enumerate(points, start=1):
        if STOP.signum is not None:
            # the signal came between points (or before the first): say so, as for one
            # that cut a point short
            print(f"[{number}/{total}] {point.label} ... interrupted before it started",
                  flush=True)
            return
        key = point_key(point, recorded)
        print(f"[{number}/{total}] {point.label} ... ", end="", flush=True)
        if key in done:
            passed = bool((recorded[key].get("verify") or {}).get("passed"))
            print(f"skipped (recorded in {out}{'' if passed else ', FAILED there'})", flush=True)
            counts["skipped"] += 1
            this_sweep[key] = recorded[key]
            if not passed:
                codes.append(1)
            continue
        command = [sys.executable, "-m", "linalg_io", *point.argv, "--out", str(point_file)]
        start = time.monotonic()
        point_file.unlink(missing_ok=True)
        try:
            launched = launch(command, point.timeout)
        except KeyboardInterrupt:
            STOP.note(signal.SIGINT)
            launched = Launched(-signal.SIGINT, "", interrupted=True)
        seconds = time.monotonic() - start
        written = read_records([point_file]) if point_file.exists() else []
        point_file.unlink(missing_ok=True)
        if launched.interrupted or _stopped_with(launched):
            # whatever it wrote is discarded: no record of a cut run
            print("interrupted" + (" (its record discarded)" if written else ""), flush=True)
            return
        for record in written:
            append_record(out, _naming_out(record, out))
        wrote = bool(written)
        if wrote:
            recorded[key] = this_sweep[key] = _naming_out(written[-1], out)
        status, code = _outcome(launched, seconds, point.timeout, wrote)
        print(status, flush=True)
        if code:
            print(_tail(launched.output), end="", flush=True)
            codes.append(code)
            counts["failed"] += 1
        else:
            counts["passed"] += 1


def run_sweep(args: argparse.Namespace, launch: Launcher = launch_subprocess) -> int:
    """Run the sweep of `args.file`; return the exit code (see the module docstring).

    `launch(command, timeout) -> Launched` starts one point (`command` is the full
    argv, ``python -m linalg_io ...``); tests pass a fake one.
    """
    # ^C or SIGTERM (`timeout`, scancel, kill) is only noted: the running point and all
    # it started end, nothing further starts, the summary is printed (128 + signal)
    STOP.signum = None
    previous = {signum: signal.signal(signum, STOP.note) for signum in STOP_SIGNALS}
    try:
        return _sweep(args, launch)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _sweep(args: argparse.Namespace, launch: Launcher) -> int:
    from linalg_io.report.tables import summary_table, to_text

    yaml_out, points = load_sweep(args.file)
    out_name = args.out or yaml_out
    if not out_name:
        raise InputError(f"{args.file}: no records file: give out: in the sweep or --out")
    out = Path(out_name)
    recorded = records_by_command(out)
    done = set(recorded) if args.resume else set()
    codes = []
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    total = len(points)
    this_sweep = {}   # command key -> the record this sweep wrote or skipped on
    _run_points(points, out, recorded, done, launch, codes, counts, this_sweep)
    shown = {}
    for point in points:
        key = point_key(point, recorded)
        if key in this_sweep and key not in shown:
            shown[key] = (point, this_sweep[key])
    print()
    if shown:
        import pandas as pd

        from linalg_io.records import flatten

        frame = pd.DataFrame([flatten(record) for _, record in shown.values()])
        params = [asked_params(point, record) for point, record in shown.values()]
        print(to_text(summary_table(frame, params)), end="")
    print(f"{total} points: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped; records in {out}", flush=True)
    if STOP.signum is not None:
        return STOP.exit_code
    if args.report:
        from linalg_io.report.build import build_report

        try:
            build_report([out], args.report)
        except InputError as error:
            print(f"linalg-io: error: report: {error}", file=sys.stderr, flush=True)
            codes.append(InputError.exit_code)
    return max(codes, default=0)
