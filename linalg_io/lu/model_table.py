"""`linalg-io model lu`: predicted traffic and time of every LU configuration, no MPI.

`--algo conflux` (or no --algo): the 2.5D candidates (Px x Py x c, v; those of --grid
and --nb when given), best first for --objective (time or volume), with the bytes the
busiest rank receives, the wire bytes sent and received (max over ranks), their
max/mean, the logical bytes sent, messages, memory per rank and the predicted time,
marking the one `lu --algo conflux` would run with the same --grid/--nb/--mem/--objective. The 2.5D times assume the P ranks share this machine's cores
(oversubscribed when P > cores, as `linalg-io lu --np P` runs them here;
`linalg_io.models.conflux.conflux_plan_counts`).
`--algo 2d` (or no --algo): the 2D block-cyclic LU on every Pr x Pc (or --grid) with
the NB `lu --algo 2d` takes (--nb, else default_nb): received and wire bytes for the
pivoting a run records ("expected") and the received band (no swaps .. worst case).
Then the lower bound 2 N^3 / (3 P sqrt(M)) on the words each rank receives, for the
--mem memory per rank (else this node's memory / P) and for the M each run records (2D:
N^2/P; 2.5D: its layout's).
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
    lines += ["", "lower bound on the bytes each rank receives (MB = 1e6 bytes):"]
    lines += [f"  {bound['bytes_per_rank'] / 1e6:>11.2f} MB  {label}: {bound['formula']}"
              for label, bound in bounds]
    return "\n".join(lines)


def _conflux_table(args, n: int, p: int, mem: int, profile, grid: str | None,
                   cores: int) -> tuple[dict | None, list[str]]:
    tiles = conflux.TILE_SIZES if args.nb == "auto" else (int(args.nb),)
    shape = None if grid is None else parse_grid(grid, p, 3)
    rows = [r for r in conflux.candidate_table(n, p, mem, profile, tiles, cores)
            if shape is None or (r["px"], r["py"], r["c"]) == shape]
    order = conflux.ranked(rows, args.objective)
    chosen = order[0] if order else None
    rows = order + sorted((r for r in rows if not r["fits"]), key=lambda r: r["time_s"])
    lines = ["", (f"2.5D LU (conflux), bytes per rank (MB = 1e6 bytes), best first for "
                  f"--objective {args.objective}; wire = what MPI moves (the code's own "
                  "point-to-point schedules: = logical):"),
             (f"  {'grid':>9} {'v':>4} {'recv max':>9} {'wire sent':>9} {'wire recv':>9} "
              f"{'max/mean':>8} {'sent max':>9} {'msgs max':>8} {'mem MiB':>8} {'time s':>8}")]
    for r in rows:
        mark = "*" if r is chosen else ("!" if not r["fits"] else " ")
        lines.append(
            f"{mark} {r['px']:>3}x{r['py']}x{r['c']:<3} {r['v']:>4} {r['bytes_recv_max'] / 1e6:>9.2f} "
            f"{r['wire_sent_max'] / 1e6:>9.2f} {r['wire_recv_max'] / 1e6:>9.2f} "
            f"{r['wire_max'] / r['wire_mean']:>8.3f} {r['bytes_sent_max'] / 1e6:>9.2f} "
            f"{r['msgs_max']:>8.0f} {r['mem_bytes'] / 2**20:>8.0f} {r['time_s']:>8.3f}")
    lines.append(f"  * = what `lu --algo conflux --grid {args.grid} --nb {args.nb} --objective "
                 f"{args.objective}` runs; ! = over the memory limit; max/mean of the wire "
                 "bytes (larger direction); pivots as the tournament spreads them on a "
                 "random matrix")
    return chosen, lines


def _baseline_2d(n: int, p: int, nb_option, grid: str | None, profile) -> list[str]:
    shapes = [parse_grid(grid, p, 2)] if grid is not None else [(pr, p // pr) for pr in divisors(p)]
    lines = ["", ("2D LU (block-cyclic, partial pivoting), bytes per rank (MB = 1e6 bytes; "
                  "wire = logical: own point-to-point schedules); pivots as a run's record "
                  "assumes them (expected: uniform over the active rows) and the received "
                  "bytes from no row swaps to the worst case; time from the 2D model "
                  "(per-rank alpha-beta-gamma sum):"),
             (f"  {'grid':>9} {'NB':>4} {'recv max':>9} {'wire sent':>9} {'wire recv':>9} "
              f"{'msgs max':>8} {'recv none':>9} {'recv worst':>10} {'time s':>8}")]
    for pr, pc in shapes:
        nb = default_nb(n, pr, pc) if nb_option == "auto" else int(nb_option)
        costs = {piv: lu2d_costs(n, nb, pr, pc, piv) for piv in ("expected", "none", "worst")}
        expected = costs["expected"]
        wire_sent, wire_recv, _ = expected.wire()
        lines.append(f"  {pr:>5}x{pc:<3} {nb:>4} {expected.bytes_recv.max() / 1e6:>9.2f} "
                     f"{wire_sent.max() / 1e6:>9.2f} {wire_recv.max() / 1e6:>9.2f} "
                     f"{expected.msgs_sent.max():>8.0f} "
                     f"{costs['none'].bytes_recv.max() / 1e6:>9.2f} "
                     f"{costs['worst'].bytes_recv.max() / 1e6:>10.2f} "
                     f"{expected.times(profile).max():>8.3f}")
    return lines
