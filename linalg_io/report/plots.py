"""Plots of one kernel's runs, from the flattened records (`load_records`).

Figures are built with the object-oriented API on the Agg canvas (no pyplot, no
display needed); each function returns a `Figure`, or None when the records hold
nothing to draw, so a caller saves what exists. Bytes are in MB (10^6 bytes) per rank
per repetition, and every traffic plot leads with the bytes a rank *received*
(logical, what the lower bound bounds) and the bytes the MPI library moved (wire);
bars of a run whose record lacks a number say "n/a". An axis whose values span more
than a decade is logarithmic, so that small bars stay visible beside large ones.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import blended_transform_factory

from linalg_io.errors import InputError
from linalg_io.report.labels import problem_labels, run_labels
from linalg_io.report.tables import MB, column, oversubscribed
from linalg_io.tools.hockney import fit_alpha_beta

PANELS_PER_FIGURE = 12
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
LINESTYLES = ("-", "--", ":", "-.")


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def figure_png(figure: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (for a notebook's display, or embedding)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def series_style(index: int) -> dict[str, Any]:
    """Colour, marker and line style of the index-th series: 20 distinct colours, then
    the same colours with another line style (no two series of a plot look alike)."""
    return {"color": colormaps["tab20"](index % 20), "marker": MARKERS[index % len(MARKERS)],
            "linestyle": LINESTYLES[(index // 20) % len(LINESTYLES)]}


def _width(runs: int) -> float:
    return min(30.0, max(7.0, 0.6 * runs + 2.5))


def _log_if_wide(axes: Any, values: list[pd.Series]) -> None:
    """A log scale, ticks as plain numbers, when the positive values span more than a
    decade."""
    stacked = pd.concat(values)
    positive = stacked[stacked > 0]
    if len(positive) and positive.max() / positive.min() > 10:
        axes.set_yscale("log")
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axes.yaxis.set_minor_formatter(FuncFormatter(_minor_tick))


def _minor_tick(value: float, _position: int) -> str:
    """A minor tick of a log axis labelled at 2x and 5x a power of ten only."""
    mantissa = round(value / 10 ** math.floor(math.log10(value)), 6) if value > 0 else 0
    return f"{value:g}" if mantissa in (2, 5) else ""


def _label_axis(axes: Any, labels: list[str]) -> None:
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)


def _bars(axes: Any, x: np.ndarray, groups: list[tuple[str, pd.Series, dict]]) -> None:
    """Side-by-side bars, one per group and run; 'n/a' written where a value is missing
    and '0' where it is zero (no bar to see on a log axis)."""
    width = 0.8 / len(groups)
    under = blended_transform_factory(axes.transData, axes.transAxes)
    for number, (label, values, style) in enumerate(groups):
        offset = (number - (len(groups) - 1) / 2) * width
        axes.bar(x + offset, values.fillna(0).to_numpy(), width, label=label, **style)
        for word, where in (("n/a", values.isna()), ("0", values == 0)):
            for position in x[where.to_numpy()]:
                axes.text(position + offset, 0.02, word, transform=under, rotation=90,
                          ha="center", va="bottom", fontsize=7)


def bytes_figure(frame: pd.DataFrame, kernel: str = "") -> Figure | None:
    """Per run, the busiest rank's bytes per repetition, measured beside the model's:
    received (logical, with the lower bound) on top, the wire bytes (sent and received)
    below."""
    recv = column(frame, "traffic.bytes_recv.max") / MB
    model_recv = column(frame, "model.bytes_recv.max") / MB
    wire = {way: column(frame, f"traffic.wire.bytes_{way}.max") / MB for way in ("sent", "recv")}
    model_wire = {way: column(frame, f"model.wire.bytes_{way}.max") / MB
                  for way in ("sent", "recv")}
    if recv.isna().all() and model_recv.isna().all():
        return None
    labels = run_labels(frame)
    x = np.arange(len(labels))
    figure = new_figure(_width(len(labels)), 7.0)
    top, bottom = figure.subplots(2, 1, sharex=True)
    _mark_oversubscribed(top, x, frame)
    _bars(top, x, [("measured", recv, {"color": "tab:blue"}),
                   ("model", model_recv, {"color": "tab:orange"})])
    lower = column(frame, "lower_bound.bytes_per_rank") / MB
    if lower.notna().any():
        top.plot(x, lower, "rv", label="lower bound")
    _log_if_wide(top, [recv, model_recv, lower])
    top.set_ylabel("MB received per rank")
    top.set_title(f"{kernel}: bytes received (logical), busiest rank, per repetition")
    top.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _bars(bottom, x, [("wire sent", wire["sent"], {"color": "tab:green"}),
                      ("model wire sent", model_wire["sent"], {"color": "tab:olive"}),
                      ("wire received", wire["recv"], {"color": "tab:purple"}),
                      ("model wire received", model_wire["recv"], {"color": "tab:pink"})])
    _log_if_wide(bottom, [*wire.values(), *model_wire.values()])
    bottom.set_ylabel("MB on the wire per rank")
    bottom.set_title("bytes the MPI library moved (wire), busiest rank, per repetition")
    bottom.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _label_axis(bottom, labels)
    return figure


def _mark_oversubscribed(axes: Any, x: np.ndarray, frame: pd.DataFrame) -> None:
    """A grey band behind each run whose ranks x threads outnumber the cores, named in
    the legend."""
    flags = (oversubscribed(frame) == "yes").to_numpy()
    for number, position in enumerate(x[flags]):
        axes.axvspan(position - 0.45, position + 0.45, color="0.85", zorder=0,
                     label="oversubscribed (ranks x threads > cores)" if number == 0 else None)


def time_figure(frame: pd.DataFrame, kernel: str = "") -> Figure | None:
    """Per run, the median time (slowest rank) beside the model's prediction, and their
    ratio written above each pair; oversubscribed runs on a grey band."""
    measured = column(frame, "time_s.median")
    model = column(frame, "model.time_s")
    if "kernel" in frame:
        measured = measured.where(frame["kernel"] != "pingpong")
    if measured.isna().all() or model.isna().all():
        return None
    labels = run_labels(frame)
    x = np.arange(len(labels))
    figure = new_figure(_width(len(labels)), 4.5)
    axes = figure.add_subplot()
    _mark_oversubscribed(axes, x, frame)
    _bars(axes, x, [("measured (median, slowest rank)", measured, {"color": "tab:blue"}),
                    ("model", model, {"color": "tab:orange"})])
    under = blended_transform_factory(axes.transData, axes.transAxes)
    for position, ratio in zip(x, (measured / model.where(model > 0)).to_numpy()):
        if not math.isnan(ratio):
            axes.text(position, 1.01, f"x{ratio:.2g}", transform=under, ha="center",
                      va="bottom", fontsize=7)
    _log_if_wide(axes, [measured, model])
    axes.set_ylabel("seconds per repetition")
    axes.set_title(f"{kernel}: measured time vs the model's (x = measured / model)",
                   fontsize=10, pad=14)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _label_axis(axes, labels)
    return figure


def _per_rank(value: Any) -> np.ndarray | None:
    if isinstance(value, (list, tuple, np.ndarray)) and len(value):
        return np.asarray(value, dtype=float)
    return None


def _values(frame: pd.DataFrame, name: str) -> pd.Series:
    return frame[name] if name in frame else pd.Series(None, index=frame.index, dtype=object)


def balance_figures(frame: pd.DataFrame, kernel: str = "") -> list[Figure]:
    """Bytes received by each rank, logical (bars) and on the wire (narrow bars), against
    the model's logical ones (markers), one panel per run of several ranks that records
    them."""
    panels = [(label, _per_rank(m), _per_rank(w), _per_rank(p)) for label, m, w, p in zip(
        run_labels(frame), _values(frame, "traffic.per_rank_bytes_recv"),
        _values(frame, "traffic.wire.per_rank_bytes_recv"),
        _values(frame, "model.per_rank_bytes_recv"))]
    ranks = column(frame, "nranks")
    panels = [panel for panel, p in zip(panels, ranks)   # one rank: nothing to balance
              if p != 1 and any(v is not None for v in panel[1:])]
    figures = []
    for start in range(0, len(panels), PANELS_PER_FIGURE):
        chunk = panels[start:start + PANELS_PER_FIGURE]
        columns = min(3, len(chunk))
        rows = math.ceil(len(chunk) / columns)
        figure = new_figure(4.2 * columns, 3.0 * rows)
        for index, (label, received, wire, predicted) in enumerate(chunk):
            axes = figure.add_subplot(rows, columns, index + 1)
            if received is not None:
                axes.bar(np.arange(len(received)) - 0.15, received / MB, 0.5,
                         color="tab:blue", label="measured")
            if wire is not None:
                axes.bar(np.arange(len(wire)) + 0.25, wire / MB, 0.3, color="tab:purple",
                         label="wire")
            if predicted is not None:
                axes.plot(np.arange(len(predicted)) - 0.15, predicted / MB, "_",
                          color="tab:orange", markersize=16, markeredgewidth=2.5,
                          label="model")
            axes.set_title(label, fontsize=8)
            axes.set_xlabel("rank", fontsize=8)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            axes.set_ylabel("MB received", fontsize=8)
            axes.tick_params(labelsize=7)
            if index == 0:
                axes.legend(fontsize=7)
        figure.suptitle(f"{kernel}: bytes received per rank (balance)")
        figures.append(figure)
    return figures


def gflops_figure(frame: pd.DataFrame, kernel: str = "") -> Figure | None:
    """GFLOP/s against the number of ranks, one line per algorithm and problem (through
    the medians per P; small markers: every run, so configurations of one problem at one
    P stay apart), each line its own colour and marker; where runs differ in threads per
    rank T, against the cores P x T, one line per T (the splits of the same cores stand one
    above the other)."""
    gflops = column(frame, "gflops")
    ranks = column(frame, "nranks")
    if gflops.isna().all():
        return None
    configs = problem_labels(frame)
    threads = column(frame, "threads_per_rank").fillna(1)
    split = bool((threads != 1).any())
    if split:
        configs = [f"{config} T={int(t)}" for config, t in zip(configs, threads)]
    series = pd.DataFrame({"config": configs, "P": (ranks * threads if split else ranks).values,
                           "gflops": gflops.values,
                           "over": (oversubscribed(frame) == "yes").values}).dropna()
    figure = new_figure(9, 4.5)
    axes = figure.add_subplot()
    for index, config in enumerate(dict.fromkeys(series["config"])):   # the table's order
        points = series[series["config"] == config]
        medians = points.groupby("P")["gflops"].median()
        style = series_style(index)
        axes.plot(medians.index, medians.values, label=config, **style)
        axes.scatter(points["P"], points["gflops"], s=9, marker=style["marker"],
                     color=style["color"])   # every run (configurations apart)
        over = points.groupby("P")["over"].any()
        if over.any():
            axes.plot(medians.index[over.to_numpy()], medians.values[over.to_numpy()],
                      linestyle="none", marker=style["marker"], markersize=13,
                      markerfacecolor="none", markeredgecolor="red")
    if series["over"].any():
        axes.plot([], [], linestyle="none", marker="o", markersize=10, markerfacecolor="none",
                  markeredgecolor="red", label="oversubscribed (ranks x threads > cores)")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("cores: ranks P x threads per rank T" if split else "ranks P")
    axes.set_ylabel("GFLOP/s (median time)")
    axes.set_title(f"{kernel}: GFLOP/s vs " + ("P x T" if split else "P"))
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def phase_basis(frame: pd.DataFrame) -> tuple[str, str, str]:
    """(measured prefix, model prefix, word): bytes received by phase where every run
    with phases records them, else bytes sent (records older than received phases)."""
    def having(prefix: str) -> pd.Series:
        names = [c for c in frame.columns if c.startswith(prefix)]
        return frame[names].notna().any(axis=1) if names else pd.Series(False, index=frame.index)

    received, sent = having("traffic.recv_by_phase."), having("traffic.by_phase.")
    if received.any() and (received | ~sent).all():
        return "traffic.recv_by_phase.", "model.recv_by_phase.", "received"
    return "traffic.by_phase.", "model.by_phase.", "sent"


def _phases(frame: pd.DataFrame, prefix: str) -> list[str]:
    return sorted(c.removeprefix(prefix) for c in frame.columns
                  if c.startswith(prefix) and column(frame, c).notna().any())


def phase_figure(frame: pd.DataFrame, kernel: str = "") -> Figure | None:
    """Bytes of the busiest rank by phase, stacked, one bar per run; beside it (hatched)
    the model's, only for the runs whose records give the model's phases."""
    measured_prefix, model_prefix, word = phase_basis(frame)
    measured = _phases(frame, measured_prefix)
    if not measured:
        return None
    modelled = _phases(frame, model_prefix)
    with_model = (frame[[model_prefix + name for name in modelled]].notna().any(axis=1)
                  .to_numpy() if modelled else np.zeros(len(frame), dtype=bool))
    phases = sorted(set(measured) | set(modelled))
    colours = {name: colormaps["tab20"](i % 20) for i, name in enumerate(phases)}
    labels = run_labels(frame)
    x = np.arange(len(labels))
    width = 0.38
    figure = new_figure(_width(len(labels)), 4.5)
    axes = figure.add_subplot()
    measured_x = x - np.where(with_model, width / 2, 0)
    bottom = np.zeros(len(labels))
    for name in measured:
        values = column(frame, measured_prefix + name).fillna(0).to_numpy() / MB
        axes.bar(measured_x, values, width, bottom=bottom, color=colours[name], label=name)
        bottom += values
    bottom = np.zeros(len(labels))
    for name in modelled:
        values = column(frame, model_prefix + name).fillna(0).to_numpy() / MB
        axes.bar(x[with_model] + width / 2, values[with_model], width,
                 bottom=bottom[with_model], color=colours[name], hatch="//", edgecolor="white",
                 label=None if name in measured else name)
        bottom += values
    _label_axis(axes, labels)
    axes.set_ylabel(f"MB {word} per repetition (busiest rank)")
    model_note = (f"hatched: the model's, for the {int(with_model.sum())} of {len(labels)} "
                  "runs whose records give its phases" if with_model.any()
                  else f"the records give no model phases of bytes {word}")
    axes.set_title(f"{kernel}: bytes {word} by phase\n{model_note}", fontsize=10)
    axes.legend(fontsize=8)
    return figure


def pingpong_figure(frame: pd.DataFrame, kernel: str = "pingpong") -> Figure | None:
    """OSU-style, per ping-pong record: one-way latency (us) and bandwidth (MB/s) against
    the message size, log axes, with the Hockney line t(n) = alpha + beta n fitted to the
    record's own points (`linalg_io.tools.hockney`), dashed."""
    runs = [(label, rows) for label, rows in zip(run_labels(frame), _values(frame, "results"))
            if isinstance(rows, list) and rows]
    if not runs:
        return None
    figure = new_figure(12, 4.5)
    latency_axes, bandwidth_axes = figure.subplots(1, 2)
    for index, (label, rows) in enumerate(runs):
        style = series_style(index)
        sizes = np.array([row["bytes"] for row in rows], dtype=float)
        one_way = np.array([row["one_way_s"] for row in rows], dtype=float)
        latency_axes.plot(sizes, one_way * 1e6, label=label, **style)
        bandwidth_axes.plot(sizes, sizes / one_way / MB, label=label, **style)
        try:
            alpha, beta = fit_alpha_beta(rows)
        except InputError:   # sizes too few to fit: the points alone
            continue
        line = np.geomspace(sizes.min(), sizes.max(), 64)
        fitted = alpha + beta * line
        fit_label = (f"fit: alpha {alpha * 1e6:.3g} us, 1/beta {1 / beta / MB:.4g} MB/s"
                     if beta > 0 else f"fit: alpha {alpha * 1e6:.3g} us")
        latency_axes.plot(line, fitted * 1e6, color=style["color"], linestyle="--",
                          label=fit_label)
        bandwidth_axes.plot(line, line / fitted / MB, color=style["color"], linestyle="--")
    for axes, ylabel in ((latency_axes, "one-way latency (us)"),
                         (bandwidth_axes, "bandwidth (MB/s, 10^6 B/s)")):
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("message size (bytes)")
        axes.set_ylabel(ylabel)
        axes.grid(True, which="both", alpha=0.3)
    latency_axes.legend(fontsize=7)
    figure.suptitle(f"{kernel}: ranks 0 and 1, best of the timed rounds per size "
                    "(dashed: the alpha-beta fit)", fontsize=10)
    return figure


def kernel_figures(frame: pd.DataFrame, kernel: str) -> dict[str, Figure]:
    """{file stem: figure} of every plot that one kernel's records can draw (ping-pong:
    its latency and bandwidth against the message size only)."""
    figures: dict[str, Figure] = {}
    if kernel == "pingpong":
        figure = pingpong_figure(frame, kernel)
        return {f"pingpong_{kernel}": figure} if figure is not None else {}
    for stem, build in (("time", time_figure), ("bytes", bytes_figure), ("gflops", gflops_figure),
                        ("phases", phase_figure)):
        figure = build(frame, kernel)
        if figure is not None:
            figures[f"{stem}_{kernel}"] = figure
    balance = balance_figures(frame, kernel)
    for index, figure in enumerate(balance, start=1):
        figures[f"balance_{kernel}" + (f"_{index}" if len(balance) > 1 else "")] = figure
    return figures
