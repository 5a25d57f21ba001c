"""Prediction records: what `linalg-io model ... --scan` writes, one per P and algorithm.

A prediction record has the schema of a run's (docs/records.md#predictions) where the two share a
meaning (kernel, algo, params, nranks, model, lower_bound), `"prediction": true`, and
instead of the measured fields (times, verify, traffic) the machine it was predicted
for: {name, example, nodes, ranks_per_node, threads_per_rank, shared_cores,
memory_per_rank}. Its `model` block has the shape of a run's (bytes sent, received and
on the wire, max and mean per rank, messages, flops, time_s and the formulas) without
the per-rank lists (P reaches 10^4), plus `memory_bytes` (what the layout needs per
rank) and `fits` (whether that is within the memory per rank the scan allowed).
`gflops` is the predicted rate.
"""

from __future__ import annotations

import argparse
import sys

from linalg_io.models.profile import MachineProfile, Placement
from linalg_io.records import append_record, options_fields, record_header, run_options


def without_per_rank(block: dict) -> dict:
    """A `model` block without its per-rank lists (kept: max, mean and the rest)."""
    out = {}
    for key, value in block.items():
        if key.startswith("per_rank_"):
            continue
        out[key] = without_per_rank(value) if isinstance(value, dict) else value
    return out


def prediction_record(kernel: str, algo: str, params: dict, nranks: int, model: dict,
                      lower_bound: dict | None, profile: MachineProfile,
                      placement: Placement, flops: float | None = None) -> dict:
    """One prediction record (module doc)."""
    time_s = model.get("time_s")
    return {
        **record_header(["linalg-io"] + sys.argv[1:], kernel, algo, "model",
                        params.get("dtype", "float64"), prediction=True),
        "params": params,
        "nranks": nranks,
        "machine": {"name": profile.name, "example": profile.example,
                    "nodes": placement.nodes, "ranks_per_node": placement.ranks_per_node,
                    "threads_per_rank": profile.threads_per_rank,
                    "shared_cores": placement.shared_cores,
                    "memory_per_rank": placement.memory_per_rank},
        "model": without_per_rank(model),
        "lower_bound": lower_bound,
        "gflops": flops / time_s / 1e9 if flops and time_s else None,
    }


def emit(line: str) -> None:
    """One line of a scan on stdout as soon as it is computed (a scan over many P takes
    minutes; its rows appear as they come)."""
    print(line, flush=True)


def write_predictions(records: list[dict], args: argparse.Namespace) -> None:
    """Append the records to `args.out` (JSON lines), when given, each with the scan's
    `options` and `auto` after its params (`linalg_io.records.options_fields`)."""
    if not args.out:
        return
    options = run_options(vars(args))
    for record in records:
        at = list(record).index("params") + 1
        fields = list(record.items())
        append_record(args.out, dict(fields[:at] + list(options_fields(options,
                                                                       record["params"]).items())
                                     + fields[at:]))
