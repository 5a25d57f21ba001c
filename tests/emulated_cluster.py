"""The emulated cluster (bench/emulated_cluster.sh) for tests: bring it up, run the CLI
on it, take it down.

Needs root and network namespaces; `available()` says why not where they are missing.
With LINALG_IO_REQUIRE_NETNS=1 a missing cluster fails the test instead of skipping it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "emulated_cluster.sh"
# a name and a private subnet of their own, so a test's cluster meets nobody else's: the
# pid's, and the subnet's last octet even on pytest-xdist's worker gw0, odd on gw1, so
# the two workers' clusters never share one
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
ENV = {"LIO_CLUSTER": f"liotest{os.getpid() % 10000}",
       "LIO_CLUSTER_SUBNET": f"10.{200 + os.getpid() % 50}.{os.getpid() % 125 * 2 + _WORKER % 2}"}


def _script(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, check=check, env={**os.environ, **ENV})


def skip_or_fail(reason: str) -> None:
    if os.environ.get("LINALG_IO_REQUIRE_NETNS") == "1":
        pytest.fail(f"LINALG_IO_REQUIRE_NETNS=1 but {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def cluster(nodes: int, rate: str = "none"):
    """The cluster up for the block (down after it, whatever happens); skips (or fails,
    see the module doc) with the script's reason where it cannot be made."""
    made = _script("up", str(nodes), rate, check=False)
    if made.returncode != 0:
        _script("down", check=False)
        skip_or_fail(made.stderr.strip() or f"emulated_cluster up exited {made.returncode}")
    try:
        yield
    finally:
        _script("down", check=False)


def script_command(*args: str) -> tuple[list[str], dict]:
    """The command line and environment of `emulated_cluster.sh ARGS` on this cluster
    (for a test that runs it in the background)."""
    return ["bash", str(SCRIPT), *args], {**os.environ, **ENV}


def node_namespace(node: int) -> str:
    return f"{ENV['LIO_CLUSTER']}-n{node}"


def in_namespace(namespace: str, *command: str) -> None:
    subprocess.run(["ip", "netns", "exec", namespace, *command], check=True, timeout=30)


def shape_node(node: int, rate: str) -> None:
    """Change the rate of node `node`'s link, both ends (as `up` shaped it)."""
    for namespace, device in ((node_namespace(node), "eth0"),
                              (f"{ENV['LIO_CLUSTER']}-sw", f"p{node}")):
        in_namespace(namespace, "tc", "qdisc", "change", "dev", device, "root", "tbf", "rate",
                     rate, "burst", "131072", "latency", "200ms")


def set_link(node: int, state: str) -> None:
    """Set node `node`'s link up or down."""
    in_namespace(node_namespace(node), "ip", "link", "set", "eth0", state)


def processes_in_nodes(nodes: int) -> list[int]:
    """Every process still running in the cluster's node namespaces."""
    pids = []
    for node in range(nodes):
        listed = subprocess.run(["ip", "netns", "pids", node_namespace(node)],
                                capture_output=True, text=True, check=False, timeout=30)
        pids += [int(pid) for pid in listed.stdout.split()]
    return pids


def run_records(nranks: int, args: list[str], timeout: float = 180) -> list[dict]:
    """`linalg-io ARGS --out tmp` on the cluster's nranks ranks; its records."""
    from linalg_io.records import read_records

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "records.jsonl"
        done = _script("run", str(nranks), "--", sys.executable, "-m", "linalg_io", *args,
                       "--quiet", "--out", str(out), timeout=timeout, check=False)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
        return read_records([out])
