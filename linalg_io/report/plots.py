"""Plots of one kernel's runs, from the flattened records (`load_records`).

Figures are built with the object-oriented API on the Agg canvas (no pyplot, no
display needed); each function returns a `Figure`, or None when the records hold
nothing to draw, so a caller saves what exists. Bytes are in MB (10^6 bytes).
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from linalg_io.report.tables import MB, column, describe_params, format_grid

PANELS_PER_FIGURE = 12
LABEL_CHARS = 48


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def figure_png(figure: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (for a notebook's display, or embedding)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def label_params(frame: pd.DataFrame) -> list[str]:
    """The params.* columns worth a label: they differ between rows and hold no
    fractional numbers (those are derived, e.g. a measured rate)."""
    def fractional(value: Any) -> bool:
        return isinstance(value, float) and not math.isnan(value) and not value.is_integer()

    return [c for c in frame.columns if c.startswith("params.")
            and frame[c].map(repr).nunique() > 1 and not frame[c].map(fractional).any()]


def run_labels(frame: pd.DataFrame, limit: int = LABEL_CHARS) -> list[str]:
    """'2d n=1024 grid=2x2 P=4' per row: algorithm, the parameters that differ between
    the rows (in record order, cut with '...' past `limit` characters) and P; labels
    that would be the same get the start of their run_id, as in the tables."""
    names = label_params(frame)
    labels = []
    for _, row in frame.iterrows():
        algo = "" if pd.isna(row.get("algo")) else str(row.get("algo"))
        ranks = row.get("nranks")
        tail = f"P={int(ranks)}" if isinstance(ranks, (int, float)) and not pd.isna(ranks) else ""
        words = [algo] if algo else []
        for name in names:
            value = row[name]
            if not isinstance(value, (list, tuple)) and pd.isna(value):
                continue
            text = format_grid(value) if isinstance(value, (list, tuple)) else str(value)
            if isinstance(value, float):
                text = str(int(value))
            if text in algo:
                continue
            word = f"{name.removeprefix('params.')}={text}"
            if len(" ".join(words + [word, tail])) > limit:
                words.append("...")
                break
            words.append(word)
        labels.append(" ".join(words + [tail]).strip())
    counts = pd.Series(labels).value_counts()
    run_ids = frame["run_id"] if "run_id" in frame else pd.Series("", index=frame.index)
    return [f"{label} [{str(run_id)[:6]}]" if counts[label] > 1 and isinstance(run_id, str)
            else label for label, run_id in zip(labels, run_ids)]


def _width(runs: int) -> float:
    return min(30.0, max(7.0, 0.6 * runs + 2.5))


def _log_if_wide(axes: Any, values: pd.Series) -> None:
    """A log scale when the values span more than two decades."""
    positive = values[values > 0]
    if len(positive) and positive.max() / positive.min() > 100:
        axes.set_yscale("log")


def _label_axis(axes: Any, labels: list[str]) -> None:
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)


def bytes_figure(frame: pd.DataFrame, kernel: str = "") -> Figure | None:
    """Measured vs model bytes sent per rank and repetition, one group of bars per run."""
    measured = column(frame, "traffic.bytes_sent.max") / MB
    model = column(frame, "model.bytes_sent.max") / MB
    if measured.isna().all() and model.isna().all():
        return None
    labels = run_labels(frame)
    x = np.arange(len(labels))
    figure = new_figure(_width(len(labels)), 4.5)
    axes = figure.add_subplot()
    axes.bar(x - 0.2, measured.fillna(0), 0.4, label="measured, busiest rank", color="tab:blue")
    axes.bar(x + 0.2, model.fillna(0), 0.4, label="model, busiest rank", color="tab:orange")
    axes.plot(x - 0.2, column(frame, "traffic.bytes_sent.mean") / MB, "k_", markersize=14,
              label="mean over ranks")
    axes.plot(x + 0.2, column(frame, "model.bytes_sent.mean") / MB, "k_", markersize=14)
    lower = column(frame, "lower_bound.bytes_per_rank") / MB
    if lower.notna().any():
        axes.plot(x, lower, "rv", label="lower bound")
    _label_axis(axes, labels)
    _log_if_wide(axes, pd.concat([measured, model]))
    axes.set_ylabel("MB sent per rank per repetition")
    axes.set_title(f"{kernel}: measured vs model traffic")
    axes.legend(fontsize=8)
    return figure


def _per_rank(value: Any) -> np.ndarray | None:
    if isinstance(value, (list, tuple, np.ndarray)) and len(value):
        return np.asarray(value, dtype=float)
    return None


def balance_figures(frame: pd.DataFrame, kernel: str = "") -> list[Figure]:
    """Bytes sent by each rank (bars) against the model's (markers), one panel per run."""
    labels = run_labels(frame)
    measured = frame.get("traffic.per_rank_bytes_sent", pd.Series(None, index=frame.index))
    model = frame.get("model.per_rank_bytes_sent", pd.Series(None, index=frame.index))
    panels = [(label, _per_rank(m), _per_rank(p))
              for label, m, p in zip(labels, measured, model)]
    panels = [p for p in panels if p[1] is not None or p[2] is not None]
    figures = []
    for start in range(0, len(panels), PANELS_PER_FIGURE):
        chunk = panels[start:start + PANELS_PER_FIGURE]
        columns = min(3, len(chunk))
        rows = math.ceil(len(chunk) / columns)
        figure = new_figure(4.2 * columns, 3.0 * rows)
        for index, (label, sent, predicted) in enumerate(chunk):
            axes = figure.add_subplot(rows, columns, index + 1)
            if sent is not None:
                axes.bar(np.arange(len(sent)), sent / MB, color="tab:blue", label="measured")
            if predicted is not None:
                axes.plot(np.arange(len(predicted)), predicted / MB, "_", color="tab:orange",
                          markersize=16, markeredgewidth=2.5, label="model")
            axes.set_title(label, fontsize=8)
            axes.set_xlabel("rank", fontsize=8)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            axes.set_ylabel("MB sent", fontsize=8)
            axes.tick_params(labelsize=7)
            if index == 0:
                axes.legend(fontsize=7)
        figure.suptitle(f"{kernel}: bytes sent per rank (balance)")
        figures.append(figure)
    return figures


# Options of a command line that say how or where a problem runs, not which problem.
NOT_THE_PROBLEM = {"--np": 1, "--out": 1, "--grid": 1, "--reps": 1, "--warmup": 1,
                   "--threads": 1, "--profile": 1, "--mem": 1, "--quiet": 0, "--algo": 1,
                   "--variant": 1}


def problem_labels(frame: pd.DataFrame) -> list[str]:
    """'2d n=1024 nb=64 dist=random' per row: the algorithm and the problem as the
    record's command line asked for it, without P, grid and run options, so that the
    runs of one problem on different P share a label (from the parameters, grid left
    out, where a record has no command)."""
    algos = frame["algo"].astype(str) if "algo" in frame else pd.Series("", index=frame.index)
    fallback = describe_params(frame, with_grid=False)
    commands = frame["command"] if "command" in frame else pd.Series(None, index=frame.index)
    labels = []
    for algo, command, params in zip(algos, commands, fallback):
        if not isinstance(command, list) or len(command) < 2:
            labels.append(f"{algo} {params}".strip())
            continue
        words, rest = [], list(command[2:])
        while rest:
            word = rest.pop(0)
            if word in NOT_THE_PROBLEM:
                del rest[:NOT_THE_PROBLEM[word]]
            elif word.startswith("--") and rest and not rest[0].startswith("--"):
                words.append(f"{word[2:]}={rest.pop(0)}")
            elif word.startswith("--") and "=" in word:
                if word.split("=", 1)[0] not in NOT_THE_PROBLEM:
                    words.append(word[2:])
            elif word.startswith("--"):
                words.append(word[2:])
        labels.append(" ".join([algo] + words))
    return labels


def gflops_figure(frame: pd.DataFrame, kernel: str = "") -> Figure | None:
    """GFLOP/s against the number of ranks, one line per algorithm and problem."""
    gflops = column(frame, "gflops")
    ranks = column(frame, "nranks")
    if gflops.isna().all():
        return None
    series = pd.DataFrame({"config": problem_labels(frame), "P": ranks.values,
                           "gflops": gflops.values}).dropna()
    figure = new_figure(7, 4.5)
    axes = figure.add_subplot()
    for config, points in series.groupby("config", sort=True):
        medians = points.groupby("P")["gflops"].median()
        axes.plot(medians.index, medians.values, "o-", label=config)
    axes.set_xscale("log", base=2)
    axes.set_xlabel("ranks P")
    axes.set_ylabel("GFLOP/s (median time)")
    axes.set_title(f"{kernel}: GFLOP/s vs P")
    axes.legend(fontsize=7)
    return figure


def phase_names(frame: pd.DataFrame, block: str) -> list[str]:
    """Phases with a value in `block`.by_phase (block: traffic or model), sorted."""
    prefix = f"{block}.by_phase."
    return sorted(c.removeprefix(prefix) for c in frame.columns
                  if c.startswith(prefix) and column(frame, c).notna().any())


def phase_figure(frame: pd.DataFrame, kernel: str = "") -> Figure | None:
    """Bytes sent by the busiest rank, stacked by phase, one bar per run; where the
    model gives phases too, its stacked bar (hatched) stands beside."""
    measured = phase_names(frame, "traffic")
    if not measured:
        return None
    modelled = phase_names(frame, "model")
    phases = sorted(set(measured) | set(modelled))
    colours = {name: f"C{i % 10}" for i, name in enumerate(phases)}
    labels = run_labels(frame)
    x = np.arange(len(labels))
    width = 0.38 if modelled else 0.6
    figure = new_figure(_width(len(labels)), 4.5)
    axes = figure.add_subplot()
    for block, names, offset, hatch in (("traffic", measured, -width / 2 if modelled else 0, None),
                                        ("model", modelled, width / 2, "//")):
        bottom = np.zeros(len(labels))
        for name in names:
            values = column(frame, f"{block}.by_phase.{name}").fillna(0).to_numpy() / MB
            axes.bar(x + offset, values, width, bottom=bottom, color=colours[name], hatch=hatch,
                     edgecolor="white" if hatch else None,
                     label=name if block == "traffic" or name not in measured else None)
            bottom += values
    _label_axis(axes, labels)
    axes.set_ylabel("MB sent per repetition (busiest rank)")
    axes.set_title(f"{kernel}: bytes by phase" + (" (left measured, right model)"
                                                  if modelled else ""))
    axes.legend(fontsize=8)
    return figure


def kernel_figures(frame: pd.DataFrame, kernel: str) -> dict[str, Figure]:
    """{file stem: figure} of every plot that one kernel's records can draw."""
    figures: dict[str, Figure] = {}
    for stem, build in (("bytes", bytes_figure), ("gflops", gflops_figure),
                        ("phases", phase_figure)):
        figure = build(frame, kernel)
        if figure is not None:
            figures[f"{stem}_{kernel}"] = figure
    balance = balance_figures(frame, kernel)
    for index, figure in enumerate(balance, start=1):
        figures[f"balance_{kernel}" + (f"_{index}" if len(balance) > 1 else "")] = figure
    return figures
