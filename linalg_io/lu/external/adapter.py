"""The two kinds of adapter for another library's LU (see `linalg_io.lu.external`).

An in-process adapter module defines `find(path) -> str` (the library to load:
`--NAME PATH`, else the usual names; EnvironmentProblem, exit 3, saying what was looked
for) and `open_library(path) -> InProcessLU`. A program adapter is a `ProgramLU`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Factored:
    """One timed call: the library's own time (what it times is the adapter's `times`),
    this rank's seconds, and this rank's seconds per phase where the library has them."""

    library_s: float
    rank_s: float
    phases: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Checked:
    """The library's own acceptance test: its scaled residual, its verdict (as it prints
    it) and the norms it used."""

    scaled_residual: float
    verdict: str
    threshold: float
    details: dict[str, float] = field(default_factory=dict)


class InProcessLU(ABC):
    """A loaded library, called on every rank of one communicator."""

    name: str            # the --algo it serves
    label: str           # the library's name in tables ("HPL")
    version: str         # as the library or its build says it
    path: str            # the file loaded
    times: str           # what its own time covers
    phases: tuple[str, ...] = ()   # the names of Factored.phases, in order

    @abstractmethod
    def setup(self, comm, n: int, nb: int, pr: int, pc: int) -> None:
        """Collective: the Pr x Pc grid (row-major) over the mpi4py communicator and an
        N x N problem in NB x NB blocks."""

    @abstractmethod
    def prepare(self) -> None:
        """Collective, untimed: a fresh matrix before each factorization."""

    @abstractmethod
    def factor(self) -> Factored:
        """Collective: one factorization (with what the library times with it)."""

    @abstractmethod
    def check(self) -> Checked:
        """Collective: the library's acceptance test of the last factorization."""


@dataclass(frozen=True)
class ProgramRun:
    """One factorization as the program printed it."""

    n: int
    nb: int
    p: int
    q: int
    time_s: float
    gflops: float | None
    scaled_residual: float | None
    passed: bool | None


class ProgramLU(ABC):
    """A library run as its own MPI program, `factorizations` times in one launch."""

    label: str
    times: str

    @abstractmethod
    def find(self, path: str | None) -> str:
        """The program (EnvironmentProblem saying what was looked for)."""

    @abstractmethod
    def input_files(self, n: int, nb: int, p: int, q: int,
                    factorizations: int) -> dict[str, str]:
        """Files to write in its working directory: name -> text."""

    @abstractmethod
    def command(self, program: str, n: int, nb: int, p: int, q: int,
                factorizations: int) -> list[str]:
        """Its command line (without the MPI launcher)."""

    @abstractmethod
    def parse(self, workdir: str, stdout: str) -> list[ProgramRun]:
        """Its factorizations, in order, from its output files or stdout."""
