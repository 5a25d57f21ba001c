"""Ranks x threads side by side: the same problem on the same number of cores, split
into more ranks or more threads per rank (the trade-off Wang et al. measure for deep
learning frameworks, "Exploiting Parallelism Opportunities with Deep Learning
Frameworks", applied to these kernels)."""

from __future__ import annotations

import pandas as pd

from linalg_io.report.labels import problem_labels
from linalg_io.report.tables import MB, column


def ranks_threads_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per problem and core count (ranks x threads) run in more than one split:
    for each split 'PxT' (ranks x threads, most ranks first) the median time, GFLOP/s
    and bytes received by the busiest rank, then the split with the best GFLOP/s.
    Empty when no problem ran in two splits of the same cores."""
    threads = column(frame, "threads_per_rank").fillna(1)
    runs = pd.DataFrame({
        "problem": problem_labels(frame), "P": column(frame, "nranks"), "T": threads,
        "time_s": column(frame, "time_s.median"), "gflops": column(frame, "gflops"),
        "recv_MB": column(frame, "traffic.bytes_recv.max") / MB}).dropna(subset=["P"])
    runs["cores"] = (runs["P"] * runs["T"]).astype(int)
    rows = []
    for (problem, cores), group in runs.groupby(["problem", "cores"], sort=True):
        splits = group.groupby(["P", "T"]).median(numeric_only=True)
        if len(splits) < 2:
            continue
        row: dict = {"problem": problem, "cores": cores}
        for (p, t), values in splits.sort_index(ascending=[False, True]).iterrows():
            split = f"{int(p)}x{int(t)}"
            row[f"time_s {split}"] = values["time_s"]
            row[f"GFLOP/s {split}"] = values["gflops"]
            row[f"recv_MB {split}"] = values["recv_MB"]
        best = splits["gflops"].idxmax()
        row["best (ranks x threads)"] = f"{int(best[0])}x{int(best[1])}"
        rows.append(row)
    return pd.DataFrame(rows)
