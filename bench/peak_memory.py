"""A command's wall time and the peak of its processes' summed resident memory.

    .venv/bin/python bench/peak_memory.py COMMAND [ARG ...]

Runs COMMAND and samples, every 20 ms, the resident memory (VmRSS) of it and of every
process below it (`model` commands fork a worker per core), printing on stderr the wall
time, the largest sum seen and COMMAND's exit status, which it exits with. Pages the
processes share (a fork's) count once per process: an upper bound. Linux only (/proc).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

SAMPLE_S = 0.02


def _children() -> dict[int, list[int]]:
    """{pid: its children} of every process now."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(name))
    return children


def _resident(pid: int) -> int:
    """VmRSS of `pid` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_resident(root: int) -> int:
    """The summed VmRSS of `root` and every process below it."""
    children, todo, total = _children(), [root], 0
    while todo:
        pid = todo.pop()
        total += _resident(pid)
        todo += children.get(pid, [])
    return total


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    start = time.monotonic()
    job = subprocess.Popen(argv)
    peak = 0
    while job.poll() is None:
        peak = max(peak, tree_resident(job.pid))
        time.sleep(SAMPLE_S)
    print(f"{time.monotonic() - start:.2f} s wall, peak summed RSS {peak / 1e6:.0f} MB, "
          f"exit {job.returncode}", file=sys.stderr)
    return job.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
