"""Machine profile: the rates every time prediction uses, and where the ranks sit.

A profile JSON holds four rates (what `linalg-io calibrate` measures):
  alpha_s, beta_s_per_byte   latency and seconds per byte of a message between two ranks
                             of one node;
  gamma_flops                dgemm flop/s of one core (of one rank computing on one core);
  mem_bw_bytes_per_s         streaming-copy bytes/s of one core while every core streams.
Without more, the ranks share one node: this machine (its cores and memory), as every
local `--np P` run does.

Local rates (`local`, `linalg_io.models.rates.LocalRates`): the time models take a
rank's local kernels relative to its gamma: the dgemm at inner dimension k on the curve
of `gemm_k_half`, getrf and the triangular solves at `panel_rate` times gamma; both
optional, measured by `linalg-io calibrate` (the update's dgemm at k = 64, 128, 256 and
a panel's getrf), defaults GEMM_K_HALF = 64 and PANEL_RATE = 0.5 without them.

Threads per rank (`at_threads`): a rank of T threads computes at the rates of an
`at_threads` entry {"T": {gamma_flops, mem_bw_bytes_per_s, and optionally gemm_k_half,
panel_rate}} where the file has one (one rank's rates with its T threads, every rank at
once: `linalg-io calibrate --threads T`), else at T times one core's (each thread a
core at the rate one core keeps while every core is busy) and one thread's local rates.
`threads_per_rank` (default 1) is the threads of the machine's runs: what
`load_profile` returns the rates at and `model` predicts for without `--threads`; a
run's record takes its own `--threads`.

A *machine* file (`--machine`, schema in the README) is a
profile plus the layout of a cluster, for predictions of jobs that do not run here:
  ranks_per_node, cores_per_node, memory_per_node_bytes, nodes (the cluster's size),
  inter_node {latency_s, bandwidth_bytes_per_s, links_per_node, overlap}: the network
  between nodes; a node's ranks share its links; overlap (default true): whether a
  transfer moves while its ends compute and test it (`MachineProfile.overlaps`);
  threads_per_rank, at_threads: the threads of each rank and their rates (above);
  onesided_trip_s (and inter_node.onesided_trip_s across nodes): the one-way trip of
  a one-sided put-with-signal (Put, flush, Accumulate of a flag, flush; the partner
  polling the flag), as the sync-free SpTRSV pushes a batch;
  wake_s: what a message costs over alpha where two ranks share a core, the waiting
  one woken by the scheduler (>= 0; charged only where a job's ranks outnumber its
  cores);
  send_cpu_s, recv_cpu_s: the CPU seconds the level-set SpTRSV's executor spends on a
  batch at its sender (pack, Isend) and at its receiver (Irecv, Waitall) (>= 0);
  inter_node.send_cpu_s the sender's for a batch between nodes (over TCP the Isend
  writes the message to its socket inside the call);
  all optional, measured by `linalg-io calibrate`; without them the models charge
  what they did before (`linalg_io.models.sptrsv`);
  note, example: what the numbers are (shipped examples say they are examples).
On a GPU node a "core" is what a rank computes on (one GPU): gamma_flops and
mem_bw_bytes_per_s are then one GPU's, memory_per_node_bytes the GPUs' memory.

Ranks are placed on nodes in blocks of ranks_per_node consecutive world ranks (Slurm's
and mpiexec's default block placement). `link(span, p)` gives the latency and seconds per
byte of the messages of a communicator whose members lie in one aligned block of `span`
consecutive ranks (a process row of a row-major grid: span Pc; a process column: the
whole grid): on-node when ranks_per_node is a multiple of span, else the network's
latency and the link's seconds per byte times the ranks sharing it,
max(1, ranks_per_node / links_per_node).
`default_profile.json` beside this file was calibrated on the 2-core development machine;
`machine_example_cpu.json` and `machine_example_gpu.json` (`--machine example_cpu`,
`--machine example_gpu`) are examples of ordinary cluster nodes, marked as such;
`machine_piz_daint_mc.json` and `machine_lumi_c.json` are two published machines, from
their vendors' and centres' figures only (examples too: nothing measured there).
"""

from __future__ import annotations

import json
import os
from dataclasses import MISSING, asdict, dataclass, fields, replace
from pathlib import Path

from linalg_io.models.memory import physical_memory
from linalg_io.models.rates import DEFAULT_RATES, LocalRates

from linalg_io.errors import InputError

DEFAULT_PROFILE_PATH = Path(__file__).with_name("default_profile.json")


def this_machine_cores() -> int:
    """Cores this process may run on (its affinity)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class InterNode:
    """The network between nodes: latency, bandwidth of one link, links per node."""

    latency_s: float
    bandwidth_bytes_per_s: float
    links_per_node: int = 1
    # whether a transfer between nodes moves while both ends compute and test it
    # between pieces of the work, as the 2D's update does (a NIC that progresses it
    # itself; over TCP, socket buffers that keep the link busy between the tests);
    # false: a message the code overlaps with computation arrives after it
    overlap: bool = True
    # one-way seconds of a one-sided put-with-signal between two nodes (module doc);
    # None: not measured
    onesided_trip_s: float | None = None
    # the level-set executor's calls at the sender of a batch between two nodes (module
    # doc: send_cpu_s); None: not measured (send_cpu_s's)
    send_cpu_s: float | None = None


@dataclass(frozen=True)
class ThreadRates:
    """One rank's dgemm and copy rates with `threads` threads, every rank at once."""

    threads: int
    gamma_flops: float
    mem_bw_bytes_per_s: float
    # the dgemm's curve and the panel's rate relative to gamma at these threads (module
    # doc); None: not measured
    local: LocalRates | None = None


@dataclass(frozen=True)
class Placement:
    """Where the p ranks of one job sit: ranks per node, nodes used, the cores they share
    in ranks' worth (cores over threads per rank; None: each rank has its threads' cores)
    and each rank's memory."""

    p: int
    ranks_per_node: int
    nodes: int
    shared_cores: int | None
    memory_per_rank: float


@dataclass(frozen=True)
class MachineProfile:
    """Rates (module doc) and, for a cluster, the layout; None: this machine, one node."""

    alpha_s: float
    beta_s_per_byte: float
    gamma_flops: float
    mem_bw_bytes_per_s: float
    name: str = "unnamed"
    ranks_per_node: int | None = None
    cores_per_node: int | None = None
    memory_per_node_bytes: float | None = None
    nodes: int | None = None
    inter_node: InterNode | None = None
    note: str = ""
    example: bool = False
    threads_per_rank: int = 1
    # measured rates per thread count, one thread's among them once loaded (module doc)
    thread_rates: tuple[ThreadRates, ...] = ()
    # one-way seconds of a one-sided put-with-signal between two ranks of a node, and
    # what a message costs more where ranks share cores (module doc); None: not measured
    onesided_trip_s: float | None = None
    wake_s: float | None = None
    # CPU seconds of the level-set SpTRSV executor's calls per batch (module doc)
    send_cpu_s: float | None = None
    recv_cpu_s: float | None = None
    # the local work's rates relative to gamma at threads_per_rank (module doc)
    local: LocalRates = DEFAULT_RATES

    def placement(self, p: int) -> Placement:
        """Where `p` ranks sit: blocks of ranks_per_node on as many nodes as they need (one
        node of this machine without a layout). InputError when they need more nodes than
        the cluster has."""
        per_node = min(p, self.ranks_per_node or p)
        nodes = -(-p // per_node)
        if self.nodes is not None and nodes > self.nodes:
            raise InputError(f"{p} ranks at {per_node} per node need {nodes} nodes; machine "
                             f"{self.name!r} has {self.nodes}")
        cores = (self.cores_per_node or this_machine_cores()) * nodes
        at_once = max(1, cores // self.threads_per_rank)   # ranks computing at full rate
        memory = self.memory_per_node_bytes or physical_memory()
        return Placement(p=p, ranks_per_node=per_node, nodes=nodes,
                         shared_cores=at_once if at_once < p else None,
                         memory_per_rank=memory / per_node)

    def link(self, span: int, placement: Placement,
             active_per_node: int | None = None) -> tuple[float, float]:
        """(latency s, seconds per byte) of a communicator within an aligned block of
        `span` consecutive ranks (module doc); a profile without a network (a run on
        several nodes with a one-node profile) charges every message at its own rates.
        `active_per_node`: the ranks of a node that use its links at the same time (a
        phase that only some ranks run; default all of them)."""
        if self.inter_node is None or not crossing_links(span, placement):
            return self.alpha_s, self.beta_s_per_byte
        per_node = placement.ranks_per_node
        net = self.inter_node
        active = per_node if active_per_node is None else min(per_node, active_per_node)
        sharing = max(1.0, active / net.links_per_node)
        return net.latency_s, sharing / net.bandwidth_bytes_per_s

    def on_network(self, span: int, placement: Placement) -> bool:
        """Whether `link` charges a communicator within `span` the network's rates: a
        rank waiting on such a message holds no core (`costs.waiting_makespans`)."""
        return self.inter_node is not None and crossing_links(span, placement)

    def overlaps(self, span: int, placement: Placement) -> bool:
        """Whether the messages of a communicator within `span` (as `link`) move while
        its ranks compute: on a node, yes; across nodes, `inter_node.overlap`."""
        return (self.inter_node is None or self.inter_node.overlap
                or not crossing_links(span, placement))

    def at_threads(self, threads: int) -> MachineProfile:
        """This profile with `threads` threads per rank: a rank's gamma_flops and
        mem_bw_bytes_per_s at that count, measured (`thread_rates`) or T times one
        core's (module doc)."""
        rates = {r.threads: r for r in self.thread_rates}
        one = rates.get(1) or ThreadRates(1, self.gamma_flops / self.threads_per_rank,
                                          self.mem_bw_bytes_per_s / self.threads_per_rank,
                                          self.local if self.threads_per_rank == 1 else None)
        rates[1] = one
        own = rates.get(threads) or ThreadRates(threads, one.gamma_flops * threads,
                                                one.mem_bw_bytes_per_s * threads, one.local)
        return replace(self, gamma_flops=own.gamma_flops,
                       mem_bw_bytes_per_s=own.mem_bw_bytes_per_s, threads_per_rank=threads,
                       thread_rates=tuple(rates[t] for t in sorted(rates)),
                       local=own.local or DEFAULT_RATES)

    def for_run(self, ranks_per_node: int) -> MachineProfile:
        """This profile's rates at a run's own layout (the ranks per node it was launched
        with, the cores of this node, the nodes taken alike; the threads per rank are
        the profile's: load it at the run's --threads), for the record's prediction and
        the run's choices. A cluster file with fewer cores per node than this node has
        (calibrated on nodes that share one machine, as an emulated cluster's) keeps its
        own count."""
        cores = this_machine_cores()
        if self.cores_per_node is not None and self.inter_node is not None:
            cores = min(cores, self.cores_per_node)   # nodes that share one machine
        return replace(self, ranks_per_node=ranks_per_node, cores_per_node=cores, nodes=None)

    def to_json(self) -> str:
        """The machine file (module doc): one thread's rates at the top, the others
        under at_threads."""
        one = self.at_threads(1)
        data = {k: v for k, v in asdict(one).items()
                if v is not None and k not in ("thread_rates", "threads_per_rank", "local")}
        data.update(_local_keys(one.thread_rates[0].local))
        data["threads_per_rank"] = self.threads_per_rank
        if self.inter_node is not None:
            data["inter_node"] = {k: v for k, v in asdict(self.inter_node).items()
                                  if v is not None}
        others = {str(r.threads): {"gamma_flops": r.gamma_flops,
                                   "mem_bw_bytes_per_s": r.mem_bw_bytes_per_s,
                                   **_local_keys(r.local)}
                  for r in one.thread_rates if r.threads != 1}
        if others:
            data["at_threads"] = others
        return json.dumps(data, indent=2)


def _local_keys(local: LocalRates | None) -> dict:
    """A machine file's keys of measured local rates (none where not measured, or where
    they are the defaults a file without them takes)."""
    if local is None or local == DEFAULT_RATES:
        return {}
    return {"gemm_k_half": local.k_half, "panel_rate": local.panel}


def crossing_links(span: int, placement: Placement) -> bool:
    """Whether a communicator within an aligned block of `span` consecutive ranks spans
    several nodes (module doc): the test `link` charges the network's rates by."""
    per_node = placement.ranks_per_node
    return placement.nodes > 1 and not (span <= per_node and per_node % span == 0)


# the rates: every field without a default
NUMBERS = tuple(f.name for f in fields(MachineProfile) if f.default is MISSING)
LAYOUT_INTS = ("ranks_per_node", "cores_per_node", "nodes", "threads_per_rank")
OPTIONAL_TRIPS = ("onesided_trip_s",)   # optional, positive when given
OPTIONAL_COSTS = ("wake_s", "send_cpu_s", "recv_cpu_s")   # optional, 0 or more


def _positive(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


def _non_negative(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value >= 0


def load_profile(path: str | Path | None = None, threads: int | None = None
                 ) -> MachineProfile:
    """Read a profile or machine JSON (the shipped default when `path` is None; a name
    like "example_cpu" is the shipped `machine_example_cpu.json`) at `threads` per rank
    (None: the file's threads_per_rank, default 1); InputError when it is not a JSON
    object with the four rates as positive numbers, or its layout or at_threads (module
    doc) is malformed."""
    source = Path(path) if path is not None else DEFAULT_PROFILE_PATH
    shipped = DEFAULT_PROFILE_PATH.with_name(f"machine_{source.name}.json")
    if not source.exists() and source.name == str(path) and shipped.exists():
        source = shipped
    if not source.is_file():
        names = sorted(f.stem.removeprefix("machine_")
                       for f in DEFAULT_PROFILE_PATH.parent.glob("machine_*.json"))
        raise InputError(f"machine file {path}: no such file; shipped machines: "
                         f"{', '.join(names)} (or the path of a JSON file, schema in the README)")
    try:
        data = json.loads(source.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"machine profile {source} is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise InputError(f"machine profile {source} is not a JSON object")
    missing = [key for key in NUMBERS if key not in data]
    if missing:
        raise InputError(f"machine profile {source} lacks {', '.join(missing)} "
                         "(write one with `linalg-io calibrate --write`)")
    bad = [key for key in NUMBERS + LAYOUT_INTS + ("memory_per_node_bytes",)
           if key in data and not _positive(data[key])]
    bad += [key for key in LAYOUT_INTS if key in data and not isinstance(data[key], int)]
    bad += [key for key in OPTIONAL_TRIPS if key in data and not _positive(data[key])]
    bad += [key for key in OPTIONAL_COSTS if key in data and not _non_negative(data[key])]
    if bad:
        raise InputError(f"machine profile {source}: {', '.join(dict.fromkeys(bad))} must be "
                         "positive numbers" + (" (integers: ranks_per_node, cores_per_node, "
                                               "nodes, threads_per_rank)"
                                               if set(bad) & set(LAYOUT_INTS) else "")
                         + (f" ({', '.join(k for k in OPTIONAL_COSTS if k in bad)}: 0 or more)"
                            if set(bad) & set(OPTIONAL_COSTS) else ""))
    known = {f.name for f in fields(MachineProfile)} - {"thread_rates", "local"}
    values = {k: v for k, v in data.items() if k in known}
    if "inter_node" in data:
        values["inter_node"] = _inter_node(source, data["inter_node"])
    one = ThreadRates(1, data["gamma_flops"], data["mem_bw_bytes_per_s"], _local(source, data))
    rates = (one,) + _thread_rates(source, data.get("at_threads", {}))
    profile = MachineProfile(**{**values, "threads_per_rank": 1}, thread_rates=rates)
    return profile.at_threads(threads or values.get("threads_per_rank", 1))


def _thread_rates(source: Path, data) -> tuple[ThreadRates, ...]:
    """The at_threads entries (module doc), by thread count."""
    def entry(key, rates) -> bool:
        return (isinstance(key, str) and key.isdigit() and int(key) > 1
                and isinstance(rates, dict)
                and all(_positive(rates.get(k)) for k in ("gamma_flops", "mem_bw_bytes_per_s")))

    if not isinstance(data, dict) or not all(entry(k, v) for k, v in data.items()):
        raise InputError(f"machine profile {source}: at_threads must map thread counts > 1 "
                         'to positive gamma_flops and mem_bw_bytes_per_s, e.g. {"2": '
                         '{"gamma_flops": 1.2e11, "mem_bw_bytes_per_s": 2e10}}')
    return tuple(ThreadRates(int(k), v["gamma_flops"], v["mem_bw_bytes_per_s"], _local(source, v))
                 for k, v in sorted(data.items(), key=lambda kv: int(kv[0])))


def _local(source: Path, data: dict) -> LocalRates | None:
    """The measured local rates of a file's entry (`gemm_k_half` >= 0, `panel_rate` > 0,
    either alone with the other's default), None where it has neither."""
    if "gemm_k_half" not in data and "panel_rate" not in data:
        return None
    k_half = data.get("gemm_k_half", DEFAULT_RATES.k_half)
    panel = data.get("panel_rate", DEFAULT_RATES.panel)
    if not (_non_negative(k_half) and _positive(panel)):
        raise InputError(f"machine profile {source}: gemm_k_half must be a number >= 0 and "
                         "panel_rate a positive number (the dgemm's curve and the panel's "
                         "rate relative to gamma, as `linalg-io calibrate` writes them)")
    return LocalRates(float(k_half), float(panel))


def _inter_node(source: Path, data) -> InterNode:
    names = [f.name for f in fields(InterNode)]
    numbers = names[:3]
    if not isinstance(data, dict) or any(k not in data for k in numbers[:2]) \
            or not all(_positive(data.get(k, 1)) for k in numbers) \
            or not isinstance(data.get("links_per_node", 1), int) \
            or not isinstance(data.get("overlap", True), bool) \
            or not _positive(data.get("onesided_trip_s", 1)) \
            or not _non_negative(data.get("send_cpu_s", 0)):
        raise InputError(f"machine profile {source}: inter_node must be an object with "
                         "positive latency_s, bandwidth_bytes_per_s, an integer "
                         "links_per_node (default 1), a boolean overlap (default true), "
                         "optionally a positive onesided_trip_s and a send_cpu_s >= 0")
    return InterNode(**{k: data[k] for k in names if k in data})
