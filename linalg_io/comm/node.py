"""Which ranks share a node (MPI shared-memory split)."""

from __future__ import annotations

from mpi4py import MPI


def node_rank_and_size(comm: MPI.Comm) -> tuple[int, int]:
    """This rank's index among the ranks sharing its node, and their number."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    rank, size = node.Get_rank(), node.Get_size()
    node.Free()
    return rank, size
