"""`linalg-io calibrate`: fit the machine profile that every model's time prediction uses.

alpha (s per message) and beta (s per byte) come from the ping-pong one-way times
t(n) = alpha + beta n between ranks 0 and 1 (Hockney fit, see fit_alpha_beta); gamma is the
dgemm rate of one rank while every rank runs dgemm at once (the condition of a
trailing update; at most as many ranks as the machine has cores, `computes_at_once`),
the median over ranks; mem_bw is the STREAM-like copy rate
(read + write bytes per second), again with every rank copying at once; and a rank's
local kernels relative to its gamma (`linalg_io.tools.kernel_rates`): the trailing
update's dgemm at k = 64, 128, 256, the curve's `gemm_k_half` fitted to the ranks'
medians, and a panel's getrf, `panel_rate` (the median). All at one thread per rank;
with `--threads T` (T > 1) again at T threads per rank, on as many ranks of the machine
as have T cores each (`computes_at_once`), written under `at_threads` with
threads_per_rank T (`linalg_io.models.profile`). The file is this
machine as a one-node machine (`linalg_io.models.profile`): the rates, its cores and its
memory, no network; every rank of a `--np P` run sits on it.

Launched across several nodes (ranks with different processor names, in blocks of the
same size per node), it measures the network too and writes a cluster machine file:
alpha, beta from a ping-pong between two ranks of node 0 (so it needs two ranks on a
node), `inter_node.latency_s` and `bandwidth_bytes_per_s` from a ping-pong between rank
0 and the first rank of the next node (one link's rate; `fit_network`), and
`links_per_node` from the node's ranks sharing it: every rank of node 0 streams to its
counterpart on node 1 at once; their total rate over one stream's, rounded, at least 1
(1: one link the ranks share); `overlap` from a message sent while both ends compute
and test it between pieces of the work, as the 2D LU's panel broadcast is
(`overlap_share`: true where at least half of it moves meanwhile; over TCP it moves only
inside MPI calls and, between them, as far as the kernel's socket buffers take it).
For the sparse triangular solve (`linalg_io.tools.calibrate_trips`): `onesided_trip_s`,
the one-way trip of a put-with-signal between ranks 0 and 1 (and across nodes, between
rank 0 and the next node's first rank, `inter_node.onesided_trip_s`), as the sync-free
solve pushes a batch; `wake_s`, what a message between ranks 0 and 1 pinned to one
core, waiting by test and yield, takes over alpha (0 at least): the wake-up of the
waiting rank where ranks share cores; `send_cpu_s` and `recv_cpu_s`, the CPU seconds
the level-set solve's executor spends on a batch at its sender (pack, Isend) and at
its receiver (Irecv, Waitall), from rank 0 to rank 1 (and the sender's from rank 0 to
the next node's first rank, `inter_node.send_cpu_s`: over TCP the Isend writes the
message into its socket inside the call, several times the on-node call's seconds).
Nodes that share one kernel (an emulated cluster: bench/emulated_cluster.sh) share its
cores and memory: cores_per_node and memory_per_node_bytes are then this machine's over
those nodes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from mpi4py import MPI

from linalg_io.comm.waiting import IDLE
from linalg_io.comm.wire import node_names
from linalg_io.errors import InputError
from linalg_io.launch.node import boot_id
from linalg_io.models.memory import physical_memory
from linalg_io.models.profile import InterNode, MachineProfile, ThreadRates, this_machine_cores
from linalg_io.models.rates import LocalRates
from linalg_io.tools.calibrate_trips import batch_calls, put_signal_trip, shared_core_trip
from linalg_io.tools.hockney import fit_alpha_beta
from linalg_io.tools.kernel_rates import (
    PANEL_COLUMNS,
    PANEL_ROWS,
    TIMINGS,
    UPDATE_KS,
    UPDATE_ORDER,
    fit_k_half,
    panel_share,
    update_shares,
)
from linalg_io.tools.pingpong import message_sizes, run_pingpong

GEMM_ORDER = 1024
COPY_BYTES = 64 * 2**20
STREAM_BYTES = 16 * 2**20    # each message of the shared-link stream
ROUND_BYTES = 4e7            # bytes a ping-pong round moves each way, at most
OVERLAP_TEST_S = 2e-3        # how often overlap_share tests (an update's column chunk)


def fit_network(rows: list[dict]) -> tuple[float, float]:
    """The network's Hockney fit: alpha as `fit_alpha_beta`; beta the least-squares slope
    of t(n) over messages >= 1 MiB (TCP reaches its rate only on large messages, so the
    median of (t - alpha)/n over smaller ones would understate the link)."""
    alpha = fit_alpha_beta(rows)[0]
    large = [r for r in rows if r["bytes"] >= 2**20]
    if len(large) < 2:
        raise InputError("calibrate needs two ping-pong sizes >= 1 MiB for the network")
    slope = np.polyfit([r["bytes"] for r in large], [r["one_way_s"] for r in large], 1)[0]
    return alpha, float(slope)


def best_time(action, repeats: int) -> float:
    """The least seconds of `repeats` timed calls of `action`, each after a barrier (the
    measuring ranks at once) and one untimed call: the barrier's wait sleeps, and the
    first call after it wakes the BLAS pool's threads (a multithreaded rank's rates
    measured low and unsteady so), while a run's kernels follow one another with the
    pool awake."""
    best = float("inf")
    for _ in range(repeats):
        idle_barrier()
        action()
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def idle_barrier(comm: MPI.Comm | None = None) -> None:
    """A barrier that sleeps while it waits (`linalg_io.comm.waiting.IDLE`):
    ranks that only keep the barriers (nodes sharing one machine's cores) must not take
    the cores of the ranks measuring, as an MPI barrier's busy poll does (it halves a
    dgemm's rate on a shared core)."""
    IDLE.barrier(comm or MPI.COMM_WORLD)


def dgemm_rate(order: int = GEMM_ORDER, repeats: int = 3, busy: bool = True) -> float | None:
    """Flop/s of a dgemm of `order` (None on a rank that only keeps the barriers)."""
    if not busy:
        best_time(lambda: None, repeats)
        return None
    rng = np.random.default_rng(MPI.COMM_WORLD.Get_rank())
    a, b = rng.random((order, order)), rng.random((order, order))
    c = np.empty_like(a)
    seconds = best_time(lambda: np.matmul(a, b, out=c), repeats)
    return 2.0 * order**3 / seconds


def copy_bandwidth(nbytes: int = COPY_BYTES, repeats: int = 5, busy: bool = True) -> float | None:
    """Read + write bytes/s of a copy (None on a rank that only keeps the barriers)."""
    if not busy:
        best_time(lambda: None, repeats)
        return None
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    seconds = best_time(lambda: np.copyto(dst, src), repeats)
    return 2.0 * src.nbytes / seconds


def calibrate_iterations(nbytes: int) -> int:
    """Round trips per ping-pong round of `calibrate`: ROUND_BYTES each way, 3 to 1000."""
    return int(max(3, min(1000, ROUND_BYTES // nbytes)))


def pair_pingpong(a: int, b: int, reps: int, sizes: Sequence[int] | None = None,
                  iterations: Callable[[int], int] = calibrate_iterations,
                  world: MPI.Comm | None = None) -> list[dict]:
    """One-way times between ranks a and b of `world` (default COMM_WORLD; as
    `linalg-io pingpong` between 0 and 1: the best of `reps` rounds of
    `iterations(bytes)` round trips per size, `sizes` default 8 B to 16 MiB), rank a's
    figures on every rank; the other ranks wait at the barriers."""
    world = world or MPI.COMM_WORLD
    rank, rows = world.Get_rank(), []
    for nbytes in sizes or message_sizes(8, 16 * 2**20):
        buf = np.zeros(nbytes, dtype=np.uint8)
        iters = iterations(nbytes)
        best = float("inf")
        for _ in range(reps + 1):          # the first round warms the connection up
            idle_barrier(world)
            start = MPI.Wtime()
            for _ in range(iters):
                if rank == a:
                    world.Send(buf, b, 7)
                    world.Recv(buf, b, 8)
                elif rank == b:
                    world.Recv(buf, a, 7)
                    world.Send(buf, a, 8)
            best = min(best, (MPI.Wtime() - start) / iters / 2)
        idle_barrier(world)
        rows.append({"bytes": nbytes, "one_way_s": world.bcast(best, root=a)})
    return rows


def shared_link_rate(senders: list[int], receivers: list[int], reps: int) -> float:
    """Bytes/s of all `senders` streaming STREAM_BYTES messages to their `receivers` at
    once (the best of `reps` rounds, each ROUND_BYTES per stream), on every rank."""
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    buf = np.zeros(STREAM_BYTES, dtype=np.uint8)
    iters = int(max(2, ROUND_BYTES // STREAM_BYTES))
    best = float("inf")
    for _ in range(reps + 1):
        idle_barrier()
        start = MPI.Wtime()
        for _ in range(iters):
            if rank in senders:
                world.Send(buf, receivers[senders.index(rank)], 9)
            elif rank in receivers:
                world.Recv(buf, senders[receivers.index(rank)], 9)
        idle_barrier()
        best = min(best, MPI.Wtime() - start)
    return len(senders) * iters * STREAM_BYTES / best


def overlap_share(a: int, b: int, reps: int) -> float:
    """How much of a STREAM_BYTES message from rank a to rank b moves while both compute
    (on every rank), as the 2D LU's panel broadcast does: both post it (Isend, Irecv),
    compute, and test it every OVERLAP_TEST_S seconds of the work (as the update tests
    its broadcasts between column chunks), then wait. The best over `reps` rounds of
    (t_send + t_compute - t_both) / t_send, computing as long as the send alone takes;
    1: the transfer hides behind the computation, 0: it waits for the wait (a message
    over TCP moves only inside MPI calls, and between them as far as the kernel's socket
    buffers take it)."""
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    buf = np.zeros(STREAM_BYTES, dtype=np.uint8)
    work = np.ones((256, 256))

    def compute(seconds: float, request: MPI.Request) -> None:
        end = time.perf_counter() + seconds
        while (now := time.perf_counter()) < end:
            piece = min(end, now + OVERLAP_TEST_S)
            while time.perf_counter() < piece:
                work @ work
            request.Test()

    best = 0.0
    for _ in range(reps + 1):
        idle_barrier()
        start = MPI.Wtime()
        if rank == a:
            world.Send(buf, b, 10)
        elif rank == b:
            world.Recv(buf, a, 10)
        alone = world.bcast(MPI.Wtime() - start, root=b)
        idle_barrier()
        start = MPI.Wtime()
        if rank in (a, b):
            request = world.Isend(buf, b, 11) if rank == a else world.Irecv(buf, a, 11)
            compute(alone, request)
            request.Wait()
        both = world.bcast(MPI.Wtime() - start, root=b)
        best = max(best, (2 * alone - both) / alone)
    return float(min(1.0, max(0.0, best)))


def network(reps: int) -> dict | None:
    """The on-node and network rates of a job across nodes (module doc), on every rank;
    None on one node. InputError where the nodes hold unequal blocks or no node has two
    ranks."""
    world = MPI.COMM_WORLD
    names = node_names(world)
    nodes = list(dict.fromkeys(names))
    if len(nodes) == 1:
        return None
    members = [[r for r, name in enumerate(names) if name == node] for node in nodes]
    per_node = len(members[0])
    blocks = all(m == list(range(i * per_node, (i + 1) * per_node))
                 for i, m in enumerate(members))
    if not blocks or per_node < 2:
        raise InputError("calibrate across nodes needs the same number (>= 2) of ranks on "
                         f"every node, in blocks of consecutive ranks; got {len(members)} "
                         f"nodes with {[len(m) for m in members]} ranks")
    intra = pair_pingpong(0, 1, reps)
    inter = pair_pingpong(0, per_node, reps)
    one = shared_link_rate([0], [per_node], reps)
    shared = shared_link_rate(members[0], members[1], reps)
    overlap = overlap_share(0, per_node, reps)
    onesided = put_signal_trip(0, per_node, reps)
    send_across = batch_calls(0, per_node, reps)[0]
    kernels = len(set(world.allgather(boot_id())))
    return {"intra": intra, "inter": inter, "one_stream_Bps": one, "shared_Bps": shared,
            "overlap": overlap, "onesided_trip_s": onesided, "send_cpu_s": send_across,
            "per_node": per_node, "nodes": len(nodes), "nodes_per_machine": len(nodes) / kernels}


def network_profile(base: MachineProfile, net: dict, at_once: int) -> MachineProfile:
    """`base` (fitted on the on-node ping-pong, dgemm and copy on `at_once` ranks) as a
    cluster, the network from the others (module doc)."""
    links = int(min(net["per_node"], max(1, round(net["shared_Bps"] / net["one_stream_Bps"]))))
    sharing = net["nodes_per_machine"]
    latency, inter_beta = fit_network(net["inter"])
    if inter_beta <= 0:
        raise InputError("ping-pong fit gave a non-positive beta; rerun with more --reps")
    profile = cluster_profile(
        base, latency, 1.0 / inter_beta, net["per_node"], net["nodes"], sharing, links,
        net["overlap"] >= 0.5,
        note=("measured by linalg-io calibrate: on-node ping-pong between ranks 0 and 1, "
              f"network ping-pong between ranks 0 and {net['per_node']}, node 0's "
              f"{net['per_node']} ranks streaming to node 1 at once "
              f"({net['shared_Bps'] / 1e6:.1f} MB/s against one stream's "
              f"{net['one_stream_Bps'] / 1e6:.1f}), {net['overlap']:.0%} of a message "
              "moving while both ends compute and test it, "
              f"dgemm {GEMM_ORDER} and a copy on "
              f"{at_once} ranks at once" + (f"; {sharing:g} nodes share one machine's cores and "
                                  "memory" if sharing > 1 else "")))
    return replace(profile, inter_node=replace(profile.inter_node,
                                               onesided_trip_s=net["onesided_trip_s"],
                                               send_cpu_s=net["send_cpu_s"]))


def cluster_profile(base: MachineProfile, latency: float, bandwidth: float, per_node: int,
                    nodes: int, nodes_per_machine: float, links: int, overlap: bool,
                    note: str) -> MachineProfile:
    """`base` as a cluster of `nodes` nodes of `per_node` ranks whose network has
    `latency` (s) and `bandwidth` (bytes/s per link), `links` per node and `overlap` as
    `InterNode`; nodes that share one machine (`nodes_per_machine` > 1) share its cores
    and memory (module doc)."""
    return replace(
        base, name=f"calibrated on {nodes} nodes x {per_node} ranks",
        ranks_per_node=per_node, nodes=nodes,
        cores_per_node=max(1, int(this_machine_cores() // nodes_per_machine)),
        memory_per_node_bytes=physical_memory() / nodes_per_machine,
        inter_node=InterNode(latency_s=latency, bandwidth_bytes_per_s=bandwidth,
                             links_per_node=links, overlap=overlap),
        note=note)


def computes_at_once(world: MPI.Comm, threads: int = 1) -> bool:
    """Whether this rank takes part in the dgemm and copy measurements at `threads`
    threads per rank: every rank, unless the machine holds more ranks x threads than
    cores (nodes sharing one machine, or T threads per rank), then the first
    cores / threads ranks of the machine, so the rates stay those of a rank on its own
    cores (collective)."""
    kernel = boot_id()
    same_kernel = [r for r, k in enumerate(world.allgather(kernel)) if k == kernel]
    return same_kernel.index(world.Get_rank()) < max(1, this_machine_cores() // threads)


def rates_at(world: MPI.Comm, threads: int
             ) -> tuple[list[float], list[float], LocalRates | None]:
    """(dgemm flop/s, copy bytes/s) of each measuring rank at `threads` BLAS threads
    per rank (`computes_at_once`), and their local kernels' rates relative to gamma
    (`local_rates`), on rank 0 (collective; the other ranks' None)."""
    from threadpoolctl import threadpool_limits

    busy = computes_at_once(world, threads)
    with threadpool_limits(limits=threads):
        own = dgemm_rate(busy=busy)
        gamma = [g for g in world.gather(own, root=0) or [] if g]
        bandwidth = [b for b in world.gather(copy_bandwidth(busy=busy), root=0) or [] if b]
        shares = [s for s in world.gather(kernel_shares(own), root=0) or [] if s]
    return gamma, bandwidth, local_rates(shares) if shares else None


def kernel_shares(gamma: float | None, repeats: int = 3) -> tuple | None:
    """(the update's dgemm at each k of UPDATE_KS, the panel's getrf) over this rank's
    own `gamma` (`linalg_io.tools.kernel_rates`), every rank at once; None on a rank
    that only keeps the barriers (gamma None), which keeps as many."""
    def timed(action) -> float:
        return best_time(action, repeats)

    if gamma is None:
        for _ in range(TIMINGS):
            timed(lambda: None)
        return None
    return tuple(update_shares(gamma, timed)), panel_share(gamma, timed)


def local_rates(shares: list[tuple]) -> LocalRates:
    """The machine file's local rates of the ranks' `kernel_shares`: the dgemm curve
    fitted to their median at each k, the median panel share."""
    updates = np.median([s[0] for s in shares], axis=0)
    return LocalRates(fit_k_half(UPDATE_KS, updates), float(np.median([s[1] for s in shares])))


def calibrate(reps: int, threads: int = 1) -> dict | None:
    """Collective over COMM_WORLD; rank 0 returns the profile dict with the raw data
    (module doc: the rates at one thread per rank, and at `threads` when more)."""
    world = MPI.COMM_WORLD
    net = network(reps)
    rows = run_pingpong(8, 16 * 2**20, reps)[0] if net is None else net["intra"]
    gamma, bandwidth, local = rates_at(world, 1)
    threaded = rates_at(world, threads) if threads > 1 else None
    onesided, shared_trip = put_signal_trip(0, 1, reps), shared_core_trip(0, 1, reps)
    send_cpu, recv_cpu = batch_calls(0, 1, reps)
    if world.Get_rank() != 0:
        return None
    alpha, beta = fit_alpha_beta(rows)
    if beta <= 0:
        raise InputError("ping-pong fit gave a non-positive beta; rerun with more --reps")
    profile = MachineProfile(
        alpha_s=alpha, beta_s_per_byte=beta, gamma_flops=float(np.median(gamma)),
        mem_bw_bytes_per_s=float(np.median(bandwidth)),
        onesided_trip_s=onesided, wake_s=max(0.0, shared_trip - alpha),
        send_cpu_s=send_cpu, recv_cpu_s=recv_cpu, local=local,
        name=f"calibrated on {MPI.Get_processor_name()} with {world.Get_size()} ranks",
        nodes=1, cores_per_node=this_machine_cores(), memory_per_node_bytes=physical_memory(),
        note=("measured by linalg-io calibrate: ping-pong between ranks 0 and 1, dgemm "
              f"{GEMM_ORDER}, the update's dgemm ({UPDATE_ORDER} x k x {UPDATE_ORDER}, k = "
              f"{', '.join(map(str, UPDATE_KS))}), getrf {PANEL_ROWS} x {PANEL_COLUMNS} "
              f"and a copy on {len(gamma)} ranks at once"
              + (f" at one thread and on {len(threaded[0])} ranks of {threads} threads"
                 if threaded else "")))
    if threaded:
        rates = (ThreadRates(1, profile.gamma_flops, profile.mem_bw_bytes_per_s, local),
                 ThreadRates(threads, float(np.median(threaded[0])),
                             float(np.median(threaded[1])), threaded[2]))
        profile = replace(profile, thread_rates=rates).at_threads(threads)
    if net is not None:
        profile = network_profile(profile, net, len(gamma))
    return {"profile": profile, "pingpong": rows, "gamma_per_rank": gamma,
            "mem_bw_per_rank": bandwidth, "network": net, "threaded": threaded}


def check_writable(path: str) -> None:
    """Before any measurement: InputError where the profile cannot be written to `path`."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"--write {path}: is a directory")
    folder = target.absolute().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK) \
            or (target.exists() and not os.access(target, os.W_OK)):
        raise InputError(f"--write {path}: cannot write there "
                         f"({'no such directory' if not folder.is_dir() else 'permission denied'})")


def main(args, argv: list[str]) -> int:
    from linalg_io.launch.agree import agreed

    world = MPI.COMM_WORLD
    agreed(world, lambda: world.Get_rank() == 0 and check_writable(args.write))
    result = agreed(world, lambda: calibrate(args.reps, args.threads))
    if world.Get_rank() != 0:
        return 0
    profile = result["profile"]
    with open(args.write, "w", encoding="utf-8") as handle:
        handle.write(profile.to_json() + "\n")
    if not args.quiet:
        print(f"alpha  {profile.alpha_s * 1e6:10.3f} us per message")
        print(f"beta   {profile.beta_s_per_byte * 1e9:10.4f} ns per byte "
              f"({1 / profile.beta_s_per_byte / 1e9:.2f} GB/s)")
        one = profile.at_threads(1)
        print(f"gamma  {one.gamma_flops / 1e9:10.2f} GFLOP/s per rank (dgemm {GEMM_ORDER}, "
              f"{len(result['gamma_per_rank'])} ranks at once)")
        print(f"mem_bw {one.mem_bw_bytes_per_s / 1e9:10.2f} GB/s per rank (copy, all ranks)")
        print(f"local  the update's dgemm on the curve of h = {one.local.k_half:.1f} "
              f"(k = 128: {float(one.local.gemm(128)):.2f} of gamma), the panel's getrf at "
              f"{one.local.panel:.2f} of gamma")
        across = profile.inter_node.onesided_trip_s if profile.inter_node else None
        print(f"put-with-signal {profile.onesided_trip_s * 1e6:.1f} us one way on a node"
              + (f", {across * 1e6:.1f} us across nodes" if across else "")
              + f"; wake-up {profile.wake_s * 1e6:.1f} us a message where two ranks share "
              "a core")
        across = profile.inter_node.send_cpu_s if profile.inter_node else None
        print(f"level-set batch calls {profile.send_cpu_s * 1e6:.2f} us at the sender (pack, "
              f"Isend), {profile.recv_cpu_s * 1e6:.2f} us at the receiver (Irecv, Waitall)"
              + (f"; {across * 1e6:.2f} us at the sender of a batch across nodes"
                 if across is not None else ""))
        if result["threaded"]:
            t, ranks = profile.threads_per_rank, len(result["threaded"][0])
            gain = profile.gamma_flops / one.gamma_flops
            print(f"at {t} threads per rank ({ranks} ranks at once): gamma "
                  f"{profile.gamma_flops / 1e9:.2f} GFLOP/s ({gain:.2f} x one thread's), "
                  f"mem_bw {profile.mem_bw_bytes_per_s / 1e9:.2f} GB/s, the update's dgemm "
                  f"curve h = {profile.local.k_half:.1f}, the panel's getrf at "
                  f"{profile.local.panel:.2f} of gamma")
        if profile.inter_node is not None:
            net, shared = profile.inter_node, result["network"]["shared_Bps"]
            print(f"inter-node latency {net.latency_s * 1e6:10.3f} us, bandwidth "
                  f"{net.bandwidth_bytes_per_s / 1e6:.1f} MB/s per link, "
                  f"{net.links_per_node} link(s) per node ({profile.ranks_per_node} ranks "
                  f"streaming at once: {shared / 1e6:.1f} MB/s), overlap "
                  f"{str(net.overlap).lower()} ({result['network']['overlap']:.0%} of a "
                  "message moves while both ends compute and test it)")
        print(f"wrote {args.write}")
    return 0
