"""Errors that end a run with a one-line message and the exit code of docs/records.md#exit-codes.

Exit codes: 1 verification failed (or singular matrix), 2 bad input or usage,
3 environment (no MPI, no GPU asked for but absent), 5 stalled (no progress within the
deadline: `linalg_io.launch.watchdog`; a rank ends at once, it raises nothing).
"""

STALLED_EXIT_CODE = 5


class LinalgIOError(Exception):
    """Base class: a message for the user and the process exit code."""

    exit_code = 2


class InputError(LinalgIOError):
    """Bad input: impossible grid, wrong shape, unreadable or non-finite matrix."""

    exit_code = 2


class VerificationError(LinalgIOError):
    """The computed result failed its check (residual above threshold)."""

    exit_code = 1


class SingularMatrixError(VerificationError):
    """A zero pivot: the matrix is singular to working precision."""

    exit_code = 1


class EnvironmentProblem(LinalgIOError):
    """The environment cannot run the request (no MPI launcher, no CuPy or GPU)."""

    exit_code = 3


def kernel_import_problem(error: ImportError) -> EnvironmentProblem | None:
    """The one line for an ImportError from the compiled kernels (`linalg_io._kernels`):
    a checkout whose `cython/*.pyx` changed since the last build, or that was never built;
    None for any other ImportError."""
    module = error.name or ""
    if not (module == "linalg_io._kernels" or module.startswith("linalg_io._kernels.")):
        return None
    return EnvironmentProblem(
        f"the compiled kernels do not match this source ({error}): they are built from "
        f"cython/*.pyx, which changed or was never built; run `make kernels` (or "
        f"`pip install -e .` again)")


def error_from_code(code: int, message: str) -> LinalgIOError:
    """Rebuild an error of the right class from an exit code agreed across ranks."""
    cls = {1: VerificationError, 2: InputError, 3: EnvironmentProblem}.get(code, LinalgIOError)
    error = cls(message)
    error.exit_code = code
    return error
