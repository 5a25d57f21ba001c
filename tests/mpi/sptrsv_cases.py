"""Many SpTRSV cases in one launch: residual, agreement with SciPy, measured traffic vs model.

argv: a JSON list of [matrix, upper, nrhs, algo, partition], then optionally the
backend (cpu or gpu; default cpu). Each case runs two
repetitions; rank 0 writes one entry per case with every rank's measured and modelled
bytes sent/received and messages (per repetition).
"""

import json
import sys

import numpy as np
from _result import write_result
from linalg_io.models.sptrsv import sptrsv_costs
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.contract import RunConfig
from linalg_io.sptrsv.case import make_case

REPS = 2


def one_case(world: MPI.Comm, backend: str, matrix: str, upper: bool, nrhs: int, algo: str,
             partition: str) -> dict:
    counted = CountedComm(world)
    options = {"matrix": matrix, "upper": upper, "nrhs": nrhs, "algo": algo,
               "partition": partition, "tril": False}
    case = make_case(counted, RunConfig(command="sptrsv", options=options, reps=REPS,
                                                   backend=backend))
    counted.counter.reset()
    for _ in range(REPS):
        case.setup_rep()
        world.Barrier()
        case.run()
    counted.counter.settle_one_sided(world)
    counter = counted.counter
    measured = np.array([counter.bytes_sent, counter.bytes_recv, counter.msgs_sent]) / REPS
    costs = sptrsv_costs(case.lower.indptr, case.lower.indices, case.levels, case.owner,
                         world.Get_size(), nrhs, algo)
    verify = case.verify()
    case.executor.close()
    everyone = world.gather(measured.tolist(), root=0)
    return {"case": [matrix, upper, nrhs, algo, partition], "verify": verify,
            "levels": case.params["levels"],
            "measured": everyone,
            "model": np.stack([costs.bytes_sent, costs.bytes_recv, costs.msgs_sent],
                              axis=1).tolist()}


def main() -> None:
    world = MPI.COMM_WORLD
    backend = sys.argv[2] if len(sys.argv) > 2 else "cpu"
    results = [one_case(world, backend, *spec) for spec in json.loads(sys.argv[1])]
    if world.Get_rank() == 0:
        write_result(results)


main()
