"""Every LU of `linalg-io lu` on the same matrix files, in one launch; rank 0 writes JSON.

argv[1]: a directory of .npy matrices; argv[2:]: the algorithms (2d, conflux,
scalapack, dropin). Each (algorithm, file) is one case built by the command's own
factory (`linalg_io.lu.case.make_case`, --dist file, --nb 16), factored once and
verified: {algo, file, passed, value} per case.
"""

import sys
from pathlib import Path

from _result import write_result
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.lu.case import make_case
from linalg_io.runner import RunConfig

OPTIONS = {"2d": {"algo": "2d"}, "conflux": {"algo": "conflux"},
           "scalapack": {"algo": "scalapack"},
           "dropin": {"algo": "conflux", "input_layout": "scalapack:16x16"}}

world = MPI.COMM_WORLD
results = []
for algo in sys.argv[2:]:
    for path in sorted(Path(sys.argv[1]).glob("*.npy")):
        options = {"n": None, "nb": 16, "grid": "auto", "mem": None, "objective": "time",
                   "scalapack_lib": None, "input_layout": None, "redist_mem": None,
                   "dist": "file", "file": str(path), **OPTIONS[algo]}
        if algo == "conflux":
            options["nb"] = "auto"
        case = make_case(CountedComm(world), RunConfig(command="lu", options=options))
        case.setup_rep()
        case.run()
        verify = world.bcast(case.verify(), root=0)   # as the runner: rank 0's block
        results.append({"algo": algo, "file": path.name, "passed": bool(verify["passed"]),
                        "value": float(verify["value"])})
if world.rank == 0:
    write_result(results)
