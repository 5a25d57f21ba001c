"""BLAS and OpenMP threads per rank, held to ``--threads`` whatever started the process.

`--np P` relaunches with OMP_NUM_THREADS and friends set, but under a user's
``mpirun``/``srun`` nothing sets them and OpenBLAS starts one thread per core in every
rank, oversubscribing the cores many times over. So every MPI command
first exports the counts into its own environment, before NumPy loads a BLAS (a
library loaded later starts with them: `export_thread_counts`), then sets every pool
already loaded (threadpoolctl) and reads the pools back (`hold_pools`); a pool that
keeps another count refuses the run, and the record holds the count read back.
"""

from __future__ import annotations

import os

from linalg_io.errors import EnvironmentProblem

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS")
POOL_APIS = ("blas", "openmp")


def export_thread_counts(threads: int) -> None:
    """Set the thread variables of this process to `threads` (call before NumPy loads)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)


def pool_threads() -> dict[str, int]:
    """{'openblas /path/libX.so': threads} of every BLAS and OpenMP pool loaded here."""
    from threadpoolctl import threadpool_info

    return {f"{pool['internal_api']} {pool['filepath']}": int(pool["num_threads"])
            for pool in threadpool_info() if pool.get("user_api") in POOL_APIS}


def check_pools(threads: int) -> int:
    """`threads` when every loaded pool runs that many threads (read back), else an
    EnvironmentProblem naming the pools that do not: such a run is not recorded."""
    wrong = {name: count for name, count in pool_threads().items() if count != threads}
    if wrong:
        pools = ", ".join(f"{name} has {count}" for name, count in sorted(wrong.items()))
        raise EnvironmentProblem(f"--threads {threads}, but {pools} thread(s) after setting "
                                 "them; not running with pools that disagree")
    return threads


def hold_pools(threads: int) -> int:
    """Set every loaded BLAS and OpenMP pool to `threads`; return the count read back
    (`check_pools`)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)
    return check_pools(threads)
