"""`linalg-io model lu`: predicted traffic and time of every LU configuration, no MPI.

Lists the 2.5D candidates (Px x Py x c, v) with words sent (busiest rank and mean),
messages, memory per rank and the predicted time, marks the one --grid auto / --nb
auto would run, then the 2D baseline (every Pr x Pc, NB = v) and the lower bound
2 N^3 / (3 P sqrt(M)) with M = the per-rank memory limit in words. The 2.5D times
assume the P ranks share this machine's cores (oversubscribed when P > cores, as
`linalg-io lu --np P` runs them here; `linalg_io.models.conflux.conflux_plan_counts`).
"""

from __future__ import annotations

import os

from linalg_io.errors import InputError
from linalg_io.layout.grid_shapes import divisors, parse_grid
from linalg_io.models import conflux
from linalg_io.models.lu2d import lu2d_costs, lu_lower_bound
from linalg_io.models.profile import load_profile

WORD = 8


def default_memory(ranks_on_node: int) -> int:
    """This machine's memory over the ranks sharing it (`model lu` assumes all P do)."""
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // ranks_on_node)


def model_table(args) -> str:
    if args.n is None:
        raise InputError("model lu needs --n")
    n, p = args.n, args.p
    profile = load_profile(getattr(args, "profile", None))
    mem = args.mem or default_memory(p)
    tiles = conflux.TILE_SIZES if args.nb == "auto" else (int(args.nb),)
    shape = None if args.grid == "auto" else parse_grid(args.grid, p, 3)
    cores = len(os.sched_getaffinity(0))   # one node, as default_memory
    rows = [r for r in conflux.candidate_table(n, p, mem, profile, tiles, cores)
            if shape is None or (r["px"], r["py"], r["c"]) == shape]
    rows.sort(key=lambda r: r["time_s"])
    fitting = [r for r in rows if r["fits"]]
    chosen = None
    if fitting:
        best = fitting[0]["time_s"]
        close = [r for r in fitting if r["time_s"] <= best * 1.001]
        chosen = min(close, key=lambda r: (r["bytes_sent_max"], r["time_s"]))
    lines = [(f"LU model: N={n} P={p} memory/rank={mem / 2**20:.0f} MiB cores={cores} "
              f"profile={profile.name}"),
             "", "2.5D LU (conflux), words sent per rank (MB = 1e6 bytes):",
             (f"  {'grid':>9} {'v':>4} {'sent max MB':>11} {'mean MB':>8} {'max/mean':>8} "
              f"{'recv max MB':>11} {'msgs max':>8} {'mem MiB':>8} {'time s':>8}")]
    for r in rows:
        mark = "*" if r is chosen else ("!" if not r["fits"] else " ")
        lines.append(
            f"{mark} {r['px']:>3}x{r['py']}x{r['c']:<3} {r['v']:>4} {r['bytes_sent_max'] / 1e6:>11.2f} "
            f"{r['bytes_sent_mean'] / 1e6:>8.2f} {r['bytes_sent_max'] / r['bytes_sent_mean']:>8.3f} "
            f"{r['bytes_recv_max'] / 1e6:>11.2f} {r['msgs_max']:>8.0f} {r['mem_bytes'] / 2**20:>8.0f} "
            f"{r['time_s']:>8.3f}")
    lines.append("  * = chosen by --grid auto --nb auto; ! = over the memory limit; "
                 "pivots as the tournament spreads them on a random matrix")
    lines += _baseline_2d(n, p, chosen["v"] if chosen else tiles[0], profile)
    bound = lu_lower_bound(n, p, mem / WORD)
    lines += ["", (f"lower bound: {bound['bytes_per_rank'] / 1e6:.2f} MB per rank "
                   f"({bound['formula']})")]
    return "\n".join(lines)


def _baseline_2d(n: int, p: int, nb: int, profile) -> list[str]:
    lines = ["", (f"2D baseline (block-cyclic, partial pivoting, NB={nb}), words sent per rank; "
                  "time from the 2D model (per-rank alpha-beta-gamma sum):"),
             f"  {'grid':>9} {'pivoting':>8} {'sent max MB':>11} {'mean MB':>8} {'time s':>8}"]
    for pr in divisors(p):
        pc = p // pr
        for pivoting in ("worst", "none"):
            costs = lu2d_costs(n, nb, pr, pc, pivoting)
            lines.append(f"  {pr:>5}x{pc:<3} {pivoting:>8} {costs.bytes_sent.max() / 1e6:>11.2f} "
                         f"{costs.bytes_sent.mean() / 1e6:>8.2f} "
                         f"{costs.times(profile).max():>8.3f}")
    return lines
