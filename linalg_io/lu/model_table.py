"""`linalg-io model lu`: predicted traffic and time of every LU configuration, no MPI.

First the verdict (`model_verdict`): the 2D and 2.5D runs `lu --grid auto` would make,
their predicted time, bytes and GFLOP/s, and the ratio 2.5D / 2D; then the best 10 rows
of each table (`--all`: every row). The machine is the --machine (or --profile) file's: its nodes, ranks per node, cores
and memory, its links (`linalg_io.models.profile`); without one, the shipped profile of
one node, this one. `--algo conflux` (or no --algo): the 2.5D candidates (Px x Py x c,
v; those of --grid and --nb when given; else every grid whose process rows and columns
all own a tile), best first for --objective (time or volume), with the bytes the
busiest rank receives, the wire bytes sent and received (max over ranks), their
max/mean, the logical bytes sent, messages, memory per rank and the predicted time,
marking (*) the one `lu --algo conflux` would run with the same --grid/--nb/--mem/
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
from linalg_io.lu import model_verdict as verdict
from linalg_io.lu.fits import check_model_memory
from linalg_io.lu.plan import candidates, choose_plan
from linalg_io.models import conflux
from linalg_io.models.lu2d import lu_lower_bound
from linalg_io.models.profile import MachineProfile, Placement, load_profile
from linalg_io.parallel import core_map

WORD = 8


def machine_line(profile: MachineProfile, placement: Placement, mem: float) -> str:
    """'machine NAME: 4 nodes x 128 ranks, memory 0.50 GiB per rank, cores shared: no'."""
    shared = ("no" if placement.shared_cores is None
              else f"{placement.p} ranks on {placement.shared_cores} cores")
    example = " (an EXAMPLE, not measured)" if profile.example else ""
    return (f"machine {profile.name}{example}: {placement.nodes} node(s) x "
            f"{placement.ranks_per_node} ranks, memory {mem / 2**30:.2f} GiB per rank "
            f"(--mem, else the node's over its ranks), cores shared: {shared}")


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
    limit = None if getattr(args, "all", False) else verdict.TOP
    lines = [f"LU model: N={n} P={p}", machine_line(profile, placement, mem)]
    bounds = [("--mem or node memory / its ranks",
               lu_lower_bound(n, p, mem / WORD, "the memory per rank above"))]
    chosen, chosen_2d, rows, rows_2d = None, None, [], []
    with core_map() as mapper:   # the 2D rows queued first: both tables share the workers
        shapes = shapes_2d(n, p, args.nb, grid) if "2d" in algos else []
        auto_2d = auto_shape_2d(n, p, args.nb, grid) if "2d" in algos else None
        pending_2d = mapper.start(partial(verdict.row_2d, n, profile, placement),
                                  shapes + ([auto_2d] if auto_2d not in shapes and auto_2d
                                            else []))
        if "conflux" in algos:
            chosen, rows = conflux_rows(n, p, mem, profile, placement, grid, args.nb,
                                        args.objective, mapper)
        if "2d" in algos:
            every_2d = pending_2d()
            chosen_2d = every_2d[[(r["pr"], r["pc"], r["nb"]) for r in every_2d].index(auto_2d)]
            rows_2d = sorted(every_2d[:len(shapes)], key=lambda r: r["time_s"])
    lines += [""] + verdict.headline(n, p, profile, placement, chosen, chosen_2d, args.objective)
    if "conflux" in algos:
        lines += ["", (f"2.5D LU (conflux), best first for --objective {args.objective}; bytes "
                       "per rank, MB = 1e6 B; wire = what MPI moves (the code's own "
                       "point-to-point schedules: = logical):")]
        lines += verdict.conflux_lines(rows, chosen, limit) + verdict.more_line(rows, limit)
        lines.append(f"  * = what `lu --algo conflux --grid {args.grid} --nb {args.nb} "
                     f"--objective {args.objective}` runs; ! = over the memory per rank; "
                     "max/mean of the wire bytes (larger direction); pivots as the "
                     "tournament spreads them on a random matrix")
        if chosen:
            label = (f"what the marked 2.5D run records ({chosen['px']}x{chosen['py']}x"
                     f"{chosen['c']}, v={chosen['v']})")
            bounds.append((label, lu_lower_bound(
                n, p, conflux.memory_words(n, chosen["v"], chosen["px"], chosen["py"], chosen["c"]),
                conflux.MEMORY)))
    if "2d" in algos:
        lines += ["", ("2D LU (block-cyclic, partial pivoting), fastest first; bytes per rank, "
                       "MB = 1e6 B (wire = logical: own point-to-point schedules); pivots as "
                       "a run's record assumes them (expected: uniform over the active rows) "
                       "and the received bytes from no row swaps to the worst case; time from "
                       "the 2D model (per-rank alpha-beta-gamma sum, the makespan where ranks "
                       "share cores):")]
        lines += verdict.lu2d_lines(rows_2d, chosen_2d, limit) + verdict.more_line(rows_2d, limit)
        lines.append(f"  * = what `lu --algo 2d --grid {args.grid} --nb {args.nb}` runs")
        bounds.append(("what a 2D run records", lu_lower_bound(n, p, n * n / p, "N^2/P")))
    lines += ["", "lower bound on the bytes each rank receives (MB = 1e6 bytes):"]
    lines += [f"  {bound['bytes_per_rank'] / 1e6:>11.2f} MB  {label}: {bound['formula']}"
              for label, bound in bounds]
    return "\n".join(lines)


def conflux_rows(n: int, p: int, mem: float, profile: MachineProfile, placement: Placement,
                 grid: str | None, nb, objective: str,
                 mapper: Callable = map) -> tuple[dict | None, list[dict]]:
    """(the row of the plan `lu --algo conflux` runs, or None when nothing fits; every
    row, in `linalg_io.lu.plan.candidates`' order: fitting ones best first for
    `objective`, then those over `mem` by time)."""
    ask = (n, p, mem, profile, placement, grid or "auto", nb, objective)
    table = candidates("conflux", *ask, mapper=mapper)
    try:
        plan = choose_plan("conflux", *ask, table=table)
    except InputError:
        plan = None
    chosen = next((c.costs for c in table if c.plan == plan), None)
    return chosen, [c.costs for c in table]


def shapes_2d(n: int, p: int, nb_option, grid: str | None) -> list[tuple[int, int, int]]:
    """(Pr, Pc, NB) of the 2D runs `model lu` shows (`linalg_io.lu.plan.candidates`):
    --grid, else every Pr x Pc whose process rows and columns all own a block (every
    shape when none does), NB as `lu --algo 2d` takes it."""
    return [c.plan.shape for c in candidates("2d", n, p, 0.0, None, None, grid or "auto",
                                             nb_option)]


def auto_shape_2d(n: int, p: int, nb_option, grid: str | None) -> tuple[int, int, int]:
    """(Pr, Pc, NB) of the plan `lu --algo 2d` runs (`linalg_io.lu.plan.choose_plan`)."""
    return choose_plan("2d", n, p, 0.0, None, None, grid or "auto", nb_option).shape
