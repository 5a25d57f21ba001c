"""--threads holds the BLAS/OpenMP pools: set and read back in one process (on real
mpiexec jobs without --np: test_threads_mpi.py)."""

import pytest

from linalg_io import threads
from linalg_io.errors import EnvironmentProblem


def test_pools_are_set_and_read_back():
    import numpy  # noqa: F401  (a BLAS loaded)

    assert threads.hold_pools(3) == 3
    assert set(threads.pool_threads().values()) == {3}
    assert threads.hold_pools(1) == 1
    assert set(threads.pool_threads().values()) == {1}


def test_a_pool_that_disagrees_refuses_the_run(monkeypatch):
    monkeypatch.setattr(threads, "pool_threads",
                        lambda: {"openblas /lib/a.so": 1, "openmp /lib/libgomp.so": 4})
    with pytest.raises(EnvironmentProblem) as caught:
        threads.check_pools(1)
    assert str(caught.value) == ("--threads 1, but openmp /lib/libgomp.so has 4 thread(s) "
                                 "after setting them; not running with pools that disagree")
    assert EnvironmentProblem.exit_code == 3
