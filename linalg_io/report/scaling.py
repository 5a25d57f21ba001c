"""Scaling studies in the report: the prediction records of `model ... --scan`.

Predictions (`"prediction": true`, `linalg_io.model_command.predictions`) are kept apart from runs:
per kernel one table, one row per series and P, and figures against P (log axes). A
series is one algorithm (TS-GEMM: variant and distribution) of one scan (its problem,
scan kind, objective and machine). Parallel efficiency of every series against one
baseline (`baseline`: the fastest series at the table's smallest P0, named in the
caption): strong scaling T0 P0 / (T(P) P), weak scaling T0 / T(P).
  LU       bytes per rank (received and wire, max over ranks) with the lower bound
           (dotted, for the memory per rank the scan allowed);
           predicted time; parallel efficiency;
  TS-GEMM  bytes received per rank; predicted time; parallel efficiency;
  SpTRSV   levels on the critical path and levels that carry messages; messages of the
           busiest rank; predicted time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from linalg_io.report.plots import new_figure, series_style
from linalg_io.report.tables import MB, _text_column, column


def is_prediction(frame: pd.DataFrame) -> pd.Series:
    """Which rows of the flattened records are predictions."""
    return _text_column(frame, "prediction") == "True"


def _series_names(frame: pd.DataFrame) -> pd.Series:
    """One label per series (module doc): algorithm, then what tells the scans apart."""
    algo = _text_column(frame, "algo")
    dist = _text_column(frame, "params.dist")
    name = algo.where(dist == "", algo + " " + dist)
    for label, key in (("", "params.scan"), ("N=", "params.n"), ("m=", "params.m"),
                       ("", "params.matrix"), ("matrix/rank=", "params.matrix_bytes_per_rank"),
                       ("", "params.objective"), ("", "machine.name")):
        values = _text_column(frame, key)
        if key in ("params.n", "params.m"):   # weak scaling: they grow along the series
            values = values.where(_text_column(frame, "params.scan") != "weak", "")
        if key == "params.scan" or values[values != ""].nunique() > 1:
            if key == "params.matrix_bytes_per_rank":
                values = column(frame, key).map(lambda v: "" if pd.isna(v) else _gibibytes(v))
            name = name + values.map(lambda v, label=label: f" {label}{v}" if v else "")
    return name


def _gibibytes(value: float) -> str:
    return f"{value / 2**30:.3g}GiB"


def scaling_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per series and P, sorted: configuration, bytes, bound, time, efficiency."""
    table = pd.DataFrame(index=frame.index)
    table["series"] = _series_names(frame)
    table["P"] = column(frame, "nranks").astype("Int64")
    table["grid"] = frame["params.grid"].map(
        lambda g: "x".join(map(str, g)) if isinstance(g, list) else "")
    for name, key in (("N", "params.n"), ("nb", "params.nb"), ("m", "params.m")):
        values = column(frame, key)
        if values.notna().any():
            table[name] = values.astype("Int64")
    table["recv_max_MB"] = column(frame, "model.bytes_recv.max") / MB
    wire = pd.concat([column(frame, "model.wire.bytes_sent.max"),
                      column(frame, "model.wire.bytes_recv.max")], axis=1).max(axis=1)
    table["wire_max_MB"] = wire / MB
    table["lower_bound_MB"] = column(frame, "lower_bound.bytes_per_rank") / MB
    memory = column(frame, "model.memory_bytes")
    if memory.notna().any():
        table["mem_GiB"] = memory / 2**30
        table["fits"] = column(frame, "model.fits").map({1.0: "yes", 0.0: "no"}).fillna("?")
    for name, key in (("levels", "model.critical_path_levels"),
                      ("message_levels", "model.message_levels")):
        values = column(frame, key)
        if values.notna().any():
            table[name] = values.astype("Int64")
    table["msgs_max"] = column(frame, "model.msgs_sent.max")
    table["time_s"] = column(frame, "model.time_s")
    table["efficiency"] = _efficiency(table, _text_column(frame, "params.scan"))
    return table.sort_values(["series", "P"]).reset_index(drop=True)


def baseline(table: pd.DataFrame) -> pd.Series | None:
    """The row every efficiency is against: at the smallest P of the table, the series
    with the least predicted time (None for a table without times)."""
    timed = table[table["time_s"].notna()]
    if not len(timed):
        return None
    smallest = timed[timed["P"] == timed["P"].min()]
    return smallest.loc[smallest["time_s"].idxmin()]


def baseline_text(table: pd.DataFrame) -> str:
    """'efficiency against conflux strong N=4096 at P=4 (0.12 s)' for the caption."""
    base = baseline(table)
    if base is None:
        return ""
    return (f"parallel efficiency against one baseline, {base['series']} at P={base['P']} "
            f"({base['time_s']:.4g} s): strong scaling T0 P0 / (T(P) P), weak T0 / T(P)")


def _efficiency(table: pd.DataFrame, scan: pd.Series) -> pd.Series:
    base = baseline(table)
    if base is None:
        return pd.Series(np.nan, index=table.index)
    ratio = base["time_s"] / table["time_s"]
    weak = scan.reindex(table.index) == "weak"
    return ratio.where(weak, ratio * base["P"] / table["P"].astype(float))


def scaling_figures(table: pd.DataFrame, kernel: str, stem: str) -> dict[str, Figure]:
    """{file stem: figure} of one kernel's scaling table (module doc)."""
    if kernel == "sptrsv":
        panels = [("levels", ("levels on the critical path (solid) and carrying messages "
                   "(dashed)"), "message_levels"),
                  ("msgs_max", "messages of the busiest rank", None),
                  ("time_s", "predicted time (s)", None)]
    else:
        panels = [("recv_max_MB", ("MB received per rank (busiest; dashed: on the wire, "
                   "larger direction)"), "wire_max_MB"),
                  ("time_s", "predicted time (s)", None),
                  ("efficiency", "parallel efficiency", None)]
    figure = new_figure(6.0 * len(panels), 4.8)
    axes = figure.subplots(1, len(panels))
    base = baseline(table)
    for (name, label, dashed), ax in zip(panels, np.atleast_1d(axes)):
        for index, (series, rows) in enumerate(table.groupby("series", sort=True)):
            style = series_style(index)
            ax.plot(rows["P"], rows[name], label=series, **style)
            if dashed:
                ax.plot(rows["P"], rows[dashed], color=style["color"], linestyle="--",
                        marker=style["marker"], markerfacecolor="none")
            if name == "recv_max_MB" and rows["lower_bound_MB"].notna().any():
                ax.plot(rows["P"], rows["lower_bound_MB"], color=style["color"],
                        linestyle=":", label=None if index else "lower bound (dotted)")
        ax.set_xscale("log", base=2)
        if name != "efficiency" and (table[name] > 0).any():
            ax.set_yscale("log")
        ax.set_xlabel("P (ranks)")
        ax.set_ylabel(label if name != "efficiency" or base is None else
                      f"parallel efficiency vs {base['series']} at P={base['P']}", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=7, loc="best")
    figure.suptitle(f"{kernel}: predicted scaling (model --scan)", fontsize=10)
    return {f"scaling_{stem}": figure}
