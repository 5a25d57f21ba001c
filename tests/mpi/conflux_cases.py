"""Run several 2.5D LU cases in one launch; rank 0 writes a JSON list of results.

argv: cases "N:GRID:V:DIST[:corrupt]" (GRID PxxPyxC, or auto with V auto). For each:
factor once under a fresh traffic counter and the wire counter (Open MPI's monitoring,
when the MPI has it), verify (HPL residual), and compare the per-rank bytes and
messages, logical and wire, with models/conflux.py, given the pivots the run chose
(exact; and the bytes each rank sent and received in each phase) and a priori (pivots "none"
for diagdom, "uniform" otherwise; also "proportional", the even spread over the active rows
that "uniform" replaced). With ":corrupt", one L block is then perturbed by 1e-6 and
verified again
("verify_corrupted": the check must fail).
"""

import sys

import numpy as np
from _regions import counted_run
from _result import write_result
from linalg_io.models.conflux import PHASES, conflux_costs, conflux_plan_counts
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm
from linalg_io.comm.summary import traffic_summary
from linalg_io.comm.wire import open_wire
from linalg_io.contract import RunConfig
from linalg_io.lu.conflux_case import make_conflux_case

world = MPI.COMM_WORLD
wire = open_wire(world)
results = []
for spec in sys.argv[1:]:
    n, grid, v, dist, *corrupt = spec.split(":")
    counted = CountedComm(world)
    config = RunConfig(command="lu", options={"n": int(n), "grid": grid, "dist": dist,
                                              "nb": v if v == "auto" else int(v),
                                              "mem": None, "file": None})
    case = make_conflux_case(counted, config)
    case.setup_rep()
    _, elapsed = counted_run(counted, wire, case.run)
    elapsed = world.allreduce(elapsed, op=MPI.MAX)
    msgs = np.array(world.gather(counted.counter.msgs_sent, root=0) or [])
    phases_sent = world.gather(dict(counted.counter.sent_by_phase), root=0)
    phases_recv = world.gather(dict(counted.counter.recv_by_phase), root=0)
    traffic = traffic_summary(counted.counter, wire, world, 1)
    verify = case.verify()
    corrupted = None
    if corrupt:
        if world.rank == world.size - 1 and case.lu.factors.l_rows:
            case.lu.factors.l_rows[0][2][:] *= 1 + 1e-6
        corrupted = case.verify()
    if world.rank == 0:
        exact = conflux_costs(case.n, case.v, case.px, case.py, case.c, case.lu.pivots)
        apriori = conflux_costs(case.n, case.v, case.px, case.py, case.c,
                                case._pivot_assumption())
        proportional = conflux_costs(case.n, case.v, case.px, case.py, case.c, "proportional")
        measured = np.array(traffic["per_rank_bytes_sent"])
        by_phase = conflux_plan_counts(case.n, case.v, case.px, case.py, case.c, case.lu.pivots,
                                       by_phase=True)["by_phase"]
        phase_diff = max(abs(ranks[rank].get(phase, 0)
                             - float(by_phase[phase][key].reshape(-1)[rank]))
                         for phase in PHASES for key, ranks in (("sent", phases_sent),
                                                                ("recv", phases_recv))
                         for rank in range(world.size))
        results.append({
            "spec": spec, "grid": [case.px, case.py, case.c], "v": case.v, "time_s": elapsed,
            "verify": verify, "verify_corrupted": corrupted,
            "sent_max": float(measured.max()), "sent_mean": float(measured.mean()),
            "recv_max": traffic["bytes_recv"]["max"],
            "exact_bytes_diff": float(np.abs(measured - exact.bytes_sent).max()),
            "exact_msgs_diff": float(np.abs(msgs - exact.msgs_sent).max()),
            "exact_recv_max": float(exact.bytes_recv.max()),
            "wire_sent_diff": None if traffic["wire"] is None else float(np.abs(
                np.array(traffic["wire"]["per_rank_bytes_sent"]) - exact.wire()[0]).max()),
            "wire_recv_diff": None if traffic["wire"] is None else float(np.abs(
                np.array(traffic["wire"]["per_rank_bytes_recv"]) - exact.wire()[1]).max()),
            "wire_msgs_diff": None if traffic["wire"] is None else
            float(traffic["wire"]["msgs_sent"]["max"] - exact.wire()[2].max()),
            "apriori_max": float(apriori.bytes_sent.max()),
            "apriori_mean": float(apriori.bytes_sent.mean()),
            "apriori_rank_rel_err": float(np.max(np.abs(measured - apriori.bytes_sent)
                                                 / np.maximum(apriori.bytes_sent, 1.0))),
            "proportional_rank_rel_err": float(np.max(np.abs(measured / proportional.bytes_sent
                                                             - 1))),
            "by_phase": traffic["by_phase"],
            "exact_phase_bytes_diff": phase_diff,
        })
    counted.Barrier()
if world.rank == 0:
    write_result(results)
