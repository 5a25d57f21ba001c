"""Open MPI's monitoring dump: what each rank of a separate MPI program sent, from the
files its PML monitoring writes at MPI_Finalize.

Launched with ``--mca pml_monitoring_enable 1 --mca pml_monitoring_enable_output 3
--mca pml_monitoring_filename PREFIX``, every rank r writes PREFIX.r.prof; each line
``E<TAB>r<TAB>peer<TAB>B bytes<TAB>M msgs sent...`` is what r's PML sent to world rank
peer over the whole run: point-to-point and the internal messages of collectives (with
enable 1 they are all in the E lines). The same PML counters feed the MPI_T variables
that `linalg_io.comm.wire` reads inside a run; here they come from another program.
Messages to oneself are left out, as there.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

import numpy as np

from linalg_io.errors import EnvironmentProblem

MONITORING_MCA = ("--mca", "pml_monitoring_enable", "1",
                  "--mca", "pml_monitoring_enable_output", "3")
_LINE = re.compile(r"^E\t(\d+)\t(\d+)\t(\d+) bytes\t(\d+) msgs sent")


@dataclass(frozen=True)
class RankTraffic:
    """Per world rank: bytes and messages sent, bytes received."""

    bytes_sent: np.ndarray
    msgs_sent: np.ndarray
    bytes_recv: np.ndarray

    def __sub__(self, other: RankTraffic) -> RankTraffic:
        return RankTraffic(self.bytes_sent - other.bytes_sent,
                           self.msgs_sent - other.msgs_sent,
                           self.bytes_recv - other.bytes_recv)


def monitoring_options(prefix: str) -> list[str]:
    """The mpiexec options that make every rank write PREFIX.<rank>.prof."""
    return [*MONITORING_MCA, "--mca", "pml_monitoring_filename", prefix]


def read_dump(prefix: str, nranks: int) -> RankTraffic:
    """The traffic of the nranks ranks that wrote PREFIX.<rank>.prof."""
    sent = np.zeros((nranks, nranks), dtype=np.int64)
    msgs = np.zeros((nranks, nranks), dtype=np.int64)
    found = sorted(glob.glob(f"{glob.escape(prefix)}.*.prof"))
    if len(found) != nranks:
        raise EnvironmentProblem(
            f"Open MPI's monitoring wrote {len(found)} of {nranks} files {prefix}.<rank>.prof "
            f"in {os.path.dirname(prefix) or '.'} (its pml monitoring component missing?)")
    for path in found:
        with open(path) as handle:
            for line in handle:
                match = _LINE.match(line)
                if match:
                    source, peer, size, count = (int(g) for g in match.groups())
                    if source != peer:
                        sent[source, peer] += size
                        msgs[source, peer] += count
    return RankTraffic(sent.sum(axis=1), msgs.sum(axis=1), sent.sum(axis=0))
