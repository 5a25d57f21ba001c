"""linalg-io ARGS with a bug injected on rank 0 only (rank 0's record assembly raises).

Started by a plain `mpiexec python`, without `-m mpi4py` (as `srun linalg-io` runs):
the CLI must abort the job rather than leave the other ranks waiting for rank 0.
"""

import sys

from mpi4py import MPI

from linalg_io import runner
from linalg_io.cli import main


def broken_record(*args, **kwargs):
    raise RuntimeError("injected bug in rank 0's record")


if MPI.COMM_WORLD.Get_rank() == 0:
    runner.build_record = broken_record
sys.exit(main(sys.argv[1:]))
