#!/usr/bin/env bash
# Every GPU test and benchmark of linalg-io, for a machine with a GPU and CuPy.
# bash bench/gpu_check.sh (from anywhere; each family appends its lines). Exits 3 at once
# when the Python it uses (PY, default .venv/bin/python) has no CuPy or sees no GPU: the
# GPU tests would only be skipped then, and a pass would mean nothing.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if ! "$PY" -c 'import sys, cupy; sys.exit(cupy.cuda.runtime.getDeviceCount() == 0)' 2>/dev/null; then
  echo "gpu_check: $PY has no CuPy or sees no GPU (pip install -e '.[gpu]')" >&2
  exit 3
fi
status=0
trap 'exit $status' EXIT  # the script fails if any appended check failed

# tsgemm (TSM2R/TSM2L kernels, autotuner, GPU CLI run; then the benchmark vs cupy.matmul)
$PY -m pytest -q tests/test_tsgemm_gpu.py tests/test_tsgemm_cuda_compile.py || status=1
$PY bench/gpu_tsgemm.py || status=1

# conflux (2.5D LU, --backend gpu): residual and traffic vs the CPU run, then N=8192 timings
# (1 rank on the GPU vs the CPU, and 4 ranks sharing it); records in results/gpu_conflux.jsonl
mkdir -p results
$PY -m pytest -q tests/test_conflux_gpu.py || status=1
for backend in gpu cpu; do
  $PY -m linalg_io lu --algo conflux --backend $backend --np 1 --n 8192 --grid 1x1x1 --nb 512 \
    --reps 3 --out results/gpu_conflux.jsonl || status=1
done
$PY -m linalg_io lu --algo conflux --backend gpu --np 4 --n 8192 --grid auto --nb auto \
  --reps 3 --out results/gpu_conflux.jsonl || status=1

# sptrsv (sync-free CuPy kernel vs cuSPARSE and SciPy; --backend gpu on 1, 2, 4 ranks)
$PY -m pytest -q tests/test_sptrsv_gpu.py tests/test_sptrsv.py -k "gpu or cuda" || status=1
$PY bench/gpu_sptrsv.py || status=1
