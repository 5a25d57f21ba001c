"""Tables of runs from the flattened records (`linalg_io.records.load_records`).

Every function takes the DataFrame that `load_records` returns (one row per record,
nested fields joined with dots) and tolerates missing optional fields: a column a
record does not have reads as NaN, a `lower_bound` of null gives NaN ratios.
Bytes are shown in MB (10^6 bytes).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

MB = 1e6

# Column of the per-kernel table -> what it holds (the Markdown and HTML legend).
RUN_COLUMNS = {
    "algo": "algorithm",
    "grid": "process grid (params.grid)",
    "P": "MPI ranks",
    "backend": "cpu or gpu",
    "time_median_s": "median time of the timed repetitions",
    "gflops": "GFLOP/s at the median time",
    "verify_metric": "check that was made",
    "verify_value": "its value",
    "verify_passed": "value under its threshold",
    "sent_max_MB": "measured bytes sent per repetition, busiest rank",
    "sent_mean_MB": "measured bytes sent per repetition, mean over ranks",
    "model_sent_max_MB": "model bytes sent, busiest rank",
    "model_sent_mean_MB": "model bytes sent, mean over ranks",
    "sent_over_model": "measured / model (busiest rank)",
    "balance": "measured max / mean bytes sent (1 = balanced)",
    "model_balance": "model max / mean bytes sent",
    "lower_bound_MB": "lower bound on bytes per rank (its M and formula: the record's "
                      "lower_bound)",
    "sent_over_lower_bound": "measured busiest rank / lower bound; LU: the authors' "
                             "2N^3/(3P sqrt(M)) has no lower-order terms and no credit for "
                             "the data a rank starts with, so small N and the 2D layout's "
                             "M = N^2/P can fall below 1 (compare at scale and the same M)",
    "msgs_max": "measured messages sent, busiest rank",
    "model_msgs_max": "model messages sent, busiest rank",
    "bandwidth_MB_s": "busiest rank's bytes sent / median time (pingpong: the best of its "
                      "message sizes)",
    "model_time_s": "model's predicted time",
    "run_id": "record id",
}


def column(frame: pd.DataFrame, name: str) -> pd.Series:
    """`frame[name]` as floats where possible, NaN where the records lack it."""
    if name not in frame.columns:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[name], errors="coerce").astype(float)


def _text_column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[name].map(lambda v: "" if _missing(v) else str(v)).astype(object)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, float) and math.isnan(value)


def format_grid(value: Any) -> str:
    """[2, 2, 1] -> '2x2x1'; missing -> ''."""
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return "" if _missing(value) else str(value)


def param_columns(frame: pd.DataFrame) -> list[str]:
    """The `params.*` columns with at least one value, grid excluded, in record order."""
    return [c for c in frame.columns
            if c.startswith("params.") and c != "params.grid" and frame[c].notna().any()]


def describe_params(frame: pd.DataFrame, with_grid: bool = True) -> pd.Series:
    """One 'n=1024 nb=64 grid=2x2' string per row."""
    names = param_columns(frame) + (["params.grid"] if with_grid and "params.grid" in frame else [])

    def one(row: pd.Series) -> str:
        parts = []
        for name in names:
            value = row[name]
            if isinstance(value, (list, tuple)) or not _missing(value):
                text = format_grid(value) if name == "params.grid" else _plain(value)
                parts.append(f"{name.removeprefix('params.')}={text}")
        return " ".join(parts)

    return frame.apply(one, axis=1).astype(object) if len(frame) else pd.Series([], dtype=object)


def _plain(value: Any) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.4g}"
    return str(value)


def _param_values(values: pd.Series) -> pd.Series:
    """Integers stay integers (a column with gaps would otherwise turn them into floats)."""
    if pd.api.types.is_float_dtype(values):
        present = values.dropna()
        if (present == present.round()).all():
            return values.astype("Int64")
        return values
    return values.map(lambda v: str(v) if isinstance(v, (list, tuple, dict)) else v)


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    return numerator / denominator.where(denominator > 0)


def run_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run of one kernel: parameters, time, checks, measured vs model traffic."""
    table = pd.DataFrame(index=frame.index)
    table["algo"] = _text_column(frame, "algo")
    for name in param_columns(frame):
        table[name.removeprefix("params.")] = _param_values(frame[name])
    table["grid"] = (frame["params.grid"].map(format_grid) if "params.grid" in frame
                     else "")
    table["P"] = column(frame, "nranks").astype("Int64")
    table["backend"] = _text_column(frame, "backend")
    table["time_median_s"] = column(frame, "time_s.median")
    table["gflops"] = column(frame, "gflops")
    table["verify_metric"] = _text_column(frame, "verify.metric")
    table["verify_value"] = column(frame, "verify.value")
    table["verify_passed"] = (frame["verify.passed"].map(lambda v: None if _missing(v) else bool(v))
                              if "verify.passed" in frame else None)
    sent_max = column(frame, "traffic.bytes_sent.max")
    sent_mean = column(frame, "traffic.bytes_sent.mean")
    model_max = column(frame, "model.bytes_sent.max")
    model_mean = column(frame, "model.bytes_sent.mean")
    lower = column(frame, "lower_bound.bytes_per_rank")
    table["sent_max_MB"] = sent_max / MB
    table["sent_mean_MB"] = sent_mean / MB
    table["model_sent_max_MB"] = model_max / MB
    table["model_sent_mean_MB"] = model_mean / MB
    table["sent_over_model"] = _ratio(sent_max, model_max)
    table["balance"] = _ratio(sent_max, sent_mean)
    table["model_balance"] = _ratio(model_max, model_mean)
    table["lower_bound_MB"] = lower / MB
    table["sent_over_lower_bound"] = _ratio(sent_max, lower)
    table["msgs_max"] = column(frame, "traffic.msgs_sent.max")
    table["model_msgs_max"] = column(frame, "model.msgs_sent.max")
    table["bandwidth_MB_s"] = _ratio(sent_max, column(frame, "time_s.median")) / MB
    if "results" in frame and "kernel" in frame:
        # pingpong: times_s are per message size, so no time or bandwidth of a whole run;
        # its bandwidth is the best of its message sizes
        pingpong = frame["kernel"] == "pingpong"
        table.loc[pingpong, "time_median_s"] = np.nan
        table.loc[pingpong, "bandwidth_MB_s"] = frame.loc[pingpong, "results"].map(
            lambda rows: max(row["bandwidth_Bps"] for row in rows) / MB)
    table["model_time_s"] = column(frame, "model.time_s")
    table["run_id"] = _text_column(frame, "run_id")
    order = ["algo"] + [c for c in table.columns if c not in RUN_COLUMNS] + ["P"]
    try:
        table = table.sort_values(order, kind="stable")
    except TypeError:  # a parameter with values of mixed types: keep the records' order
        pass
    return table.reset_index(drop=True)


def kernel_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{kernel: run_table} for every kernel in the records, kernels in sorted order."""
    if frame.empty or "kernel" not in frame:
        return {}
    tables = {}
    for kernel in sorted(frame["kernel"].dropna().unique()):
        part = frame[frame["kernel"] == kernel].dropna(axis=1, how="all")
        tables[str(kernel)] = run_table(part)
    return tables


def summary_table(frame: pd.DataFrame, params: list[str] | None = None) -> pd.DataFrame:
    """One row per record, all kernels together; `params` (one string per row) replaces
    the records' own parameters (all of them, derived ones included) when given."""
    table = pd.DataFrame(index=frame.index)
    table["kernel"] = _text_column(frame, "kernel")
    table["algo"] = _text_column(frame, "algo")
    table["params"] = describe_params(frame) if params is None else params
    table["P"] = column(frame, "nranks").astype("Int64")
    table["time_s"] = column(frame, "time_s.median")
    table["GFLOP/s"] = column(frame, "gflops")
    table["sent_max_MB"] = column(frame, "traffic.bytes_sent.max") / MB
    table["model_MB"] = column(frame, "model.bytes_sent.max") / MB
    passed = frame["verify.passed"] if "verify.passed" in frame else pd.Series(None, index=frame.index)
    table["verify"] = [_verdict(ok, metric, value) for ok, metric, value in zip(
        passed, _text_column(frame, "verify.metric"), column(frame, "verify.value"))]
    return table.reset_index(drop=True)


def _verdict(passed: Any, metric: str, value: float) -> str:
    """'hpl_residual=0.25 PASSED'; '?' when the record has no verdict."""
    if _missing(passed):
        return "?"
    word = "PASSED" if passed else "FAILED"
    return f"{metric}={value:.3g} {word}" if metric and not math.isnan(value) else word


def format_cell(value: Any) -> str:
    """A cell as text: 4 significant digits for floats, '' for missing values."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return ""
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:.4g}"
    return str(value)


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (no `tabulate` needed)."""
    header = [str(c) for c in table.columns]
    rows = [[format_cell(v).replace("|", "\\|") for v in row]
            for row in table.itertuples(index=False)]
    numeric = [pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c])
               for c in table.columns]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_text(table: pd.DataFrame) -> str:
    """Aligned plain text for the terminal."""
    header = [str(c) for c in table.columns]
    rows = [[format_cell(v) for v in row] for row in table.itertuples(index=False)]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    numeric = [pd.api.types.is_numeric_dtype(table[c]) for c in table.columns]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w)
                         for c, w, n in zip(cells, widths, numeric)).rstrip()

    return "\n".join([line(header)] + [line(r) for r in rows]) + "\n"
