"""Run many 2D LU cases in one launch; rank 0 writes one JSON entry per case.

argv[1]: JSON list of cases {n, nb, grid: [pr, pc], dist, file, check_factors} (dist
"file" reads `file` through linalg_io.lu.matrix_source). Each case:
factor, solve, HPL residual, measured per-rank traffic of the factorization (bytes
sent and received, messages, by phase; and on the wire, Open MPI's monitoring, when
the MPI has it) and the pivots; with check_factors the gathered factors in
LAPACK form and the pivots against scipy.linalg.lu_factor of the whole matrix.
"""

import json
import sys

import numpy as np
from _regions import counted_run, first_ranks
from _result import write_result
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.grid import Grid2D
from linalg_io.comm.wire import open_wire, per_rank_wire
from linalg_io.layout.blockcyclic import owned_indices
from linalg_io.layout.generate import vector_entries
from linalg_io.lu.lu2d import LU2DParams, gather_lapack_form, lu2d
from linalg_io.lu.matrix_source import open_source
from linalg_io.lu.solve2d import hpl_residual, lu2d_solve

world = MPI.COMM_WORLD
wire = open_wire(world)
results = []
for case in json.loads(sys.argv[1]):
    pr, pc = case["grid"]
    sub = first_ranks(world, pr * pc)
    if sub is None:
        results.append(None)
        world.Barrier()
        continue
    comm = CountedComm(sub)
    grid = Grid2D.create(comm, pr, pc)
    dist = case.get("dist", "random")
    source = open_source(dist, case.get("n"), 0, case.get("file"))
    n, nb = source.n, case["nb"]
    params = LU2DParams(n=n, nb=nb)
    rows = owned_indices(n, nb, grid.myrow, pr)
    cols = owned_indices(n, nb, grid.mycol, pc)
    a_orig = source.local_block(rows, cols)
    a = a_orig.copy(order="F")
    sub.Barrier()
    pivots, time_factor = counted_run(comm, wire, lu2d, grid, a, params)
    counter = comm.counter
    mine = {"sent": counter.bytes_sent, "recv": counter.bytes_recv, "msgs": counter.msgs_sent,
            "by_phase": dict(counter.sent_by_phase),
            "wire": per_rank_wire(wire, sub)}
    everyone = sub.gather(mine, root=0)
    b = vector_entries(0, n, np.arange(n))
    start = MPI.Wtime()
    x = lu2d_solve(grid, a, pivots, params, b)
    time_solve = MPI.Wtime() - start
    check = hpl_residual(grid, a_orig, x, b, params)
    entry = {"case": case, "residual": check["scaled_residual"], "traffic": everyone,
             "time_factor": time_factor, "time_solve": time_solve, "pivots": pivots.tolist()}
    lu = gather_lapack_form(grid, a, pivots, n, nb) if case.get("check_factors") else None
    if sub.rank == 0 and lu is not None:
        import scipy.linalg

        full = source.local_block(np.arange(n), np.arange(n))
        ref_lu, ref_piv = scipy.linalg.lu_factor(full)
        entry["pivots_equal"] = bool(np.array_equal(ref_piv, pivots))
        entry["lu_max_diff"] = float(np.abs(ref_lu - lu).max())
    results.append(entry if sub.rank == 0 else None)
    sub.Free()
    world.Barrier()
if world.rank == 0:
    write_result(results)
