"""`linalg_io.run(...)`: one run of a benchmark from Python, its record as a dict.

The run is the command line's, in a process of its own (``python -m linalg_io CMD ...
--np P``, under the venv's mpiexec for P > 1), so it needs no MPI in the caller and
leaves the caller's BLAS threads alone. Options are named as on the command line without
the dashes (``nb=128``, ``min_bytes="1M"``); ``True`` gives a flag, ``None`` or
``False`` leaves an option out. The record is the one `--out` would append
(docs/records.md#schema); give ``out=`` to append it to a file of yours as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from linalg_io.errors import error_from_code
from linalg_io.families import registry
from linalg_io.records import append_record, read_records


def command_line(command: str, np: int, options: dict[str, Any]) -> list[str]:
    """['lu', '--algo', '2d', ..., '--np', '4']: the words of one run."""
    if command not in registry():
        raise ValueError(f"command must be one of {', '.join(registry())}, got {command!r}")
    words = [command]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is not None and value is not False:
            words += [flag, str(value)]
    return words + ["--np", str(np)]


def run(command: str, np: int = 1, out: str | os.PathLike | None = None,
        **options: Any) -> dict:
    """Run `linalg-io COMMAND --OPTION VALUE ... --np NP` and return its record.

    >>> record = linalg_io.run("lu", algo="2d", n=2048, nb=128, grid="2x2", np=4)
    >>> record["time_s"]["median"], record["model"]["time_s"], record["verify"]["passed"]

    A run whose check fails returns its record (``verify.passed`` false); bad input, a
    missing MPI or GPU raise the `linalg_io.errors` class of the exit code, with the
    command's error line."""
    with tempfile.TemporaryDirectory(prefix="linalg-io-") as scratch:
        path = Path(scratch) / "record.jsonl"
        words = command_line(command, np, {**options, "out": path, "quiet": True})
        done = subprocess.run([sys.executable, "-m", "linalg_io", *words],
                              capture_output=True, text=True, check=False)
        found = read_records([path]) if path.exists() else []
    if not found:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else f"exit code {done.returncode}, no record"
        raise error_from_code(done.returncode or 2, message.removeprefix("linalg-io: error: "))
    record = found[-1]
    if out is not None:
        append_record(out, record)
    return record
