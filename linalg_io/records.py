"""Result records: schema v1 (docs/records.md#schema), appended atomically, loaded into pandas.

A record is one JSON line written with a single ``os.write`` under an exclusive
``flock``, then fsync'd, so concurrent jobs never interleave and an interrupted
job never leaves half a record; a write that fails (a full disk) is cut back to
the file's old size; `load_records` skips a truncated last line.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from linalg_io.errors import InputError

SCHEMA_VERSION = 1


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def utc_timestamp() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def record_header(command: list[str], kernel: str, algo: str, backend: str,
                  dtype: str = "float64", **marks: Any) -> dict:
    """The fields every record begins with (runs, predictions and the tools' records):
    schema, a new run_id, the UTC timestamp, the git commit, the command line, then
    `marks` (a prediction's `"prediction": True`), kernel, algo, backend and dtype."""
    from linalg_io.envinfo import git_commit

    return {"schema": SCHEMA_VERSION, "run_id": new_run_id(), "timestamp": utc_timestamp(),
            "git_commit": git_commit(), "command": command, **marks,
            "kernel": kernel, "algo": algo, "backend": backend, "dtype": dtype}


# parsed options that do not change what runs: where the record goes, how many ranks (the
# record's nranks), whether it prints, and the command itself
NOT_RUN_OPTIONS = ("command", "family", "out", "np", "quiet", "stall_timeout")


def run_options(parsed: dict[str, Any]) -> dict[str, Any]:
    """The record's `options`: every option of a run as its command line was parsed
    (defaults filled in), less those of `NOT_RUN_OPTIONS`."""
    return {key: value for key, value in parsed.items() if key not in NOT_RUN_OPTIONS}


def options_fields(options: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The record's `options` and `auto`: the options left to the program ('auto', given
    or by default), each with the value the run chose (its `params` entry), e.g.
    ``{"grid": [2, 2, 1], "nb": 128}``; so no reader has to parse the command line."""
    return {"options": options,
            "auto": {key: params.get(key) for key, value in options.items() if value == "auto"}}


def _jsonable(value: Any) -> Any:
    """NumPy scalars and arrays into plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def check_records_file(path: str | os.PathLike) -> None:
    """InputError where `path` is an existing, non-empty file whose first line is not a
    record (a text note, a binary file, an input matrix): appending would bury a record
    in it. A missing or empty file is fine."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb") as handle:
        first = handle.readline(1 << 20)
    try:
        record = json.loads(first)
    except ValueError:   # not JSON, or not UTF-8 text
        record = None
    if not (isinstance(record, dict) and "schema" in record):
        raise InputError(f"--out {path}: its first line is not a linalg-io record (another "
                         "kind of file?); give a new file or a records file")


def append_record(path: str | os.PathLike, record: dict) -> None:
    """Append `record` as one whole line to the JSON-lines file `path`. A file whose last
    line was cut short (an interrupted writer of another tool) gets a newline first, so
    that the new record is a line of its own and readers skip only the cut one. A write
    or fsync that fails (a full disk, a quota) truncates the file back to its old size
    before the OSError goes on, so no part of the record stays. A file that is not a
    records file (`check_records_file`) is refused."""
    check_records_file(path)
    line = (json.dumps(record, default=_jsonable, sort_keys=False) + "\n").encode()
    path = Path(path)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(f"short write to {path}: {written} of {len(line)} bytes")
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def read_records(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Every complete record of the files, in order; truncated or foreign lines skipped."""
    return read_records_counted(paths)[0]


def read_records_counted(paths: Iterable[str | os.PathLike]) -> tuple[list[dict], int]:
    """(`read_records`, how many non-blank lines it skipped: a cut last line, a line that
    is not JSON, or JSON that is not a schema-1 record)."""
    records, skipped = [], 0
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            try:
                lines = handle.readlines()
            except UnicodeDecodeError:
                raise InputError(f"{path} is not a JSON-lines records file (not UTF-8 text)") \
                    from None
        for line in lines:
            try:
                record = json.loads(line) if line.endswith("\n") else None
            except json.JSONDecodeError:
                record = None
            if isinstance(record, dict) and record.get("schema") == SCHEMA_VERSION:
                records.append(record)
            elif line.strip():
                skipped += 1
    return records, skipped


def flatten(record: dict) -> dict:
    """One flat row of a record: nested keys joined with dots."""
    row: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            row[prefix] = value

    walk("", record)
    return row


def load_records(paths: Iterable[str | os.PathLike]):
    """A pandas DataFrame, one row per record, nested fields flattened with dots."""
    import pandas as pd

    return pd.DataFrame([flatten(r) for r in read_records(paths)])


def load(paths: str | os.PathLike | Iterable[str | os.PathLike]):
    """The records of one file, a glob pattern ("results/*.jsonl") or several of either,
    as a pandas DataFrame (`load_records`); InputError when nothing matches."""
    import glob

    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files = []
    for item in given:
        matched = sorted(glob.glob(str(item))) if glob.has_magic(str(item)) else [item]
        if not matched or not all(Path(f).is_file() for f in matched):
            raise InputError(f"{item}: no records file")
        files += matched
    return load_records(files)
