"""`linalg-io model lu`: predicted traffic and time of every LU configuration, no MPI.

`--algo conflux` (or no --algo): the 2.5D candidates (Px x Py x c, v; those of --grid
and --nb when given) with words sent (busiest rank and mean), messages, memory per rank
and the predicted time, marking the one `lu --algo conflux` would run with the same
--grid/--nb/--mem. The 2.5D times assume the P ranks share this machine's cores
(oversubscribed when P > cores, as `linalg-io lu --np P` runs them here;
`linalg_io.models.conflux.conflux_plan_counts`).
`--algo 2d` (or no --algo): the 2D block-cyclic LU on every Pr x Pc (or --grid) with
the NB `lu --algo 2d` takes (--nb, else default_nb), the pivoting a run records
("expected") and its band (no swaps .. worst case).
Then the lower bound 2 N^3 / (3 P sqrt(M)) for the --mem memory per rank (else this
node's memory / P) and for the M each run records (2D: N^2/P; 2.5D: its layout's).
"""

from __future__ import annotations

import os

from linalg_io.errors import InputError
from linalg_io.layout.blockcyclic import default_nb
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
    algos = (args.algo,) if args.algo else ("conflux", "2d")
    grid = None if args.grid == "auto" else args.grid
    cores = len(os.sched_getaffinity(0))   # one node, as default_memory
    lines = [(f"LU model: N={n} P={p} memory/rank={mem / 2**20:.0f} MiB cores={cores} "
              f"profile={profile.name}")]
    bounds = [("--mem or node memory / P", lu_lower_bound(n, p, mem / WORD,
                                                           "the memory per rank above"))]
    if "conflux" in algos:
        chosen, conflux_lines = _conflux_table(args, n, p, mem, profile, grid, cores)
        lines += conflux_lines
        if chosen:
            label = f"what the marked 2.5D run records ({chosen['px']}x{chosen['py']}x{chosen['c']}, v={chosen['v']})"
            bounds.append((label, lu_lower_bound(
                n, p, conflux.memory_words(n, chosen["v"], chosen["px"], chosen["py"], chosen["c"]),
                conflux.MEMORY)))
    if "2d" in algos:
        lines += _baseline_2d(n, p, args.nb, grid, profile)
        bounds.append(("what a 2D run records", lu_lower_bound(n, p, n * n / p, "N^2/P")))
    lines += ["", "lower bound, words sent per rank (MB = 1e6 bytes):"]
    lines += [f"  {bound['bytes_per_rank'] / 1e6:>11.2f} MB  {label}: {bound['formula']}"
              for label, bound in bounds]
    return "\n".join(lines)


def _conflux_table(args, n: int, p: int, mem: int, profile, grid: str | None,
                   cores: int) -> tuple[dict | None, list[str]]:
    tiles = conflux.TILE_SIZES if args.nb == "auto" else (int(args.nb),)
    shape = None if grid is None else parse_grid(grid, p, 3)
    rows = [r for r in conflux.candidate_table(n, p, mem, profile, tiles, cores)
            if shape is None or (r["px"], r["py"], r["c"]) == shape]
    rows.sort(key=lambda r: r["time_s"])
    fitting = [r for r in rows if r["fits"]]
    chosen = None
    if fitting:
        best = fitting[0]["time_s"]
        close = [r for r in fitting if r["time_s"] <= best * 1.001]
        chosen = min(close, key=lambda r: (r["bytes_sent_max"], r["time_s"]))
    lines = ["", "2.5D LU (conflux), words sent per rank (MB = 1e6 bytes):",
             (f"  {'grid':>9} {'v':>4} {'sent max MB':>11} {'mean MB':>8} {'max/mean':>8} "
              f"{'recv max MB':>11} {'msgs max':>8} {'mem MiB':>8} {'time s':>8}")]
    for r in rows:
        mark = "*" if r is chosen else ("!" if not r["fits"] else " ")
        lines.append(
            f"{mark} {r['px']:>3}x{r['py']}x{r['c']:<3} {r['v']:>4} {r['bytes_sent_max'] / 1e6:>11.2f} "
            f"{r['bytes_sent_mean'] / 1e6:>8.2f} {r['bytes_sent_max'] / r['bytes_sent_mean']:>8.3f} "
            f"{r['bytes_recv_max'] / 1e6:>11.2f} {r['msgs_max']:>8.0f} {r['mem_bytes'] / 2**20:>8.0f} "
            f"{r['time_s']:>8.3f}")
    lines.append(f"  * = what `lu --algo conflux --grid {args.grid} --nb {args.nb}` runs; "
                 "! = over the memory limit; pivots as the tournament spreads them on a "
                 "random matrix")
    return chosen, lines


def _baseline_2d(n: int, p: int, nb_option, grid: str | None, profile) -> list[str]:
    shapes = [parse_grid(grid, p, 2)] if grid is not None else [(pr, p // pr) for pr in divisors(p)]
    lines = ["", ("2D LU (block-cyclic, partial pivoting), words sent per rank (MB = 1e6 bytes); "
                  "pivots as a run's record assumes them (expected: uniform over the active "
                  "rows) and the band from no row swaps to the worst case; time from the 2D "
                  "model (per-rank alpha-beta-gamma sum):"),
             (f"  {'grid':>9} {'NB':>4} {'sent max MB':>11} {'mean MB':>8} {'msgs max':>8} "
              f"{'none MB':>8} {'worst MB':>8} {'time s':>8}")]
    for pr, pc in shapes:
        nb = default_nb(n, pr, pc) if nb_option == "auto" else int(nb_option)
        costs = {piv: lu2d_costs(n, nb, pr, pc, piv) for piv in ("expected", "none", "worst")}
        expected = costs["expected"]
        lines.append(f"  {pr:>5}x{pc:<3} {nb:>4} {expected.bytes_sent.max() / 1e6:>11.2f} "
                     f"{expected.bytes_sent.mean() / 1e6:>8.2f} {expected.msgs_sent.max():>8.0f} "
                     f"{costs['none'].bytes_sent.max() / 1e6:>8.2f} "
                     f"{costs['worst'].bytes_sent.max() / 1e6:>8.2f} "
                     f"{expected.times(profile).max():>8.3f}")
    return lines
