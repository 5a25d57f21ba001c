"""Waits on a crowded node (every rank on one core): the policy the runner picks, the CPU
time of ranks waiting in the package's bcast while rank 0 computes, and exact counts of
the polite Recv and Sendrecv. Rank 0 writes every rank's figures."""

import time

import numpy as np
from _result import write_result
from mpi4py import MPI

from linalg_io.comm import collectives
from linalg_io.comm.counting import CountedComm
from linalg_io.comm.waiting import wait_policy
from linalg_io.launch.node import kernel_crowded

world = MPI.COMM_WORLD
rank = world.Get_rank()
policy = wait_policy(kernel_crowded(world, 1))
comm = CountedComm(world, waits=policy)
WORK_CPU_S = 0.5


def busy(cpu_seconds: float) -> None:
    """Compute until this process has used `cpu_seconds` more of CPU time."""
    end = time.process_time() + cpu_seconds
    x = np.ones(64)
    while time.process_time() < end:
        x = x * 1.0000001


mine = {"polite": policy.polite}
world.Barrier()
data = np.arange(5000, dtype=np.float64) if rank == 0 else np.zeros(5000)
wall, cpu = time.perf_counter(), time.process_time()
if rank == 0:
    busy(WORK_CPU_S)
collectives.bcast(comm, data, 0)
mine.update(wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu,
            bcast_ok=bool(np.array_equal(data, np.arange(5000))),
            bcast_recv=comm.counter.bytes_recv)
comm.counter.reset()

# Recv counts the bytes the status says arrived (5 doubles into room for 10)
if rank == 0:
    comm.Send(np.full(5, 7.0), 1, tag=5)
elif rank == 1:
    room = np.zeros(10)
    comm.Recv(room, 0, tag=5)
    mine["recv_ok"] = bool(np.array_equal(room[:5], np.full(5, 7.0)) and not room[5:].any())
# Sendrecv between ranks 1 and 2: 3 doubles out, 4 in
if rank in (1, 2):
    partner = 3 - rank
    incoming = np.zeros(4)
    comm.Sendrecv(np.full(3 if rank == 1 else 4, float(rank)), partner, 6, incoming, partner, 6)
    mine["sendrecv_in"] = incoming.tolist()
mine.update(sent=comm.counter.bytes_sent, recv=comm.counter.bytes_recv,
            msgs=comm.counter.msgs_sent)
everyone = world.gather(mine, root=0)
if rank == 0:
    write_result(everyone)
