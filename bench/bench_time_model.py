"""The time model against measured time on this machine, with its calibrated profile.

    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/bench_time_model.py \\
        [--calibrate] [--profile results/machine_dev.json] [--out results/time_model.jsonl]

--calibrate first runs `linalg-io calibrate --np 2 --write PROFILE`. Then the commands a
user runs, each with `--profile PROFILE --out OUT`: the 2D LU and COnfLUX (auto grid
and tile) at N=8192 on P = 4, 16, 64; TS-GEMM (atb, tsm2r) and SpTRSV (levelset,
syncfree) on P = 1, 2, 4. Prints one row per run: predicted (the model of this checkout,
for the run's configuration and placement; the record's own model.time_s beside it) and
measured (median) time, their ratio, and what each term of the prediction contributes:
the time it loses when alpha, beta or the compute (gamma; memory bandwidth for TS-GEMM
and SpTRSV) is set free, or when the ranks are given a core each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from linalg_io.models import conflux
from linalg_io.models import tsgemm as tsgemm_model
from linalg_io.models.lu2d import lu2d_costs
from linalg_io.models.profile import load_profile
from linalg_io.models.sptrsv import sptrsv_costs

from linalg_io.sptrsv import analysis
from linalg_io.sptrsv.matrices import as_lower, load_matrix

CLI = [str(Path(sys.executable).with_name("linalg-io"))]
FREE = 1e30


def runs(reps: int) -> list[list[str]]:
    common = ["--reps", str(reps), "--warmup", "1"]
    out = []
    for p in (4, 16, 64):
        out.append(["lu", "--algo", "2d", "--n", "8192", "--np", str(p)] + common)
        out.append(["lu", "--algo", "conflux", "--n", "8192", "--np", str(p)] + common)
    for p in (1, 2, 4):
        out.append(["tsgemm", "--variant", "atb", "--m", "4194304", "--n", "16", "--k", "16",
                    "--np", str(p)] + common)
        out.append(["tsgemm", "--variant", "tsm2r", "--m", "1048576", "--n", "16", "--k",
                    "256", "--np", str(p)] + common)
        for algo in ("levelset", "syncfree"):
            out.append(["sptrsv", "--matrix", "lap3d:64", "--algo", algo, "--np", str(p)]
                       + common)
    return out


def predicted(record: dict, profile) -> float:
    """The record's prediction recomputed for `profile` (a term set free, or a core per
    rank) on the run's own placement."""
    p, params = record["nranks"], record["params"]
    placement = profile.placement(p)
    if record["kernel"] == "lu" and record["algo"] == "2d":
        pr, pc, _ = params["grid"]
        pivoting = record["model"]["pivoting"]
        return lu2d_costs(params["n"], params["nb"], pr, pc, pivoting).record_block(
            profile, placement)["time_s"]
    if record["kernel"] == "lu":
        pivots = "none" if params["matrix"].startswith("diagdom") else "uniform"
        return conflux.conflux_plan_counts(params["n"], params["nb"], *params["grid"], pivots,
                                           profile, placement)["time_s"]
    if record["kernel"] == "tsgemm":
        return tsgemm_model.model_block(params["variant"], params["m"], params["n"], params["k"],
                                        p, np.dtype(params.get("dtype", "float64")).itemsize,
                                        params["dist"], profile, placement)["time_s"]
    lower = as_lower(load_matrix(params["matrix"], False, False, 0), False)
    levels = analysis.levels(lower)
    owner = analysis.partition_rows(lower, levels, p, params.get("partition", "nnz"))
    return sptrsv_costs(lower.indptr, lower.indices, levels, owner, p, 1, record["algo"],
                        p).record_block(profile, placement)["time_s"]


def terms(record: dict, profile) -> dict[str, float]:
    """Seconds of the prediction each term accounts for (the loss when set free)."""
    threads = record.get("threads_per_rank", 1)
    here = profile.at_threads(threads).for_run(record["nranks"])
    total = predicted(record, here)
    variants = {"alpha": replace(here, alpha_s=0.0),
                "beta": replace(here, beta_s_per_byte=0.0),
                "compute": replace(here, gamma_flops=FREE, mem_bw_bytes_per_s=FREE),
                "sharing": replace(here, cores_per_node=max(record["nranks"], 1) * threads)}
    return {"total": total, **{name: total - predicted(record, variant)
                               for name, variant in variants.items()}}


def label(record: dict) -> str:
    params = record["params"]
    if record["kernel"] == "lu":
        grid = "x".join(map(str, params["grid"]))
        return f"lu {record['algo']} N={params['n']} {grid} nb={params['nb']}"
    if record["kernel"] == "tsgemm":
        return f"tsgemm {params['variant']} {params['dist']} m={params['m']} k={params['k']}"
    return f"sptrsv {record['algo']} {params['matrix']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="results/machine_dev.json")
    parser.add_argument("--out", default="results/time_model.jsonl")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--report-only", action="store_true",
                        help="only print the table of the records already in --out")
    args = parser.parse_args()
    if args.calibrate:
        subprocess.run(CLI + ["calibrate", "--np", "2", "--write", args.profile], check=True)
    if not args.report_only:
        for command in runs(args.reps):
            subprocess.run(CLI + command + ["--profile", args.profile, "--out", args.out,
                                            "--quiet"], check=True)
    profile = load_profile(args.profile)
    print(f"profile {args.profile}: {profile.name}; alpha {profile.alpha_s * 1e6:.2f} us, "
          f"{1 / profile.beta_s_per_byte / 1e9:.2f} GB/s, gamma "
          f"{profile.gamma_flops / 1e9:.1f} GF/s, "
          f"mem_bw {profile.mem_bw_bytes_per_s / 1e9:.1f} GB/s")
    print("| run | P | predicted s | (in the record) | measured s (median) | "
          "measured / predicted | alpha s | beta s | compute s | core sharing s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for line in Path(args.out).read_text().splitlines():
        record = json.loads(line)
        parts = terms(record, profile)
        measured = record["time_s"]["median"]
        print(f"| {label(record)} | {record['nranks']} | {parts['total']:.4g} | "
              f"{record['model']['time_s']:.4g} | {measured:.4g} | "
              f"{measured / parts['total']:.2f} | {parts['alpha']:.3g} | {parts['beta']:.3g} | "
              f"{parts['compute']:.3g} | {parts['sharing']:.3g} |")


if __name__ == "__main__":
    main()
