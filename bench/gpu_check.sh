#!/usr/bin/env bash
# Every GPU test and benchmark of linalg-io, for a machine with a GPU and CuPy.
# Run from the repository root: bash bench/gpu_check.sh  (each family appends its lines).
set -u
PY=${PY:-.venv/bin/python}
status=0
trap 'exit $status' EXIT  # the script fails if any appended check failed

# tsgemm (TSM2R/TSM2L kernels, autotuner, GPU CLI run; then the benchmark vs cupy.matmul)
$PY -m pytest -q tests/test_tsgemm_gpu.py tests/test_tsgemm_cuda_compile.py || status=1
$PY bench/gpu_tsgemm.py || status=1
