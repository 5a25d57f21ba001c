"""ReFrame site configuration: the one-node Slurm of tests/slurm/local_slurm.sh.

Jobs go through sbatch to partition `debug`; the ranks start with `srun --mpi=pmix`
(Slurm's PMIx plugin: Open MPI's wheel needs it, MpiDefault=none here). The `squeue`
backend follows the jobs without Slurm's accounting (this Slurm has none). The clients
find the Slurm through SLURM_CONF in ReFrame's environment
(`export $(tests/slurm/local_slurm.sh env)`). docs/REFRAME.md says what to change for a
site: partitions, access, launcher options, modules or a venv.

extras read by the checks: see config_local.py.
"""

import os
import sys

VENV_BIN = os.path.dirname(sys.executable)

site_configuration = {
    "systems": [{
        "name": "linalgio_slurm",
        "descr": "the local one-node Slurm (tests/slurm/local_slurm.sh)",
        "hostnames": [".*"],
        "modules_system": "nomod",
        "partitions": [{
            "name": "debug",
            "descr": "Slurm partition debug, srun --mpi=pmix",
            "scheduler": "squeue",
            "launcher": "srun",
            "access": ["--partition=debug"],
            "environs": ["venv"],
            "max_jobs": 1,
            # UCX's one-sided component fails on a node without InfiniBand
            "env_vars": [["OMPI_MCA_osc", "^ucx"]],
            "extras": {
                "linalg_io_launcher_options": ["--mpi=pmix"],
                "linalg_io_machine": os.environ.get("LINALG_IO_MACHINE", ""),
                # 4 ranks on a shared 2-core VM against the default profile (2 ranks on
                # it, unloaded): runs take tens of times its prediction (docs/REFRAME.md)
                "linalg_io_time_tolerance": 499.0,
            },
        }],
    }],
    "environments": [{
        "name": "venv",
        "env_vars": [["PATH", f"{VENV_BIN}:$PATH"]],
    }],
}
