"""HPL in this process: the library `make hpl` builds (hpl/build.sh: HPL's sources with
hpl/lio_hpl.c, against this venv's MPI and OpenBLAS), loaded with ctypes.

`find(path)` takes --hpl PATH (the library, or a directory holding it), else looks
for libhpl-linalg-io.so in this Python's prefix (lib/hpl/, where `make hpl` puts it),
then through ldconfig and LD_LIBRARY_PATH; none found is an EnvironmentProblem (exit 3)
naming what was looked for. `HPLLibrary` checks, as `linalg_io.lu.scalapack` does, that
the library's MPI calls reach the MPI mpi4py initialized.

Each step is HPL_pdtest's (HPL's testing/ptest): HPL_pdmatgen with HPL's seed, then
HPL_pdgesv between HPL's timers (the LU with its row swaps and the triangular solve
for x: what HPL times and counts as 2/3 N^3 + 3/2 N^2 flops), then HPL's residual check
||Ax-b||_oo / (eps (||A||_oo ||x||_oo + ||b||_oo) N) < 16 with HPL's eps (2^-53, half
NumPy's machine epsilon). HPL's detailed timers split this rank's time: panel (rfact:
the recursive panel factorization with its pivot exchanges), swap (laswp: row swaps and
the spread of U), update (the trailing update less laswp), solve (the triangular
solve); what is left (panel broadcasts waited for, look-ahead bookkeeping) is "other".
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

import numpy as np

from linalg_io.errors import EnvironmentProblem
from linalg_io.lu.external.adapter import Checked, Factored, InProcessLU
from linalg_io.lu.hpl import HPL_THRESHOLD

NAME = "libhpl-linalg-io.so"
INSTALL_HINT = ("run `make hpl` (Debian: builds HPL from hpcc's source against this venv's "
                "MPI and OpenBLAS), or build it with hpl/build.sh and give --hpl PATH")
PHASES = ("panel", "swap", "update", "solve")
TIMES = ("HPL_pdgesv: the LU factorization with its row swaps and the triangular solve "
         "for x, max over ranks (HPL's own timer)")
CHECK_FIELDS = ("r_inf", "a_inf", "a_1", "x_inf", "x_1", "b_inf", "eps", "info")


def default_location() -> str:
    return os.path.join(sys.prefix, "lib", "hpl", NAME)


def find(path: str | None) -> str:
    """The HPL library to load (EnvironmentProblem if there is none)."""
    if path:
        candidate = os.path.join(path, NAME) if os.path.isdir(path) else path
        if not os.path.isfile(candidate):
            raise EnvironmentProblem(f"--hpl {path}: no such file"
                                     + (f" ({NAME} not in that directory)"
                                        if os.path.isdir(path) else ""))
        return candidate
    if os.path.isfile(default_location()):
        return default_location()
    found = ctypes.util.find_library("hpl-linalg-io")
    if found:
        return found
    raise EnvironmentProblem(f"HPL not found (looked for {default_location()}, then {NAME} "
                             f"through ldconfig and LD_LIBRARY_PATH); {INSTALL_HINT}")


def open_library(path: str) -> HPLLibrary:
    return HPLLibrary(path)


def _address(function) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value


class HPLLibrary(InProcessLU):
    name = "hpl"
    label = "HPL"
    times = TIMES
    phases = PHASES

    def __init__(self, path: str) -> None:
        from mpi4py import MPI

        from linalg_io.lu.scalapack import defining_file

        try:
            self.lib = ctypes.CDLL(path)
            for symbol in ("lio_hpl_grid", "lio_hpl_factor", "HPL_pdgesv", "MPI_Comm_rank"):
                getattr(self.lib, symbol)
        except (OSError, AttributeError) as error:
            raise EnvironmentProblem(f"HPL {path} cannot be used: {error}") from None
        theirs, ours = self.lib.MPI_Comm_rank, ctypes.CDLL(MPI.__file__).MPI_Comm_rank
        if _address(theirs) != _address(ours):
            raise EnvironmentProblem(
                f"HPL {path} calls the MPI in {defining_file(theirs)}, but this process runs "
                f"{defining_file(ours)}: build HPL for the same MPI (hpl/build.sh with its mpicc)")
        self.path = os.path.realpath(path)
        self.blas = defining_file(self.lib.cblas_dgemm)
        self.lib.lio_hpl_version.restype = ctypes.c_char_p
        self.version = self.lib.lio_hpl_version().decode()
        handle = ctypes.c_int if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_int) \
            else ctypes.c_void_p
        self.lib.lio_hpl_grid.argtypes = [handle, ctypes.c_int, ctypes.c_int]
        self.lib.lio_hpl_allocate.argtypes = [ctypes.c_int, ctypes.c_int]
        self.lib.lio_hpl_factor.argtypes = [ctypes.c_void_p]
        self.lib.lio_hpl_check.argtypes = [ctypes.c_void_p]
        self._comm = None

    def setup(self, comm, n: int, nb: int, pr: int, pc: int) -> None:
        self.open_grid(comm, pr, pc)
        self.allocate(n, nb)

    def open_grid(self, comm, pr: int, pc: int) -> None:
        """Collective: HPL's Pr x Pc grid over `comm` (kept alive here) and HPL's eps."""
        from mpi4py import MPI

        self._comm = comm
        if self.lib.lio_hpl_grid(MPI._handleof(comm), pr, pc) != 0:
            raise RuntimeError(f"HPL's grid {pr}x{pc} could not be made on {comm.size} ranks")

    def allocate(self, n: int, nb: int) -> None:
        """Collective: HPL_pdtest's local A | b | x for N and NB."""
        status = self.lib.lio_hpl_allocate(n, nb)
        if status == -3:
            raise EnvironmentProblem(f"HPL could not allocate its N={n} matrix on some rank")
        if status != 0:
            raise RuntimeError(f"HPL's matrix N={n} NB={nb}: allocated already or no grid")

    def release(self) -> None:
        """Free the matrix (the grid stays)."""
        self.lib.lio_hpl_release()

    def prepare(self) -> None:
        self.lib.lio_hpl_generate()

    def factor(self) -> Factored:
        out = np.zeros(14)
        info = self.lib.lio_hpl_factor(out.ctypes.data)
        if info != 0:
            from linalg_io.errors import SingularMatrixError

            raise SingularMatrixError(f"HPL_pdgesv: matrix is singular (info = {info})")
        rpfact, _pfact, _mxswp, update, laswp, ptrsv = (float(t) for t in out[2:8])
        phases = {"panel": rpfact, "swap": laswp, "update": update - laswp, "solve": ptrsv}
        return Factored(float(out[0]), float(out[1]), phases if rpfact >= 0 else {})

    def check(self) -> Checked:
        out = np.zeros(1 + len(CHECK_FIELDS))
        self.lib.lio_hpl_check(out.ctypes.data)
        residual = float(out[0])
        return Checked(residual, "PASSED" if residual < HPL_THRESHOLD else "FAILED", HPL_THRESHOLD,
                       dict(zip(CHECK_FIELDS, (float(v) for v in out[1:]), strict=True)))
