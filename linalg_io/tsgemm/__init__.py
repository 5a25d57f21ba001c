"""Tall-and-skinny GEMM (`linalg-io tsgemm`).

inputs       entries as hashes of (seed, matrix, i, j): any rank builds any block
kernels      local products: compiled kernels where they apply, BLAS beyond
distributed  a local kernel plus at most one collective per variant
case         the runner's case (`linalg-io model tsgemm`: linalg_io.model_command)
"""
