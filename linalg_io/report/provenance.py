"""Where the records come from: the header of the report and of the notebook.

From the flattened records (`linalg_io.records.load`): the commits of the code, the MPI
library, the BLAS, the hosts and their cores, the ranks x threads splits (and how many
runs had more of them than cores), and the machine file each run's model took (its name
and where it came from: a file shipped in `models/`, a path the command gave, or the
shipped default profile). Prediction records name the machine they were predicted for
and whether it is an example (typical published figures, not a measurement).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from linalg_io.report.labels import missing
from linalg_io.report.tables import column, oversubscribed

SHIPPED = ("example_cpu", "example_gpu")


def machine_origin(command: Any) -> str:
    """The machine file a record's command line named (--profile or --machine), and
    where it comes from."""
    words = [str(w) for w in command] if isinstance(command, (list, tuple)) else []
    for index, word in enumerate(words):
        name = None
        if word in ("--profile", "--machine") and index + 1 < len(words):
            name = words[index + 1]
        elif word.startswith(("--profile=", "--machine=")):
            name = word.split("=", 1)[1]
        if name is not None:
            return (f"{name} (shipped models/machine_{name}.json, an example, not measured)"
                    if name in SHIPPED else f"{name} (a file of the user's)")
    return "the shipped default profile (models/default_profile.json)"


def _blas(values: pd.Series) -> str:
    """'openblas 0.3.31, openmp': each distinct library the records loaded, once."""
    found = {f"{lib.get('internal_api', '?')} {lib.get('version') or ''}".strip()
             for value in values if isinstance(value, list)
             for lib in value if isinstance(lib, dict)}
    return ", ".join(sorted(found))


def _distinct(values: pd.Series) -> list[str]:
    return sorted({str(v) for v in values if not missing(v) and str(v)})


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    return frame[name] if name in frame else pd.Series(dtype=object)


def provenance(runs: pd.DataFrame, predictions: pd.DataFrame) -> list[tuple[str, str]]:
    """(field, value) pairs of the header; fields without a value are left out."""
    items: list[tuple[str, str]] = []
    frames = [f for f in (runs, predictions) if len(f)]
    commits = sorted({str(c)[:10] for f in frames for c in _column(f, "git_commit")
                      if not missing(c)})
    items.append(("commits", ", ".join(commits) or "unknown"))
    if len(runs):
        items.append(("MPI", "; ".join(_distinct(_column(runs, "env.mpi_library"))) or "unknown"))
        items.append(("BLAS and OpenMP", _blas(_column(runs, "env.blas")) or "unknown"))
        hosts = sorted({h for value in _column(runs, "hosts") if isinstance(value, list)
                        for h in value})
        items.append(("hosts", ", ".join(hosts) or "unknown"))
        cores = _distinct(_column(runs, "env.cores").map(
            lambda c: "" if missing(c) else str(int(c))))
        items.append(("cores per host", ", ".join(cores) or "unknown (older records)"))
        ranks, threads = column(runs, "nranks"), column(runs, "threads_per_rank").fillna(1)
        splits = sorted({(int(p), int(t)) for p, t in zip(ranks, threads) if not missing(p)})
        over = oversubscribed(runs)
        items.append(("ranks x threads", ", ".join(f"{p} x {t}" for p, t in splits) + (
            f"; {int((over == 'yes').sum())} of {len(runs)} runs oversubscribed (ranks x "
            "threads > cores: their times mean little; marked in the tables and plots)"
            if (over == "yes").any() else "")))
        items.append(("machine file of the models", "; ".join(dict.fromkeys(
            machine_origin(c) for c in _column(runs, "command")))))
    if len(predictions):
        names = []
        for name, example in zip(_column(predictions, "machine.name"),
                                 _column(predictions, "machine.example")):
            names.append(f"{name}" + (" (an EXAMPLE, not measured)" if example is True else ""))
        items.append(("predicted for", "; ".join(dict.fromkeys(names)) or "unknown"))
    return items
