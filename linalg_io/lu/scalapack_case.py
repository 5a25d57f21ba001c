"""The runner's case for `lu --algo scalapack`: the site's pdgetrf on the matrix `--algo 2d`
factors.

It is the 2D case (`linalg_io.lu.lu2d_case.LU2DCase`) with the factorization swapped: the
same source, seed, grid (PrxPc or the squarest), NB and block-cyclic local blocks,
so both factor identical matrices; each repetition restores the block and calls
pdgetrf (through `linalg_io.lu.scalapack`, on a BLACS grid over the same ranks,
row-major as Grid2D). Verification: pdgetrs solves A x = b for the 2D case's b, and
the same HPL scaled residual is computed from the untouched blocks.

Traffic: pdgetrf's messages go from BLACS to MPI directly, so the logical counter
sees none (`logical_unavailable`); the record's `traffic.wire` has what Open MPI
moved. There is no model block: the package has no model of ScaLAPACK's internal
broadcasts (ALGORITHMS.md quotes a fit).
"""

from __future__ import annotations

import os

import numpy as np
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.contract import RunConfig
from linalg_io.errors import InputError, SingularMatrixError
from linalg_io.launch.agree import agreed
from linalg_io.layout.layouts import Descriptor
from linalg_io.lu.hpl import hpl_verify_block
from linalg_io.lu.lu2d_case import LU2DCase
from linalg_io.lu.scalapack import ScaLAPACK, defining_file, find_library
from linalg_io.lu.solve2d import hpl_residual


class ScalapackCase(LU2DCase):
    algo = "scalapack"
    logical_unavailable = ("pdgetrf sends its messages from ScaLAPACK's BLACS straight to "
                           "MPI, past the package's counting communicator")

    def __init__(self, comm: CountedComm, config: RunConfig) -> None:
        if config.backend != "cpu":
            raise InputError("lu --algo scalapack runs on the CPU only; use --backend cpu")
        path = config.options.get("scalapack_lib")
        self.scalapack = agreed(comm.comm, lambda: ScaLAPACK(find_library(path)))
        from threadpoolctl import threadpool_limits

        threadpool_limits(config.threads)   # the BLAS ScaLAPACK loaded, too
        super().__init__(comm, config)
        n, nb, pr, pc = self.lu_params.n, self.lu_params.nb, self.grid.pr, self.grid.pc
        self.blacs_comm = comm.comm.Dup()
        self.context = self.scalapack.grid(self.blacs_comm, pr, pc)
        self.descriptor = Descriptor(n, n, nb, nb, pr, pc)
        self.desc = self.descriptor.array(self.context, comm.rank)
        self.ipiv = np.zeros(self.a.shape[0] + nb, dtype=np.int32)
        self.params["scalapack_lib"] = defining_file(self.scalapack.lib.pdgetrf_)
        self.params["scalapack_blas"] = self.scalapack.blas

    def run(self) -> None:
        info = self.scalapack.getrf(self.a, self.desc, self.ipiv)
        if info > 0:
            raise SingularMatrixError(f"matrix is singular: pdgetrf INFO = {info} "
                                      f"(U[{info - 1}, {info - 1}] = 0)")
        if info < 0:
            raise RuntimeError(f"pdgetrf rejected argument {-info}")

    def verify(self) -> dict:
        """pdgetrs for b (an N x 1 block-cyclic column on process column 0), x gathered
        everywhere, the HPL residual from the original blocks."""
        n, nb = self.lu_params.n, self.lu_params.nb
        rows = self.descriptor.layout().local_indices(self.grid.comm.rank)[0]
        column = Descriptor(n, 1, nb, nb, self.grid.pr, self.grid.pc)
        holds_b = self.grid.mycol == 0   # b is one block column: process column 0
        b_local = np.zeros((max(1, len(rows)), 1), order="F")
        if holds_b:
            b_local[:len(rows), 0] = self.b[rows]
        info = self.scalapack.getrs(self.a, self.desc, self.ipiv, b_local,
                                    column.array(self.context, self.grid.comm.rank))
        if info != 0:
            raise RuntimeError(f"pdgetrs rejected argument {-info}")
        x = np.zeros(n)
        if holds_b:
            x[rows] = b_local[:len(rows), 0]
        self.blacs_comm.Allreduce(MPI.IN_PLACE, x)
        check = hpl_residual(self.grid, self.a_orig, x, self.b, self.lu_params)
        return hpl_verify_block(check.pop("scaled_residual"), **check)

    def model(self) -> None:
        return None

    def describe(self) -> str:
        return f"{super().describe()} lib={os.path.basename(self.params['scalapack_lib'])}"


def make_scalapack_case(comm: CountedComm, config: RunConfig) -> ScalapackCase:
    return ScalapackCase(comm, config)
