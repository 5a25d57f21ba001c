"""Refusing an LU that cannot fit, from the closed form of `linalg_io.models.memory`,
before any set-up or grid search (at a huge N those would run for a long time before
finding that nothing fits)."""

from __future__ import annotations

from linalg_io.models.memory import lu_bytes_per_rank, require_memory


def check_lu_memory(n: int, p: int, algos: tuple[str, ...], available: float,
                    source: str) -> None:
    """InputError when even the least demanding of `algos` needs more than `available`
    bytes per rank for an N x N LU on p ranks."""
    need, algo = min((lu_bytes_per_rank(n, p, algo), algo) for algo in algos)
    option = {"dropin": "conflux --input-layout"}.get(algo, algo)
    what = (f"lu --algo {option} N={n} on {p} ranks" if len(algos) == 1
            else f"lu N={n} on {p} ranks, even with --algo {option},")
    require_memory(what, need, available, source)


def check_model_memory(args) -> None:
    """`model lu`: the check above for --algo (both algorithms without it), against --mem
    or the memory per rank of the machine (--machine/--profile: its nodes' memory over
    their ranks; this node's over the P ranks without a layout), as the table assumes."""
    from linalg_io.models.profile import load_profile

    if args.n is None or args.scan:
        return
    algos = (args.algo,) if args.algo else ("2d", "conflux")
    profile = load_profile(args.profile, args.threads)
    placement = profile.placement(args.p)
    source = ("--mem" if args.mem else
              f"the memory of machine {profile.name!r} over its {placement.ranks_per_node} "
              "ranks per node; --mem sets it")
    check_lu_memory(args.n, args.p, algos, args.mem or placement.memory_per_rank, source)
