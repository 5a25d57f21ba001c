"""HPL in-process (linalg_io.lu.external.hpl_lib), counted by the wire counter (MPI_T).

argv[1:]: N NB PR PC. Pass 1 counts one whole HPL_pdtest unit (allocate, generate,
factor, check, release); pass 2 only the factorization, as `lu --algo hpl` counts it.
Rank 0 writes {"whole": [[sent, recv, msgs] per rank], "factor": [...],
"residual": HPL's scaled residual, "verdict": ...}.
"""

import sys

from _result import write_result
from mpi4py import MPI

from linalg_io.comm.wire import open_wire, per_rank_wire
from linalg_io.lu.external.hpl_lib import find, open_library

world = MPI.COMM_WORLD
n, nb, pr, pc = (int(a) for a in sys.argv[1:5])
library = open_library(find(None))
library.open_grid(world.Dup(), pr, pc)
wire = open_wire(world)

wire.start()
library.allocate(n, nb)
library.prepare()
library.factor()
checked = library.check()
library.release()
wire.stop()
whole = world.gather(per_rank_wire(wire, world), root=0)

wire.reset()
library.allocate(n, nb)
library.prepare()
wire.start()
library.factor()
wire.stop()
library.release()
factor = world.gather(per_rank_wire(wire, world), root=0)
if world.rank == 0:
    write_result({"whole": whole, "factor": factor, "residual": checked.scaled_residual,
                  "verdict": checked.verdict})
