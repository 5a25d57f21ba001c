"""Many tsgemm cases in one MPI launch: measured traffic per rank, model, verification.

argv: JSON list of option dicts (variant, m, n, k, dtype, order, dist). For each case
rank 0 writes the measured per-rank bytes sent/received and messages (counting
communicator, one repetition), the model's per-rank arrays, and the check.
"""
import json
import sys

import numpy as np
from _result import write_result
from linalg_io.models import tsgemm as model
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.contract import RunConfig
from linalg_io.tsgemm.case import make_case

world = MPI.COMM_WORLD
results = []
for options in json.loads(sys.argv[1]):
    comm = CountedComm(world)
    config = RunConfig(command="tsgemm", options=dict(options), threads=options.get("threads", 1),
                       seed=7)
    case = make_case(comm, config)
    case.setup_rep()
    comm.counter.reset()
    case.run()
    mine = [comm.counter.bytes_sent, comm.counter.bytes_recv, comm.counter.msgs_sent]
    measured = world.gather(mine, root=0)
    check = case.verify()
    costs, _ = model.rank_costs(case.variant, case.m, case.n, case.k, world.Get_size(),
                                case.dtype.itemsize, case.dist)
    if world.Get_rank() == 0:
        measured = np.array(measured)
        results.append({
            "options": options, "dist": case.dist, "kernel": case.local_kernel,
            "sent": measured[:, 0].tolist(), "recv": measured[:, 1].tolist(),
            "msgs": measured[:, 2].tolist(),
            "model_sent": costs.bytes_sent.tolist(), "model_recv": costs.bytes_recv.tolist(),
            "model_msgs": costs.msgs_sent.tolist(), "verify": check,
        })
if world.Get_rank() == 0:
    write_result(results)
