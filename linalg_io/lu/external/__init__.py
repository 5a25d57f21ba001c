"""Other libraries' LU, run on the package's problem and counted as the package counts.

A library comes in through an adapter, one module that knows how to find it, launch
it, read its results and which of its numbers are one factorization's. Two kinds
(`linalg_io.lu.external.adapter`):

  InProcessLU  a shared library the ranks of `linalg-io lu` load (ctypes) and call,
               one step at a time: set-up, fresh matrix, factorization, check. The
               runner's wire counter brackets the factorization, so its bytes are one
               factorization's by construction. `lu --algo NAME` runs it
               (`linalg_io.lu.external.case`), under --np, mpiexec, srun and sweeps.
  ProgramLU    a library that is only an MPI program (HPL's xhpl, COnfLUX's
               conflux_miniapp, SLATE's tester): its input files, its command line and
               a parser of its output. `linalg_io.lu.external.program_count` runs it
               with one and with two factorizations under Open MPI's monitoring and
               takes the difference: one factorization's bytes.

ADAPTERS names the in-process adapter of each `lu --algo` it serves; HPL
(`hpl_lib`, `hpl_program`) implements both kinds. docs/ALGORITHMS.md says how to add
one.
"""

ADAPTERS = {"hpl": "linalg_io.lu.external.hpl_lib"}
