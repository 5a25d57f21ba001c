"""pdgetrf through linalg_io.lu.scalapack on several grids in one launch; rank 0 writes JSON.

argv[1]: JSON list of cases {grid: [pr, pc], n, nb}. Each case runs on the first
pr pc ranks with the 2D case's local blocks (generated, seed 0): pdgetrf, the
factors and the pivots gathered (pivots from every process column), pdgetrs for the
2D case's b; rank 0 compares with scipy.linalg.lu_factor of the whole matrix.
"""

import json
import sys

import numpy as np
import scipy.linalg
from _regions import first_ranks
from _result import write_result
from mpi4py import MPI

from linalg_io.layout.generate import matrix_entries, vector_entries
from linalg_io.layout.layouts import Descriptor
from linalg_io.lu.scalapack import ScaLAPACK, find_library

world = MPI.COMM_WORLD
library = ScaLAPACK(find_library(None))
results = []
for case in json.loads(sys.argv[1]):
    pr, pc = case["grid"]
    n, nb = case["n"], case["nb"]
    sub = first_ranks(world, pr * pc)
    if sub is None:
        world.Barrier()
        continue
    context = library.grid(sub, pr, pc)
    descriptor = Descriptor(n, n, nb, nb, pr, pc)
    rows, cols = descriptor.layout().local_indices(sub.rank)
    a = matrix_entries("random", 0, n, rows, cols)
    ipiv = np.zeros(len(rows) + nb, dtype=np.int32)
    info = library.getrf(a, descriptor.array(context, sub.rank), ipiv)
    b = vector_entries(0, n, np.arange(n))
    column = Descriptor(n, 1, nb, nb, pr, pc)
    b_local = np.zeros((max(1, len(rows)), 1), order="F")
    b_local[:len(rows), 0] = b[rows]
    solve_info = library.getrs(a, descriptor.array(context, sub.rank), ipiv, b_local,
                               column.array(context, sub.rank))
    mycol = sub.rank % pc
    pieces = sub.gather((rows, cols, a, ipiv[:len(rows)], b_local[:len(rows), 0], mycol), root=0)
    library.release(context)
    if sub.rank == 0:
        full = np.zeros((n, n))
        pivots = {c: np.full(n, -1) for c in range(pc)}
        x = np.zeros(n)
        for r, c, block, piv, x_part, col in pieces:
            full[np.ix_(r, c)] = block
            pivots[col][r] = piv - 1
            if col == 0:
                x[r] = x_part
        whole = matrix_entries("random", 0, n, np.arange(n), np.arange(n))
        ref_lu, ref_piv = scipy.linalg.lu_factor(whole)
        results.append({"case": case, "info": info, "solve_info": solve_info,
                        "lu_max_diff": float(np.abs(full - ref_lu).max()),
                        "pivots_equal": [bool(np.array_equal(pivots[c], ref_piv))
                                         for c in range(pc)],
                        "x_max_diff": float(np.abs(x - np.linalg.solve(whole, b)).max())})
    sub.Free()
    world.Barrier()
if world.rank == 0:
    write_result(results)
