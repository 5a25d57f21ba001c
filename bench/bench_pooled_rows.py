"""The 2.5D model's pooled process rows against every row's own pivot counts.

    .venv/bin/python bench/bench_pooled_rows.py --machine FILE [--layers C] N P [N P ...]

For each problem (N, P), every 2.5D candidate that `model lu`'s table evaluates
(`linalg_io.lu.choice.pruned_table`, ten rows kept) with pooled process rows
(`linalg_io.models.conflux.pooled_rows`) is evaluated again with every row's own
counts (POOLED_CELLS lifted; with --layers, only the candidates of c = C): one line
per candidate with the walk's CPU seconds and the relative error of each figure, then
the largest of each over all of them (docs/MEASUREMENTS.md, "2.5D model: pooled
process rows"). The walks take seconds to tens of seconds each at P = 2^20 (c > 1 up
to minutes).
"""

from __future__ import annotations

import argparse
import time

from linalg_io.models import conflux
from linalg_io.models.profile import load_profile

from linalg_io.lu import choice

FIGURES = ("time_s", "bytes_recv_max", "bytes_sent_max", "wire_max", "flops_max", "msgs_max",
           "bytes_recv_mean", "msgs_mean")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine", required=True, help="machine file (JSON) or name")
    parser.add_argument("--layers", type=int, help="only the candidates with this c")
    parser.add_argument("problems", nargs="+", type=int, help="N P pairs")
    args = parser.parse_args()
    if len(args.problems) % 2:
        parser.error("give N and P in pairs")
    profile = load_profile(args.machine, None)
    worst: dict[str, float] = {}
    for n, p in zip(args.problems[0::2], args.problems[1::2]):
        placement = profile.placement(p)
        memory = placement.memory_per_rank
        rows, _ = choice.pruned_table(n, p, memory, profile, placement=placement, keep=10)
        for row in rows:
            if not row["pooled_rows"] or args.layers not in (None, row["c"]):
                continue
            grid = (row["px"], row["py"], row["c"], row["v"])
            pooled_cells, conflux.POOLED_CELLS = conflux.POOLED_CELLS, float("inf")
            try:
                start = time.process_time()
                own = conflux.candidate_row(n, memory, profile, placement, grid)
                cpu = time.process_time() - start
            finally:
                conflux.POOLED_CELLS = pooled_cells
            errors = {key: row[key] / own[key] - 1 for key in FIGURES if own[key]}
            for key, error in errors.items():
                worst[key] = max(worst.get(key, 0.0), abs(error))
            print(f"N={n} P={p} {'x'.join(map(str, grid[:3]))} v={grid[3]}: every row's own "
                  f"{cpu:.1f} CPU s; " + " ".join(f"{key} {error:+.2e}"
                                                 for key, error in errors.items()), flush=True)
    print("largest: " + " ".join(f"{key} {error:.2e}" for key, error in worst.items()))


if __name__ == "__main__":
    main()
