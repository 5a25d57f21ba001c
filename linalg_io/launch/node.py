"""Which ranks share a node, and how loaded it is, before and after MPI_Init.

Before MPI_Init (`prepare_node`, called by the CLI under any launcher) only the
launcher's environment is known: this node's rank count (Open MPI's
``OMPI_COMM_WORLD_LOCAL_SIZE``, Slurm's ``SLURM_STEP_TASKS_PER_NODE`` with
``SLURM_NODEID``, Hydra's ``MPI_LOCALNRANKS``) and the cores this process may run
on (its affinity). When the ranks outnumber those cores and the launcher did not
bind each rank to cores of its own, Open MPI's waiting ranks would spin on the cores
the computing ones need; ``mpi_yield_when_idle`` makes them yield instead (what
``mpiexec --oversubscribe`` sets; a value the user set is kept).

After MPI_Init (`node_load`, collective) the ranks of a node pool their affinity
masks and BLAS/OpenMP threads: the record's ``oversubscribed`` is that the threads
outnumber the distinct cores they may run on, on some node. `kernel_crowded` asks the
same of the ranks sharing this rank's kernel (its boot id: the "nodes" of an emulated
cluster share one machine's cores), which decides how this rank waits for messages
(`linalg_io.comm.waiting`).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from linalg_io.models.memory import memory_over

if TYPE_CHECKING:   # importing mpi4py.MPI initializes MPI: prepare_node runs before that
    from mpi4py import MPI

YIELD_VARIABLE = "OMPI_MCA_mpi_yield_when_idle"


def slurm_tasks_on_node(tasks_per_node: str, node_index: int) -> int:
    """The tasks of node `node_index` from Slurm's compressed list: '2(x3),1' -> [2, 2, 2, 1]."""
    counts = []
    for part in tasks_per_node.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not match:
            raise ValueError(f"not a Slurm task count list: {tasks_per_node!r}")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts[node_index]


def local_rank_count(env: dict[str, str] | os._Environ = os.environ) -> int | None:
    """This node's ranks as the launcher announces them (None: no launcher says)."""
    for name in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"):
        if env.get(name, "").isdigit():
            return int(env[name])
    if "SLURM_STEP_TASKS_PER_NODE" in env and env.get("SLURM_NODEID", "").isdigit():
        try:
            return slurm_tasks_on_node(env["SLURM_STEP_TASKS_PER_NODE"], int(env["SLURM_NODEID"]))
        except (ValueError, IndexError):
            return None
    return None


def usable_cores() -> set[int]:
    """The CPUs this process may run on (all of the machine's where affinity is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def ranks_outnumber_cores(ranks: int, cores: int, machine_cores: int) -> bool:
    """Before MPI_Init: more ranks than the cores one of them may use, and either the
    ranks are not bound to cores of their own (each may use as many as the machine
    has) or their cores together would be more than the machine has."""
    return ranks > cores and (cores >= machine_cores or ranks * cores > machine_cores)


def prepare_node() -> bool:
    """Before MPI_Init: when this node's ranks outnumber its cores, ask Open MPI to
    yield while waiting (a value the user set is kept). True when they do."""
    ranks = local_rank_count()
    if ranks is None:
        return False
    crowded = ranks_outnumber_cores(ranks, len(usable_cores()), os.cpu_count() or 1)
    if crowded:
        os.environ.setdefault(YIELD_VARIABLE, "1")
    return crowded


def slurm_step_tasks(env: dict[str, str] | os._Environ = os.environ) -> int | None:
    """The number of tasks of the Slurm step this process belongs to (None outside one)."""
    text = env.get("SLURM_STEP_NUM_TASKS") if "SLURM_STEP_ID" in env else None
    return int(text) if text and text.isdigit() else None


SINGLETON_MESSAGE = (
    "this is one of {tasks} tasks of Slurm step {step}, but MPI started it alone (an MPI "
    "singleton: srun did not hand it the job's PMIx wire-up); launch with `srun --mpi=pmix` "
    "(the templates' {{mpi}} placeholder), or have the site set MpiDefault=pmix in slurm.conf")


def refuse_singleton_step() -> None:
    """After MPI_Init: a Slurm step of several tasks whose MPI sees one rank ran every
    task as a job of its own. Task 0 prints one line naming the cause and the fix; every
    task exits 3 (instead of N copies of an error about the grid)."""
    from mpi4py import MPI

    from linalg_io.errors import EnvironmentProblem
    from linalg_io.launch.agree import exit_agreed

    tasks = slurm_step_tasks()
    if tasks is None or tasks <= 1 or MPI.COMM_WORLD.Get_size() != 1:
        return
    if os.environ.get("SLURM_PROCID", "0") == "0":
        step = f"{os.environ.get('SLURM_JOB_ID', '?')}.{os.environ.get('SLURM_STEP_ID', '?')}"
        print("linalg-io: error: " + SINGLETON_MESSAGE.format(tasks=tasks, step=step),
              file=sys.stderr, flush=True)
    exit_agreed(EnvironmentProblem.exit_code)


def node_rank_and_size(comm: MPI.Comm) -> tuple[int, int]:
    """This rank's index among the ranks sharing its node, and their number."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    rank, size = node.Get_rank(), node.Get_size()
    node.Free()
    return rank, size


def node_load(comm: MPI.Comm, threads: int) -> bool:
    """Collective: on some node, the ranks' threads outnumber the distinct cores they may
    run on (the union of their affinity masks)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    masks = node.allgather((threads, sorted(usable_cores())))
    node.Free()
    crowded = threads_outnumber_cores(masks)
    return bool(comm.allreduce(int(crowded), op=MPI.MAX))


def boot_id() -> str:
    """This kernel's boot id: nodes with the same one are one machine (the processor
    name where the kernel does not say)."""
    from mpi4py import MPI

    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return MPI.Get_processor_name()


def threads_outnumber_cores(masks: list[tuple[int, list[int]]]) -> bool:
    """The ranks' threads (count, affinity mask) outnumber the distinct cores they may use."""
    cores = set().union(*(set(mask) for _, mask in masks))
    return sum(count for count, _ in masks) > len(cores)


def kernel_crowded(comm: MPI.Comm, threads: int) -> bool:
    """Collective: the threads of the ranks sharing this rank's kernel (this one's
    included) outnumber the distinct cores they may run on."""
    everyone = comm.allgather((boot_id(), threads, sorted(usable_cores())))
    my_kernel = everyone[comm.Get_rank()][0]
    return threads_outnumber_cores([(count, mask) for kernel, count, mask in everyone
                                    if kernel == my_kernel])


def memory_per_rank(comm: MPI.Comm) -> tuple[int, str]:
    """Collective: this node's memory over the ranks sharing it, and a phrase saying so."""
    _, ranks_on_node = node_rank_and_size(comm)
    return memory_over(ranks_on_node), f"this node's memory over its {ranks_on_node} ranks"
