"""Ending a process and everything it started: every member of its session.

A sweep point runs in a session of its own (``start_new_session``). Open MPI's
launcher puts each rank in a process group of its own, so killing the point's group
left ranks running until they noticed (docs/MEASUREMENTS.md#in-code); the session holds
them all, except a daemon that made a session of its own (Open MPI's prted, which the
emulated cluster starts on this machine): the leader's descendants are ended too.
`end_session` sends SIGTERM to every member and descendant, SIGKILL to any still
alive after a grace period, and returns once none is left, the leader reaped.
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


def _live_processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, session) of every live process (not zombies), from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:   # gone meanwhile
            continue
        state, ppid, _pgrp, session = stat[stat.rindex(")") + 2:].split()[:4]
        if state not in ("Z", "X"):
            table[int(entry.name)] = (int(ppid), int(session))
    return table


def session_members(sid: int) -> list[int]:
    """Live processes (not zombies) of session `sid`."""
    return [pid for pid, (_, session) in _live_processes().items() if session == sid]


def descendants(pid: int) -> list[int]:
    """The live processes below `pid` (its children, theirs, ...), whatever their session."""
    children: dict[int, list[int]] = {}
    for child, (parent, _) in _live_processes().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


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
    tree = set(descendants(sid))
    _signal_all(sorted(set(session_members(sid)) | tree) or [sid], signal.SIGTERM)
    while time.monotonic() - start < LIMIT_S:
        process.poll()
        alive = sorted(set(session_members(sid)) | (tree & set(_live_processes())))
        if not alive:
            break
        if time.monotonic() - start > GRACE_S:
            _signal_all(alive, signal.SIGKILL)
        time.sleep(POLL_S)
    process.wait()
