"""`linalg-io model lu --scan strong|weak --p A:B ...`: the LU predicted over P, as records.

For each P: the choices `lu --algo conflux --grid auto --nb auto` (for --objective within
the memory per rank) and `lu --algo 2d --grid auto --nb auto` (the 2D model's fastest
grid, the squarest within `choice.SQUARE_TIE`; default_nb) would run on the machine
(`linalg_io.lu.choice.choose_lu`), each as a prediction record (`.predictions`): its
model block (bytes received, sent and on the wire per rank, messages, time), the memory
its layout needs and whether that fits, and the lower bound 2 N^3 / (3 P sqrt(M)) for
the memory per rank M allowed (--mem, else the machine's nodes' memory over their ranks).
strong: N fixed (--n). weak: every rank holds --mem-per-rank bytes of the matrix,
N = sqrt(P M / 8) rounded down to a multiple of 256.
Prints one line per record as soon as it and those of the smaller P are computed
(`predictions.emit`).
"""

from __future__ import annotations

import math
from functools import partial

from linalg_io.errors import InputError
from linalg_io.layout.words import WORD
from linalg_io.lu.choice import choose_lu
from linalg_io.lu.hpl import hpl_flops
from linalg_io.model_command.heap import keep_freed_memory
from linalg_io.model_command.predictions import (
    emit,
    prediction_record,
    write_predictions,
)
from linalg_io.models import conflux
from linalg_io.models.lu2d import lu2d_costs, lu_lower_bound
from linalg_io.models.memory import lu_bytes_per_rank
from linalg_io.models.profile import load_profile
from linalg_io.parallel import core_map

WEAK_MULTIPLE = 256


def problem_size(args, p: int) -> int:
    """N of the scan at P ranks (module doc)."""
    if args.scan == "strong":
        if args.n is None:
            raise InputError("model lu --scan strong needs --n")
        return args.n
    if not args.mem_per_rank:
        raise InputError("model lu --scan weak needs --mem-per-rank (bytes of the matrix "
                         "per rank)")
    n = int(math.sqrt(p * args.mem_per_rank / WORD)) // WEAK_MULTIPLE * WEAK_MULTIPLE
    if n < WEAK_MULTIPLE:
        raise InputError(f"--mem-per-rank {args.mem_per_rank} gives N < {WEAK_MULTIPLE} at "
                         f"P={p}")
    return n


def scan(args) -> str:
    profile = load_profile(args.profile, args.threads)
    records = []
    emit(f"{'P':>6} {'algo':<8} {'N':>7} {'grid':>12} {'nb':>4} {'recv max MB':>12} "
         f"{'wire max MB':>12} {'bound MB':>10} {'mem GiB':>8} {'time s':>10}")
    sizes = [problem_size(args, p) for p in args.p]     # a bad size refused before any work
    keep_freed_memory()
    with core_map() as mapper:
        # the next P's choices evaluate while the last one's record blocks are made
        for lines, found in mapper.together([partial(_records_at, args, profile, p, n, mapper)
                                             for p, n in zip(args.p, sizes)], at_once=2):
            for line in lines:
                emit(line)
            records += found
    write_predictions(records, args)
    return f"{len(records)} prediction records appended to {args.out}" if args.out else ""


def _records_at(args, profile, p: int, n: int, mapper) -> tuple[list[str], list[dict]]:
    """(their lines, the records) of P = p and its N (module doc). Each choice evaluates only
    the candidates a lower bound on their time does not rule out (`choose_lu`: the 2.5D
    `pruned_rows`, the 2D `bounded_2d`), the two side by side on the workers; then both
    record blocks, side by side."""
    placement = profile.placement(p)
    mem = args.mem or placement.memory_per_rank
    bound = lu_lower_bound(n, p, mem / WORD, "the memory per rank allowed")
    common = {"n": n, "scan": args.scan, "mem_per_rank": int(mem),
              "objective": args.objective}
    if args.scan == "weak":
        common["matrix_bytes_per_rank"] = args.mem_per_rank
    ask = {"n": n, "p": p, "memory": mem, "profile": profile, "placement": placement,
           "objective": args.objective}
    chosen, choice_2d = mapper.together([partial(_conflux_choice, ask, mapper),
                                         partial(choose_lu, "2d", **ask, mapper=mapper)])
    chosen_ones = [choice for choice in (chosen, choice_2d) if choice is not None]
    blocks = mapper(partial(model_block, profile, placement, mem), chosen_ones)
    records = []
    for choice, block in zip(chosen_ones, blocks):
        params = {**common, "nb": choice.nb, "grid": list(choice.grid)}
        if choice.algorithm == "2d":
            params["pivoting"] = "expected"
        records.append(prediction_record("lu", choice.algorithm, params, p, block, bound,
                                         profile, placement, hpl_flops(n)))
    lines = [_line(record) for record in records]
    if chosen is None:
        lines.append(f"{p:>6} {'conflux':<8} {n:>7}  no grid fits in {mem / 2**30:.2f} GiB "
                     "per rank")
    return lines, records


def _conflux_choice(ask: dict, mapper):
    """`choose_lu`'s 2.5D choice, None where no grid fits (the 2D record alone, and a line
    that says so)."""
    try:
        return choose_lu("conflux", **ask, mapper=mapper)
    except InputError:
        return None


def model_block(profile, placement, mem: float, choice) -> dict:
    """The prediction record's `model` block of a chosen 2.5D (pivots spread uniformly)
    or 2D (pivoting "expected") run, without its per-rank lists (a worker returns it;
    a prediction record keeps none)."""
    n, nb, grid = choice.n, choice.nb, choice.grid
    if choice.algorithm == "conflux":
        block = conflux.record_block(n, nb, *grid, profile, "uniform", placement, per_rank=False)
        block["memory_bytes"] = conflux.memory_words(n, nb, *grid) * WORD
        block["fits"] = True     # chosen among those that fit
        return block
    block = lu2d_costs(n, nb, *grid, "expected").record_block(profile, placement, per_rank=False)
    block["memory_bytes"] = lu_bytes_per_rank(n, choice.p, "2d")[0]
    block["fits"] = block["memory_bytes"] <= mem
    return block


def _line(record: dict) -> str:
    model, params = record["model"], record["params"]
    wire = model["wire"]
    grid = "x".join(str(d) for d in params["grid"])
    fits = "" if model["fits"] else " (over memory)"
    return (f"{record['nranks']:>6} {record['algo']:<8} {params['n']:>7} {grid:>12} "
            f"{params['nb']:>4} {model['bytes_recv']['max'] / 1e6:>12.3f} "
            f"{max(wire['bytes_sent']['max'], wire['bytes_recv']['max']) / 1e6:>12.3f} "
            f"{record['lower_bound']['bytes_per_rank'] / 1e6:>10.3f} "
            f"{model['memory_bytes'] / 2**30:>8.3f} {model['time_s']:>10.4g}{fits}")
