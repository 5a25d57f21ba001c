"""The choice of an LU run as data: grid and block fixed once, before any byte moves.

`LUChoice` holds what a run of `linalg-io lu` executes and what `model lu` (its table and
its scans) predicts: the algorithm, N, the process grid, the block or tile size, and
what the choice was held to (objective, memory per rank, where the ranks sit). It is
made in one place, `choose_lu`, from the command line's --grid/--nb/--mem/--objective
on a machine (profile and placement); `candidates` lists every configuration the
choice ranks, each with its predicted costs (`linalg_io.models.conflux.candidate_row`
for the 2.5D LU). A run takes the choice rank 0 made (`linalg_io.lu.run_choice`);
`model lu` marks the candidate equal to it. No MPI here.

2D (`2d`, `scalapack`, `hpl`, one choice for the three so that they run side by side):
--grid PrxPc, else the 2D model's fastest of `candidates` (`fastest_2d`; within
`SQUARE_TIE` of the fastest, the squarest); --nb, else `default_nb`. 2.5D (`conflux`): with
--grid PxxPyxC and --nb v both given, that; else
the candidate best for the objective among those within the memory per rank
(`ranked`), a fixed grid falling back to tiles of min(N, 128) when none fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from linalg_io.errors import InputError
from linalg_io.layout.blockcyclic import default_nb
from linalg_io.layout.grid_shapes import divisors, parse_grid
from linalg_io.models import conflux, lu2d, lu2d_bounds, lu_bounds
from linalg_io.models.profile import MachineProfile, Placement

if TYPE_CHECKING:
    from linalg_io.tools.network_probe import LinkProbe

BLOCK_CYCLIC = ("2d", "scalapack", "hpl")
TILE_SIZES = (128, 256, 512)
MIN_SLICE = 64   # below this inner dimension the layer's dgemm runs far from gamma
OBJECTIVES = ("time", "volume")
TIE = 0.001     # relative: predicted times closer than this are one time
# a search that keeps the first rows (`pruned_rows`, `bounded_2d`) evaluates no candidate
# whose lower bound is over this many times the fastest time in hand: such a row ranks
# nothing a user picks from, and a prime P's Px x 1 x 1 grids cost 20 times its 1 x Px x 1
# ones
FAR_SLOWER = 10.0
# relative: 2D grids predicted closer than this are left to the squarest grid, as HPL's
# guidance has it: the model's own checks against runs are no finer
SQUARE_TIE = 0.05
T = TypeVar("T")


@dataclass(frozen=True)
class LUChoice:
    """One LU run's choices."""

    algorithm: str             # "2d", "scalapack" (block-cyclic) or "conflux" (2.5D)
    n: int                     # matrix order
    grid: tuple[int, ...]      # (Pr, Pc) block-cyclic, (Px, Py, c) 2.5D
    nb: int                    # block size NB (2D) or tile size v (2.5D)
    objective: str             # what an auto 2.5D choice minimised: "time" or "volume"
    memory: float              # bytes per rank the choice was held to
    placement: Placement       # where the ranks sit (the time's rates)
    pivoting: str              # "partial" (2D) or "tournament" (2.5D)
    # the links a run measured at its start and chose with (`run_choice`), else None
    link_probe: LinkProbe | None = None

    @property
    def p(self) -> int:
        product = 1
        for d in self.grid:
            product *= d
        return product

    @property
    def shape(self) -> tuple[int, ...]:
        """(Pr, Pc, NB) or (Px, Py, c, v)."""
        return (*self.grid, self.nb)

    @property
    def record_grid(self) -> list[int]:
        """The record's params.grid: three entries (a 2D grid is Pr x Pc x 1)."""
        return list(self.grid) + [1] * (3 - len(self.grid))


@dataclass(frozen=True)
class Candidate:
    """A configuration the choice considered and its predicted costs (2.5D: the row of
    `conflux.candidate_row`; 2D: None, the table evaluates them)."""

    choice: LUChoice
    costs: dict | None = None


def _family(algorithm: str) -> str:
    if algorithm in BLOCK_CYCLIC:
        return "2d"
    if algorithm == "conflux":
        return "conflux"
    raise InputError(f"no LU choice for --algo {algorithm!r}")


def _choice(algorithm: str, n: int, grid: tuple[int, ...], nb: int, objective: str,
          memory: float, placement: Placement) -> LUChoice:
    pivoting = "tournament" if algorithm == "conflux" else "partial"
    return LUChoice(algorithm, n, tuple(int(d) for d in grid), int(nb), objective, float(memory),
                  placement, pivoting)


def choose_lu(algorithm: str, n: int, p: int, memory: float, profile: MachineProfile,
                placement: Placement, grid: str = "auto", nb="auto", objective: str = "time",
                mapper: Callable = map,
                table: Sequence[Candidate] | None = None) -> LUChoice:
    """The choice `lu --algo ALGORITHM --grid GRID --nb NB --objective OBJECTIVE` runs for
    N = n on p ranks placed as `placement`, within `memory` bytes per rank (module doc).
    `table`: the `candidates` of the same arguments, when the caller has them already.
    InputError for a grid or block that cannot be, or a 2.5D choice that nothing fits."""
    if objective not in OBJECTIVES:
        raise InputError(f"--objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if _family(algorithm) == "2d":
        if nb != "auto" and not 1 <= int(nb) <= n:
            raise InputError(f"--nb must lie in 1..N = {n}, got {nb}")
        if grid != "auto":
            pr, pc = parse_grid(grid, p, 2)
            block = default_nb(n, pr, pc) if nb == "auto" else int(nb)
            return _choice(algorithm, n, (pr, pc), block, objective, memory, placement)
        table = table or candidates(algorithm, n, p, memory, profile, placement, grid, nb,
                                    objective)
        timed, _ = bounded_2d(partial(lu2d_seconds, profile), float, profile,
                              [candidate.choice for candidate in table], 1, mapper)
        return fastest_2d([(seconds, choice) for choice, seconds in timed])
    shape = None if grid == "auto" else parse_grid(grid, p, 3)
    if shape is not None and nb != "auto":
        if nb > n:
            raise InputError(f"--nb {nb} exceeds N={n}")
        return _choice(algorithm, n, shape, nb, objective, memory, placement)
    if table is None:   # only the candidates within the memory: the others are never chosen
        table = candidates(algorithm, n, p, memory, profile, placement, grid, nb, objective,
                           mapper, fitting_only=True, keep=1)
    fitting = [candidate for candidate in table
               if candidate.costs is not None and candidate.costs["fits"]]
    if fitting:
        return fitting[0].choice
    if shape is not None:
        return _choice(algorithm, n, shape, min(n, TILE_SIZES[0]), objective, memory, placement)
    tiles = TILE_SIZES if nb == "auto" else (int(nb),)
    raise InputError(f"no {p}-rank grid with tiles {tiles} fits N={n} in "
                     f"{memory / 2**20:.0f} MiB per rank (--mem)")


def fastest_2d(timed: Sequence[tuple[float, LUChoice]]) -> LUChoice:
    """Of 2D candidates with their predicted seconds, the fastest; among those within
    `SQUARE_TIE` of it, the squarest grid, Pr <= Pc first (the shape HPL's guidance and
    `square_2d` take when nothing tells them apart)."""
    best = min(seconds for seconds, _ in timed)

    def squareness(choice: LUChoice) -> tuple:
        pr, pc = choice.grid
        return (max(pr, pc) / min(pr, pc), pr > pc)

    return min((choice for seconds, choice in timed if seconds <= best * (1 + SQUARE_TIE)),
               key=squareness)


def bounded_2d(evaluate: Callable[[LUChoice], T], seconds: Callable[[T], float],
               profile: MachineProfile, choices: Sequence[LUChoice], keep: int | None,
               mapper: Callable = map) -> tuple[list[tuple[LUChoice, T]], list[LUChoice]]:
    """(the (choice, evaluate(choice)) pairs evaluated, the choices not evaluated) of 2D
    `choices`, by branch and bound on the time `seconds`(evaluate(choice)) = the 2D
    model's (`lu2d_seconds`): evaluated in the order of a proven lower bound on that time
    (`linalg_io.models.lu2d_bounds.time_seconds`), one result at a time (`in_order`;
    the same choices on any number of cores), until the next bound B exceeds both the
    fastest time t* times 1 + SQUARE_TIE and the keep-th fastest time: any other has a
    time >= B, so it is neither in `fastest_2d`'s tie (nor lowers t*) nor among the
    `keep` fastest; or exceeds FAR_SLOWER t* (fewer than `keep` fastest then, as
    `pruned_rows` leaves out such 2.5D rows). keep None: every choice."""
    if keep is None:
        return list(zip(choices, mapper(evaluate, choices))), []
    bounded = sorted((lu2d_bounds.time_seconds(choice.n, choice.nb, *choice.grid, profile,
                                               choice.placement), i)
                     for i, choice in enumerate(choices))
    order = [choices[i] for _, i in bounded]
    bounds = [bound for bound, _ in bounded]
    done: list[tuple[LUChoice, T]] = []

    def settled(bound: float) -> bool:
        return bound > _time_cut([seconds(result) for _, result in done], keep, SQUARE_TIE)

    with closing(in_order(mapper, evaluate, UntilSettled(order, bounds, settled))) as results:
        for choice, result in zip(order, results):
            done.append((choice, result))
            if len(done) < len(order) and settled(bounds[len(done)]):
                break
    return done, order[len(done):]


def lu2d_seconds(profile: MachineProfile, choice: LUChoice) -> float:
    """The 2D model's time of a 2D choice, pivots as a run's record assumes them."""
    return lu2d.critical_path_time(choice.n, choice.nb, *choice.grid, "expected", profile,
                                   choice.placement)


def candidates(algorithm: str, n: int, p: int, memory: float, profile: MachineProfile,
               placement: Placement, grid: str = "auto", nb="auto", objective: str = "time",
               mapper: Callable = map, fitting_only: bool = False,
               keep: int | None = None) -> list[Candidate]:
    """Every configuration `choose_lu` ranks, in `model lu`'s order. 2D: --grid, else
    every Pr x Pc whose process rows and columns all own a block (every shape when none
    does), NB as the run takes it. 2.5D: the grids and tiles of `busy_grids` (or --grid
    and --nb), evaluated by `mapper` (`linalg_io.parallel.core_map` spreads them over
    the cores), those within `memory` best first for `objective` (`ranked`), then the
    others by time (`fitting_only`: the others left out, not evaluated). `keep`: only
    the first `keep` need their costs (`pruned_table`, objective "time"):
    those not evaluated come last, with costs None."""
    if _family(algorithm) == "2d":
        def nb_of(pr: int, pc: int) -> int:
            return default_nb(n, pr, pc) if nb == "auto" else int(nb)

        if grid != "auto":
            pr, pc = parse_grid(grid, p, 2)
            shapes = [(pr, pc, nb_of(pr, pc))]
        else:
            every = [(pr, p // pr, nb_of(pr, p // pr)) for pr in divisors(p)]
            shapes = [(pr, pc, b) for pr, pc, b in every if max(pr, pc) <= -(-n // b)] or every
        return [Candidate(_choice(algorithm, n, (pr, pc), b, objective, memory, placement))
                for pr, pc, b in shapes]
    tile_sizes = TILE_SIZES if nb == "auto" else (int(nb),)
    shapes = None if grid == "auto" else [parse_grid(grid, p, 3)]
    rows, skipped = pruned_table(n, p, memory, profile, tile_sizes, placement, shapes, mapper,
                                 fitting_only, keep if objective == "time" else None)
    order = ranked(rows, objective) + sorted((r for r in rows if not r["fits"]),
                                             key=lambda r: r["time_s"])
    return ([Candidate(_choice(algorithm, n, (r["px"], r["py"], r["c"]), r["v"], objective,
                               memory, placement), r) for r in order]
            + [Candidate(_choice(algorithm, n, (px, py, c), v, objective, memory, placement))
               for px, py, c, v in skipped])


def candidate_table(n: int, p: int, mem_bytes: float, profile: MachineProfile,
                    tile_sizes: Sequence[int] = TILE_SIZES,
                    placement: Placement | None = None,
                    shapes: Sequence[tuple[int, int, int]] | None = None,
                    mapper: Callable = map, fitting_only: bool = False) -> list[dict]:
    """Every admissible (Px, Py, c, v) with its predicted bytes per rank, messages,
    memory and time (`conflux.candidate_row`; `placement`: where the p ranks sit,
    default the profile's). `shapes`: the grids to consider, default `busy_grids`;
    `fitting_only`: only those whose layout fits in `mem_bytes` (the row's "fits")."""
    return pruned_table(n, p, mem_bytes, profile, tile_sizes, placement, shapes, mapper,
                        fitting_only)[0]


def pruned_table(n: int, p: int, mem_bytes: float, profile: MachineProfile,
                 tile_sizes: Sequence[int] = TILE_SIZES,
                 placement: Placement | None = None,
                 shapes: Sequence[tuple[int, int, int]] | None = None,
                 mapper: Callable = map, fitting_only: bool = False,
                 keep: int | None = None) -> tuple[list[dict], list[tuple[int, int, int, int]]]:
    """(rows, configurations not evaluated) of `candidate_table`'s arguments; `keep`: only
    rows enough that the first `keep` of `ranked(rows, "time")` are those of every row
    (`pruned_rows`), None: every row."""
    placement = placement or profile.placement(p)
    tiles = [v for v in tile_sizes if v <= n] or [n]
    configs = [(px, py, c, v) for v in tiles
               for px, py, c in (busy_grids(n, v, p) if shapes is None else [
                   (px, py, c) for px, py, c in shapes if c == 1 or v // c >= MIN_SLICE])]
    if fitting_only:
        configs = [(px, py, c, v) for px, py, c, v in configs if _fits(n, mem_bytes, px, py, c, v)]
    row = partial(conflux.candidate_row, n, mem_bytes, profile, placement)
    if keep is None:
        rows, left = list(mapper(row, configs)), []
    else:
        rows, left = pruned_rows(row, n, mem_bytes, profile, placement, configs, keep, mapper)
    return sorted(rows, key=lambda r: (r["c"], r["px"], r["v"])), left


def _fits(n: int, mem_bytes: float, px: int, py: int, c: int, v: int) -> bool:
    return conflux.memory_words(n, v, px, py, c) * conflux.WORD <= mem_bytes


def pruned_rows(row: Callable, n: int, mem_bytes: float, profile: MachineProfile,
                placement: Placement, configs: Sequence[tuple[int, int, int, int]], keep: int,
                mapper: Callable = map) -> tuple[list[dict], list[tuple[int, int, int, int]]]:
    """(rows, configurations not evaluated): branch and bound on the time of `row`
    (`conflux.candidate_row` of these n, mem_bytes, profile, placement). The fitting
    configurations are evaluated in the order of a proven lower bound on their time
    (`linalg_io.models.lu_bounds.time_seconds`), one row at a time (`in_order`; the
    same rows on any number of cores), until the next bound B exceeds the threshold T
    = the larger of the best time t* times 1 + TIE and the time of the keep-th row of
    `ranked`: any other row has a time >= B, so it is neither in t*'s tie (nor lowers
    t*) nor before the keep-th row, and the first `keep` rows of `ranked` are those of
    every row; T is also at most FAR_SLOWER t* (fewer than `keep` rows in hand: that
    alone), and the rows left out past it are all more than FAR_SLOWER times slower
    than the fastest. A configuration whose bound a costlier pass may lift
    (`lu_bounds.tightens`) takes that one (`tighter_seconds`) before its row, and is
    left out, not evaluated, where it exceeds T of the rows before it in the bounds'
    order (`_row_unless`). Fewer than `keep` fitting: those within FAR_SLOWER times
    their fastest (F of them), then the others the same way, T the (keep - F)-th time
    among them and FAR_SLOWER times their fastest, the order `candidates` lists them in
    after the fitting ones."""
    fits = [_fits(n, mem_bytes, *config) for config in configs]
    fitting = [config for config, fit in zip(configs, fits) if fit]
    over = [config for config, fit in zip(configs, fits) if not fit]
    if len(fitting) >= keep:
        rows, left = _bounded(row, n, profile, placement, fitting, keep, mapper, _threshold)
        return rows, left + over
    rows, far = _bounded(row, n, profile, placement, fitting, keep, mapper, _threshold)
    more, left = _bounded(row, n, profile, placement, over, keep - len(rows), mapper,
                          _threshold_by_time)
    return rows + more, far + left


def _bounded(row: Callable, n: int, profile: MachineProfile, placement: Placement,
             configs: Sequence[tuple[int, int, int, int]], keep: int, mapper: Callable,
             threshold: Callable) -> tuple[list[dict], list[tuple[int, int, int, int]]]:
    """(rows, configurations not evaluated) of `configs` evaluated in the order of their
    lower bounds until the next bound exceeds `threshold`(rows, keep) (`pruned_rows`),
    those a tighter bound rules out left out on the way."""
    # the bounds on the workers too (the search's start, where they would wait), not
    # counted as evaluations (`untallied`)
    bounds_of = getattr(mapper, "untallied", mapper)
    bounded = sorted(zip(bounds_of(partial(_bound, n, profile, placement), configs),
                         range(len(configs))))
    order = [configs[i] for _, i in bounded]
    bounds = [bound for bound, _ in bounded]
    rows: list[dict] = []
    left: list[tuple[int, int, int, int]] = []
    # each configuration handed out with the threshold of the rows in hand: it only
    # falls as rows come, so a tighter bound above it is above the threshold of every
    # row before it too (the decision below), and its worker may skip the row
    wanted = UntilSettled(order, bounds, lambda bound: bound > threshold(rows, keep),
                          tag=lambda config: (config, threshold(rows, keep)))
    tighter = partial(_row_unless, row, partial(_tighter, n, profile, placement))
    with closing(in_order(mapper, tighter, wanted)) as results:
        for done, (config, (bound, result)) in enumerate(zip(order, results), 1):
            if bound > threshold(rows, keep):
                left.append(config)
            else:
                rows.append(result)
            if done < len(order) and bounds[done] > threshold(rows, keep):
                return rows, left + order[done:]
    return rows, left


def _row_unless(row: Callable, tighter: Callable, handed: tuple) -> tuple:
    """(the configuration's tighter bound, its row: None where that bound exceeds the
    threshold it was handed out with) of `handed` = (configuration, threshold): the
    bound -inf and the row where no tighter bound is taken (`lu_bounds.tightens`)."""
    config, threshold = handed
    bound = tighter(config)
    return bound, (None if bound > threshold else row(config))


def _tighter(n: int, profile: MachineProfile, placement: Placement,
             config: tuple[int, int, int, int]) -> float:
    """`lu_bounds.tighter_seconds` of a configuration (Px, Py, c, v) where it may exceed
    `_bound` (`lu_bounds.tightens`), else -inf."""
    px, py, c, v = config
    if not lu_bounds.tightens(n, v, px, c):
        return -math.inf
    return lu_bounds.tighter_seconds(n, v, px, py, c, profile, placement)


def _bound(n: int, profile: MachineProfile, placement: Placement,
           config: tuple[int, int, int, int]) -> float:
    """`lu_bounds.time_seconds` of a configuration (Px, Py, c, v)."""
    px, py, c, v = config
    return lu_bounds.time_seconds(n, v, px, py, c, profile, placement)


class UntilSettled:
    """The items of `order` (bounds ascending) as a worker asks for them, until the next
    one's bound is `settled` by the results in hand: that one and all after it would be
    dropped unread (settled stays so as results come: the search's own stop is then at
    or before it), so no worker starts them. Sized (len: every item of `order`, those
    a search may hand out) without drawing any: a tally counts them without asking
    `settled` ahead of the results (`linalg_io.progress.Tally.count`). `tag`: each
    item handed out as tag(item), made as it is handed out (with the results in hand
    then)."""

    def __init__(self, order: Sequence, bounds: Sequence[float],
                 settled: Callable[[float], bool], tag: Callable | None = None) -> None:
        self.order, self.bounds, self.settled, self.tag = order, bounds, settled, tag

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self) -> Generator:
        for item, bound in zip(self.order, self.bounds):
            if self.settled(bound):
                return
            yield item if self.tag is None else self.tag(item)


def in_order(mapper: Callable, function: Callable, items: Iterable) -> Generator:
    """function(item) of each item, in order, as they are wanted: `mapper.window` (its
    workers kept busy, those left unused dropped when it is closed,
    `linalg_io.parallel`), else one at a time."""
    if hasattr(mapper, "window"):
        return mapper.window(function, items)
    return (function(item) for item in items)


def _threshold(rows: list[dict], keep: int) -> float:
    """The time above which no row can enter the first `keep` of `ranked(rows)` (inf
    while fewer), FAR_SLOWER times the fastest at most."""
    far = FAR_SLOWER * min((r["time_s"] for r in rows), default=math.inf)
    if len(rows) < keep:
        return far
    first = ranked(rows, "time")
    return min(far, max(first[0]["time_s"] * (1 + TIE), first[keep - 1]["time_s"]))


def _threshold_by_time(rows: list[dict], keep: int) -> float:
    """The time above which no row can enter the `keep` fastest of `rows`, FAR_SLOWER
    times the fastest at most."""
    return _time_cut([r["time_s"] for r in rows], keep)


def _time_cut(times: list[float], keep: int, tie: float = 0.0) -> float:
    """The time above which no time can enter the `keep` fastest of `times` nor the
    fastest's tie (within 1 + `tie` of it), FAR_SLOWER times the fastest at most (inf
    while there is none)."""
    times = sorted(times)
    if not times:
        return math.inf
    far = FAR_SLOWER * times[0]
    return far if len(times) < keep else min(far, max(times[0] * (1 + tie), times[keep - 1]))


def grid_candidates(p: int) -> list[tuple[int, int, int]]:
    """Every Px x Py x c with Px Py c = p (Px > Py included: the tournament runs on Px)."""
    return [(px, (p // c) // px, c) for c in divisors(p) for px in divisors(p // c)]


def busy_grids(n: int, v: int, p: int) -> list[tuple[int, int, int]]:
    """The grids of `grid_candidates` for tiles of v (c = 1, or slices of v/c >= MIN_SLICE
    columns) whose every process row and column owns a tile (Px, Py <= N/v): on the
    others some ranks hold no part of the matrix and only pass messages on; all of them
    when none qualifies."""
    ntiles = -(-n // v)
    grids = [(px, py, c) for px, py, c in grid_candidates(p) if c == 1 or v // c >= MIN_SLICE]
    busy = [(px, py, c) for px, py, c in grids if px <= ntiles and py <= ntiles]
    return busy or grids


def ranked(rows: list[dict], objective: str = "time") -> list[dict]:
    """The rows within memory, best first: by predicted time ("time"; within `TIE` the
    lesser wire volume first) or by the busiest rank's wire bytes ("volume"; ties by
    time)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    fitting = [row for row in rows if row["fits"]]
    if objective == "volume":
        return sorted(fitting, key=lambda r: (r["wire_max"], r["time_s"]))
    best = min((row["time_s"] for row in fitting), default=0.0)

    def by_time(row: dict) -> tuple:
        if row["time_s"] <= best * (1 + TIE):
            return (0, row["wire_max"], row["time_s"])
        return (1, row["time_s"], row["wire_max"])

    return sorted(fitting, key=by_time)
