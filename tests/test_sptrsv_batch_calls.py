"""The level-set executor's calls per batch in the SpTRSV model (`send_cpu_s` at the
sender, `inter_node.send_cpu_s` for a batch between nodes, `recv_cpu_s` at the task the
batch gates; models/sptrsv.py's module doc): exactly on a chain of 4 rows in 2 blocks,
times the ranks per core where ranks share cores (the rows too); none for the sync-free
solve; machine files without them load and give the figures they gave."""

import json
import re
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from linalg_io.models.profile import InterNode, MachineProfile, load_profile
from linalg_io.models.sptrsv import sptrsv_costs

from linalg_io.errors import InputError
from linalg_io.sptrsv import analysis

PROFILE = MachineProfile(alpha_s=1e-6, beta_s_per_byte=1e-9, gamma_flops=1e9,
                         mem_bw_bytes_per_s=1e9, cores_per_node=2, nodes=1,
                         memory_per_node_bytes=1e9)
SEND, RECV = 3e-6, 2e-6
CALLS = replace(PROFILE, send_cpu_s=SEND, recv_cpu_s=RECV)
# the chain's path without the calls: rank 0's rows 0 and 1 (28 and 40 bytes streamed),
# row 1's value to rank 1 (alpha + 8 bytes), rank 1's rows 2 and 3 (40 bytes each)
CHAIN_PATH = 68e-9 + (1e-6 + 8e-9) + 80e-9


def chain_costs(algo: str):
    """x_i = b_i - x_{i-1}: 4 levels, rows 0-1 on rank 0, 2-3 on rank 1, one batch."""
    lower = sp.csr_matrix(np.eye(4) + np.eye(4, k=-1))
    levels = analysis.levels(lower)
    assert levels.tolist() == [0, 1, 2, 3]
    return sptrsv_costs(lower.indptr, lower.indices, levels, np.array([0, 0, 1, 1]), 2, 1,
                        algo)


def test_a_batch_holds_its_sender_and_its_receiver_its_calls():
    costs = chain_costs("levelset")
    placement = PROFILE.placement(2)
    assert costs.path_time(PROFILE, placement) == pytest.approx(CHAIN_PATH, rel=1e-12)
    assert costs.path_time(CALLS, placement) == pytest.approx(CHAIN_PATH + SEND + RECV,
                                                              rel=1e-12)
    compute, hold, delay = costs.path_terms(CALLS, placement)
    assert compute.tolist() == pytest.approx([28e-9, 40e-9, 40e-9, 40e-9], rel=1e-12)
    assert hold.tolist() == [0.0, SEND, RECV, 0.0] and delay.tolist() == [1.008e-6]
    assert costs.record_block(CALLS)["time_s"] == costs.path_time(CALLS, placement)
    # the work: each rank's stream, its bytes at beta, the sender's message at alpha,
    # and the calls
    work = costs.work_and_wait(CALLS, placement)[0]
    assert work.tolist() == pytest.approx([68e-9 + 1.008e-6 + SEND, 88e-9 + RECV], rel=1e-12)


def test_the_rows_and_calls_take_twice_as_long_where_two_ranks_share_a_core():
    """Each rank's rows and calls at half a core; the message as before."""
    costs = chain_costs("levelset")
    shared = replace(CALLS, cores_per_node=1)
    placement = shared.placement(2)
    assert placement.shared_cores == 1
    assert costs.path_time(shared, placement) == pytest.approx(
        CHAIN_PATH + 148e-9 + 2 * (SEND + RECV), rel=1e-12)
    compute = costs.path_terms(shared, placement)[0]
    assert compute.tolist() == pytest.approx([56e-9, 80e-9, 80e-9, 80e-9], rel=1e-12)
    assert costs.record_block(shared)["time_s"] == costs.path_time(shared, placement)


def test_a_batch_between_nodes_holds_its_sender_the_calls_measured_there():
    """The chain's two blocks on two nodes: its one batch crosses, its sender held
    inter_node.send_cpu_s (the network's latency on the edge); on one node, or without
    the figure, send_cpu_s."""
    costs = chain_costs("levelset")
    net = InterNode(latency_s=1e-5, bandwidth_bytes_per_s=1e8)
    two = replace(CALLS, ranks_per_node=1, nodes=2, inter_node=net)
    across = replace(two, inter_node=replace(net, send_cpu_s=4 * SEND))
    costs.ranks_per_node = 1
    placement = two.placement(2)
    edge = 1e-5 + 8e-8
    path = CHAIN_PATH - 1.008e-6 + edge
    assert costs.path_time(two, placement) == pytest.approx(path + SEND + RECV, rel=1e-12)
    assert costs.path_time(across, placement) == pytest.approx(path + 4 * SEND + RECV,
                                                               rel=1e-12)
    assert costs.work_and_wait(across, placement)[0][0] == pytest.approx(
        costs.work_and_wait(two, placement)[0][0] + 3 * SEND, rel=1e-12)
    costs.ranks_per_node = 2          # one node: the batch stays on it
    assert costs.path_time(across, across.placement(2)) == pytest.approx(
        CHAIN_PATH + SEND + RECV, rel=1e-12)
    data = json.loads(across.to_json())
    assert data["inter_node"]["send_cpu_s"] == 4 * SEND
    assert "send_cpu_s" not in json.loads(two.to_json())["inter_node"]


def test_the_sync_free_solve_takes_no_batch_calls():
    costs = chain_costs("syncfree")
    for cores in (2, 1):
        without = replace(PROFILE, cores_per_node=cores)
        with_calls = replace(CALLS, cores_per_node=cores)
        assert costs.record_block(with_calls) == costs.record_block(without)


def test_machine_files_without_the_calls_give_the_figures_they_gave(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(PROFILE.to_json())
    assert "send_cpu_s" not in json.loads(old.read_text())
    loaded = load_profile(old)
    assert (loaded.send_cpu_s, loaded.recv_cpu_s) == (None, None)
    assert chain_costs("levelset").record_block(loaded)["time_s"] == pytest.approx(
        CHAIN_PATH, rel=1e-12)
    new = tmp_path / "new.json"
    new.write_text(CALLS.to_json())
    loaded = load_profile(new)
    assert (loaded.send_cpu_s, loaded.recv_cpu_s) == (SEND, RECV)
    assert chain_costs("levelset").record_block(loaded)["time_s"] == pytest.approx(
        CHAIN_PATH + SEND + RECV, rel=1e-12)
    # the shipped machine files have none: their level-set figures are the old ones
    for name in (None, "example_cpu"):
        shipped = load_profile(name)
        assert (shipped.send_cpu_s, shipped.recv_cpu_s) == (None, None)


@pytest.mark.parametrize("change,message", [
    ({"send_cpu_s": -1e-6}, "send_cpu_s must be positive numbers (send_cpu_s: 0 or more)"),
    ({"recv_cpu_s": "fast"}, "recv_cpu_s must be positive numbers (recv_cpu_s: 0 or more)"),
    ({"inter_node": {"latency_s": 1e-5, "bandwidth_bytes_per_s": 1e8, "send_cpu_s": -1e-6}},
     ("inter_node must be an object with positive latency_s, bandwidth_bytes_per_s, an "
      "integer links_per_node (default 1), a boolean overlap (default true), optionally a "
      "positive onesided_trip_s and a send_cpu_s >= 0")),
])
def test_bad_batch_calls_are_refused(tmp_path, change, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**json.loads(PROFILE.to_json()), **change}))
    with pytest.raises(InputError, match=re.escape(message)):
        load_profile(path)
