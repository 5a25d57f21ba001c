"""`linalg-io pingpong`: one-way latency and bandwidth between ranks 0 and 1.

For each message size (--min-bytes times powers of 4, then --max-bytes): --warmup
untimed rounds, then --reps timed ones; a round is a barrier and `iters` round trips
of Send/Recv, one-way time = round trip / 2 (as mpi4py's bench), best of the timed
rounds. Ranks other than 0 and 1 wait at the barriers. Writes one record (kernel
"pingpong") with the table in `results`; its `times_s` are the one-way times per
message size (not per rep), its traffic is what the timed rounds of one rep (every
size once) send, counted only inside MPI.Pcontrol(1) ... MPI.Pcontrol(0) as the
runner's.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.summary import traffic_summary
from linalg_io.comm.wire import NoWire, WireCounter, open_wire
from linalg_io.errors import InputError


def message_sizes(min_bytes: int, max_bytes: int) -> list[int]:
    if min_bytes < 1 or max_bytes < min_bytes:
        raise InputError(f"need 1 <= --min-bytes <= --max-bytes, got {min_bytes}, {max_bytes}")
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 4
    if sizes[-1] != max_bytes:   # the largest size asked for is always measured
        sizes.append(max_bytes)
    return sizes


def iterations_for(nbytes: int) -> int:
    """Enough round trips for ~1e8 bytes or 1000 trips, at least 5."""
    return int(max(5, min(1000, 1e8 // max(nbytes, 1))))


def measure(comm: CountedComm, sizes: list[int], reps: int, warmup: int,
            wire: WireCounter | NoWire) -> list[dict]:
    """One-way time per size: the best of `reps` timed rounds of `iters` round trips,
    after `warmup` rounds on the uncounted communicator (the timed rounds are the
    counted region of both counters)."""
    rank = comm.rank
    rows = []
    for nbytes in sizes:
        buf = np.zeros(nbytes, dtype=np.uint8)
        if rank == 0:
            buf[:] = np.arange(nbytes) % 251
        iters = iterations_for(nbytes)
        best = float("inf")
        for rep in range(warmup + reps):
            timed = rep >= warmup
            link = comm if timed else comm.comm
            link.Barrier()
            if timed:
                MPI.Pcontrol(1)
                wire.start()
            start = MPI.Wtime()
            for _ in range(iters):
                if rank == 0:
                    link.Send(buf, 1, 7)
                    link.Recv(buf, 1, 8)
                elif rank == 1:
                    link.Recv(buf, 0, 7)
                    link.Send(buf, 0, 8)
            elapsed = (MPI.Wtime() - start) / iters / 2
            if timed:
                wire.stop()
                MPI.Pcontrol(0)
                best = min(best, elapsed)
        ok = bool(np.array_equal(buf, np.arange(nbytes) % 251)) if rank < 2 else True
        rows.append({"bytes": nbytes, "iters": iters, "one_way_s": best,
                     "bandwidth_Bps": nbytes / best, "data_ok": ok})
    return rows


PINGPONG_BYTES_PER_BYTE = 17   # the buffer (1) and its int64 check pattern and remainder (16)


def check_memory(world: MPI.Comm, max_bytes: int) -> None:
    """Collective: refuse at once a --max-bytes whose buffers cannot fit a rank's memory."""
    from linalg_io.launch.node import memory_per_rank
    from linalg_io.models.memory import require_memory

    available, source = memory_per_rank(world)
    require_memory(f"pingpong --max-bytes {max_bytes}",
                   (PINGPONG_BYTES_PER_BYTE * max_bytes,
                    "17 bytes per message byte: the buffer and its int64 check pattern"),
                   available, source)


def run_pingpong(min_bytes: int, max_bytes: int, reps: int,
                 warmup: int = 1) -> tuple[list[dict] | None, dict | None]:
    """Collective over COMM_WORLD; rank 0 gets (rows, traffic per rep), others (None, None)."""
    world = MPI.COMM_WORLD
    if world.Get_size() < 2:
        raise InputError("pingpong needs at least 2 ranks (use --np 2)")
    check_memory(world, max_bytes)
    counted = CountedComm(world)
    wire = open_wire(world)
    rows = measure(counted, message_sizes(min_bytes, max_bytes), reps, warmup, wire)
    ok = world.allreduce(all(r["data_ok"] for r in rows), op=MPI.LAND)
    traffic = traffic_summary(counted.counter, wire, world, reps)
    if world.Get_rank() != 0:
        return None, None
    for row in rows:
        row["data_ok"] = ok
    return rows, traffic


def format_table(rows: list[dict]) -> str:
    lines = [f"{'bytes':>10} {'iters':>6} {'one-way us':>11} {'MB/s':>10}"]
    for r in rows:
        lines.append(f"{r['bytes']:>10d} {r['iters']:>6d} {r['one_way_s'] * 1e6:>11.2f} "
                     f"{r['bandwidth_Bps'] / 1e6:>10.1f}")
    return "\n".join(lines)


def main(args, argv: list[str]) -> int:
    from linalg_io.envinfo import gather_hosts
    from linalg_io.launch.agree import agreed
    from linalg_io.records import run_options
    from linalg_io.tools.record import append_tool_record

    world = MPI.COMM_WORLD
    if args.out:
        from linalg_io.records import check_records_file

        agreed(world, lambda: world.Get_rank() == 0 and check_records_file(args.out))
    rows, traffic = agreed(world, lambda: run_pingpong(args.min_bytes, args.max_bytes,
                                                       args.reps, args.warmup))
    hosts = gather_hosts(world)
    if world.Get_rank() != 0:
        return 0
    passed = all(r["data_ok"] for r in rows)
    if not args.quiet:
        print(format_table(rows))
    if args.out:
        append_tool_record(args.out, argv, "pingpong", "sendrecv",
                           {"min_bytes": args.min_bytes, "max_bytes": args.max_bytes},
                           run_options(vars(args)),
                           [r["one_way_s"] for r in rows],
                           {"metric": "data_ok", "value": float(passed), "threshold": 1.0,
                            "passed": passed}, traffic, {"results": rows}, hosts, args.threads)
    return 0 if passed else 1
