"""LU factorizations. `linalg_io.lu.factor(local, desc, comm)` is the 2.5D LU with
pdgetrf's contract (`linalg_io.lu.dropin`), imported on first use so that importing
this package does not start MPI."""


def __getattr__(name: str):
    if name == "factor":
        from linalg_io.lu.dropin import factor

        return factor
    raise AttributeError(f"module 'linalg_io.lu' has no attribute {name!r}")
