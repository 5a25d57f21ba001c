"""`linalg-io model lu`: predicted traffic and time of every LU configuration, no MPI.

The machine is the --machine (or --profile) file's: its nodes, ranks per node, cores
and memory, its links (`linalg_io.models.profile`); without one, the shipped profile of
one node, this one. `--algo conflux` (or no --algo): the 2.5D candidates (Px x Py x c,
v; those of --grid and --nb when given; else every grid whose process rows and columns
all own a tile), best first for --objective (time or volume), with the bytes the
busiest rank receives, the wire bytes sent and received (max over ranks), their
max/mean, the logical bytes sent, messages, memory per rank and the predicted time,
marking the one `lu --algo conflux` would run with the same --grid/--nb/--mem/
--objective on that machine. `--algo 2d` (or no --algo): the 2D block-cyclic LU on
every Pr x Pc (or --grid) whose process rows and columns all own a block, with the NB
`lu --algo 2d` takes (--nb, else default_nb): received and wire bytes for the pivoting
a run records ("expected") and the received band (no swaps .. worst case). Then the
lower bound 2 N^3 / (3 P sqrt(M)) on the words each rank receives, for the --mem memory
per rank (else the node's memory over its ranks) and for the M each run records (2D:
N^2/P; 2.5D: its layout's). `--scan` writes records instead (`model_scan`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from linalg_io.errors import InputError
from linalg_io.layout.blockcyclic import default_nb
from linalg_io.layout.grid_shapes import divisors, parse_grid
from linalg_io.lu.fits import check_model_memory
from linalg_io.models import conflux
from linalg_io.models.lu2d import lu2d_costs, lu_lower_bound
from linalg_io.models.profile import MachineProfile, Placement, load_profile
from linalg_io.parallel import core_map

WORD = 8


def machine_line(profile: MachineProfile, placement: Placement) -> str:
    """'machine NAME: 4 nodes x 128 ranks, 0.50 GiB/rank, cores shared: no'."""
    shared = ("no" if placement.shared_cores is None
              else f"{placement.p} ranks on {placement.shared_cores} cores")
    example = " (an EXAMPLE, not measured)" if profile.example else ""
    return (f"machine {profile.name}{example}: {placement.nodes} node(s) x "
            f"{placement.ranks_per_node} ranks, {placement.memory_per_rank / 2**30:.2f} GiB "
            f"per rank, cores shared: {shared}")


def model_table(args) -> str:
    if args.scan:
        from linalg_io.lu.model_scan import scan

        return scan(args)
    if args.n is None:
        raise InputError("model lu needs --n")
    check_model_memory(args)   # a size that cannot fit, refused before the grid search
    n, p = args.n, args.p
    profile = load_profile(args.profile)
    placement = profile.placement(p)
    mem = args.mem or placement.memory_per_rank
    algos = (args.algo,) if args.algo else ("conflux", "2d")
    grid = None if args.grid == "auto" else args.grid
    lines = [f"LU model: N={n} P={p} memory/rank={mem / 2**20:.0f} MiB",
             machine_line(profile, placement)]
    bounds = [("--mem or node memory / its ranks",
               lu_lower_bound(n, p, mem / WORD, "the memory per rank above"))]
    with core_map() as mapper:   # the 2D rows queued first: both tables share the workers
        rows_2d = mapper.start(partial(_row_2d, n, profile, placement),
                               shapes_2d(n, p, args.nb, grid) if "2d" in algos else [])
        if "conflux" in algos:
            chosen, conflux_lines = _conflux_table(args, n, p, mem, profile, placement, grid,
                                                   mapper)
        lines_2d = _baseline_2d(rows_2d())
    if "conflux" in algos:
        lines += conflux_lines
        if chosen:
            label = (f"what the marked 2.5D run records ({chosen['px']}x{chosen['py']}x"
                     f"{chosen['c']}, v={chosen['v']})")
            bounds.append((label, lu_lower_bound(
                n, p, conflux.memory_words(n, chosen["v"], chosen["px"], chosen["py"], chosen["c"]),
                conflux.MEMORY)))
    if "2d" in algos:
        lines += lines_2d
        bounds.append(("what a 2D run records", lu_lower_bound(n, p, n * n / p, "N^2/P")))
    lines += ["", "lower bound on the bytes each rank receives (MB = 1e6 bytes):"]
    lines += [f"  {bound['bytes_per_rank'] / 1e6:>11.2f} MB  {label}: {bound['formula']}"
              for label, bound in bounds]
    return "\n".join(lines)


def conflux_rows(n: int, p: int, mem: float, profile: MachineProfile, placement: Placement,
                 grid: str | None, nb, objective: str,
                 mapper: Callable = map) -> tuple[dict | None, list[dict]]:
    """(the row `lu --algo conflux` runs, every row: fitting ones best first for
    `objective`, then those over `mem` by time)."""
    tiles = conflux.TILE_SIZES if nb == "auto" else (int(nb),)
    shapes = None if grid is None else [parse_grid(grid, p, 3)]
    rows = conflux.candidate_table(n, p, mem, profile, tiles, placement, shapes, mapper)
    order = conflux.ranked(rows, objective)
    chosen = order[0] if order else None
    return chosen, order + sorted((r for r in rows if not r["fits"]), key=lambda r: r["time_s"])


def _conflux_table(args, n: int, p: int, mem: float, profile, placement,
                   grid: str | None, mapper: Callable) -> tuple[dict | None, list[str]]:
    chosen, rows = conflux_rows(n, p, mem, profile, placement, grid, args.nb, args.objective,
                                mapper)
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


def shapes_2d(n: int, p: int, nb_option, grid: str | None) -> list[tuple[int, int, int]]:
    """(Pr, Pc, NB) of the 2D runs `model lu` shows: --grid, else every Pr x Pc whose
    process rows and columns all own a block (every shape when none does), NB as
    `lu --algo 2d` takes it."""
    def nb_of(pr: int, pc: int) -> int:
        return default_nb(n, pr, pc) if nb_option == "auto" else int(nb_option)

    if grid is not None:
        pr, pc = parse_grid(grid, p, 2)
        return [(pr, pc, nb_of(pr, pc))]
    every = [(pr, p // pr, nb_of(pr, p // pr)) for pr in divisors(p)]
    busy = [(pr, pc, nb) for pr, pc, nb in every if max(pr, pc) <= -(-n // nb)]
    return busy or every


def _baseline_2d(rows: list[str]) -> list[str]:
    """The 2D table: its header above the rows of `_row_2d` (none: no table)."""
    if not rows:
        return []
    return ["", ("2D LU (block-cyclic, partial pivoting), bytes per rank (MB = 1e6 bytes; "
                 "wire = logical: own point-to-point schedules); pivots as a run's record "
                 "assumes them (expected: uniform over the active rows) and the received "
                 "bytes from no row swaps to the worst case; time from the 2D model "
                 "(per-rank alpha-beta-gamma sum, the makespan where ranks share cores):"),
            (f"  {'grid':>9} {'NB':>4} {'recv max':>9} {'wire sent':>9} {'wire recv':>9} "
             f"{'msgs max':>8} {'recv none':>9} {'recv worst':>10} {'time s':>8}")] + rows


def _row_2d(n: int, profile, placement, shape: tuple[int, int, int]) -> str:
    """The table's line of one 2D grid (its three pivotings in one process: they share
    the pivot-free counts)."""
    pr, pc, nb = shape
    costs = {piv: lu2d_costs(n, nb, pr, pc, piv) for piv in ("expected", "none", "worst")}
    expected = costs["expected"]
    wire_sent, wire_recv, _ = expected.wire()
    time_s = expected.record_block(profile, placement)["time_s"]
    return (f"  {pr:>5}x{pc:<3} {nb:>4} {expected.bytes_recv.max() / 1e6:>9.2f} "
            f"{wire_sent.max() / 1e6:>9.2f} {wire_recv.max() / 1e6:>9.2f} "
            f"{expected.msgs_sent.max():>8.0f} {costs['none'].bytes_recv.max() / 1e6:>9.2f} "
            f"{costs['worst'].bytes_recv.max() / 1e6:>10.2f} {time_s:>8.3f}")
