"""Names of runs for tables and plots, from the flattened records.

A run is named by its *resolved* configuration (the grid and block the run chose),
with "(auto)" beside a value the command line left to the program (``--grid auto``,
``--nb auto``, ``--dist auto``: the record's `auto`), so two runs that differ only in
that are told apart by their names instead of by run ids. Names use the parameters that
are options of the kernel's command (and the grid); what a run derives
(``mem_per_rank``, ``nnz``, ``effective_gbps``, ...) stays in the CSV. A problem label
leaves out P, threads and how the family runs (its `configuration` in the registry,
`linalg_io.families`): the runs of one problem share it across P.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import pandas as pd

from linalg_io.commands import command_options
from linalg_io.families import family

LABEL_CHARS = 48


def missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


TWO_D = ("2d", "scalapack", "hpl")


def format_grid(value: Any, algo: Any = None) -> str:
    """[2, 2, 1] -> '2x2x1', and '2x2' for a 2D algorithm (the form its --grid takes);
    missing -> ''."""
    if isinstance(value, (list, tuple)):
        dims = list(value)
        if algo in TWO_D and len(dims) == 3 and dims[2] == 1:
            dims = dims[:2]
        return "x".join(str(v) for v in dims)
    return "" if missing(value) else str(value)


def plain(value: Any) -> str:
    """A parameter as text: whole floats as integers, lists as grids."""
    if isinstance(value, (list, tuple)):
        return format_grid(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.4g}"
    return str(value)


@cache
def option_names(kernel: str) -> tuple[str, ...] | None:
    """The options of `linalg-io KERNEL` (by dest, in the order of its --help) plus
    'grid'; None for a kernel that is no command (every parameter counts then)."""
    options = command_options(kernel)
    if options is None:
        return None
    return tuple(key for key in options if key != "grid") + ("grid",)


def _named(frame: pd.DataFrame, keys: list[str]) -> list[str]:
    """The parameters of `keys` that name a run of this frame's kernel (see above)."""
    kernels = frame["kernel"].dropna().unique() if "kernel" in frame else []
    names = option_names(str(kernels[0])) if len(kernels) == 1 else None
    return [key for key in keys if names is None or key in names]


def auto_options(frame: pd.DataFrame) -> list[frozenset[str]]:
    """Per row, the options the run left to the program (its record's `auto`, flattened
    into `auto.*` columns), e.g. {'grid', 'nb'}."""
    columns = [c for c in frame.columns if c.startswith("auto.")]
    return [frozenset(c.removeprefix("auto.") for c in columns
                      if isinstance(row[c], (list, tuple)) or not missing(row[c]))
            for _, row in frame[columns].iterrows()]


def param_texts(frame: pd.DataFrame) -> pd.DataFrame:
    """One column per `params.*` (name without the prefix), each cell the value as text
    with '(auto)' beside a value the run chose itself; '' where a record lacks it."""
    autos = auto_options(frame)
    algos = frame["algo"] if "algo" in frame else pd.Series(None, index=frame.index)
    texts = pd.DataFrame(index=frame.index)
    for name in (c for c in frame.columns if c.startswith("params.")):
        key = name.removeprefix("params.")
        texts[key] = [("" if not isinstance(v, (list, tuple)) and missing(v) else
                       (format_grid(v, algo) if key == "grid" else plain(v))
                       + ("(auto)" if key in auto else ""))
                      for v, auto, algo in zip(frame[name], autos, algos)]
    return texts


def _derived(values: pd.Series) -> bool:
    """A column of fractional numbers is derived from the run (a rate), not asked for."""
    return values.map(lambda v: isinstance(v, float) and not math.isnan(v)
                      and not v.is_integer()).any()


def varying_params(frame: pd.DataFrame) -> list[str]:
    """The parameters (names without 'params.') with more than one value among the rows
    that have them, derived ones left out, in record order."""
    texts = param_texts(frame)
    return [key for key in _named(frame, list(texts.columns))
            if texts[key][texts[key] != ""].nunique() > 1 and not _derived(frame[f"params.{key}"])]


def common_params(frame: pd.DataFrame) -> str:
    """'n=1024 nb=64(auto) dist=random': the parameters with one value among the rows
    that have them (the caption of a table whose rows show only what varies)."""
    texts = param_texts(frame)
    values = {key: texts[key][texts[key] != ""] for key in _named(frame, list(texts.columns))}
    return " ".join(f"{key}={found.iloc[0]}" for key, found in values.items()
                    if found.nunique() == 1 and not _derived(frame[f"params.{key}"]))


def run_labels(frame: pd.DataFrame, limit: int | None = LABEL_CHARS) -> list[str]:
    """'2d n=1024 grid=2x2(auto) P=4' per row: algorithm, the parameters that differ
    anywhere between the runs of the frame (in record order, cut with '...' past `limit`
    characters unless it is None), P and, where any run had more than one, the threads
    per rank (T); labels that would still be the same (repeated runs) get the start of
    their run_id."""
    algos = (frame["algo"] if "algo" in frame else pd.Series("", index=frame.index)).fillna("")
    varying = varying_params(frame)   # anywhere in the section, so every label shows them
    names_of = {algo: varying for algo in algos.unique()}
    texts = param_texts(frame)
    threads = frame.get("threads_per_rank", pd.Series(1, index=frame.index)).fillna(1)
    show_threads = bool((threads != 1).any())
    labels = []
    for index, row in frame.iterrows():
        algo = "" if missing(row.get("algo")) else str(row.get("algo"))
        ranks = row.get("nranks")
        tail = f"P={int(ranks)}" if isinstance(ranks, (int, float)) and not missing(ranks) else ""
        if show_threads:
            tail += f" T={int(threads[index])}"
        words = [algo] if algo else []
        for name in names_of[algos[index]]:
            text = texts.at[index, name]
            if not text or text in algo:
                continue
            word = f"{name}={text}"
            if limit is not None and len(" ".join(words + [word, tail])) > limit:
                words.append("...")
                break
            words.append(word)
        labels.append(" ".join(words + [tail]).strip())
    counts = pd.Series(labels).value_counts()
    run_ids = frame["run_id"] if "run_id" in frame else pd.Series("", index=frame.index)
    return [f"{label} [{str(run_id)[:6]}]" if counts[label] > 1 and isinstance(run_id, str)
            else label for label, run_id in zip(labels, run_ids)]


def describe_params(frame: pd.DataFrame, with_grid: bool = True) -> pd.Series:
    """One 'n=1024 nb=64 dist=random grid=2x2x1(auto)' string per row: the parameters
    that are options of the row's kernel (all of them for another kernel), grid last."""
    if not len(frame):
        return pd.Series([], dtype=object)
    texts = param_texts(frame)
    kernels = frame["kernel"] if "kernel" in frame else pd.Series(None, index=frame.index)
    algos = frame["algo"] if "algo" in frame else pd.Series(None, index=frame.index)
    described = []
    for (index, row), kernel, algo in zip(texts.iterrows(), kernels, algos):
        names = option_names(str(kernel)) if isinstance(kernel, str) else None
        keys = ([c for c in names if c in texts.columns] if names is not None
                else [c for c in texts.columns if c != "grid"] + ["grid"])
        keys = [key for key in keys if key != "grid" or (with_grid and "grid" in texts)]
        described.append(" ".join(f"{key}={row[key]}" for key in keys   # no false flags
                                  if row.get(key) and row[key] not in (algo, "False")))
    return pd.Series(described, index=frame.index, dtype=object)


def configuration(kernel: str) -> frozenset[str]:
    """The parameters of how a run of `kernel` ran, not which problem (the registry's; the
    grid for a kernel it does not hold)."""
    found = family(kernel)
    return found.report_configuration() if found is not None else frozenset({"grid"})


def problem_labels(frame: pd.DataFrame) -> list[str]:
    """'2d n=1024 dist=random' per row: the algorithm, its size (n, m or matrix) and the
    problem parameters that differ between the rows (resolved values); how it ran (NB,
    grid, objective, ..., P, threads) never, so that one problem has one name whatever
    the configuration and whether a value was left to 'auto'."""
    texts = param_texts(frame)
    kernels = frame["kernel"] if "kernel" in frame else pd.Series(None, index=frame.index)
    algos = frame["algo"].astype(str) if "algo" in frame else pd.Series("", index=frame.index)
    varying = varying_params(frame)
    first = family(str(kernels.iloc[0])) if len(kernels) else None
    sizes = first.sizes if first is not None else ()
    varying = [key for key in sizes if key in texts and key not in varying] + varying
    labels = []
    for index, algo, kernel in zip(frame.index, algos, kernels):
        words = [algo]
        for key in varying:
            text = texts.at[index, key]
            if not text or text == algo or key in configuration(str(kernel)):
                continue
            words.append(f"{key}={text}")
        labels.append(" ".join(words))
    return labels
