"""linalg_io.lu.factor (the 2.5D LU as a drop-in for pdgetrf) in one launch; rank 0 writes JSON.

argv[1]: JSON list of cases {p, n, mb, nb, pr, pc, order, shape: [px, py, c, v] or "api"
(then `linalg_io.lu.factor` on the raw communicator, the model's shape), relabel,
mem_fraction, pdgetrs}. Each case on the first p ranks: the generated matrix (seed 0)
in the descriptor's layout, factored through `factor`; rank 0 gathers L\\U and ipiv
and checks P A = L U (P from applying ipiv's interchanges in turn) against the
matrix; every rank's counted bytes per phase go beside the plans' model; with
`pdgetrs`, ScaLAPACK's pdgetrs solves A x = b with our factors and pivots (the HPL
scaled residual of its x).
"""

import json
import sys

import numpy as np
from _regions import first_ranks
from _result import write_result
from mpi4py import MPI

import linalg_io.lu
from linalg_io.comm.counting import CountedComm
from linalg_io.layout.generate import matrix_entries, vector_entries
from linalg_io.layout.layouts import Descriptor
from linalg_io.lu.dropin import DropInLU

world = MPI.COMM_WORLD
results = []
for case in json.loads(sys.argv[1]):
    p, n = case["p"], case["n"]
    sub = first_ranks(world, p)
    if sub is None:
        world.Barrier()
        continue
    comm = CountedComm(sub)
    desc = Descriptor(n, n, case["mb"], case["nb"], case["pr"], case["pc"],
                      order=case.get("order", "row"))
    rows, cols = desc.layout(p).local_indices(sub.rank)
    a = matrix_entries("random", 0, n, rows, cols)
    if case["shape"] == "api":   # the public call on the raw communicator, shape auto
        lu, ipiv = linalg_io.lu.factor(a, desc, sub)
        mine = {"in_place": bool(lu is a)}
    else:
        dropin = DropInLU(desc, comm, tuple(case["shape"]), case["relabel"],
                          case["mem_fraction"])
        comm.counter.reset()
        lu, ipiv = dropin.factor(a)
        l_plan, u_plan = dropin.plans_out
        counter = comm.counter
        mine = {"sent": dict(counter.sent_by_phase), "recv": dict(counter.recv_by_phase),
                "model_in": [int(dropin.plan_in.sent()[sub.rank]),
                             int(dropin.plan_in.received()[sub.rank])],
                "model_out": [int(l_plan.sent()[sub.rank] + u_plan.sent()[sub.rank]),
                              int(l_plan.received()[sub.rank] + u_plan.received()[sub.rank])],
                "in_place": bool(lu is a)}
    if case["pdgetrs"]:
        from linalg_io.lu.scalapack import ScaLAPACK, find_library

        library = ScaLAPACK(find_library(None))
        context = library.grid(sub, case["pr"], case["pc"], case.get("order", "row"))
        b = vector_entries(0, n, np.arange(n))
        column = Descriptor(n, 1, case["mb"], case["mb"], case["pr"], case["pc"],
                            order=case.get("order", "row"))
        b_local = np.zeros((max(1, len(rows)), 1), order="F")
        b_local[:len(rows), 0] = b[rows]
        mine["getrs_info"] = library.getrs(lu, desc.array(context, sub.rank), ipiv, b_local,
                                           column.array(context, sub.rank))
        mycol = desc.layout(p).grid_coords(sub.rank)[1]
        mine["x_part"] = (rows.tolist(), b_local[:len(rows), 0].tolist(), mycol)
        library.release(context)
    pieces = sub.gather((rows, cols, lu, ipiv[:len(rows)], mine), root=0)
    if sub.rank == 0:
        full = np.zeros((n, n))
        pivots = np.full(n, -1)
        x = np.zeros(n)
        for r, c, block, piv, info in pieces:
            full[np.ix_(r, c)] = block
            pivots[r] = piv - 1
            if case["pdgetrs"] and info["x_part"][2] == 0:
                x[info["x_part"][0]] = info["x_part"][1]
        whole = matrix_entries("random", 0, n, np.arange(n), np.arange(n))
        permuted = whole.copy()
        for i, j in enumerate(pivots):
            permuted[[i, j]] = permuted[[j, i]]
        lower = np.tril(full, -1) + np.eye(n)
        upper = np.triu(full)
        entry = {"case": case, "ranks": [info for *_, info in pieces],
                 "factor_error": float(np.abs(permuted - lower @ upper).max()
                                       / np.abs(whole).max()),
                 "pivots_valid": bool(pivots.min() >= 0 and (pivots >= np.arange(n)).all())}
        if case["pdgetrs"]:
            b = vector_entries(0, n, np.arange(n))
            eps = np.finfo(float).eps
            entry["hpl_residual"] = float(np.abs(whole @ x - b).max() / (
                eps * (np.abs(whole).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()) * n))
        results.append(entry)
    sub.Free()
    world.Barrier()
if world.rank == 0:
    write_result(results)
