"""Redistribute between many pairs of layouts in one launch; rank 0 writes one entry per case.

argv[1]: JSON list of cases {p, m, n, src, dst, relabel, mem_fraction} (layout specs:
tests/mpi/layout_specs.py). Each case runs on the first p ranks:
the source local array holds f(i, j) = i n + j + 1 at its global entries; after
`redistribute` every destination entry must hold f of its global index. Per rank:
counted bytes and messages sent and received, the same on the wire (Open MPI's
monitoring, `linalg_io.comm.wire`), and the peak of the memory NumPy allocated
during the call (tracemalloc; the output array is allocated before).
"""

import json
import sys
import tracemalloc

import numpy as np
from _regions import counted_run, first_ranks
from _result import write_result
from layout_specs import build_layout
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.redistribute import redistribute
from linalg_io.comm.wire import WireCounter, per_rank_wire
from linalg_io.layout.redist_plan import RedistPlan


def traced_redistribute(comm, plan, local, out) -> int:
    """`redistribute`; the peak of the memory Python allocated meanwhile."""
    tracemalloc.start()
    redistribute(comm, plan, local, out)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


world = MPI.COMM_WORLD
wire = WireCounter.open(world)
results = []
for case in json.loads(sys.argv[1]):
    p = case["p"]
    sub = first_ranks(world, p)
    wire.reset()
    if sub is None:
        per_rank_wire(wire, world)
        world.Barrier()
        continue
    comm = CountedComm(sub)
    m, n = case["m"], case["n"]
    src = build_layout(case["src"], m, n, p)
    dst = build_layout(case["dst"], m, n, p)
    plan = RedistPlan.create(src, dst, relabel=case["relabel"],
                             mem_fraction=case.get("mem_fraction"))
    rows, cols = src.local_indices(comm.rank)
    local = np.asfortranarray(rows[:, None] * n + cols[None, :] + 1.0)
    out = np.full(plan.dst.local_shape(comm.rank), -1.0, order="F")
    plan.schedule(comm.rank)
    peak, _ = counted_run(comm, wire, traced_redistribute, comm, plan, local, out)
    wire_sent, wire_recv, wire_msgs = per_rank_wire(wire, world)
    drows, dcols = plan.dst.local_indices(comm.rank)
    correct = bool(np.array_equal(out, drows[:, None] * n + dcols[None, :] + 1.0))
    counter = comm.counter
    mine = {"sent": counter.bytes_sent, "recv": counter.bytes_recv, "msgs": counter.msgs_sent,
            "wire": [wire_sent, wire_recv, wire_msgs], "peak_bytes": peak, "correct": correct,
            "local_entries": max(local.size, out.size)}
    everyone = sub.gather(mine, root=0)
    if sub.rank == 0:
        results.append({"case": case, "ranks": everyone,
                        "dst_ranks": plan.dst.ranks.reshape(-1).tolist()})
    sub.Free()
    world.Barrier()
if world.rank == 0:
    write_result(results)
