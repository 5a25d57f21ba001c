"""`linalg-io model tsgemm`: predicted traffic and time per rank, without MPI.

On the --machine (or --profile) file's machine (`linalg_io.models.profile`). `--scan
strong` (m fixed) or `weak` (--m rows per rank, m = --m P) writes one prediction record
per P (`.predictions`) and distribution: tsm2r 1D and 2D, the others 1D.
"""

from __future__ import annotations

import argparse

import numpy as np

from linalg_io.model_command.predictions import emit, prediction_record, write_predictions
from linalg_io.models import tsgemm as model
from linalg_io.models.profile import load_profile


def model_table(args: argparse.Namespace) -> str:
    """One line per distribution considered (tsm2r: 1D and 2D, the chosen one marked)."""
    profile = load_profile(args.profile, args.threads)
    top = max(args.p) if args.scan == "weak" else 1   # weak: m grows to --m P
    model.check_sizes(args.variant, args.m * top, args.n, args.k, np.dtype(args.dtype).itemsize)
    if args.scan:
        return scan(args, profile)
    itemsize = np.dtype(args.dtype).itemsize
    m, n, k, p = args.m, args.n, args.k, args.p
    placement = profile.placement(p)
    if args.variant == "tsm2r":
        chosen = model.choose_dist(m, n, k, p, itemsize, profile, placement) \
            if args.dist == "auto" else args.dist
        dists = ["1d", "2d"]
    else:
        chosen, dists = "1d", ["1d"]
    lines = [(f"tsgemm {args.variant} m={m} n={n} k={k} {args.dtype} P={p} "
              f"(profile: {profile.name})"),
             (f"{'dist':<10} {'sent max MB':>12} {'recv max MB':>12} {'msgs max':>9} "
              f"{'mem max MB':>11} {'GFLOP/rank':>11} {'time s':>10}  formula")]
    for dist in dists:
        costs, memory = model.rank_costs(args.variant, m, n, k, p, itemsize, dist)
        time_s = model.run_time(costs, memory, itemsize, profile, placement)
        pr, pc = model.grid_for(args.variant, p, dist)
        label = f"{dist} {pr}x{pc}" + (" *" if dist == chosen else "")
        lines.append(f"{label:<10} {costs.bytes_sent.max() / 1e6:>12.4f} "
                     f"{costs.bytes_recv.max() / 1e6:>12.4f} {int(costs.msgs_sent.max()):>9d} "
                     f"{memory.max() / 1e6:>11.2f} {costs.flops.max() / 1e9:>11.4f} "
                     f"{time_s:>10.4g}  {costs.formula}")
    bound = model.lower_bound(args.variant, m, n, k, p, itemsize)
    if bound is not None:
        lines.append(f"lower bound: {bound['bytes_per_rank'] / 1e6:.4f} MB per rank "
                     f"({bound['formula']})")
    lines.append("time = max(memory bytes / mem_bw, flops / gamma) + alpha msgs + "
                 "beta max(sent, recv); * = chosen")
    return "\n".join(lines)


def scan(args: argparse.Namespace, profile) -> str:
    itemsize = np.dtype(args.dtype).itemsize
    dists = ("1d", "2d") if args.variant == "tsm2r" else ("1d",)
    records = []
    emit(f"{'P':>6} {'dist':<4} {'m':>12} {'recv max MB':>12} {'msgs max':>9} {'time s':>10}")
    for p in args.p:
        m = args.m * p if args.scan == "weak" else args.m
        placement = profile.placement(p)
        for dist in dists:
            block = model.model_block(args.variant, m, args.n, args.k, p, itemsize, dist,
                                      profile, placement)
            pr, pc = model.grid_for(args.variant, p, dist)
            params = {"variant": args.variant, "m": m, "n": args.n, "k": args.k,
                      "dtype": args.dtype, "dist": dist, "grid": [pr, pc], "scan": args.scan}
            records.append(prediction_record(
                "tsgemm", args.variant, params, p, block,
                model.lower_bound(args.variant, m, args.n, args.k, p, itemsize), profile,
                placement, 2.0 * m * args.n * args.k))
            emit(f"{p:>6} {dist:<4} {m:>12} {block['bytes_recv']['max'] / 1e6:>12.4f} "
                 f"{block['msgs_sent']['max']:>9.0f} {block['time_s']:>10.4g}")
    write_predictions(records, args)
    return f"{len(records)} prediction records appended to {args.out}" if args.out else ""
