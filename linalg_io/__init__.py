"""linalg-io: communication-optimal distributed linear algebra, measured against its models.

From Python: `linalg_io.run("lu", algo="2d", n=2048, np=4)` runs one case and returns its
record as a dict; `linalg_io.records.load("results/*.jsonl")` loads records as a pandas
DataFrame.
"""

from linalg_io.version import __version__  # noqa: F401  (the public name)


def run(command: str, np: int = 1, out=None, **options) -> dict:
    """One run of `linalg-io COMMAND`, its record as a dict (`linalg_io.python_api.run`)."""
    from linalg_io.python_api import run as run_command

    return run_command(command, np, out, **options)
