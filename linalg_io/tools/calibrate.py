"""`linalg-io calibrate`: fit the machine profile that every model's time prediction uses.

alpha (s per message) and beta (s per byte) come from the ping-pong one-way times
t(n) = alpha + beta n between ranks 0 and 1 (Hockney fit, see fit_alpha_beta); gamma is the
dgemm rate of one rank while every rank runs dgemm at once (the condition of a
trailing update), the median over ranks; mem_bw is the STREAM-like copy rate
(read + write bytes per second), again with every rank copying at once. The file is this
machine as a one-node machine (`linalg_io.models.profile`): the rates, its cores and its
memory, no network; every rank of a `--np P` run sits on it.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from linalg_io.errors import InputError
from linalg_io.models.memory import physical_memory
from linalg_io.models.profile import MachineProfile, this_machine_cores
from linalg_io.tools.hockney import fit_alpha_beta
from linalg_io.tools.pingpong import run_pingpong

GEMM_ORDER = 1024
COPY_BYTES = 64 * 2**20


def best_time(action, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        MPI.COMM_WORLD.Barrier()
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def dgemm_rate(order: int = GEMM_ORDER, repeats: int = 3) -> float:
    rng = np.random.default_rng(MPI.COMM_WORLD.Get_rank())
    a, b = rng.random((order, order)), rng.random((order, order))
    c = np.empty_like(a)
    seconds = best_time(lambda: np.matmul(a, b, out=c), repeats)
    return 2.0 * order**3 / seconds


def copy_bandwidth(nbytes: int = COPY_BYTES, repeats: int = 5) -> float:
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    seconds = best_time(lambda: np.copyto(dst, src), repeats)
    return 2.0 * src.nbytes / seconds


def calibrate(reps: int) -> dict | None:
    """Collective over COMM_WORLD; rank 0 returns the profile dict with the raw data."""
    world = MPI.COMM_WORLD
    rows, _ = run_pingpong(8, 16 * 2**20, reps)
    gamma = world.gather(dgemm_rate(), root=0)
    bandwidth = world.gather(copy_bandwidth(), root=0)
    if world.Get_rank() != 0:
        return None
    alpha, beta = fit_alpha_beta(rows)
    if beta <= 0:
        raise InputError("ping-pong fit gave a non-positive beta; rerun with more --reps")
    profile = MachineProfile(
        alpha_s=alpha, beta_s_per_byte=beta, gamma_flops=float(np.median(gamma)),
        mem_bw_bytes_per_s=float(np.median(bandwidth)),
        name=f"calibrated on {MPI.Get_processor_name()} with {world.Get_size()} ranks",
        nodes=1, cores_per_node=this_machine_cores(), memory_per_node_bytes=physical_memory(),
        note=("measured by linalg-io calibrate: ping-pong between ranks 0 and 1, dgemm "
              f"{GEMM_ORDER} and a copy on all {world.Get_size()} ranks at once"))
    return {"profile": profile, "pingpong": rows, "gamma_per_rank": gamma,
            "mem_bw_per_rank": bandwidth}


def main(args, argv: list[str]) -> int:
    from linalg_io.comm.agree import agreed

    world = MPI.COMM_WORLD
    result = agreed(world, lambda: calibrate(args.reps))
    if world.Get_rank() != 0:
        return 0
    profile = result["profile"]
    with open(args.write, "w", encoding="utf-8") as handle:
        handle.write(profile.to_json() + "\n")
    if not args.quiet:
        print(f"alpha  {profile.alpha_s * 1e6:10.3f} us per message")
        print(f"beta   {profile.beta_s_per_byte * 1e9:10.4f} ns per byte "
              f"({1 / profile.beta_s_per_byte / 1e9:.2f} GB/s)")
        print(f"gamma  {profile.gamma_flops / 1e9:10.2f} GFLOP/s per rank (dgemm {GEMM_ORDER}, "
              f"all {world.Get_size()} ranks at once)")
        print(f"mem_bw {profile.mem_bw_bytes_per_s / 1e9:10.2f} GB/s per rank (copy, all ranks)")
        print(f"wrote {args.write}")
    return 0
