"""HPL as its own MPI program: xhpl (`make hpl` builds it beside the library), its input
file and its output, as a `ProgramLU` adapter.

HPCC's HPL reads hpccinf.txt and appends to hpccoutf.txt in its working directory
(netlib's reads HPL.dat and writes where HPL.dat says: HPL.out): both input names
are written, both outputs read. Per factorization HPL prints

  WR11C2R4   N  NB  P  Q   Time   Gflops
  ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   0.0038 ...... PASSED
"""

from __future__ import annotations

import os
import re

from linalg_io.errors import EnvironmentProblem
from linalg_io.lu.external.adapter import ProgramLU, ProgramRun
from linalg_io.lu.external.hpl_dat import hpl_dat
from linalg_io.lu.external.hpl_lib import INSTALL_HINT, TIMES, default_location

OUTPUTS = ("hpccoutf.txt", "HPL.out")
_RESULT = re.compile(r"^W\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.eE+-]+)")
_RESIDUAL = re.compile(r"^\|\|Ax-b\|\|_oo/.*=\s*([\d.eE+-]+)\s*\.+\s*(PASSED|FAILED)")


class HPLProgram(ProgramLU):
    label = "HPL"
    times = TIMES

    def find(self, path: str | None) -> str:
        if path:
            candidate = os.path.join(path, "xhpl") if os.path.isdir(path) else path
            if not os.access(candidate, os.X_OK):
                raise EnvironmentProblem(f"xhpl {path}: no such program")
            return candidate
        beside = os.path.join(os.path.dirname(default_location()), "xhpl")
        if os.access(beside, os.X_OK):
            return beside
        raise EnvironmentProblem(f"xhpl not found (looked for {beside}); {INSTALL_HINT}")

    def input_files(self, n: int, nb: int, p: int, q: int,
                    factorizations: int) -> dict[str, str]:
        text = hpl_dat([n] * factorizations, nb, p, q)
        return {"hpccinf.txt": text, "HPL.dat": text}

    def command(self, program: str, n: int, nb: int, p: int, q: int,
                factorizations: int) -> list[str]:
        return [program]

    def parse(self, workdir: str, stdout: str) -> list[ProgramRun]:
        text = stdout
        for name in OUTPUTS:
            path = os.path.join(workdir, name)
            if os.path.isfile(path):
                with open(path) as handle:
                    text = handle.read()
        return parse_output(text)


def parse_output(text: str) -> list[ProgramRun]:
    """Every factorization HPL reported, with its residual check when it ran one."""
    runs: list[ProgramRun] = []
    for line in text.splitlines():
        result = _RESULT.match(line)
        if result:
            n, nb, p, q = (int(g) for g in result.groups()[:4])
            runs.append(ProgramRun(n, nb, p, q, float(result.group(5)), float(result.group(6)),
                                   None, None))
            continue
        residual = _RESIDUAL.match(line.strip())
        if residual and runs:
            last = runs[-1]
            runs[-1] = ProgramRun(last.n, last.nb, last.p, last.q, last.time_s, last.gflops,
                                  float(residual.group(1)), residual.group(2) == "PASSED")
    return runs
