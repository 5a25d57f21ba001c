"""`linalg-io model sptrsv`: per-rank predicted traffic and time of both algorithms (no MPI).

On the --machine (or --profile) file's machine (`linalg_io.models.profile`). `--scan
strong` writes one prediction record per P and algorithm (`.predictions`), its
model block with the levels on the critical path and the levels that carry messages.
"""

from __future__ import annotations

import argparse

import numpy as np

from linalg_io.model_command.predictions import emit, prediction_record, write_predictions
from linalg_io.models.memory import physical_memory, require_memory, sptrsv_bytes
from linalg_io.models.profile import load_profile
from linalg_io.models.sptrsv import sptrsv_costs, sptrsv_lower_bound
from linalg_io.sptrsv import analysis
from linalg_io.sptrsv.matrices import as_lower, load_matrix, matrix_size


def _lower(args: argparse.Namespace):
    """(lower-triangular matrix, its levels) of --matrix, refused at once when it cannot fit."""
    size = matrix_size(args.matrix)
    if size is not None:   # the model builds the whole matrix once, here
        require_memory(f"model sptrsv --matrix {args.matrix} (n={size[0]}, nnz={size[1]})",
                       sptrsv_bytes(*size, args.nrhs), physical_memory(),
                       "this machine's memory", per="in this process")
    matrix = load_matrix(args.matrix, args.upper, args.tril, args.seed)
    lower = as_lower(matrix, args.upper)
    return lower, analysis.levels(lower)


def model_table(args: argparse.Namespace) -> str:
    """A text table: one line per (algorithm, rank), then the totals and the lower bound."""
    lower, levels = _lower(args)
    profile = load_profile(args.profile, 1)   # one-thread local solves
    if args.scan:
        return scan(args, profile, lower, levels)
    placement = profile.placement(args.p)
    owner = analysis.partition_rows(lower, levels, args.p, args.partition)
    nlev = int(levels.max()) + 1 if levels.size else 0
    title = (f"sptrsv model: {args.matrix}{' upper' if args.upper else ''} n={lower.shape[0]} "
             f"nnz={lower.nnz} levels={nlev} P={args.p} nrhs={args.nrhs} "
             f"partition={args.partition} profile={profile.name}")
    header = (f"{'algo':<9} {'rank':>4} {'rows':>9} {'bytes_sent':>12} {'bytes_recv':>12} "
              f"{'msgs':>7} {'time_s':>10}")
    lines = [title, header]
    rows_per_rank = np.bincount(owner, minlength=args.p)
    for algo in ("levelset", "syncfree"):
        costs = sptrsv_costs(lower.indptr, lower.indices, levels, owner, args.p, args.nrhs, algo,
                             placement.ranks_per_node)
        times = costs.times(profile, placement)
        for rank in range(args.p):
            lines.append(f"{algo:<9} {rank:>4} {rows_per_rank[rank]:>9} "
                         f"{costs.bytes_sent[rank]:>12.0f} {costs.bytes_recv[rank]:>12.0f} "
                         f"{costs.msgs_sent[rank]:>7.0f} {times[rank]:>10.3e}")
        lines.append(f"{algo:<9} {'max':>4} {'':>9} {costs.bytes_sent.max():>12.0f} "
                     f"{costs.bytes_recv.max():>12.0f} {costs.msgs_sent.max():>7.0f} "
                     f"{costs.record_block(profile, placement)['time_s']:>10.3e}   "
                     f"{costs.formula}")
    bound = sptrsv_lower_bound(lower.indptr, lower.indices, owner, args.p, args.nrhs)
    lines.append(f"lower bound: {bound['bytes_per_rank']:.0f} bytes per rank ({bound['formula']})")
    return "\n".join(lines)


def scan(args: argparse.Namespace, profile, lower, levels) -> str:
    records = []
    emit(f"{'P':>6} {'algo':<9} {'levels':>7} {'msg levels':>10} {'msgs max':>9} "
         f"{'recv max B':>11} {'time s':>10}")
    for p in args.p:
        placement = profile.placement(p)
        owner = analysis.partition_rows(lower, levels, p, args.partition)
        bound = sptrsv_lower_bound(lower.indptr, lower.indices, owner, p, args.nrhs)
        for algo in ("levelset", "syncfree"):
            costs = sptrsv_costs(lower.indptr, lower.indices, levels, owner, p, args.nrhs, algo,
                                 placement.ranks_per_node)
            block = costs.record_block(profile, placement)
            params = {"matrix": args.matrix, "n": int(lower.shape[0]), "nnz": int(lower.nnz),
                      "nrhs": args.nrhs, "partition": args.partition, "upper": args.upper,
                      "scan": args.scan}
            records.append(prediction_record("sptrsv", algo, params, p, block, bound, profile,
                                             placement, float(costs.flops.sum())))
            emit(f"{p:>6} {algo:<9} {block['critical_path_levels']:>7} "
                 f"{block['message_levels']:>10} {block['msgs_sent']['max']:>9.0f} "
                 f"{block['bytes_recv']['max']:>11.0f} {block['time_s']:>10.4g}")
    write_predictions(records, args)
    return f"{len(records)} prediction records appended to {args.out}" if args.out else ""
