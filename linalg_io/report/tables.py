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

from linalg_io.report.labels import describe_params, format_grid, missing, run_labels

MB = 1e6

# The columns a reader compares (the Markdown and HTML tables; the CSV has them first):
# received bytes per rank (logical: what the I/O lower bound bounds) and the bytes the
# MPI library moved (wire), each beside its model, then the bound and the verdict.
LEAD_COLUMNS = {
    "config": "the run: algorithm, the parameters that differ between the runs (resolved; "
              "'(auto)' where the run chose the value itself), P ranks and T threads per rank",
    "library": "whose LU: linalg-io (its commit), or the library and its version",
    "P": "MPI ranks",
    "T": "BLAS/OpenMP threads per rank (read back from the pools)",
    "oversubscribed": "yes where the ranks x threads outnumber the cores of the hosts "
                      "(times then mean little), no, or ? where the record lacks the cores",
    "time_median_s": "median over the timed repetitions of the slowest rank's time (the "
                     "kernel only: LU factorization, the product, the solve)",
    "model_time_s": "the model's predicted time (model.time_formula)",
    "time_over_model": "measured / predicted time",
    "gflops": "GFLOP/s at the median time",
    "recv_MB": "bytes received per repetition (logical: the data the rank must obtain from "
               "others), busiest rank",
    "model_recv_MB": "the model's bytes received, busiest rank",
    "wire_sent_MB": "bytes the MPI library sent (wire: collective internals included), "
                    "busiest rank; n/a where the record has no wire counter (see below)",
    "model_wire_sent_MB": "the model's wire bytes sent, busiest rank",
    "wire_recv_MB": "bytes the MPI library delivered to the rank (wire), busiest rank",
    "model_wire_recv_MB": "the model's wire bytes received, busiest rank",
    "lower_bound_MB": "lower bound on the bytes a rank must receive (its M and formula: the "
                      "record's lower_bound)",
    "recv_over_lower_bound": "received (busiest rank) / lower bound; LU: the authors' "
                             "2N^3/(3P sqrt(M)) has no lower-order terms and no credit for "
                             "the data a rank starts with, so small N and the 2D layout's "
                             "M = N^2/P can fall below 1 (compare at scale and the same M)",
    "verdict": "the check, its value and PASSED/FAILED",
}
# The other columns, in the CSV only.
OTHER_COLUMNS = {
    "algo": "algorithm",
    "grid": "process grid (params.grid)",
    "backend": "cpu or gpu",
    "verify_metric": "check that was made",
    "verify_value": "its value",
    "verify_passed": "value under its threshold",
    "recv_mean_MB": "bytes received per repetition, mean over ranks",
    "model_recv_mean_MB": "the model's bytes received, mean over ranks",
    "recv_over_model": "received / model (busiest rank)",
    "recv_balance": "received max / mean (1 = balanced)",
    "wire_recv_over_model": "wire received / the model's (busiest rank)",
    "wire_note": "where the wire bytes come from, or why the record has none",
    "sent_MB": "bytes sent per repetition (logical: a Bcast counts its payload once), "
               "busiest rank",
    "sent_mean_MB": "bytes sent, mean over ranks",
    "model_sent_MB": "the model's bytes sent, busiest rank",
    "model_sent_mean_MB": "the model's bytes sent, mean over ranks",
    "sent_over_model": "sent / model (busiest rank)",
    "balance": "sent max / mean (1 = balanced)",
    "model_balance": "the model's sent max / mean",
    "msgs_max": "messages sent, busiest rank",
    "model_msgs_max": "the model's messages sent, busiest rank",
    "wire_msgs_max": "messages the MPI library sent, busiest rank",
    "bandwidth_MB_s": "busiest rank's bytes received / median time (pingpong: the best of "
                      "its message sizes)",
    "model_latency_s": "the model's latency term, alpha x messages, of the rank whose "
                       "alpha-beta-gamma sum is the largest (model.time_terms_s)",
    "model_bandwidth_s": "the model's bandwidth term, beta x max(bytes sent, received), of "
                         "that rank",
    "model_compute_s": "the model's compute term, flops / gamma, of that rank",
    "library_time_s": "the library's own time (median; HPL: its timer around HPL_pdgesv, the "
                      "LU with the triangular solve)",
    "library_gflops": "GFLOP/s at the library's own time",
    "cores": "cores of the hosts the run used (env.cores x hosts)",
    "run_id": "record id",
}
RUN_COLUMNS = {**LEAD_COLUMNS, **OTHER_COLUMNS}


def column(frame: pd.DataFrame, name: str) -> pd.Series:
    """`frame[name]` as floats where possible, NaN where the records lack it."""
    if name not in frame.columns:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[name], errors="coerce").astype(float)


def _text_column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[name].map(lambda v: "" if missing(v) else str(v)).astype(object)


def param_columns(frame: pd.DataFrame) -> list[str]:
    """The `params.*` columns with at least one value, grid excluded, in record order."""
    return [c for c in frame.columns
            if c.startswith("params.") and c != "params.grid" and frame[c].notna().any()]


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


def traffic_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Received, wire and sent bytes per rank (MB, busiest rank), each beside its model:
    the headline columns of every table (NaN where a record lacks them: older records
    have no wire block, a record whose wire counter was off has traffic.wire null)."""
    table = pd.DataFrame(index=frame.index)
    table["recv_MB"] = column(frame, "traffic.bytes_recv.max") / MB
    table["model_recv_MB"] = column(frame, "model.bytes_recv.max") / MB
    for way in ("sent", "recv"):
        table[f"wire_{way}_MB"] = column(frame, f"traffic.wire.bytes_{way}.max") / MB
        table[f"model_wire_{way}_MB"] = column(frame, f"model.wire.bytes_{way}.max") / MB
    table["sent_MB"] = column(frame, "traffic.bytes_sent.max") / MB
    return table


def verdicts(frame: pd.DataFrame) -> list[str]:
    """'hpl_residual=0.25 PASSED' per row ('?' without a verdict)."""
    passed = (frame["verify.passed"] if "verify.passed" in frame
              else pd.Series(None, index=frame.index))
    return [_verdict(ok, metric, value) for ok, metric, value in zip(
        passed, _text_column(frame, "verify.metric"), column(frame, "verify.value"))]


def libraries(frame: pd.DataFrame) -> pd.Series:
    """'HPL 2.0 (hpcc-1.5.0)', 'ScaLAPACK libscalapack-openmpi.so.2.2' or 'linalg-io
    054a9f0' per row: whose LU ran, and which version."""
    version = _text_column(frame, "params.library_version")
    scalapack = _text_column(frame, "params.scalapack_lib")
    commit = _text_column(frame, "git_commit")
    return pd.Series([v or (f"ScaLAPACK {s.rsplit('/', 1)[-1]}" if s else
                            f"linalg-io {c[:7]}".strip())
                      for v, s, c in zip(version, scalapack, commit)],
                     index=frame.index, dtype=object)


def wire_notes(frame: pd.DataFrame) -> pd.Series:
    """The wire counter's source, or why the record has no wire bytes."""
    source = _text_column(frame, "traffic.wire.source")
    reason = _text_column(frame, "traffic.wire_unavailable")
    return pd.Series([s or (f"n/a: {r}" if r else "n/a: the record predates wire counts")
                      for s, r in zip(source, reason)], index=frame.index, dtype=object)


def run_table(frame: pd.DataFrame, keep_index: bool = False) -> pd.DataFrame:
    """One row per run of one kernel (the CSV): the LEAD_COLUMNS, then the parameters and
    OTHER_COLUMNS; rows by algorithm, parameters and P (`run_order`), with the frame's
    index where `keep_index`."""
    table = pd.DataFrame(index=frame.index)
    table["algo"] = _text_column(frame, "algo")
    params = []
    for name in param_columns(frame):
        params.append(name.removeprefix("params."))
        table[params[-1]] = _param_values(frame[name])
    table["grid"] = ([format_grid(g, a) for g, a in zip(frame["params.grid"], table["algo"])]
                     if "params.grid" in frame else "")
    table["config"] = run_labels(frame, limit=None)
    table["library"] = libraries(frame)
    table["P"] = column(frame, "nranks").astype("Int64")
    table["T"] = column(frame, "threads_per_rank").astype("Int64")
    table["backend"] = _text_column(frame, "backend")
    table["cores"] = host_cores(frame).astype("Int64")
    table["oversubscribed"] = oversubscribed(frame)
    table["time_median_s"] = column(frame, "time_s.median")
    table["model_time_s"] = column(frame, "model.time_s")
    table["time_over_model"] = _ratio(table["time_median_s"], table["model_time_s"])
    for term in ("latency", "bandwidth", "compute"):
        table[f"model_{term}_s"] = column(frame, f"model.time_terms_s.{term}")
    table["gflops"] = column(frame, "gflops")
    table["library_time_s"] = column(frame, "library.time_s")
    table["library_gflops"] = column(frame, "library.gflops")
    traffic = traffic_columns(frame)
    table[list(traffic.columns)] = traffic
    recv_max = column(frame, "traffic.bytes_recv.max")
    lower = column(frame, "lower_bound.bytes_per_rank")
    table["lower_bound_MB"] = lower / MB
    table["recv_over_lower_bound"] = _ratio(recv_max, lower)
    table["verdict"] = verdicts(frame)
    table["verify_metric"] = _text_column(frame, "verify.metric")
    table["verify_value"] = column(frame, "verify.value")
    table["verify_passed"] = (frame["verify.passed"].map(lambda v: None if missing(v) else bool(v))
                              if "verify.passed" in frame else None)
    table["recv_mean_MB"] = column(frame, "traffic.bytes_recv.mean") / MB
    table["model_recv_mean_MB"] = column(frame, "model.bytes_recv.mean") / MB
    table["recv_over_model"] = _ratio(recv_max, column(frame, "model.bytes_recv.max"))
    table["recv_balance"] = _ratio(recv_max, column(frame, "traffic.bytes_recv.mean"))
    table["wire_recv_over_model"] = _ratio(column(frame, "traffic.wire.bytes_recv.max"),
                                           column(frame, "model.wire.bytes_recv.max"))
    table["wire_note"] = wire_notes(frame)
    sent_max = column(frame, "traffic.bytes_sent.max")
    sent_mean = column(frame, "traffic.bytes_sent.mean")
    model_max = column(frame, "model.bytes_sent.max")
    model_mean = column(frame, "model.bytes_sent.mean")
    table["sent_mean_MB"] = sent_mean / MB
    table["model_sent_MB"] = model_max / MB
    table["model_sent_mean_MB"] = model_mean / MB
    table["sent_over_model"] = _ratio(sent_max, model_max)
    table["balance"] = _ratio(sent_max, sent_mean)
    table["model_balance"] = _ratio(model_max, model_mean)
    table["msgs_max"] = column(frame, "traffic.msgs_sent.max")
    table["model_msgs_max"] = column(frame, "model.msgs_sent.max")
    table["wire_msgs_max"] = column(frame, "traffic.wire.msgs_sent.max")
    table["bandwidth_MB_s"] = _ratio(recv_max, column(frame, "time_s.median")) / MB
    if "results" in frame and "kernel" in frame:
        # pingpong: times_s are per message size, so no time or bandwidth of a whole run;
        # its bandwidth is the best of its message sizes
        pingpong = frame["kernel"] == "pingpong"
        table.loc[pingpong, "time_median_s"] = np.nan
        table.loc[pingpong, "bandwidth_MB_s"] = frame.loc[pingpong, "results"].map(
            lambda rows: max(row["bandwidth_Bps"] for row in rows) / MB)
        table.loc[pingpong, "time_over_model"] = np.nan
    table["run_id"] = _text_column(frame, "run_id")
    table = table.loc[run_order(table, params)]
    rest = ["algo"] + params + [c for c in table.columns
                                if c in OTHER_COLUMNS and c not in ("algo",)]
    table = table[list(LEAD_COLUMNS) + rest]
    return table if keep_index else table.reset_index(drop=True)


def run_order(table: pd.DataFrame, params: list[str]) -> pd.Index:
    """The rows of a run table (its index) by algorithm, parameters, grid, P and T: the
    order of the tables, which the plots take too."""
    try:
        return table.sort_values(["algo"] + params + ["grid", "P", "T"], kind="stable").index
    except TypeError:  # a parameter with values of mixed types: keep the records' order
        return table.index


def host_cores(frame: pd.DataFrame) -> pd.Series:
    """Cores of the hosts a run used: the record's `env.cores` (rank 0's host) times its
    hosts, the hosts taken alike; NaN where the record lacks them."""
    hosts = frame["hosts"].map(lambda h: len(h) if isinstance(h, list) and h else 1) \
        if "hosts" in frame else pd.Series(1, index=frame.index)
    return column(frame, "env.cores") * hosts


def oversubscribed(frame: pd.DataFrame) -> pd.Series:
    """'yes' where ranks x threads outnumber `host_cores`, 'no', '?' without cores."""
    cores = host_cores(frame)
    used = column(frame, "nranks") * column(frame, "threads_per_rank").fillna(1)
    return pd.Series(["?" if math.isnan(c) or math.isnan(u) else ("yes" if u > c else "no")
                      for c, u in zip(cores, used)], index=frame.index, dtype=object)


TERM_COLUMNS = ["config", "time_median_s", "model_time_s", "time_over_model",
                "model_latency_s", "model_bandwidth_s", "model_compute_s"]


def terms_table(table: pd.DataFrame) -> pd.DataFrame:
    """The time beside the model's terms, one row per run of a `run_table` (the page's
    detail table); empty when no record has the terms."""
    if table[TERM_COLUMNS[4:]].isna().all().all():
        return pd.DataFrame()
    return table[TERM_COLUMNS]


def lead_table(table: pd.DataFrame) -> pd.DataFrame:
    """The LEAD_COLUMNS of a `run_table` (the Markdown and HTML tables)."""
    return table[list(LEAD_COLUMNS)]


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
    """One row per record, all kernels together (the report's and the sweep's summary):
    received and wire bytes per rank beside the model's, then sent; `params` (one string
    per row) replaces the records' own parameters when given."""
    table = pd.DataFrame(index=frame.index)
    table["kernel"] = _text_column(frame, "kernel")
    table["algo"] = _text_column(frame, "algo")
    table["params"] = describe_params(frame) if params is None else params
    table["P"] = column(frame, "nranks").astype("Int64")
    table["T"] = column(frame, "threads_per_rank").astype("Int64")
    table["time_s"] = column(frame, "time_s.median")
    table["GFLOP/s"] = column(frame, "gflops")
    traffic = traffic_columns(frame)
    table[list(traffic.columns)] = traffic
    table["verify"] = verdicts(frame)
    return table.reset_index(drop=True)


def _verdict(passed: Any, metric: str, value: float) -> str:
    """'hpl_residual=0.25 PASSED'; '?' when the record has no verdict."""
    if missing(passed):
        return "?"
    word = "PASSED" if passed else "FAILED"
    return f"{metric}={value:.3g} {word}" if metric and not math.isnan(value) else word


def _needs_exponent(value: float) -> bool:
    return value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3)


def format_cell(value: Any, style: tuple[str, int] | None = None) -> str:
    """A cell as text, 'n/a' for missing values; a float in `style` ("e", digits after
    the point of 1.234e-05) or ("f", decimals), by default 4 significant digits."""
    if value is None or value is pd.NA:
        return "n/a"
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "n/a"
        if style is None:
            return f"{value:.3e}" if _needs_exponent(value) else f"{value:.4g}"
        kind, digits = style
        return f"{value:.{digits}{kind}}"
    return str(value)


def column_style(values: pd.Series) -> tuple[str, int] | None:
    """One number format for a column's floats: with an exponent where any needs one
    (>= 1e6 or < 1e-3), else fixed decimals that give its smallest value 4 significant
    digits; None for a column without floats."""
    floats = [abs(float(v)) for v in values
              if isinstance(v, (float, np.floating)) and math.isfinite(v)]
    if not floats:
        return None
    nonzero = [v for v in floats if v != 0]
    if any(_needs_exponent(v) for v in nonzero):
        return ("e", 3)
    smallest = min(nonzero, default=1.0)
    return ("f", max(0, min(6, 3 - math.floor(math.log10(smallest)))))


def formatted_rows(table: pd.DataFrame) -> list[list[str]]:
    """The cells of `table` as text, one number format per column (`column_style`)."""
    styles = [column_style(table[name]) for name in table.columns]
    return [[format_cell(v, style) for v, style in zip(row, styles)]
            for row in table.itertuples(index=False)]


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (no `tabulate` needed)."""
    header = [str(c) for c in table.columns]
    rows = [[cell.replace("|", "\\|") for cell in row] for row in formatted_rows(table)]
    numeric = [pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c])
               for c in table.columns]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_text(table: pd.DataFrame) -> str:
    """Aligned plain text for the terminal."""
    header = [str(c) for c in table.columns]
    rows = formatted_rows(table)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    numeric = [pd.api.types.is_numeric_dtype(table[c]) for c in table.columns]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w)
                         for c, w, n in zip(cells, widths, numeric)).rstrip()

    return "\n".join([line(header)] + [line(r) for r in rows]) + "\n"
