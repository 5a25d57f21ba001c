"""`linalg-io model lu`: predicted traffic and time of every LU configuration, no MPI.

The machine is the --machine (or --profile) file's: its nodes, ranks per node, cores and
memory, its links (`linalg_io.models.profile`); without one, the shipped profile of one
node, this one. `--algo conflux` (or no --algo): the 2.5D candidates (Px x Py x c, v;
those of --grid and --nb when given; else every grid whose process rows and columns all
own a tile), best first for --objective (time or volume), with the bytes the busiest
rank receives, the wire bytes sent and received (max over ranks), their max/mean, the
logical bytes sent, messages, memory per rank and the predicted time, marking the one
`lu --algo conflux` would run with the same --grid/--nb/--mem/--objective on that
machine (without --all, for --objective time, only the candidates a lower bound on their
time does not already put below the rows shown, nor over FAR_SLOWER times the fastest,
are evaluated: "N more not evaluated", `linalg_io.lu.choice.pruned_rows`). `--algo 2d`
(or no --algo): the 2D block-cyclic LU on every Pr x Pc (or --grid) whose process rows
and columns all own a block, with the NB `lu --algo 2d` takes (--nb, else default_nb):
received and wire bytes for the pivoting a run records ("expected") and the received
band (no swaps .. worst case), fastest first (without --all, those a lower bound on
their time puts after the rows shown and out of the choice's tie, or over FAR_SLOWER
times the fastest, are not evaluated: `linalg_io.lu.choice.bounded_2d`). Then the lower
bound 2 N^3 / (3 P sqrt(M)) on the words each rank receives, for the --mem memory per
rank (else the node's memory over its ranks) and for the M each run records (2D: N^2/P;
2.5D: its layout's). `--scan` writes records instead (`lu_scan`). A long search tells
its counts of candidates evaluated on stderr as it goes (`linalg_io.progress.Tally`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial

from linalg_io.errors import InputError
from linalg_io.layout.grid_shapes import parse_grid
from linalg_io.layout.words import WORD
from linalg_io.lu.choice import (
    FAR_SLOWER,
    Candidate,
    LUChoice,
    bounded_2d,
    candidates,
    choose_lu,
    fastest_2d,
)
from linalg_io.lu.fits import check_model_memory
from linalg_io.model_command import lu_verdict as verdict
from linalg_io.model_command.heap import keep_freed_memory
from linalg_io.models import conflux
from linalg_io.models.lu2d import TIME_FORMULA, lu_lower_bound, time_formula
from linalg_io.models.profile import MachineProfile, Placement, load_profile
from linalg_io.models.rates import DEFAULT_RATES
from linalg_io.parallel import CoreMap, core_map
from linalg_io.progress import Tally


def machine_line(profile: MachineProfile, placement: Placement, mem: float) -> str:
    """'machine NAME: 4 nodes x 128 ranks x 1 thread(s), dgemm 30.0 GFLOP/s per rank,
    memory 0.50 GiB per rank, cores shared: no'."""
    threads = profile.threads_per_rank
    shared = ("no" if placement.shared_cores is None
              else f"{placement.p} ranks on {placement.shared_cores * threads} cores")
    example = " (an EXAMPLE, not measured)" if profile.example else ""
    local = profile.local
    # the machine's own local rates, where its file has them (the defaults otherwise)
    kernels = ("" if local == DEFAULT_RATES else
               f" (its update at k = 128: {float(local.gemm(128)):.2f} of that, the panel "
               f"{local.panel:.2f})")
    return (f"machine {profile.name}{example}: {placement.nodes} node(s) x "
            f"{placement.ranks_per_node} ranks x {threads} thread(s), dgemm "
            f"{profile.gamma_flops / 1e9:.1f} GFLOP/s per rank{kernels}, "
            f"memory {mem / 2**30:.2f} GiB per rank "
            f"(--mem, else the node's over its ranks), cores shared: {shared}")


class _Tallied:
    """One search's view of the workers: `CoreMap`'s call and window, each result
    counted as `kind`'s in `tally`. `after`: an event this search waits for before its
    first evaluation; `handed_out`: one it sets once its window has handed out `sure`
    items (None: every one) or ended (`_filling`)."""

    def __init__(self, mapper: CoreMap, tally: Tally, kind: str,
                 after: threading.Event | None = None,
                 handed_out: threading.Event | None = None, sure: int | None = None) -> None:
        self.mapper, self.tally, self.kind = mapper, tally, kind
        self.after, self.handed_out, self.sure = after, handed_out, sure

    def __call__(self, function: Callable, items) -> list:
        items = self.tally.count(self.kind, items)
        if self.after is not None:
            self.after.wait()
        results = self.mapper(function, items)
        self.tally.done(self.kind, len(results))
        return results

    def untallied(self, function: Callable, items) -> list:
        """The call, its results not counted (the search's bounds)."""
        return self.mapper(function, items)

    def window(self, function: Callable, items):
        items = self.tally.count(self.kind, items)
        if self.handed_out is not None:
            items = _then(items, self.handed_out.set, self.sure)
        if self.after is not None:
            self.after.wait()
        # a search that waited fills: its items queued ahead of the other's run-ahead
        results = self.mapper.window(function, items, eager=self.after is not None)
        try:
            for result in results:
                self.tally.done(self.kind)
                yield result
        finally:
            results.close()     # the window's queued items dropped (`CoreMap.window`)


def _then(items, done: Callable[[], None], count: int | None = None):
    """The items, done() as the count-th is handed out (None: after the last; also where
    the iteration is left unfinished)."""
    try:
        for taken, item in enumerate(items, 1):
            if taken == count:
                done()
            yield item
    finally:
        done()


def _filling(mapper: CoreMap, tally: Tally, kinds: dict, algos: tuple,
             keep: int | None) -> dict:
    """{algorithm: its `_Tallied`}: with both, the 2D search (candidates of a few tenths
    of a second each) waits until the 2.5D search has handed out its first `keep`
    candidates (None: all of them), those its branch and bound evaluates whatever their
    results, on every worker; then the 2D rows are queued a worker's worth ahead
    (`CoreMap.window`, eager), so that they take the worker the 2.5D search would
    otherwise give a candidate its next result may rule out (finished unread), or leave
    idle beside its last candidate; the 2.5D search keeps one candidate evaluating.
    Side by side from the start, the 2D rows were done early and a 2.5D candidate of
    seconds often ran alone at the end. In this process alone (one core) the 2.5D
    search runs first anyway."""
    if algos != ("conflux", "2d"):
        return {algo: _Tallied(mapper, tally, kinds[algo]) for algo in algos}
    handed_out = threading.Event()
    return {"conflux": _Tallied(mapper, tally, kinds["conflux"], handed_out=handed_out,
                                sure=keep),
            "2d": _Tallied(mapper, tally, kinds["2d"], after=handed_out)}


def _ending(view: _Tallied, search: Callable[[], object]):
    """search(), then (also where it raises) its `handed_out` event set: a search that
    never used its window (--all, --grid) lets the one waiting for it go on."""
    try:
        return search()
    finally:
        if view.handed_out is not None:
            view.handed_out.set()


def _algos(algo: str | None, grid: str, p: int) -> tuple:
    """The algorithms `model lu` tables: --algo, else both, or, where --grid is of one's
    form only (a 2.5D grid with c > 1), that one; a grid of neither refused at once."""
    if algo:
        return (algo,)
    if grid == "auto":
        return ("conflux", "2d")
    fits, error = [], None
    for name, ndim in (("conflux", 3), ("2d", 2)):
        try:
            parse_grid(grid, p, ndim)
            fits.append(name)
        except InputError as refused:
            error = error or refused
    if not fits:
        raise error
    return tuple(fits)


def model_table(args) -> str:
    if args.scan:
        from linalg_io.model_command.lu_scan import scan

        return scan(args)
    if args.n is None:
        raise InputError("model lu needs --n")
    check_model_memory(args)   # a size that cannot fit, refused before the grid search
    n, p = args.n, args.p
    profile = load_profile(args.profile, args.threads)
    placement = profile.placement(p)
    mem = args.mem or placement.memory_per_rank
    algos = _algos(args.algo, args.grid, p)
    limit = None if getattr(args, "all", False) else verdict.TOP
    lines = [f"LU model: N={n} P={p}", machine_line(profile, placement, mem)]
    bounds = [("--mem or node memory / its ranks",
               lu_lower_bound(n, p, mem / WORD, "the memory per rank above"))]
    ask = {"n": n, "p": p, "memory": mem, "profile": profile, "placement": placement,
           "grid": args.grid, "nb": args.nb, "objective": args.objective}
    chosen, chosen_row, rows, chosen_2d, rows_2d = None, None, [], None, []
    unevaluated = unevaluated_2d = 0
    keep_freed_memory()
    # a long search tells how many candidates each side has evaluated as it goes
    kinds = {"conflux": "2.5D", "2d": "2D"}
    tally = Tally("model lu", "candidates evaluated", tuple(kinds[algo] for algo in algos), True)
    with core_map() as mapper, tally.runs():   # the 2.5D and 2D candidates share the workers
        views = _filling(mapper, tally, kinds, algos, limit)
        parts = {"conflux": partial(conflux_rows, ask), "2d": partial(_table_2d, ask)}
        found = dict(zip(algos, mapper.together(
            partial(_ending, views[algo], partial(parts[algo], views[algo], limit))
            for algo in algos)))
    if "conflux" in found:
        chosen, table = found["conflux"]
        rows = [candidate.costs for candidate in table if candidate.costs is not None]
        unevaluated = len(table) - len(rows)
        chosen_row = next((candidate.costs for candidate in table
                           if candidate.choice == chosen), None)
    if "2d" in found:
        choices_2d, evaluated, unevaluated_2d = found["2d"]
        # what `lu --algo 2d` runs: choose_lu's rule on these rows
        choice_2d = fastest_2d([(row["time_s"], choice) for choice, row in evaluated])
        chosen_2d = next(row for choice, row in evaluated if choice == choice_2d)
        rows_2d = sorted((row for _, row in sorted(evaluated, key=lambda pair:
                                                   choices_2d.index(pair[0]))),
                         key=lambda r: r["time_s"])
    lines += [""] + verdict.headline(n, p, profile, placement, chosen_row, chosen_2d,
                                     args.objective)
    if "conflux" in algos:
        lines += ["", (f"2.5D LU (conflux), best first for --objective {args.objective}; bytes "
                       "per rank, MB = 1e6 B; wire = what MPI moves (the code's own "
                       "point-to-point schedules: = logical):")]
        lines += (verdict.conflux_lines(rows, chosen_row, limit)
                  + verdict.more_line(rows, limit, unevaluated, FAR_SLOWER))
        lines.append(f"  * = what `lu --algo conflux --grid {args.grid} --nb {args.nb} "
                     f"--objective {args.objective}` runs; ! = over the memory per rank; "
                     "max/mean of the wire bytes (larger direction); pivots as the "
                     "tournament spreads them on a random matrix")
        lines += _sampled_lines_25d(verdict.shown(rows, chosen_row, limit))
        if chosen:
            label = (f"what the marked 2.5D run records ({'x'.join(map(str, chosen.grid))}, "
                     f"v={chosen.nb})")
            bounds.append((label, lu_lower_bound(
                n, p, conflux.memory_words(n, chosen.nb, *chosen.grid), conflux.MEMORY)))
    if "2d" in algos:
        lines += ["", ("2D LU (block-cyclic, partial pivoting), fastest first; bytes per rank, "
                       "MB = 1e6 B (wire = logical: own point-to-point schedules); pivots as "
                       "a run's record assumes them (expected: uniform over the active rows) "
                       "and the received bytes from no row swaps to the worst case; time from "
                       "the 2D model (its formula: a 2D record's model.time_formula):")]
        lines += (verdict.lu2d_lines(rows_2d, chosen_2d, limit)
                  + verdict.more_line(rows_2d, limit, unevaluated_2d, FAR_SLOWER))
        lines.append(f"  * = what `lu --algo 2d --grid {args.grid} --nb {args.nb}` runs")
        lines += _sampled_lines(n, [choice.shape for choice in choices_2d])
        bounds.append(("what a 2D run records", lu_lower_bound(n, p, n * n / p, "N^2/P")))
    lines += ["", "lower bound on the bytes each rank receives (MB = 1e6 bytes):"]
    lines += [f"  {bound['bytes_per_rank'] / 1e6:>11.2f} MB  {label}: {bound['formula']}"
              for label, bound in bounds]
    return "\n".join(lines)


def conflux_rows(ask: dict, mapper: Callable = map,
                 keep: int | None = None) -> tuple[LUChoice | None, list[Candidate]]:
    """(the choice `lu --algo conflux` runs, or None when nothing fits; every candidate, in
    `candidates`' order) for the keyword arguments `ask` of `choose_lu`; `keep`: only
    the first `keep` evaluated for certain (`candidates`), None: every one."""
    table = candidates("conflux", **ask, mapper=mapper, keep=keep)
    try:
        return choose_lu("conflux", **ask, table=table), table
    except InputError:
        return None, table


def _sampled_lines(n: int, shapes_2d: list[tuple[int, int, int]]) -> list[str]:
    """A line saying the 2D times are approximate where the critical path samples its
    steps (`linalg_io.models.lu2d.sampled_steps`), with how and its error, for the 2D
    candidates (Pr, Pc, NB), evaluated or not."""
    formulas = {time_formula(n, nb, pr, pc, "expected") for pr, pc, nb in shapes_2d}
    return [f"  2D time{formula[len(TIME_FORMULA):].removeprefix(';')}"
            for formula in sorted(formulas) if formula != TIME_FORMULA]


def _sampled_lines_25d(rows: list[dict]) -> list[str]:
    """Lines naming the 2.5D rows shown whose figures come from a sample of the steps
    (`linalg_io.models.conflux.step_sample`) or from pooled process rows (`conflux.
    pooled_rows`; a record's model.time_formula says how), each with their error: the
    rows' "sampled_steps" and "pooled_rows" (`conflux.candidate_row`)."""
    def named(key: str, what: str) -> str:
        return ", ".join(f"{row['px']}x{row['py']}x{row['c']} v={row['v']} ({what(row[key])})"
                         for row in rows if row.get(key) is not None)

    lines = []
    sampled = named("sampled_steps", lambda steps: f"{steps[0]} of {steps[1]} steps")
    if sampled:
        lines.append(f"  2.5D figures from sampled steps (approximate: time, bytes and flops "
                     f"within {conflux.SAMPLED_ERROR:g} ({conflux.SAMPLED_UNEQUAL_ERROR:g} "
                     f"where the process rows hold unequal rows), messages within "
                     f"{conflux.SAMPLED_MSGS_ERROR:g} of walking every step where measured; "
                     "a record's model.time_formula says how): " + sampled)
    pooled = named("pooled_rows", lambda groups: (f"{groups} groups" if groups > 1 else
                                                  "1 group: the rows split evenly"))
    if pooled:
        lines.append(f"  2.5D figures from pooled process rows (the tournament's expected "
                     f"pivots averaged over groups of consecutive rows; approximate: time, "
                     f"bytes and flops within {conflux.POOLED_ERROR:g}, messages within "
                     f"{conflux.POOLED_MSGS_ERROR:g} of every row's own where measured): "
                     + pooled)
    return lines


def _table_2d(ask: dict, mapper: Callable,
              keep: int | None) -> tuple[list[LUChoice], list[tuple[LUChoice, dict]], int]:
    """(the 2D candidates' choices, the (choice, `_row_2d`) pairs evaluated, how many were
    not) for the keyword arguments `ask` of `choose_lu`; `keep`: only the rows
    `bounded_2d` cannot rule out of the first `keep` and of the choice's tie."""
    choices = [candidate.choice for candidate in candidates("2d", **ask)]
    evaluated, skipped = bounded_2d(partial(_row_2d, ask["profile"], ask["placement"]),
                                    lambda row: row["time_s"], ask["profile"], choices, keep,
                                    mapper)
    return choices, evaluated, len(skipped)


def _row_2d(profile: MachineProfile, placement: Placement, choice: LUChoice) -> dict:
    """`lu_verdict.row_2d` of one 2D choice."""
    return verdict.row_2d(choice.n, profile, placement, choice.shape)
