"""How a rank that the --np launcher started tells it that the rank ended its command:
a line in the file the environment variable `STATUS_VARIABLE` names (`launch.relaunch`
reads it; `launch.agree.exit_agreed` writes it before `os._exit`, which skips atexit),
"finished", or `STALLED` from the watchdog (`launch.watchdog`)."""

from __future__ import annotations

import os

STATUS_VARIABLE = "LINALG_IO_LAUNCHER_STATUS"
STALLED = "stalled"


def mark_finished(word: str = "finished") -> None:
    """On a rank the --np launcher started: note that this rank ended its command."""
    path = os.environ.get(STATUS_VARIABLE)
    if path:
        with open(path, "a", encoding="ascii") as status:
            status.write(f"{word}\n")


def stalled_and_all_ended(path: str, nranks: int) -> bool:
    """Every one of the `nranks` ranks has ended its command and one of them stalled."""
    try:
        with open(path, encoding="ascii") as status:
            words = status.read().split()
    except OSError:
        return False
    return len(words) >= nranks and STALLED in words
