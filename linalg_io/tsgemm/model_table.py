"""`linalg-io model tsgemm`: predicted traffic and time per rank, without MPI."""

from __future__ import annotations

import argparse

import numpy as np

from linalg_io.models import tsgemm as model
from linalg_io.models.profile import load_profile


def model_table(args: argparse.Namespace) -> str:
    """One line per distribution considered (tsm2r: 1D and 2D, the chosen one marked)."""
    profile = load_profile(args.profile)
    itemsize = np.dtype(args.dtype).itemsize
    m, n, k, p = args.m, args.n, args.k, args.p
    if args.variant == "tsm2r":
        chosen = model.choose_dist(m, n, k, p, itemsize, profile) if args.dist == "auto" \
            else args.dist
        dists = ["1d", "2d"]
    else:
        chosen, dists = "1d", ["1d"]
    lines = [(f"tsgemm {args.variant} m={m} n={n} k={k} {args.dtype} P={p} "
              f"(profile: {profile.name})"),
             (f"{'dist':<10} {'sent max MB':>12} {'recv max MB':>12} {'msgs max':>9} "
              f"{'mem max MB':>11} {'GFLOP/rank':>11} {'time s':>10}  formula")]
    for dist in dists:
        costs, memory = model.rank_costs(args.variant, m, n, k, p, itemsize, dist)
        times = model.rank_times(costs, memory, itemsize, profile)
        pr, pc = model.grid_for(args.variant, p, dist)
        label = f"{dist} {pr}x{pc}" + (" *" if dist == chosen else "")
        lines.append(f"{label:<10} {costs.bytes_sent.max() / 1e6:>12.4f} "
                     f"{costs.bytes_recv.max() / 1e6:>12.4f} {int(costs.msgs_sent.max()):>9d} "
                     f"{memory.max() / 1e6:>11.2f} {costs.flops.max() / 1e9:>11.4f} "
                     f"{times.max():>10.4g}  {costs.formula}")
    bound = model.lower_bound(args.variant, m, n, k, p, itemsize)
    if bound is not None:
        lines.append(f"lower bound: {bound['bytes_per_rank'] / 1e6:.4f} MB per rank "
                     f"({bound['formula']})")
    lines.append("time = max(memory bytes / mem_bw, flops / gamma) + alpha msgs + "
                 "beta max(sent, recv); * = chosen")
    return "\n".join(lines)
