"""Which ranks share a node (MPI shared-memory split)."""

from __future__ import annotations

from mpi4py import MPI

from linalg_io.models.memory import memory_over


def node_rank_and_size(comm: MPI.Comm) -> tuple[int, int]:
    """This rank's index among the ranks sharing its node, and their number."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    rank, size = node.Get_rank(), node.Get_size()
    node.Free()
    return rank, size


def memory_per_rank(comm: MPI.Comm) -> tuple[int, str]:
    """Collective: this node's memory over the ranks sharing it, and a phrase saying so."""
    _, ranks_on_node = node_rank_and_size(comm)
    return memory_over(ranks_on_node), f"this node's memory over its {ranks_on_node} ranks"
