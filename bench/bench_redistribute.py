"""Redistribution benchmarks (`linalg_io.comm.redistribute`), one MPI job per --np.

volume  random pairs of layouts (ScaLAPACK descriptors with random blocks, sources,
        grids and rank orders; 1D row blocks; the 2.5D LU's tiles) on an M x N matrix,
        each plain and relabelled: per pair the owner-change count (brute force over
        every entry), the plan's model, and the bytes counted by the package and by Open
        MPI's monitoring (wire), summed over the ranks, in entries;
time    ScaLAPACK MBxNB on the squarest grid -> the 2.5D LU's tiles (v, Px x Py x 1) at
        N: one Alltoallv, rounds within --fractions of the local size, and gathering
        the whole matrix on rank 0 then scattering it (Gatherv + Scatterv), each --reps
        times alternately; the slowest rank's time (median), the busiest rank's bytes
        sent and received (counted), and the peak memory NumPy allocated per rank
        during the call (tracemalloc) against the bound (fraction x local size).

Run (it relaunches itself under the venv's mpiexec with --np ranks):
    flock /tmp/linalg-io-bench.lock .venv/bin/python bench/bench_redistribute.py time --np 4
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tracemalloc

import numpy as np


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("volume", "time"))
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--blocks", default="128x128", help="time: the source's MBxNB")
    parser.add_argument("--v", type=int, default=256, help="time: the tiles' v")
    parser.add_argument("--fractions", default="0.25,0.1", help="time: memory fractions")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=12, help="volume: random pairs")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def relaunch(args: argparse.Namespace) -> int:
    from linalg_io.launch.relaunch import (
        find_mpiexec,
        mpi_environment,
        mpiexec_command,
        mpiexec_flavour,
    )

    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    command = mpiexec_command(args.np, [os.path.abspath(__file__)] + sys.argv[1:], flavour,
                              mpiexec)
    return subprocess.call(command, env=mpi_environment(1, flavour))


def random_layout(rng, m: int, n: int, p: int):
    from linalg_io.layout.layouts import Descriptor, conflux_tiles, row_blocks

    kinds = ["scalapack", "scalapack", "rows"] + (["tiles"] if m == n else [])
    kind = kinds[rng.integers(len(kinds))]
    divisors = [d for d in range(1, p + 1) if p % d == 0]
    if kind == "scalapack":
        pr = int(rng.choice(divisors))
        mb, nb = (int(b) for b in rng.choice([1, 8, 32, 64, 100, 128], 2))
        return Descriptor(m, n, mb, nb, pr, p // pr, int(rng.integers(pr)),
                          int(rng.integers(p // pr)), str(rng.choice(["row", "col"]))).layout(p)
    if kind == "rows":
        return row_blocks(m, n, p)
    c = int(rng.choice(divisors))
    px = int(rng.choice([d for d in divisors if (p // c) % d == 0]))
    return conflux_tiles(n, int(rng.choice([32, 64, 128, 256])), px, p // c // px, c)


def measured(comm, wire, world, plan, local):
    """(counted sent, wire sent) summed over the ranks, in entries, of one redistribution."""
    from linalg_io.comm.redistribute import redistribute
    from linalg_io.comm.wire import per_rank_wire

    comm.counter.reset()
    wire.reset()
    wire.start()
    redistribute(comm, plan, local)
    wire.stop()
    sent = world.allreduce(comm.counter.bytes_sent) // 8
    wire_sent = world.allreduce(per_rank_wire(wire, world)[0]) // 8
    return sent, wire_sent


def volume(args, world) -> None:
    from linalg_io.comm.counting import CountedComm
    from linalg_io.comm.wire import WireCounter
    from linalg_io.layout.redist_plan import RedistPlan

    comm, wire, p = CountedComm(world), WireCounter.open(world), world.size
    rng = np.random.default_rng(args.seed)
    if world.rank == 0:
        print("| P | M x N | src -> dst | relabelled | owner changes | model | counted | wire |")
        print("|---|---|---|---|---|---|---|---|")
    for _ in range(args.pairs):
        m = int(rng.integers(args.n // 2, args.n + 1))
        n = m if rng.random() < 0.5 else int(rng.integers(args.n // 2, args.n + 1))
        src, dst = random_layout(rng, m, n, p), random_layout(rng, m, n, p)
        rows, cols = src.local_indices(world.rank)
        local = np.asfortranarray(np.ones((len(rows), len(cols))))
        for relabel in (False, True):
            plan = RedistPlan.create(src, dst, relabel=relabel)
            changes = owner_changes(src, plan.dst, m, n)
            sent, wire_sent = measured(comm, wire, world, plan, local)
            if world.rank == 0:
                print(f"| {p} | {m} x {n} | {src.name} -> {dst.name} | {relabel} | {changes} | "
                      f"{plan.moved()} | {sent} | {wire_sent} |", flush=True)


def owner_changes(src, dst, m: int, n: int) -> int:
    """Entries whose owner differs, entry by entry (column blocks of 512)."""
    rows = np.arange(m)[:, None]
    total = 0
    for c0 in range(0, n, 512):
        cols = np.arange(c0, min(c0 + 512, n))[None, :]
        total += int((src.owner(rows, cols) != dst.owner(rows, cols)).sum())
    return total


def gather_scatter(comm, src, dst, local: np.ndarray) -> np.ndarray:
    """The baseline: every block to rank 0 (Gatherv), the whole matrix assembled there,
    every destination block cut from it and sent (Scatterv)."""
    p, me = comm.size, comm.rank
    sizes = np.array([int(np.prod(src.local_shape(r))) for r in range(p)], dtype=np.int64)
    out_sizes = np.array([int(np.prod(dst.local_shape(r))) for r in range(p)], dtype=np.int64)
    gathered = np.empty(int(sizes.sum())) if me == 0 else None
    comm.Gatherv(np.ascontiguousarray(local.ravel(order="F")),
                 [gathered, (sizes, displs(sizes))] if me == 0 else None, root=0)
    outgoing = None
    if me == 0:
        whole = np.empty(src.shape, order="F")
        for r in range(p):
            rows, cols = src.local_indices(r)
            whole[np.ix_(rows, cols)] = gathered[displs(sizes)[r]:][:sizes[r]].reshape(
                (len(rows), len(cols)), order="F")
        del gathered
        outgoing = np.empty(int(out_sizes.sum()))
        for r in range(p):
            rows, cols = dst.local_indices(r)
            block = whole[np.ix_(rows, cols)].ravel(order="F")
            outgoing[displs(out_sizes)[r]:][:out_sizes[r]] = block
        del whole
    out = np.empty(dst.local_shape(me), order="F")
    comm.Scatterv([outgoing, (out_sizes, displs(out_sizes))] if me == 0 else None,
                  out.reshape(-1, order="F"), root=0)
    return out


def displs(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


def time(args, world) -> None:
    from mpi4py import MPI

    from linalg_io.comm.counting import CountedComm
    from linalg_io.comm.redistribute import redistribute
    from linalg_io.layout.grid_shapes import square_2d
    from linalg_io.layout.layouts import Descriptor, conflux_tiles
    from linalg_io.layout.redist_plan import RedistPlan

    comm, p, n = CountedComm(world), world.size, args.n
    mb, nb = (int(b) for b in args.blocks.split("x"))
    pr, pc = square_2d(p)
    src = Descriptor(n, n, mb, nb, pr, pc).layout()
    dst = conflux_tiles(n, args.v, pr, pc, 1)
    rows, cols = src.local_indices(world.rank)
    local = np.asfortranarray(rows[:, None] * float(n) + cols[None, :])
    drows, dcols = dst.local_indices(world.rank)
    expected = drows[:, None] * float(n) + dcols[None, :]
    fractions = [None] + [float(f) for f in args.fractions.split(",")]
    plans = {f: RedistPlan(src, dst, mem_fraction=f) for f in fractions}
    for plan in plans.values():
        plan.schedule(world.rank)
    methods, method_fraction = {}, {}
    for f, plan in plans.items():
        name = f"alltoallv rounds (fraction {f})" if f else "one alltoallv"
        methods[name] = lambda plan=plan: redistribute(comm, plan, local)
        method_fraction[name] = f
    methods["gather + scatter"] = lambda: gather_scatter(comm, src, dst, local)
    method_fraction["gather + scatter"] = None
    times = {name: [] for name in methods}
    stats = {}
    for _ in range(args.reps):
        for name, method in methods.items():
            comm.counter.reset()
            world.Barrier()
            tracemalloc.start()
            start = MPI.Wtime()
            out = method()
            elapsed = MPI.Wtime() - start
            peak = tracemalloc.get_traced_memory()[1] - out.nbytes
            tracemalloc.stop()
            assert np.array_equal(out, expected), name
            del out
            times[name].append(world.allreduce(elapsed, op=MPI.MAX))
            fraction = method_fraction[name]
            over_bound = peak / (fraction * 8 * max(local.size, expected.size)) if fraction else 0
            stats[name] = (world.allreduce(comm.counter.bytes_sent, op=MPI.MAX),
                           world.allreduce(comm.counter.bytes_recv, op=MPI.MAX),
                           world.allreduce(peak, op=MPI.MAX),
                           world.allreduce(over_bound, op=MPI.MAX))
    local_max = world.allreduce(max(local.size, expected.size), op=MPI.MAX) * 8
    if world.rank == 0:
        moved = plans[None].moved()
        print(f"N={n} P={p}: scalapack {mb}x{nb} on {pr}x{pc} -> tiles {args.v} on {pr}x{pc}x1; "
              f"{moved} of {n * n} entries change owner ({moved / n / n:.1%}); largest local "
              f"array {local_max / 1e6:.1f} MB; {args.reps} reps, alternating")
        print("| method | rounds | time s, median (reps) | max sent MB | max recv MB | "
              "peak extra MB (max rank) | peak / bound (max rank) |")
        print("|---|---|---|---|---|---|---|")
        for name, values in times.items():
            sent, recv, peak, over_bound = stats[name]
            fraction = method_fraction[name]
            rounds = plans[fraction].costs()["rounds"] if name != "gather + scatter" else "-"
            ratio = f"{over_bound:.3f}" if fraction else "-"
            runs = ", ".join(f"{t:.3f}" for t in values)
            print(f"| {name} | {rounds} | {statistics.median(values):.3f} ({runs}) | "
                  f"{sent / 1e6:.2f} | {recv / 1e6:.2f} | {peak / 1e6:.2f} | {ratio} |")


def main() -> int:
    args = parse()
    from linalg_io.launch.relaunch import under_mpi_launcher

    if not under_mpi_launcher():
        return relaunch(args)
    from mpi4py import MPI

    {"volume": volume, "time": time}[args.what](args, MPI.COMM_WORLD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
