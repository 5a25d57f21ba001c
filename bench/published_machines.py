"""The time model on two published machines, against what the COnfLUX paper's runs report.

    .venv/bin/python bench/published_machines.py [--machine piz_daint_mc] [--markdown]

For the COnfLUX paper's strong-scaling configurations (Kwasniewski et al., PPoPP'21:
N = 16384 and 131072 on P = 64, 256 and 1024 ranks of Piz Daint's XC40 partition, 2
ranks x 18 threads per node) it prints the model's time of the 2D LU (NB as `lu --algo
2d` takes it) and of the 2.5D LU (COnfLUX, the tile size of the published run) on the
paper's grids, at the machine file's ranks and
threads per node (`models/machine_piz_daint_mc.json`, `models/machine_lumi_c.json`:
published hardware figures only). Beside each: the compute and the communication the
prediction holds (the time left when the network and messages are set free, and when
the compute is), the share of the ranks' peak, and, on the paper's machine
(piz_daint_mc), the time the COnfLUX repository records for that grid (PUBLISHED), with
published / predicted and the excess per step, (published - predicted) / (N / v).

PUBLISHED: github.com/eth-cscs/conflux, benchmarks/benchmarks.csv at commit
951bc790329385e054ae66e5c8f3ec0dcb1d543e (2021-05-23; the file left the repository
later): the median of the runs of each (library, N, P, grid) at its fastest tile or
block size, in seconds (the file's values are ms). 2.5D: COnfLUX (PxPyc); 2D: COnfLUX
with c = 1 and MKL's pdgetrf (both 2D grids of the paper; this package's 2D LU is the
pdgetrf scheme).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from linalg_io.models import conflux
from linalg_io.models.profile import InterNode, MachineProfile, load_profile

from linalg_io.layout.blockcyclic import default_nb
from linalg_io.lu.hpl import hpl_flops
from linalg_io.model_command.lu_verdict import row_2d

FREE = 1e30
PAPER_MACHINE = "piz_daint_mc"
GRIDS_25D = {64: (4, 4, 4), 256: (8, 8, 4), 1024: (16, 16, 4)}
GRIDS_2D = {64: (8, 8), 256: (16, 16), 1024: (32, 32)}
# (N, P, algo) -> [(library, grid, seconds, tile or block size)] (module doc)
PUBLISHED = {
    (16384, 64, "conflux"): [("COnfLUX", "4x4x4", 1.529, 256)],
    (16384, 256, "conflux"): [("COnfLUX", "8x8x4", 1.175, 256)],
    (16384, 1024, "conflux"): [("COnfLUX", "16x16x4", 0.982, 128)],
    (131072, 64, "conflux"): [("COnfLUX", "4x4x4", 177.401, 256)],
    (131072, 256, "conflux"): [("COnfLUX", "8x8x4", 63.608, 256)],
    (131072, 1024, "conflux"): [("COnfLUX", "16x16x4", 43.422, 256)],
    (16384, 64, "2d"): [("COnfLUX c=1", "8x8x1", 0.9975, 128), ("MKL", "8x8", 2.320, 64)],
    (16384, 256, "2d"): [("COnfLUX c=1", "16x16x1", 0.9975, 128), ("MKL", "16x16", 2.615, 64)],
    (16384, 1024, "2d"): [("COnfLUX c=1", "32x32x1", 1.1215, 128), ("MKL", "32x32", 2.755, 64)],
    (131072, 64, "2d"): [("COnfLUX c=1", "8x8x1", 87.0755, 128), ("MKL", "8x8", 175.550, 256)],
    (131072, 256, "2d"): [("COnfLUX c=1", "16x16x1", 45.3655, 256),
                          ("MKL", "16x16", 77.384, 128)],
    (131072, 1024, "2d"): [("COnfLUX c=1", "32x32x1", 37.6515, 256),
                           ("MKL", "32x32", 50.434, 64)],
}


def predict(profile: MachineProfile, n: int, p: int, algo: str) -> tuple[float, str, int]:
    """(predicted seconds, grid, tile or block size) of one configuration."""
    placement = profile.placement(p)
    if algo == "conflux":
        px, py, c = GRIDS_25D[p]
        tile = PUBLISHED[(n, p, algo)][0][3]
        row = conflux.candidate_row(n, placement.memory_per_rank, profile, placement,
                                    (px, py, c, tile))
        return row["time_s"], f"{px}x{py}x{c}", tile
    pr, pc = GRIDS_2D[p]
    nb = default_nb(n, pr, pc)
    return row_2d(n, profile, placement, (pr, pc, nb))["time_s"], f"{pr}x{pc}", nb


def without_network(profile: MachineProfile) -> MachineProfile:
    """Messages free: no latency, no seconds per byte, on the node or between nodes."""
    net = profile.inter_node and InterNode(0.0, FREE, profile.inter_node.links_per_node,
                                           profile.inter_node.overlap)
    return replace(profile, alpha_s=0.0, beta_s_per_byte=0.0, inter_node=net)


def without_compute(profile: MachineProfile) -> MachineProfile:
    """Flops free: what is left is the messages' time."""
    return replace(profile, gamma_flops=FREE, mem_bw_bytes_per_s=FREE)


def rows(profile: MachineProfile) -> list[dict]:
    out = []
    for n in (16384, 131072):
        for p in (64, 256, 1024):
            for algo in ("2d", "conflux"):
                time_s, grid, block = predict(profile, n, p, algo)
                out.append({
                    "n": n, "p": p, "algo": algo, "grid": grid, "block": block,
                    "time_s": time_s,
                    "compute_s": predict(without_network(profile), n, p, algo)[0],
                    "comm_s": predict(without_compute(profile), n, p, algo)[0],
                    "published": PUBLISHED[(n, p, algo)]})
    return out


def text(profile: MachineProfile, table: list[dict], markdown: bool, published: bool) -> str:
    placement = profile.placement(64)
    head = (f"machine {profile.name}: {placement.ranks_per_node} ranks x "
            f"{profile.threads_per_rank} threads per node, dgemm "
            f"{profile.gamma_flops / 1e9:.1f} GFLOP/s per rank")
    lines = [head, ""]
    if markdown:
        columns = ["N", "P (nodes)", "LU", "grid", "v or NB", "predicted s", "compute s",
                   "messages s", "% of peak"]
        if published:
            columns += ["published s (library, grid, v)", "published / predicted",
                        "excess ms per step"]
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in table:
        nodes = profile.placement(r["p"]).nodes
        peak = profile.gamma_flops * r["p"]
        share = 100 * hpl_flops(r["n"]) / r["time_s"] / peak
        cells = [str(r["n"]), f"{r['p']} ({nodes})", "2.5D" if r["algo"] == "conflux" else "2D",
                 r["grid"], str(r["block"]), f"{r['time_s']:.3g}", f"{r['compute_s']:.3g}",
                 f"{r['comm_s']:.3g}", f"{share:.0f}"]
        if published:
            runs = r["published"]
            cells += ["; ".join(f"{s:.3g} ({lib}, {grid}, {b})" for lib, grid, s, b in runs),
                      "; ".join(f"{s / r['time_s']:.2f}" for _, _, s, _ in runs),
                      "; ".join(f"{1e3 * (s - r['time_s']) / (r['n'] / b):.1f}"
                                for _, _, s, b in runs)]
        lines.append("| " + " | ".join(cells) + " |" if markdown else "  ".join(cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default="piz_daint_mc",
                        help="machine file or shipped name (piz_daint_mc, lumi_c)")
    parser.add_argument("--threads", type=int, help="threads per rank (default: the file's)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    profile = load_profile(args.machine, args.threads)
    print(text(profile, rows(profile), args.markdown, args.machine == PAPER_MACHINE))


if __name__ == "__main__":
    main()
