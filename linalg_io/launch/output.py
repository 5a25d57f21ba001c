"""The launcher's stderr, relayed line by line less its box that repeats an exit code.

When the ranks agree on an error, rank 0 prints it once and every rank exits with
its code; Open MPI's mpiexec then adds a ruled box ("prterun detected that one or
more processes exited with non-zero status ...") that says nothing the line and the
exit code have not. Its PMIx server may also print a line "PMIX ERROR: PMIX_ERR_UNREACH"
when ranks leave after such an error while it still talks to them (a race in the job's
teardown, not a fault of the run). `relay_stderr` drops both and copies everything else
at once (progress lines, tracebacks, MPI_Abort's box, the launcher's other messages).
"""

from __future__ import annotations

from typing import BinaryIO

EXIT_CODE_BOXES = (b"exited with non-zero status",   # Open MPI 5 (prterun)
                   b"non-zero exit code")           # Open MPI 4 (mpirun)
TEARDOWN_NOISE = b"PMIX ERROR: PMIX_ERR_UNREACH"


def _ruler(line: bytes) -> bool:
    text = line.strip()
    return len(text) >= 20 and set(text) == {ord("-")}


def relay_stderr(stream: BinaryIO, out: BinaryIO) -> None:
    """Copy `stream` to `out` until its end, without the exit-code box (the lines from
    one ruler to the next that mention a non-zero exit) and the teardown's PMIx line."""
    held: list[bytes] | None = None   # a ruled box being read
    for line in iter(stream.readline, b""):
        if TEARDOWN_NOISE in line:
            continue
        if held is None and not _ruler(line):
            out.write(line)
            out.flush()
        elif held is None:
            held = [line]
        else:
            held.append(line)
            if _ruler(line):
                if not any(marker in part for part in held for marker in EXIT_CODE_BOXES):
                    out.writelines(held)
                    out.flush()
                held = None
    if held:
        out.writelines(held)
        out.flush()
