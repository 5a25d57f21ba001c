"""The links a run spans, measured at its start: what an auto choice needs where the
machine file says nothing of the network.

A run whose ranks sit on several nodes, with a machine profile that has no `inter_node`
(the shipped one, or a one-node `calibrate` file), would otherwise price every message
at the on-node rates and pick as if the network were shared memory. `probe_links`
measures instead, with `calibrate`'s own ping-pong (`pair_pingpong`) and fits
(`fit_network`, `fit_alpha_beta`) on a short schedule: PROBE_SIZES, the best of one
warm-up and PROBE_REPS timed rounds, PROBE_SMALL_TRIPS round trips of the small message
and one of each large one. Between rank 0 and the first rank of another node it gives the
network's latency and bandwidth (the slope of t(n) between 1 and 3 MiB, as calibrate's);
between ranks 0 and 1 where they share node 0, the on-node alpha and beta. Its cost is
about 3 x (1 + 3) MiB x 2 directions over the link, plus 15 small round trips: 0.7 s
at 300 Mbit/s, 0.2 s at 1 Gbit/s (more on a loaded machine, whose round trips wait
for a core). One round of 1 and 2 MiB gave 60 MB/s on a 37.5 MB/s link once on a
loaded machine (an inflated 1 MiB time flattens the slope): the wider spread and the best
of three rounds guard against that. Every figure is rank 0's (the ping-pong broadcasts
its times), so every rank fits the same numbers.

`with_links(profile, probe)` is the profile the run then takes: the network as a
cluster machine file would carry it (`calibrate.cluster_profile`), with
`links_per_node` 1 (the node's ranks share one link; the probe does not stream from
several ranks at once) and `overlap` true (InterNode's default; the 2.5D LU's
messages across nodes are blocking collectives, which its time model takes alike
either way), nodes that share one machine (an emulated cluster) sharing its cores
and memory as calibrate writes them. A machine file carrying the record's
`network_probe` figures makes the same choice.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from mpi4py import MPI

from linalg_io.comm.wire import node_names
from linalg_io.launch.node import boot_id
from linalg_io.models.profile import MachineProfile
from linalg_io.tools.calibrate import cluster_profile, fit_network, pair_pingpong
from linalg_io.tools.hockney import fit_alpha_beta

PROBE_SIZES = (8, 2**20, 3 * 2**20)
PROBE_REPS = 2           # timed rounds after the warm-up one; the best of all of them
PROBE_SMALL_TRIPS = 5     # round trips of the 8-byte message per round (its latency)


def probe_iterations(nbytes: int) -> int:
    """Round trips per round: PROBE_SMALL_TRIPS for the latency's message, one for the
    bandwidth's (each already lasts tens of ms on a shaped link)."""
    return PROBE_SMALL_TRIPS if nbytes < 2**16 else 1


@dataclass(frozen=True)
class LinkProbe:
    """What `probe_links` measured: the network's latency and bandwidth between ranks 0
    and `peer`, the on-node alpha and beta between ranks 0 and 1 (None where rank 1
    sits on another node), the layout it saw, and how long it took."""

    latency_s: float
    bandwidth_bytes_per_s: float
    peer: int                       # the first rank on another node than rank 0's
    intra_alpha_s: float | None
    intra_beta_s_per_byte: float | None
    nodes: int
    ranks_per_node: int             # rank 0's node's ranks
    nodes_per_machine: float        # nodes sharing one kernel (an emulated cluster: > 1)
    seconds: float                  # the probe's wall time on rank 0

    def record(self) -> dict:
        """The record's `network_probe` block (docs/records.md)."""
        return asdict(self)

    def describe(self) -> str:
        """The summary line's mention."""
        return (f"net=probed({self.latency_s * 1e6:.0f}us,"
                f"{self.bandwidth_bytes_per_s / 1e6:.1f}MB/s)")


def probe_links(world: MPI.Comm) -> LinkProbe | None:
    """The probe (module doc) over the ranks of `world`, collective; None, with no
    message beyond one allgather, where every rank sits on one node. A link too fast for
    two large messages to give a positive slope (an unshaped one, in noise) takes the
    largest message's rate, bytes over its one-way time."""
    names = node_names(world)
    nodes = len(set(names))
    if nodes == 1:
        return None
    start = MPI.Wtime()
    peer = next(rank for rank, name in enumerate(names) if name != names[0])
    inter = pair_pingpong(0, peer, PROBE_REPS, PROBE_SIZES, probe_iterations, world)
    latency, beta = fit_network(inter)
    if beta <= 0:
        beta = inter[-1]["one_way_s"] / inter[-1]["bytes"]
    alpha = intra_beta = None
    if names[1] == names[0]:
        alpha, intra_beta = fit_alpha_beta(
            pair_pingpong(0, 1, PROBE_REPS, PROBE_SIZES, probe_iterations, world))
    kernels = len(set(world.allgather(boot_id())))
    seconds = world.bcast(MPI.Wtime() - start, root=0)
    return LinkProbe(latency_s=latency, bandwidth_bytes_per_s=1.0 / beta, peer=peer,
                     intra_alpha_s=alpha, intra_beta_s_per_byte=intra_beta, nodes=nodes,
                     ranks_per_node=names.count(names[0]), nodes_per_machine=nodes / kernels,
                     seconds=seconds)


def with_links(profile: MachineProfile, probe: LinkProbe | None) -> MachineProfile:
    """`profile` with the probed links (module doc); `profile` itself without a probe."""
    if probe is None:
        return profile
    if probe.intra_alpha_s is not None and probe.intra_beta_s_per_byte > 0:
        profile = replace(profile, alpha_s=probe.intra_alpha_s,
                          beta_s_per_byte=probe.intra_beta_s_per_byte)
    return replace(cluster_profile(profile, probe.latency_s, probe.bandwidth_bytes_per_s,
                                   probe.ranks_per_node, probe.nodes, probe.nodes_per_machine,
                                   1, True, "network measured at the run's start"),
                   name=f"{profile.name}, network probed at start-up")
