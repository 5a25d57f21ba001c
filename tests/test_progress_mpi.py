"""`linalg_io.comm.progress` on 2 real ranks: a started allgather of 4 MiB blocks
(rendezvous) completes inside a block that makes no MPI call when a thread tests it,
and counts the bytes and messages of a plain run."""

import pytest
from mpi_harness import run_mpi_json

from linalg_io.comm.progress import progressed


@pytest.fixture(scope="module")
def ranks():
    return run_mpi_json(2, "progress_patterns.py", timeout=120)


def test_thread_moves_the_started_allgather_inside_the_block(ranks):
    for rank in ranks:
        assert rank["thread_level"] >= 2          # MPI_THREAD_SERIALIZED or more
        assert rank["null_after_block"] is True   # completed by the thread, not complete()
        assert rank["arrived_in_block"] is True


def test_started_allgather_counts_as_run(ranks):
    for r, rank in enumerate(ranks):
        assert rank["progressed"]["ok"] and rank["run"]["ok"]
        assert rank["progressed"] == rank["run"]
        other_items = (1 << 19) + (1 - r)
        assert rank["run"]["recv"] == other_items * 8
        assert rank["run"]["sent"] == ((1 << 19) + r) * 8
        assert rank["run"]["msgs"] == 1


def test_no_requests_no_thread():
    import threading

    before = threading.active_count()
    with progressed([]):
        assert threading.active_count() == before
