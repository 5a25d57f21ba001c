"""The Slurm path across nodes, on a two-node Slurm made on this machine
(tests/slurm/two_node_slurm.sh: two network namespaces, a slurmd in each under its own
hostname, links shaped to 1 Gbit/s): the `calibrate` template on 2 nodes writes a
machine file whose `inter_node` is the link's, and the `single` template's LU on 2
nodes x 2 tasks passes, its record naming both nodes and its wire bytes split between
the nodes and within them as the model splits them, rank by rank.

The fixture starts that Slurm (and stops it after this file) where there are root,
network namespaces and Slurm (or apt-get to install it); elsewhere the tests skip and
say why, unless LINALG_IO_REQUIRE_SLURM and LINALG_IO_REQUIRE_NETNS are both set (the
CI), where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from slurm_harness import TWO_NODES, VIA_TWO_NODES, output, records, render, submit, wait

LINK_BYTES_PER_S = 1e9 / 8   # the fixture's links: tc tbf at 1gbit
pytestmark = pytest.mark.alone   # it measures the link's bandwidth
NODES = "lio24-n[0-1]"


def _why_not() -> str | None:
    """Why the two-node Slurm cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "not root: the two-node Slurm makes network namespaces and runs daemons as root"
    missing = [tool for tool in ("ip", "tc", "nsenter", "unshare") if not shutil.which(tool)]
    if missing:
        return f"no {', '.join(missing)} (iproute2, util-linux)"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "Slurm is not installed and there is no apt-get to install it"
    return None


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("LINALG_IO_REQUIRE_SLURM") and os.environ.get("LINALG_IO_REQUIRE_NETNS"):
        pytest.fail(f"LINALG_IO_REQUIRE_SLURM and LINALG_IO_REQUIRE_NETNS are set but {reason}")
    pytest.skip(f"no two-node Slurm: {reason}")


@pytest.fixture(scope="module")
def two_nodes():
    reason = _why_not()
    if reason:
        _skip_or_fail(reason)
    running = subprocess.run(["bash", str(TWO_NODES), "status"], capture_output=True,
                             timeout=60, check=False).returncode == 0
    if not running:
        started = subprocess.run(["bash", str(TWO_NODES), "start"], capture_output=True,
                                 text=True, timeout=900, check=False)
        if started.returncode == 3:    # its one line: no namespaces (or root) here
            _skip_or_fail(started.stderr.strip())
        if started.returncode != 0:
            pytest.fail(f"two-node Slurm did not start: {started.stderr[-2000:]}")
    yield
    if not running:
        subprocess.run(["bash", str(TWO_NODES), "stop"], capture_output=True, timeout=120,
                       check=False)


def run_job(script: str, cwd) -> str:
    job = submit(script, cwd, via=VIA_TWO_NODES)
    fields = wait(job, timeout=180, via=VIA_TWO_NODES)
    assert (fields["JobState"], fields["ExitCode"], fields["NodeList"]) \
        == ("COMPLETED", "0:0", NODES), output(cwd, job)
    return job


def test_calibrate_on_two_nodes_fills_inter_node(two_nodes, tmp_path):
    machine = tmp_path / "machine.json"
    run_job(render("calibrate", "--nodes", "2", "--ntasks-per-node", "2", "--set", "reps=1",
                   "--set", f"machine={machine}"), tmp_path)
    profile = json.loads(machine.read_text())
    assert (profile["nodes"], profile["ranks_per_node"]) == (2, 2), profile
    net = profile["inter_node"]
    assert net["links_per_node"] == 1, net        # one shaped veth per node
    assert 0 < net["latency_s"] < 1e-3, net
    # through the shaped link, not shared memory or loopback: at most its rate (a token
    # bucket lets nothing faster through), and not far below it even on a loaded machine
    assert 0.25 * LINK_BYTES_PER_S < net["bandwidth_bytes_per_s"] < 1.05 * LINK_BYTES_PER_S, net
    # within a node: shared memory, far above the link
    assert 1 / profile["beta_s_per_byte"] > 4 * LINK_BYTES_PER_S, profile


def test_lu_on_two_nodes_splits_its_wire_bytes(two_nodes, tmp_path):
    out = tmp_path / "lu.jsonl"
    job = run_job(render("single", "--nodes", "2", "--ntasks-per-node", "2", "--set",
                         "args=lu --algo 2d --n 1024 --grid 2x2 --dist diagdom --reps 1",
                         "--set", f"out={out}"), tmp_path)
    (record,) = records(out)
    assert record["verify"]["passed"], record["verify"]
    assert record["nranks"] == 4 and record["hosts"] == ["lio24-n0", "lio24-n1"]
    assert (record["slurm"]["job_id"], record["slurm"]["nodelist"], record["slurm"]["nodes"],
            record["slurm"]["tasks_per_node"]) == (job, NODES, 2, "2(x2)"), record["slurm"]
    measured, model = record["traffic"]["wire"], record["model"]["wire"]
    assert sum(measured["inter_node"]["per_rank_bytes_recv"]) > 0     # the nodes talk
    for key in ("per_rank_bytes_sent", "per_rank_bytes_recv"):
        for part in ("inter_node", "intra_node"):
            assert measured[part][key] == model[part][key], (part, key)
        assert [a + b for a, b in zip(measured["inter_node"][key], measured["intra_node"][key])] \
            == measured[key]
