"""SpTRSV across nodes: the model's link for the traffic between nodes (shared only by the
ranks of a node that send or receive across), exactly, and on the emulated cluster (2
nodes x 2 ranks) the measured inter-node bytes per rank against the model's, with one
rank per node on the link.

The cluster test needs root and network namespaces (tests/emulated_cluster.py): skipped
with the reason without them, failed under LINALG_IO_REQUIRE_NETNS=1."""

import numpy as np
import pytest
from emulated_cluster import cluster, run_records
from linalg_io.models.profile import InterNode, MachineProfile
from linalg_io.models.sptrsv import network_users, sptrsv_costs

from linalg_io.sptrsv import analysis
from linalg_io.sptrsv.matrices import load_matrix

# 4 ranks, 2 per node, a core each; the network 10x the node's latency, 10x its seconds
# per byte
PROFILE = MachineProfile(alpha_s=1e-6, beta_s_per_byte=1e-9, gamma_flops=1e9,
                         mem_bw_bytes_per_s=1e9, ranks_per_node=2, cores_per_node=2, nodes=2,
                         inter_node=InterNode(latency_s=1e-5, bandwidth_bytes_per_s=1e8))


def lap3d_costs(algo: str):
    lower = load_matrix("lap3d:8")
    levels = analysis.levels(lower)
    owner = analysis.partition_rows(lower, levels, 4, "nnz")
    return sptrsv_costs(lower.indptr, lower.indices, levels, owner, 4, 1, algo, 2)


def test_network_users_counts_a_nodes_ranks_on_its_link():
    assert network_users(np.array([1]), np.array([2]), 2) == 1
    assert network_users(np.array([0, 1, 1]), np.array([2]), 2) == 2      # two senders
    assert network_users(np.array([0]), np.array([4, 5, 6]), 4) == 3     # three receivers
    assert network_users(np.array([], dtype=int), np.array([], dtype=int), 2) == 1


@pytest.mark.parametrize("algo,flag,per_batch", [("levelset", 0, 1), ("syncfree", 8, 2)])
def test_one_boundary_across_nodes_uses_the_link_alone(algo, flag, per_batch):
    """lap3d:8 in 4 row blocks (142, 124, 124, 122 rows): rank 1 sends its last plane
    (64 values, 14 levels) to rank 2 across the nodes, ranks 0 -> 1 and 2 -> 3 within.
    Rank 1 alone uses node 0's link: its bytes cost the link's full rate."""
    costs = lap3d_costs(algo)
    assert set(costs.links) == {1, (4, 1)}
    sent, recv, msgs = costs.links[4, 1]
    assert sent.tolist() == [0, 512 + 14 * flag, 0, 0]
    assert recv.tolist() == [0, 0, 512 + 14 * flag, 0]
    assert msgs.tolist() == [0, 14 * per_batch, 0, 0]
    assert costs.message_levels == 18 and costs.stream_bytes.tolist() == [7816, 7552, 7588, 7508]
    block = costs.record_block(PROFILE)
    wire = block["wire"]["inter_node"]
    assert wire["per_rank_bytes_sent"] == [0, 512 + 14 * flag, 0, 0]
    assert wire["per_rank_bytes_recv"] == [0, 0, 512 + 14 * flag, 0]
    # rank 1: stream 7552 B at 1 GB/s; 14 per_batch messages across at 10 us; the larger
    # of its bytes received on its node (as many as it sends, at 1 ns/B) and sent across
    # at 10 ns/B (one rank on the link, not 20 ns/B); 18 message levels at 10 us
    across = 512 + 14 * flag
    expected = 7552e-9 + 14 * per_batch * 1e-5 + across * 1e-8 + 18 * 1e-5
    assert block["time_s"] == pytest.approx(expected, rel=1e-12)


RUNS = {algo: ["sptrsv", "--matrix", "lap3d:16", "--algo", algo]
        for algo in ("levelset", "syncfree")}


@pytest.fixture(scope="module")
def records():
    with cluster(2):
        yield {name: run_records(4, args + ["--reps", "2", "--warmup", "1"])[0]
               for name, args in RUNS.items()}


@pytest.mark.mpi
@pytest.mark.parametrize("name", RUNS)
def test_measured_inter_node_bytes_and_link_users(records, name):
    record = records[name]
    assert record["verify"]["passed"] and len(record["hosts"]) == 2
    measured, model = record["traffic"]["wire"], record["model"]["wire"]
    for part in ("inter_node", "intra_node"):
        for key in ("per_rank_bytes_sent", "per_rank_bytes_recv"):
            assert measured[part][key] == model[part][key], (part, key)
    # lap3d:16 in 4 row blocks: rank 1 sends rank 2 its last plane, 256 values, and
    # (sync-free) a flag per level of it, 30 levels; no other rank crosses
    flags = 8 * 30 if name == "syncfree" else 0
    assert measured["inter_node"]["per_rank_bytes_sent"] == [0, 2048 + flags, 0, 0]
    assert measured["inter_node"]["per_rank_bytes_recv"] == [0, 0, 2048 + flags, 0]
