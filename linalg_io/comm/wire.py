"""Wire traffic: the bytes the MPI library itself moved, from Open MPI's monitoring.

The logical counter (`linalg_io.comm.counting`) counts what the package hands to MPI.
What MPI then moves (a broadcast forwarded along a chain or tree, an allreduce's
ring, a one-sided put) is counted by Open MPI's monitoring components when
``pml_monitoring_enable=1`` is set before MPI_Init (`request_monitoring` sets it, the
``--np`` launcher too; under mpirun/srun ``--mca pml_monitoring_enable 1`` or
``OMPI_MCA_pml_monitoring_enable=1`` does the same). They expose, per peer in
COMM_WORLD, through MPI_T performance variables (read here with ctypes):

  pml_monitoring_messages_size/_count      bytes/messages this rank sent to each peer
                                           through the PML: point-to-point and every
                                           collective's internal messages, on any
                                           communicator (peers are world ranks);
  osc_monitoring_messages_sent_size/_count one-sided data this rank put or accumulated
                                           into each peer;
  osc_monitoring_messages_recv_size/_count one-sided data this rank read (Get) from
                                           each peer.

A rank's wire bytes sent = its PML bytes + its puts + what others read from it; its
wire bytes received = what the others' PML and puts sent to it + what it read
(messages to itself left out). Messages: PML messages, puts, accumulates and Get
requests by this rank, and the data replies of others' Gets. The same per-peer counts,
with every rank's node (its processor name, the host name), split each rank's bytes into
inter-node (with peers on other nodes) and intra-node (the rest).
The per-peer vectors are exchanged after the counted region (`wire_summary`, an
Alltoall on the raw communicator). Collectives that bypass the PML (shared-memory
collective components such as coll/xhc, HCOLL, UCC) are not seen; the record's
`source` names what was read.

Where no such counters exist (MPICH, Open MPI without monitoring) the counter is
unavailable with a reason and the record's `traffic.wire` is null, never a guess.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:   # importing mpi4py.MPI initializes MPI: the launcher imports this module
    from mpi4py import MPI

MONITORING_VARIABLE = "OMPI_MCA_pml_monitoring_enable"
# MPI_T_PVAR_CLASS_SIZE in Open MPI's mpi.h (the class the monitoring variables use)
PVAR_CLASS_SIZE = 2
# the per-peer variables, in the rows of a snapshot
PVARS = (
    "pml_monitoring_messages_size", "pml_monitoring_messages_count",
    "osc_monitoring_messages_sent_size", "osc_monitoring_messages_sent_count",
    "osc_monitoring_messages_recv_size", "osc_monitoring_messages_recv_count",
)
PML_SIZE, PML_COUNT, PUT_SIZE, PUT_COUNT, GET_SIZE, GET_COUNT = range(len(PVARS))


def request_monitoring() -> None:
    """Ask Open MPI to monitor this process's traffic (before MPI_Init; a value the user
    set, such as 0, is kept). Other MPI libraries ignore the variable."""
    os.environ.setdefault(MONITORING_VARIABLE, "1")


class WireUnavailable(Exception):
    """The MPI library offers no per-peer traffic counters here; the message says why."""


class NoWire:
    """Stands in for the wire counter where the MPI has none: counts nothing and keeps
    the reason (`traffic.wire_unavailable`)."""

    available = False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def start(self) -> None:
        """Nothing to count."""

    def stop(self) -> None:
        """Nothing to count."""

    def reset(self) -> None:
        """Nothing to count."""


class WireCounter:
    """Per-peer bytes and messages sent by this rank, as Open MPI's monitoring counts
    them, summed over the regions between `start()` and `stop()`.

    Construct with `WireCounter.open(world)` (collective: every rank must get the
    same outcome, so the record is either whole or null on all ranks).
    """

    available = True

    def __init__(self, lib: ctypes.CDLL, session: ctypes.c_void_p,
                 handles: list[ctypes.c_void_p], size: int, source: str) -> None:
        self._lib = lib
        self._session = session
        self._handles = handles
        self.size = size
        self.source = source
        self.totals = np.zeros((len(PVARS), size), dtype=np.int64)
        self._mark: np.ndarray | None = None
        # MPI_T is initialised THREAD_SINGLE: the watchdog's reads (`moved`) and the
        # runner's take turns
        self._reading = threading.Lock()

    @classmethod
    def open(cls, world: MPI.Comm) -> WireCounter:
        """Bind the monitoring variables to `world`; WireUnavailable with the reason
        (the same on every rank) when they cannot be had."""
        try:
            counter, problem = cls._bind(world), None
        except WireUnavailable as error:
            counter, problem = None, str(error)
        problems = [p for p in world.allgather(problem) if p is not None]
        if problems:
            raise WireUnavailable(problems[0])
        return counter

    @classmethod
    def _bind(cls, world: MPI.Comm) -> WireCounter:
        from mpi4py import MPI

        vendor, version = MPI.get_vendor()
        name = f"{vendor} {'.'.join(map(str, version))}"
        if vendor != "Open MPI":
            raise WireUnavailable(f"{name} has no per-peer traffic counters through MPI_T "
                                  "(the wire counter reads Open MPI's monitoring)")
        lib = ctypes.CDLL(MPI.__file__)   # libmpi's symbols through mpi4py's module
        # the level MPI_Init gave: Open MPI's MPI_T_init_thread sets the process's thread
        # level to the one it is asked for (a lower one would leave a progress thread,
        # `linalg_io.comm.progress`, no MPI to call)
        provided = ctypes.c_int()
        if lib.MPI_T_init_thread(ctypes.c_int(MPI.Query_thread()), ctypes.byref(provided)):
            raise WireUnavailable(f"{name}: MPI_T_init_thread failed")
        session = ctypes.c_void_p()
        if lib.MPI_T_pvar_session_create(ctypes.byref(session)):
            raise WireUnavailable(f"{name}: no MPI_T performance-variable session")
        comm_handle = ctypes.c_void_p(MPI._handleof(world))
        handles = []
        for pvar in PVARS:
            index = ctypes.c_int()
            if lib.MPI_T_pvar_get_index(pvar.encode(), ctypes.c_int(PVAR_CLASS_SIZE),
                                        ctypes.byref(index)):
                setting = os.environ.get(MONITORING_VARIABLE)
                why = (f"monitoring is off ({MONITORING_VARIABLE}={setting})"
                       if setting not in (None, "1", "2") else
                       "its monitoring components are not loaded (run with "
                       "--mca pml_monitoring_enable 1, or OMPI_MCA_pml_monitoring_enable=1, "
                       "set before MPI_Init)")
                raise WireUnavailable(f"{name}: no MPI_T variable {pvar}: {why}")
            handle, count = ctypes.c_void_p(), ctypes.c_int()
            if lib.MPI_T_pvar_handle_alloc(session, index, ctypes.byref(comm_handle),
                                           ctypes.byref(handle), ctypes.byref(count)) \
                    or count.value != world.Get_size():
                raise WireUnavailable(f"{name}: cannot bind {pvar} to MPI_COMM_WORLD")
            if lib.MPI_T_pvar_start(session, handle):
                raise WireUnavailable(f"{name}: cannot start {pvar}")
            handles.append(handle)
        source = f"{name} monitoring (MPI_T {PVARS[PML_SIZE]}, osc_monitoring_*)"
        return cls(lib, session, handles, world.Get_size(), source)

    def snapshot(self) -> np.ndarray:
        """The variables now, one row per entry of PVARS, one column per world peer."""
        values = np.zeros((len(PVARS), self.size), dtype=np.uint64)
        with self._reading:
            for row, handle in zip(values, self._handles):
                into = row.ctypes.data_as(ctypes.c_void_p)
                if self._lib.MPI_T_pvar_read(self._session, handle, into):
                    raise RuntimeError("MPI_T_pvar_read failed on a started monitoring "
                                       "variable")
        return values.astype(np.int64)

    def moved(self) -> int:
        """Every byte and message this rank has sent through MPI so far, summed: it
        changes whenever the rank's MPI moves anything (a progress source)."""
        return int(self.snapshot().sum())

    def start(self) -> None:
        """Open a counted region."""
        self._mark = self.snapshot()

    def stop(self) -> None:
        """Close the counted region: add what moved since `start()` to the totals."""
        self.totals += self.snapshot() - self._mark
        self._mark = None

    def reset(self) -> None:
        self.totals[:] = 0


def per_rank_wire(counter: WireCounter | NoWire, comm: MPI.Comm) -> tuple[int, int, int] | None:
    """(bytes sent, bytes received, messages sent) of this rank over the counted regions,
    None without a wire counter (collective over `comm`, see `wire_by_node`)."""
    split = wire_by_node(counter, comm)
    return None if split is None else (split["sent"], split["recv"], split["msgs"])


def wire_by_node(counter: WireCounter | NoWire, comm: MPI.Comm) -> dict | None:
    """This rank's wire traffic over the counted regions, None without a wire counter:
    "sent", "recv" (bytes), "msgs" (messages sent), and "inter_sent", "inter_recv": the
    bytes of those exchanged with ranks on other nodes (`node_names`: a peer whose
    processor name differs; the rest is intra-node).

    Collective over `comm` (COMM_WORLD, or a communicator holding every rank that moved
    anything in the regions; raw: the exchange is not in any region). A rank's
    messages to itself (a communicator of size 1, a self-send) cross no link and are
    left out, as the logical rules leave them out."""
    from mpi4py import MPI

    if not counter.available:
        return None
    group, world_group = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    members = np.asarray(MPI.Group.Translate_ranks(group, list(range(comm.Get_size())),
                                                   world_group), dtype=np.int64)
    group.Free()
    world_group.Free()
    t = counter.totals[:, members].copy()        # columns: the ranks of comm
    t[:, comm.Get_rank()] = 0
    sent_to = t[PML_SIZE] + t[PUT_SIZE]          # to each peer, by this rank's PML and puts
    read_from = t[GET_SIZE]                       # this rank's Gets, from each peer
    exchanged = np.stack([sent_to, read_from, t[GET_COUNT]]).T.copy()
    incoming = np.empty_like(exchanged)
    comm.Alltoall(exchanged, incoming)            # row j: what peer j counted for me
    to_peer = sent_to + incoming[:, 1]            # bytes this rank sent to each peer
    from_peer = incoming[:, 0] + read_from        # bytes it received from each peer
    names = node_names(comm)
    away = np.array([name != names[comm.Get_rank()] for name in names])
    return {"sent": int(to_peer.sum()), "recv": int(from_peer.sum()),
            "msgs": int(t[PML_COUNT].sum() + t[PUT_COUNT].sum() + incoming[:, 2].sum()),
            "inter_sent": int(to_peer[away].sum()), "inter_recv": int(from_peer[away].sum())}


def node_names(comm: MPI.Comm) -> list[str]:
    """Every rank's node (its MPI processor name: the host name), by rank of `comm`
    (collective)."""
    from mpi4py import MPI

    return comm.allgather(MPI.Get_processor_name())


USER_OUTPUT_VARIABLE = "OMPI_MCA_pml_monitoring_enable_output"


def open_wire(world: MPI.Comm) -> WireCounter | NoWire:
    """The wire counter, or its stand-in with the reason there is none (collective over
    `world`). A user who asked Open MPI for its own whole-run dump at MPI_Finalize
    (``--mca pml_monitoring_enable_output N``) keeps it: Open MPI cancels that dump once
    MPI_T starts its counters, so the package then counts no wire bytes."""
    output = os.environ.get(USER_OUTPUT_VARIABLE, "").strip()
    if output not in ("", "0"):
        return NoWire(f"left to the user's own Open MPI monitoring ({USER_OUTPUT_VARIABLE}="
                      f"{output}): starting its MPI_T counters would cancel that dump")
    try:
        return WireCounter.open(world)
    except WireUnavailable as error:
        return NoWire(str(error))
