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
from linalg_io.lu.fits import check_model_memory
from linalg_io.lu.plan import Candidate, LUPlan, candidates, choose_plan
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
    lines = [f"LU model: N={n} P={p} memory/rank={mem / 2**20:.0f} MiB",
             machine_line(profile, placement)]
    bounds = [("--mem or node memory / its ranks",
               lu_lower_bound(n, p, mem / WORD, "the memory per rank above"))]
    ask = {"n": n, "p": p, "memory": mem, "profile": profile, "placement": placement,
           "grid": args.grid, "nb": args.nb, "objective": args.objective}
    with core_map() as mapper:   # the 2D rows queued first: both tables share the workers
        if "2d" in algos:
            plan_2d = choose_plan("2d", **ask)
            table_2d = candidates("2d", **ask)
            if plan_2d not in [candidate.plan for candidate in table_2d]:
                table_2d.append(Candidate(plan_2d))
            rows_2d = mapper.start(partial(_row_2d, profile, placement, plan_2d),
                                   [candidate.plan for candidate in table_2d])
        if "conflux" in algos:
            chosen, table = conflux_rows(ask, mapper)
            conflux_lines = _conflux_table(args, chosen, table)
        lines_2d = _baseline_2d(rows_2d()) if "2d" in algos else []
    if "conflux" in algos:
        lines += conflux_lines
        if chosen:
            label = (f"what the marked 2.5D run records ({'x'.join(map(str, chosen.grid))}, "
                     f"v={chosen.nb})")
            bounds.append((label, lu_lower_bound(
                n, p, conflux.memory_words(n, chosen.nb, *chosen.grid), conflux.MEMORY)))
    if "2d" in algos:
        lines += lines_2d
        bounds.append(("what a 2D run records", lu_lower_bound(n, p, n * n / p, "N^2/P")))
    lines += ["", "lower bound on the bytes each rank receives (MB = 1e6 bytes):"]
    lines += [f"  {bound['bytes_per_rank'] / 1e6:>11.2f} MB  {label}: {bound['formula']}"
              for label, bound in bounds]
    return "\n".join(lines)


def conflux_rows(ask: dict, mapper: Callable = map) -> tuple[LUPlan | None, list[Candidate]]:
    """(the plan `lu --algo conflux` runs, or None when nothing fits; every candidate, in
    `candidates`' order) for the keyword arguments `ask` of `choose_plan`."""
    table = candidates("conflux", **ask, mapper=mapper)
    try:
        return choose_plan("conflux", **ask, table=table), table
    except InputError:
        return None, table


def _conflux_table(args, chosen: LUPlan | None, table: list[Candidate]) -> list[str]:
    lines = ["", (f"2.5D LU (conflux), bytes per rank (MB = 1e6 bytes), best first for "
                  f"--objective {args.objective}; wire = what MPI moves (the code's own "
                  "point-to-point schedules: = logical):"),
             (f"  {'grid':>9} {'v':>4} {'recv max':>9} {'wire sent':>9} {'wire recv':>9} "
              f"{'max/mean':>8} {'sent max':>9} {'msgs max':>8} {'mem MiB':>8} {'time s':>8}")]
    for candidate in table:
        r = candidate.costs
        mark = "*" if candidate.plan == chosen else ("!" if not r["fits"] else " ")
        spread = r["wire_max"] / r["wire_mean"] if r["wire_mean"] else 1.0   # P = 1: no wire
        lines.append(
            f"{mark} {r['px']:>3}x{r['py']}x{r['c']:<3} {r['v']:>4} {r['bytes_recv_max'] / 1e6:>9.2f} "
            f"{r['wire_sent_max'] / 1e6:>9.2f} {r['wire_recv_max'] / 1e6:>9.2f} "
            f"{spread:>8.3f} {r['bytes_sent_max'] / 1e6:>9.2f} "
            f"{r['msgs_max']:>8.0f} {r['mem_bytes'] / 2**20:>8.0f} {r['time_s']:>8.3f}")
    lines.append(f"  * = what `lu --algo conflux --grid {args.grid} --nb {args.nb} --objective "
                 f"{args.objective}` runs; ! = over the memory limit; max/mean of the wire "
                 "bytes (larger direction); pivots as the tournament spreads them on a "
                 "random matrix")
    return lines


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
             f"{'msgs max':>8} {'recv none':>9} {'recv worst':>10} {'time s':>8}")] + rows + [
        "  * = what `lu --algo 2d` with the same --grid and --nb runs"]


def _row_2d(profile, placement, chosen: LUPlan, plan: LUPlan) -> str:
    """The table's line of one 2D plan, marked * when it is the one `lu --algo 2d` runs
    (its three pivotings in one process: they share the pivot-free counts)."""
    n, (pr, pc), nb = plan.n, plan.grid, plan.nb
    mark = "*" if plan == chosen else " "
    costs = {piv: lu2d_costs(n, nb, pr, pc, piv) for piv in ("expected", "none", "worst")}
    expected = costs["expected"]
    wire_sent, wire_recv, _ = expected.wire()
    time_s = expected.record_block(profile, placement)["time_s"]
    return (f"{mark} {pr:>5}x{pc:<3} {nb:>4} {expected.bytes_recv.max() / 1e6:>9.2f} "
            f"{wire_sent.max() / 1e6:>9.2f} {wire_recv.max() / 1e6:>9.2f} "
            f"{expected.msgs_sent.max():>8.0f} {costs['none'].bytes_recv.max() / 1e6:>9.2f} "
            f"{costs['worst'].bytes_recv.max() / 1e6:>10.2f} {time_s:>8.3f}")
