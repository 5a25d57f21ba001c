"""ReFrame site configuration: this machine, the local scheduler, the venv's `mpiexec`.

A template for a workstation or a login node: the checks start under `mpiexec -n P`
from the venv that runs ReFrame (its bin/ first on PATH: the Open MPI wheel's mpiexec
and linalg-io). docs/REFRAME.md says what to change for a site.

extras read by the checks (checks.py):
  linalg_io_launcher_options  added to the launcher's command line
  linalg_io_machine           the machine file whose model gives the references
                              (empty: the package's default profile)
  linalg_io_time_tolerance    how far over the model's time a run may be, as a fraction
"""

import os
import sys

VENV_BIN = os.path.dirname(sys.executable)
# Open MPI refuses root unless told; only where ReFrame itself runs as root.
AS_ROOT = ([["OMPI_ALLOW_RUN_AS_ROOT", "1"], ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"]]
           if os.geteuid() == 0 else [])

site_configuration = {
    "systems": [{
        "name": "linalgio_local",
        "descr": "this machine, ranks started by the venv's mpiexec",
        "hostnames": [".*"],
        "modules_system": "nomod",
        "partitions": [{
            "name": "mpiexec",
            "descr": "local scheduler, Open MPI's mpiexec",
            "scheduler": "local",
            "launcher": "mpiexec",
            "environs": ["venv"],
            # one job at a time: the checks time themselves
            "max_jobs": 1,
            # UCX's one-sided component fails on a node without InfiniBand
            "env_vars": [["OMPI_MCA_osc", "^ucx"], *AS_ROOT],
            "extras": {
                # more ranks than cores: Open MPI then yields while waiting
                "linalg_io_launcher_options": ["--oversubscribe", "--bind-to", "none"],
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
