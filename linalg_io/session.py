"""Ending a process and everything it started: every member of its session.

A sweep point runs in a session of its own (``start_new_session``). Open MPI's
launcher puts each rank in a process group of its own, so killing the point's group
left ranks running until they noticed (docs/MEASUREMENTS.md#in-code); the session holds
them all. `end_session` sends SIGTERM to every member, SIGKILL to any still alive
after a grace period, and returns once none is left, the leader reaped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

GRACE_S = 2.0      # after SIGTERM, before SIGKILL
LIMIT_S = 30.0     # give up waiting (a process stuck in the kernel)
POLL_S = 0.02


def session_members(sid: int) -> list[int]:
    """Live processes (not zombies) of session `sid`, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:   # gone meanwhile
            continue
        state, _ppid, _pgrp, session = stat[stat.rindex(")") + 2:].split()[:4]
        if int(session) == sid and state not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):   # ended meanwhile
            pass


def end_session(process: subprocess.Popen) -> None:
    """End `process` (a session leader) and every process of its session: SIGTERM,
    SIGKILL after GRACE_S; return when none is alive and `process` is reaped."""
    sid = process.pid
    start = time.monotonic()
    _signal_all(session_members(sid) or [sid], signal.SIGTERM)
    while time.monotonic() - start < LIMIT_S:
        process.poll()
        alive = session_members(sid)
        if not alive:
            break
        if time.monotonic() - start > GRACE_S:
            _signal_all(alive, signal.SIGKILL)
        time.sleep(POLL_S)
    process.wait()
