"""The `linalg-io model NAME` commands: each family's predicted traffic and time printed
as a table, or written as prediction records over P (`--scan`), without MPI.

lu_table      `model lu`: every LU configuration, the verdict first (lu_verdict)
lu_verdict    what `model lu` prints: the verdict, then the best candidates
lu_scan       `model lu --scan strong|weak`: the LU predicted over P, as records
heap          the model commands' malloc: freed memory kept for the next arrays
tsgemm_table  `model tsgemm`: TS-GEMM's variants per rank
sptrsv_table  `model sptrsv`: both SpTRSV algorithms per rank
predictions   the prediction records the scans write (`"prediction": true`)
"""
