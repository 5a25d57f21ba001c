"""How a rank that the --np launcher started tells it that the rank ended its command:
a line in the file the environment variable `STATUS_VARIABLE` names (`comm.launch`
reads it; `comm.agree.exit_agreed` writes it before `os._exit`, which skips atexit)."""

from __future__ import annotations

import os

STATUS_VARIABLE = "LINALG_IO_LAUNCHER_STATUS"


def mark_finished() -> None:
    """On a rank the --np launcher started: note that this rank ended its command."""
    path = os.environ.get(STATUS_VARIABLE)
    if path:
        with open(path, "a", encoding="ascii") as status:
            status.write("finished\n")
