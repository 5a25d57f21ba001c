"""LAPACK's interchanges from a permutation (`linalg_io.lu.dropin.lapack_pivots`), no MPI
(the drop-in on real jobs: test_dropin_mpi.py)."""

import numpy as np

from linalg_io.lu.dropin import lapack_pivots


def test_lapack_pivots_rebuild_the_permutation():
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 50):
        perm = rng.permutation(n)
        ipiv = lapack_pivots(perm)
        rows = np.arange(n)
        for i, j in enumerate(ipiv):
            rows[[i, j]] = rows[[j, i]]
        assert np.array_equal(rows, perm) and (ipiv >= np.arange(n)).all()
