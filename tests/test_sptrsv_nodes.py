"""SpTRSV across nodes: the model's link for the traffic between nodes (shared only by the
ranks of a node that send or receive across) and its measured trips (the one-sided
put-with-signal, the wake-up where ranks share cores), exactly, and on the emulated cluster (2
nodes x 2 ranks) the measured inter-node bytes per rank against the model's, with one
rank per node on the link.

The cluster test needs root and network namespaces (tests/emulated_cluster.py): skipped
with the reason without them, failed under LINALG_IO_REQUIRE_NETNS=1."""

import json
import re
from dataclasses import replace

import numpy as np
import pytest
from emulated_cluster import cluster, run_records
from linalg_io.models.costs import shared_makespan
from linalg_io.models.profile import InterNode, MachineProfile, load_profile
from linalg_io.models.sptrsv import network_users, sptrsv_costs

from linalg_io.errors import InputError
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
    # rank 1's work: stream 7552 B at 1 GB/s; 14 per_batch messages across at 10 us; the
    # larger of its bytes received on its node (as many as it sends, at 1 ns/B) and sent
    # across at 10 ns/B (one rank on the link, not 20 ns/B); the blocks' wavefront
    # pipelines, its critical path (3 hops) shorter than that work
    across = 512 + 14 * flag
    expected = 7552e-9 + 14 * per_batch * 1e-5 + across * 1e-8
    assert block["time_s"] == pytest.approx(expected, rel=1e-12)
    assert costs.path_time(PROFILE, PROFILE.placement(4)) < expected


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


# the trips calibrate measures for SpTRSV (models/sptrsv.py's module doc)
NODE_TRIP, NET_TRIP, WAKE = 2e-5, 3e-4, 5e-5
TRIPS = replace(PROFILE, onesided_trip_s=NODE_TRIP, wake_s=WAKE,
                inter_node=replace(PROFILE.inter_node, onesided_trip_s=NET_TRIP))
SHARED = replace(PROFILE, cores_per_node=1)      # 4 ranks on 2 cores


def test_syncfree_batches_cost_the_one_sided_trip():
    """Rank 1's 14 batches across hold it one put-with-signal trip each (not two messages
    at the network's latency), on the critical path with what leads to them (rank 0's
    batches on its node, the stream): the path, more than rank 1's holds and work, less
    than those plus every one of the 18 message levels' on-node trips; not the 18
    message levels at the network's trip on top."""
    costs = lap3d_costs("syncfree")
    block = costs.record_block(TRIPS)
    across = 512 + 14 * 8
    rank1 = 7552e-9 + 14 * NET_TRIP + across * 1e-8
    assert block["time_s"] == costs.path_time(TRIPS, TRIPS.placement(4))
    assert rank1 < block["time_s"] < rank1 + 18 * NODE_TRIP
    assert block["msgs_sent"]["max"] == 28        # the counts stay two messages a batch


def test_one_sided_trips_wait_after_the_makespan_where_ranks_share_cores():
    """4 ranks on 2 cores: the stream and bytes are shared work (their makespan), the
    one-sided trips waits: each rank's batches at its link's trip, the longest of those
    added once; the critical path where it is longer."""
    costs = lap3d_costs("syncfree")
    shared = replace(TRIPS, cores_per_node=1)
    placement = shared.placement(4)
    work, wait = costs.work_and_wait(shared, placement)
    on_node = costs.links[1][2] / 2                # batches within a node, per rank
    assert wait.tolist() == pytest.approx((on_node * NODE_TRIP + np.array([0, 14, 0, 0])
                                           * NET_TRIP).tolist(), rel=1e-12)
    # the work: the alpha-beta model's (all work there) less its messages and levels
    alpha_beta_work, none = costs.work_and_wait(SHARED, placement)
    assert none.tolist() == [0, 0, 0, 0]
    assert work.tolist() == pytest.approx(
        (alpha_beta_work - on_node * 2 * 1e-6 - costs.links[4, 1][2] * 1e-5).tolist(),
        rel=1e-12)
    assert costs.record_block(shared)["time_s"] == pytest.approx(
        max(shared_makespan(work, 2) + wait.max(), costs.path_time(shared, placement)),
        rel=1e-12)


def test_level_set_waits_a_wake_up_per_message_where_ranks_share_cores():
    """4 ranks on 2 cores: every batch's edge of the critical path takes wake_s more, the
    work's makespan none; with a core per rank, or for the sync-free solve, wake_s
    changes nothing; the level-set solve takes no one-sided trip."""
    levelset, syncfree = lap3d_costs("levelset"), lap3d_costs("syncfree")
    shared_trips = replace(TRIPS, cores_per_node=1)
    placement = SHARED.placement(4)
    delay = levelset.path_terms(shared_trips, placement)[2]
    assert delay - levelset.path_terms(SHARED, placement)[2] == pytest.approx(WAKE, rel=1e-12)
    work = shared_makespan(levelset.work_and_wait(SHARED, placement)[0], 2)
    assert levelset.record_block(shared_trips)["time_s"] == pytest.approx(
        max(work, levelset.path_time(shared_trips, placement)), rel=1e-12)
    # the blocks' path crosses 3 boundaries: 3 wake-ups, whichever path is longest
    assert levelset.path_time(shared_trips, placement) == pytest.approx(
        levelset.path_time(SHARED, placement) + 3 * WAKE, rel=1e-12)
    assert levelset.record_block(TRIPS)["time_s"] == levelset.record_block(PROFILE)["time_s"]
    shared_syncfree = syncfree.record_block(replace(shared_trips, wake_s=None))["time_s"]
    assert syncfree.record_block(shared_trips)["time_s"] == shared_syncfree


def test_old_machine_files_load_and_give_the_old_figures(tmp_path):
    """A machine file without the trips loads with none and predicts as the alpha-beta
    model (test_one_boundary_across_nodes_uses_the_link_alone's figures); one with them
    keeps them through to_json and load_profile."""
    old = tmp_path / "old.json"
    old.write_text(PROFILE.to_json())
    data = json.loads(old.read_text())
    assert "onesided_trip_s" not in data and "onesided_trip_s" not in data["inter_node"]
    loaded = load_profile(old)
    assert (loaded.onesided_trip_s, loaded.wake_s, loaded.inter_node.onesided_trip_s) == \
        (None, None, None)
    for algo, flag, per_batch in (("levelset", 0, 1), ("syncfree", 8, 2)):
        across = 512 + 14 * flag
        expected = 7552e-9 + 14 * per_batch * 1e-5 + across * 1e-8
        assert lap3d_costs(algo).record_block(loaded)["time_s"] == pytest.approx(expected,
                                                                                 rel=1e-12)
    new = tmp_path / "new.json"
    new.write_text(TRIPS.to_json())
    loaded = load_profile(new)
    assert (loaded.onesided_trip_s, loaded.wake_s, loaded.inter_node.onesided_trip_s) == \
        (NODE_TRIP, WAKE, NET_TRIP)


@pytest.mark.parametrize("change,message", [
    ({"wake_s": -1e-6}, "wake_s must be positive numbers (wake_s: 0 or more)"),
    ({"onesided_trip_s": 0}, "onesided_trip_s must be positive numbers"),
    ({"inter_node": {"latency_s": 1e-5, "bandwidth_bytes_per_s": 1e8,
                     "onesided_trip_s": "slow"}}, "optionally a positive onesided_trip_s"),
])
def test_bad_trips_are_refused(tmp_path, change, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**json.loads(PROFILE.to_json()), **change}))
    with pytest.raises(InputError, match=re.escape(message)):
        load_profile(path)
