"""`linalg-io info`: what this installation and this MPI job are made of."""

from __future__ import annotations

import json
import os
import socket

from mpi4py import MPI

from linalg_io import envinfo


def main(args, argv: list[str]) -> int:
    world = MPI.COMM_WORLD
    hosts = world.gather(socket.gethostname(), root=0)
    threads = world.gather(envinfo.blas_info(), root=0)
    if world.Get_rank() != 0:
        return 0
    env = envinfo.environment()
    facts = {
        "mpi_library": envinfo.mpi_library_version(),
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "ranks": world.Get_size(),
        "hosts": {h: hosts.count(h) for h in sorted(set(hosts))},
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "blas_rank0": env["blas"],
        "blas_threads_per_rank": [sum(lib.get("num_threads", 0) for lib in t) for t in threads],
        "cupy": env["cupy"],
        "gpu": env["gpu"],
        "cython_kernels": env["cython_kernels"],
        "python": env["python"], "numpy": env["numpy"], "scipy": env["scipy"],
        "mpi4py": env["mpi4py"],
    }
    if args.json:
        print(json.dumps(facts, indent=2))
        return 0
    first_line = facts["mpi_library"].splitlines()[0]
    print(f"MPI library      {first_line}")
    print(f"MPI standard     {facts['mpi_standard']}")
    print(f"ranks            {facts['ranks']} on " +
          ", ".join(f"{h} ({n})" for h, n in facts["hosts"].items()))
    for lib in facts["blas_rank0"]:
        print(f"BLAS/OpenMP      {lib.get('internal_api')} {lib.get('version')} "
              f"{lib.get('architecture', '')} threads={lib.get('num_threads')}")
    print(f"CuPy / GPU       {facts['cupy'] or 'not installed'} / {facts['gpu'] or 'none'}")
    kernels = ", ".join(facts["cython_kernels"]) or "NONE BUILT (run make setup)"
    print(f"Cython kernels   {kernels}")
    print(f"Python stack     python {facts['python']}, numpy {facts['numpy']}, "
          f"scipy {facts['scipy']}, mpi4py {facts['mpi4py']}")
    return 0
