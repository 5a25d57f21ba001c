"""LU factorizations. `linalg_io.lu.factor(local, desc, comm)` is the 2.5D LU with
pdgetrf's contract (`linalg_io.lu.dropin`), imported on first use so that importing
this package does not start MPI.

case            `make_case`: the runner's case of --algo
choice          `LUChoice`, `choose_lu`: grid and block, fixed before any byte moves
run_choice      the choice of one run, agreed across its ranks
fits            refusing an LU that cannot fit, before any set-up
lu2d            the 2D LU (partial pivoting); lu2d_case: its case; solve2d: its solve
conflux         the 2.5D LU (tournament pivoting); tournament: the pivoting;
                conflux_case: its case; solve_conflux: its solve; conflux_gpu: CuPy kernels
dropin          the 2.5D LU as a drop-in for pdgetrf; dropin_case: its case
scalapack       ScaLAPACK through ctypes; scalapack_case: its case
external        other libraries' LU (HPL) through adapters
hpl             HPL's acceptance test and flop count, shared by every LU
matrix_source   the input matrix: generated, or read from a file
(`linalg-io model lu` is `linalg_io.model_command`'s.)
"""


def __getattr__(name: str):
    if name == "factor":
        from linalg_io.lu.dropin import factor

        return factor
    raise AttributeError(f"module 'linalg_io.lu' has no attribute {name!r}")
