"""ReFrame checks of linalg-io and two site configurations for one machine (docs/REFRAME.md).

`checks.py` holds the checks (LU 2D and 2.5D, TS-GEMM, SpTRSV), `config_local.py` the
local scheduler with `mpiexec`, `config_slurm.py` a Slurm partition with `srun
--mpi=pmix`. They ship inside the package, so `pip install linalg-io` brings them;
`python -m linalg_io.reframe_checks checks|local|slurm` prints their paths:

    reframe -C "$(python -m linalg_io.reframe_checks local)" \\
            -c "$(python -m linalg_io.reframe_checks checks)" -r

This module imports no ReFrame (only the check and configuration files do).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = {"checks": HERE / "checks.py", "local": HERE / "config_local.py",
         "slurm": HERE / "config_slurm.py"}
