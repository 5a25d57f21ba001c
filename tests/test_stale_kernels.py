"""A checkout whose compiled kernels are older than cython/*.pyx: one line, exit 3."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from linalg_io.errors import EnvironmentProblem, kernel_import_problem

ROOT = Path(__file__).resolve().parents[1]

# A kernel module built before a function was added to its .pyx: the name is missing.
STALE = """
import linalg_io._kernels.dense_local as kernels
del kernels.transpose_into
"""


def test_a_kernel_built_before_its_source_changed_is_one_line_and_exit_3(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(STALE)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    out = tmp_path / "r.jsonl"
    done = subprocess.run([sys.executable, "-m", "linalg_io", "lu", "--algo", "conflux",
                           "--n", "64", "--grid", "1x1x1", "--nb", "16", "--reps", "1",
                           "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
                          check=False)
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("linalg-io: error: the compiled kernels do not match this "
                               "source (cannot import name 'transpose_into'")
    assert "run `make kernels`" in lines[0]
    assert not out.exists()


def test_only_the_kernels_import_errors_are_turned_into_that_line():
    stale = ImportError("cannot import name 'x'", name="linalg_io._kernels.tsgemm")
    assert isinstance(kernel_import_problem(stale), EnvironmentProblem)
    assert kernel_import_problem(ImportError("no cupy", name="cupy")) is None
    assert kernel_import_problem(ImportError("bare")) is None
