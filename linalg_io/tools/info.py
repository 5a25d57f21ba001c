"""`linalg-io info`: what this installation and this MPI job are made of."""

from __future__ import annotations

import json
import os
import socket

from mpi4py import MPI

from linalg_io import envinfo
from linalg_io.models.memory import physical_memory
from linalg_io.slurm_job import slurm_job
from linalg_io.threads import pool_threads


def node_facts() -> dict:
    """This rank's host, the host's cores and memory, and the cores this rank may use."""
    cores = os.cpu_count() or 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return {"host": socket.gethostname(), "cores": cores, "usable_cores": usable,
            "memory_bytes": physical_memory(), "threads": max(pool_threads().values(), default=1)}


def nodes_summary(per_rank: list[dict]) -> dict[str, dict]:
    """{host: {ranks, cores, memory_bytes, threads, ranks_outnumber_cores, oversubscribed}}:
    threads is the BLAS/OpenMP threads of the host's ranks together, oversubscribed
    that they outnumber its cores."""
    nodes: dict[str, dict] = {}
    for facts in per_rank:
        node = nodes.setdefault(facts["host"], {"ranks": 0, "cores": facts["cores"],
                                                "memory_bytes": facts["memory_bytes"],
                                                "threads": 0})
        node["ranks"] += 1
        node["threads"] += facts["threads"]
    for node in nodes.values():
        node["ranks_outnumber_cores"] = node["ranks"] > node["cores"]
        node["oversubscribed"] = node["threads"] > node["cores"]
    return dict(sorted(nodes.items()))


def main(args, argv: list[str]) -> int:
    world = MPI.COMM_WORLD
    per_rank = world.gather(node_facts(), root=0)
    if world.Get_rank() != 0:
        return 0
    env = envinfo.environment()
    facts = {
        "mpi_library": envinfo.mpi_library_version(),
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "ranks": world.Get_size(),
        "hosts": {h: n["ranks"] for h, n in nodes_summary(per_rank).items()},
        "slurm": slurm_job(),
        "nodes": nodes_summary(per_rank),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "blas_rank0": env["blas"],
        "blas_threads_per_rank": [facts["threads"] for facts in per_rank],
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
    slurm = facts["slurm"]
    if slurm:
        step = f" step {slurm['step_id']}" if slurm["step_id"] is not None else ""
        print(f"Slurm job        {slurm['job_id']}{step} on {slurm['nodelist']} "
              f"({slurm['nodes']} nodes), tasks per node {slurm['tasks_per_node']}, "
              f"CPUs per task {slurm['cpus_per_task']}")
    for host, node in facts["nodes"].items():
        ranks = f"{node['ranks']} ranks" + (" (more than its cores)"
                                             if node["ranks_outnumber_cores"] else "")
        load = "OVERSUBSCRIBED" if node["oversubscribed"] else "within the cores"
        print(f"node {host:<11} {node['cores']} cores, {node['memory_bytes'] / 2**30:.1f} GiB "
              f"memory; {ranks}, {node['threads']} BLAS/OpenMP threads in all: {load}")
    for lib in facts["blas_rank0"]:
        print(f"BLAS/OpenMP      {lib.get('internal_api')} {lib.get('version')} "
              f"{lib.get('architecture', '')} threads={lib.get('num_threads')}")
    print(f"CuPy / GPU       {facts['cupy'] or 'not installed'} / {facts['gpu'] or 'none'}")
    kernels = ", ".join(facts["cython_kernels"]) or "NONE BUILT (run make setup)"
    print(f"Cython kernels   {kernels}")
    print(f"Python stack     python {facts['python']}, numpy {facts['numpy']}, "
          f"scipy {facts['scipy']}, mpi4py {facts['mpi4py']}")
    return 0
