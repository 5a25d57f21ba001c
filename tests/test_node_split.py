"""The model's inter-node split on its own (no MPI): the schedules' edges between nodes
against a walk of every message, and the split of a model's links by placement."""

import json
from dataclasses import replace

import numpy as np
import pytest
from linalg_io.models.conflux import record_block as conflux_block
from linalg_io.models.costs import link_span
from linalg_io.models.lu2d import lu2d_costs
from linalg_io.models.profile import MachineProfile
from linalg_io.models.rates import LocalRates

from linalg_io.layout.schedules import (
    CHUNK_BYTES,
    allgatherv_node_costs,
    bcast_node_costs,
    bcast_node_costs_counted,
    binomial_child_positions,
    bruck_rounds,
    reduce_node_costs,
)

TREE, CHAIN = 1024.0, 3.0 * CHUNK_BYTES


def walk(p, edges, nodes):
    """(sent, received) between nodes of the messages (sender, receiver, bytes)."""
    sent, recv = np.zeros(p), np.zeros(p)
    for a, b, n in edges:
        if nodes[a] != nodes[b]:
            sent[a] += n
            recv[b] += n
    return sent, recv


def bcast_edges(p, n, root):
    if n > 16384:
        return [((root + q) % p, (root + q + 1) % p, n) for q in range(p - 1)]
    return [((root + q) % p, (root + child) % p, n)
            for q in range(p) for child in binomial_child_positions(q, p)]


@pytest.mark.parametrize("p,per_node", [(4, 2), (7, 3), (12, 4), (16, 1)])
@pytest.mark.parametrize("nbytes", [TREE, CHAIN])
def test_tree_and_chain_edges_between_nodes(p, per_node, nbytes):
    nodes = np.arange(p) // per_node
    roots = np.arange(p)
    got = bcast_node_costs(p, nbytes, roots, nodes)
    edges = [e for r in roots for e in bcast_edges(p, nbytes, r)]
    np.testing.assert_array_equal(np.stack(got), np.stack(walk(p, edges, nodes)))
    reduced = reduce_node_costs(p, nbytes, roots, nodes)
    if nbytes > 16384:      # chain r+1 -> ... -> r-1 -> r
        edges = [((r + q) % p, (r + q + 1) % p, nbytes) for r in roots for q in range(1, p)]
    else:
        edges = [(b, a, n) for a, b, n in edges]
    np.testing.assert_array_equal(np.stack(reduced), np.stack(walk(p, edges, nodes)))


@pytest.mark.parametrize("p", [1, 2, 5, 12, 64, 96, 100, 257, 1024])
@pytest.mark.parametrize("nbytes", [TREE, CHAIN])
def test_counted_roots_are_the_roots_edges(p, nbytes):
    """The convolution over root counts (residue sums where 2d divides p, FFTs elsewhere)
    = the edge-by-edge count over every root, on nodes of several sizes and on nodes
    in no order at all; a root may repeat."""
    rng = np.random.default_rng(p)
    roots = rng.integers(0, p, min(3 * p, 200))
    for nodes in (np.arange(p) // 1, np.arange(p) // 4, np.arange(p) // 7,
                  np.arange(p) // max(1, p // 2), rng.integers(0, 3, p)):
        got = bcast_node_costs_counted(p, nbytes, np.bincount(roots, minlength=p), nodes)
        np.testing.assert_array_equal(np.stack(got),
                                      np.stack(bcast_node_costs(p, nbytes, roots, nodes)))


@pytest.mark.parametrize("p,per_node", [(4, 2), (6, 4), (9, 3)])
def test_bruck_edges_between_nodes(p, per_node):
    nodes = np.arange(p) // per_node
    blocks = np.arange(1, p + 1) * 8.0
    edges = [(q, (q - h) % p, sum(blocks[(q + j) % p] for j in range(m)))
             for h, m in bruck_rounds(p) for q in range(p)]
    np.testing.assert_array_equal(np.stack(allgatherv_node_costs(blocks, nodes)),
                                  np.stack(walk(p, edges, nodes)))


def test_links_split_by_placement():
    """2D LU 2x4: the L broadcast runs in process rows (4 consecutive ranks), the rest in
    process columns (stride 4): with 4 ranks per node the columns cross nodes and the
    rows stay on them; on one node nothing crosses."""
    costs = lu2d_costs(512, 32, 2, 4, "worst")
    profile = MachineProfile(1e-6, 1e-9, 1e9, 1e9, ranks_per_node=4)
    sent, recv = costs.inter_node(profile.placement(8))
    links = costs.links_at(profile.placement(8))
    column = [sum(costs[i] for key, costs in links.items() if link_span(key) == 8)
              for i in (0, 1)]
    np.testing.assert_array_equal(sent, column[0])
    np.testing.assert_array_equal(recv, column[1])
    assert not costs.inter_node(MachineProfile(1e-6, 1e-9, 1e9, 1e9).placement(8))[0].any()
    block = costs.record_block(profile, profile.placement(8))["wire"]
    both = np.add(block["inter_node"]["per_rank_bytes_sent"],
                  block["intra_node"]["per_rank_bytes_sent"])
    np.testing.assert_array_equal(both, block["per_rank_bytes_sent"])


def test_conflux_on_one_node_has_nothing_between_nodes():
    profile = MachineProfile(1e-6, 1e-9, 1e9, 1e9)
    block = conflux_block(512, 64, 2, 2, 2, profile, "none", profile.placement(8))["wire"]
    assert not any(block["inter_node"]["per_rank_bytes_sent"])
    assert block["intra_node"]["per_rank_bytes_recv"] == block["per_rank_bytes_recv"]


def test_network_fit_takes_the_large_messages_slope():
    """t(n) = alpha + n / B on large messages, slower in between (TCP's window): the
    fit gives back B and the smallest latency."""
    from linalg_io.tools.calibrate import fit_network

    rows = [{"bytes": n, "one_way_s": 5e-5 + n / 1.25e8 * (1.0 if n >= 2**20 else 1.7)}
            for n in (8, 32, 128, 512, 2048, 2**16, 2**18, 2**20, 2**22, 2**24)]
    alpha, beta = fit_network(rows)
    assert alpha == pytest.approx(5e-5 + 8 / 1.25e8 * 1.7)
    assert 1 / beta == pytest.approx(1.25e8)


@pytest.mark.parametrize("local", [None, LocalRates(14.0, 0.3), LocalRates(0.0, 1.0)],
                         ids=["default rates", "a machine's", "every kernel at gamma"])
def test_lu2d_critical_path_on_one_rank_is_its_work(local):
    """P = 1: no messages, nothing overlaps: the critical path is the rank's own work,
    the alpha-beta-gamma sum of the rank (flop-equivalents at gamma, at the machine's
    local rates: with every kernel at gamma, the flops over gamma)."""
    from linalg_io.models.lu2d import critical_path_time

    profile = MachineProfile(1e-6, 1e-9, 1e9, 1e9)
    if local is not None:
        profile = replace(profile, local=local)
    costs = lu2d_costs(1000, 64, 1, 1, "none")
    placement = profile.placement(1)
    seconds = critical_path_time(1000, 64, 1, 1, "none", profile, placement)
    assert seconds == pytest.approx(costs.rated_flops(profile.local)[0] / profile.gamma_flops,
                                    rel=1e-12)
    if local == LocalRates(0.0, 1.0):
        assert seconds == pytest.approx(costs.flops[0] / profile.gamma_flops, rel=1e-12)
    assert costs.times(profile, placement)[0] == pytest.approx(seconds, rel=1e-12)


def test_lu2d_critical_path_counts_each_panel_and_the_network():
    """1 x 2 on two nodes: the panels alternate between the columns, and the look-ahead
    hides only what the other column's update covers; a slower network costs time, and
    the difference between two networks is at least the bytes on the critical path's
    broadcasts at the difference of the rates."""

    from linalg_io.models.lu2d import critical_path_time
    from linalg_io.models.profile import InterNode

    fast = MachineProfile(1e-6, 1e-10, 1e10, 1e10, ranks_per_node=1,
                          inter_node=InterNode(1e-5, 1e9))
    slow = replace(fast, inter_node=InterNode(1e-5, 1e8))
    n, nb = 2048, 128
    times = [critical_path_time(n, nb, 1, 2, "none", m, m.placement(2)) for m in (fast, slow)]
    work = lu2d_costs(n, nb, 1, 2, "none").rated_flops(fast.local).max() / fast.gamma_flops
    assert times[0] > work
    first_panel = 8 * (nb * (nb - 1) // 2 + nb + 1 + n * nb)
    assert times[1] - times[0] >= first_panel * (1e-8 - 1e-9)


def test_a_cluster_file_of_nodes_sharing_a_machine_keeps_its_cores():
    """calibrate on an emulated cluster writes one core per node (2 nodes on 2 cores):
    a run's placement keeps it, so 4 ranks share 2 cores; a file without a network
    takes this node's cores as before."""
    from dataclasses import replace

    from linalg_io.models.profile import InterNode, this_machine_cores

    shared = MachineProfile(1e-6, 1e-9, 1e9, 1e9, ranks_per_node=2, cores_per_node=1,
                            nodes=2, inter_node=InterNode(1e-5, 1e8))
    assert shared.for_run(2).placement(4).shared_cores == 2
    one_node = replace(shared, inter_node=None)
    assert one_node.for_run(2).cores_per_node == this_machine_cores()


def test_overlap_false_puts_the_l_broadcast_after_the_update():
    """Over TCP (inter_node.overlap false) the 2D's look-ahead broadcast across nodes
    arrives after the other column's update: the step costs max(U, A) + L instead of
    max(U, A + L), so the time grows by at most the broadcasts and at least by what the
    overlapped run hid; on one node the flag changes nothing."""
    from dataclasses import replace

    from linalg_io.models.lu2d import critical_path_time
    from linalg_io.models.profile import InterNode

    rdma = MachineProfile(1e-6, 1e-10, 1e10, 1e10, ranks_per_node=1,
                          inter_node=InterNode(1e-5, 1e8))
    tcp = replace(rdma, inter_node=InterNode(1e-5, 1e8, overlap=False))
    n, nb = 2048, 128
    overlapped, serial = (critical_path_time(n, nb, 1, 2, "none", m, m.placement(2))
                          for m in (rdma, tcp))
    # every step's broadcast (each rank receives those of the other column's panels)
    bcast_l = lu2d_costs(n, nb, 1, 2, "none").bytes_recv.sum() * 1e-8
    assert overlapped < serial <= overlapped + bcast_l * 1.01
    one_node = [replace(m, ranks_per_node=2) for m in (rdma, tcp)]
    assert len({critical_path_time(n, nb, 1, 2, "none", m, m.placement(2))
                for m in one_node}) == 1


def test_collectives_in_sequence_and_waits_that_hold_no_core():
    """An allreduce over two nodes is a reduce, then a bcast: its time is both transfers
    (measured: 8 MiB at 300 Mbit/s, 231 ms one way, 463 ms the allreduce), where the
    overlapping max(sent, recv) would charge one. Ranks sharing cores: the work's
    makespan, then the longest network wait (a waiting rank holds no core)."""
    from linalg_io.models import tsgemm
    from linalg_io.models.costs import waiting_makespans
    from linalg_io.models.profile import InterNode

    machine = MachineProfile(1e-6, 1e-10, 1e12, 1e12, ranks_per_node=1,
                             inter_node=InterNode(0.0, 1e8))
    costs, memory = tsgemm.rank_costs("atb", 4096, 512, 512, 2, 8)
    local = max((memory / 1e12).max(), (costs.flops / 1e12).max())
    nbytes = 512 * 512 * 8
    assert tsgemm.run_time(costs, memory, 8, machine, machine.placement(2)) == pytest.approx(
        local + 2 * nbytes / 1e8, rel=1e-6)
    work, wait = np.array([[1.0, 1.0, 1.0, 1.0]]), np.array([[0.0, 0.0, 0.0, 2.0]])
    assert waiting_makespans(work, wait, 2)[0] == pytest.approx(4.0)
    assert waiting_makespans(work, wait, None)[0] == pytest.approx(3.0)


def test_machine_file_overlap_must_be_a_boolean(tmp_path):
    from linalg_io.models.profile import load_profile

    from linalg_io.errors import InputError

    data = {"alpha_s": 1e-6, "beta_s_per_byte": 1e-9, "gamma_flops": 1e9,
            "mem_bw_bytes_per_s": 1e9, "ranks_per_node": 2,
            "inter_node": {"latency_s": 1e-5, "bandwidth_bytes_per_s": 1e8}}
    path = tmp_path / "m.json"
    for overlap, expected in ((False, False), (None, True)):
        inter = dict(data["inter_node"], **({} if overlap is None else {"overlap": overlap}))
        path.write_text(json.dumps(dict(data, inter_node=inter)))
        assert load_profile(path).inter_node.overlap is expected
    path.write_text(json.dumps(dict(data, inter_node=dict(data["inter_node"], overlap="no"))))
    with pytest.raises(InputError, match="boolean overlap"):
        load_profile(path)


def test_a_row_across_nodes_pays_the_link_once_per_node():
    """1 x 256 on nodes of 8, 16 or 32 ranks (issue: 33.7, 56.5, 102 s before): a process
    row's chain crosses each node's link once per direction, so neither the time nor the
    bytes that cross grow with the ranks that share a node; and only the ranks at the
    nodes' ends receive or send across."""
    from dataclasses import replace

    from linalg_io.models.profile import load_profile

    machine = load_profile("example_cpu")
    costs = lu2d_costs(32768, 128, 1, 256, "expected")
    times, across = [], []
    for per_node in (8, 16, 32):
        m = replace(machine, ranks_per_node=per_node, nodes=10000)
        times.append(costs.record_block(m, m.placement(256))["time_s"])
        sent, recv = costs.inter_node(m.placement(256))
        first = np.arange(256) % per_node == 0
        assert recv[~first].sum() == 0 and sent[np.roll(~first, -1)].sum() == 0
        np.testing.assert_array_equal(recv[first], costs.bytes_recv[first])
        across.append(recv.sum())
    assert max(times) < 1.05 * min(times)
    assert across[0] == pytest.approx(2 * across[1], rel=1e-3)
    assert across[1] == pytest.approx(2 * across[2], rel=1e-3)
    # the same chain on one node with the network's rates everywhere would be slower
    slow_hops = replace(machine, alpha_s=machine.inter_node.latency_s,
                        beta_s_per_byte=1 / machine.inter_node.bandwidth_bytes_per_s,
                        ranks_per_node=256, nodes=10000)
    assert times[0] < costs.record_block(slow_hops, slow_hops.placement(256))["time_s"]


def test_a_conflux_row_across_nodes_pays_the_link_once_per_node():
    """2.5D 1 x 256 x 1 on nodes of 8, 16 or 32 ranks: a process row's broadcasts (L00,
    the L slices) cross each node's link once per direction, so packing more of the
    row's ranks on a node does not make it slower (before: every hop at the network's
    rate on a link shared by all the node's ranks: 0.48, 0.57, 0.74 s, and the phase
    scatter_slices 0.085, 0.170, 0.339 s); and the same row with the network's rates on
    every hop is slower."""
    from dataclasses import replace

    from linalg_io.models.phase_time import conflux_phase_seconds
    from linalg_io.models.profile import load_profile

    machine = load_profile("example_cpu")
    n, v, p = 8192, 128, 256
    times, scatter = [], []
    for per_node in (8, 16, 32):
        m = replace(machine, ranks_per_node=per_node, nodes=10000)
        times.append(conflux_block(n, v, 1, p, 1, m, "uniform", m.placement(p))["time_s"])
        phases = conflux_phase_seconds(n, v, 1, p, 1, m, m.placement(p))
        scatter.append(phases["max"]["scatter_slices"])
    assert max(times) < 1.05 * min(times)
    assert max(scatter) < 1.05 * min(scatter)
    slow_hops = replace(machine, alpha_s=machine.inter_node.latency_s,
                        beta_s_per_byte=1 / machine.inter_node.bandwidth_bytes_per_s,
                        ranks_per_node=p, nodes=10000)
    assert times[0] < conflux_block(n, v, 1, p, 1, slow_hops, "uniform",
                                    slow_hops.placement(p))["time_s"]


def test_conflux_row_hops_split_by_node():
    """1 x 4 x 1 on 2 nodes x 2 ranks: a row's chain enters node 1 at column 2 and
    node 0 at column 0 (the wrap): those ranks' received bytes, and the sent bytes of
    columns 1 and 3, go on the network's link (one chain per node: key (4, 1)), the rest
    on the node; the parts add up to the row group's counts, and the counts are those
    of one node."""
    from linalg_io.models.conflux import conflux_plan_counts, link_keys
    from linalg_io.models.conflux_nodes import node_groups
    from linalg_io.models.lu2d import ON_NODE
    from linalg_io.models.profile import InterNode

    machine = MachineProfile(1e-6, 1e-10, 1e10, 1e10, ranks_per_node=2,
                             inter_node=InterNode(1e-5, 1e8))
    placement = machine.placement(4)
    groups = node_groups(1, 4, 1, placement)
    assert list(groups) == ["row"]
    hops = groups["row"].hops(np.arange(4))
    np.testing.assert_array_equal(hops.cross_in[0], [True, False, True, False])
    np.testing.assert_array_equal(hops.cross_out[0], [False, True, False, True])
    assert node_groups(1, 2, 2, placement) == {}        # a row of 2 stays on its node
    keys = link_keys(1, 4, 1, placement)
    assert keys["row@hop"] == (4, 1) and keys["row@node"] == ON_NODE
    counts = conflux_plan_counts(512, 64, 1, 4, 1, "uniform", machine, placement,
                                 by_phase=True)
    alone = conflux_plan_counts(512, 64, 1, 4, 1, "uniform", by_phase=True)
    for key in ("sent", "recv", "msgs"):
        np.testing.assert_array_equal(counts[key], alone[key])
    row = alone["by_phase"]["scatter_slices"]["links"]["row"]
    links = counts["by_phase"]["scatter_slices"]["links"]
    across, inside = links["row@hop"], links["row@node"]
    np.testing.assert_array_equal(across[1][..., [1, 3]], 0)
    np.testing.assert_array_equal(across[1][..., [0, 2]], row[1][..., [0, 2]])
    np.testing.assert_array_equal(across[0][..., [0, 2]], 0)
    for i in range(3):
        np.testing.assert_array_equal(across[i] + inside[i], row[i])
    assert row[1].sum() > 0


def test_conflux_columns_and_fibres_across_nodes_pay_the_link_once_per_node():
    """P = 256 on nodes of 8, 16 or 32 ranks. 2 x 1 x 128: each fibre has 8, 16 or 32
    layers on a node (stride 2), its reductions are chains that cross each node's link
    once per direction, so the panel's reduction and the pivot rows' (push_pivots) take
    the same time whatever the ranks per node, and so does the whole LU within 5% (main:
    every hop at the network's rate on a link shared by all the node's ranks: 3.456,
    3.584, 3.840 s; reduce_panel 0.044, 0.088, 0.175 s; now 3.394, 3.434, 3.504 s and
    0.0248 s each). 128 x 1 x 2: U's broadcast down a process column (8, 16, 32 of its
    members on a node) is one chain per node (scatter_slices on main 0.044, 0.087, 0.173
    s, now 0.0195, 0.0203, 0.0219 s: what grows is the L slices' scatter, one message
    from each of the node's ranks in the panel's column to another node). 256 x 1 x 1's
    allgather and tournament do grow with the ranks per node, on main and now alike: a
    node's link carries r (P - r) of the Bruck's blocks, one for each of its r ranks
    from each rank elsewhere."""
    from dataclasses import replace

    from linalg_io.models.phase_time import conflux_phase_seconds
    from linalg_io.models.profile import load_profile

    machine = load_profile("example_cpu")
    n, v, p = 8192, 128, 256
    times, phases = {}, {}
    for grid in ((2, 1, 128), (128, 1, 2)):
        for per_node in (8, 16, 32):
            m = replace(machine, ranks_per_node=per_node, nodes=10000)
            times.setdefault(grid, []).append(
                conflux_block(n, v, *grid, m, "uniform", m.placement(p))["time_s"])
            phases.setdefault(grid, []).append(
                conflux_phase_seconds(n, v, *grid, m, m.placement(p))["max"])
    fibre = phases[2, 1, 128]
    for phase in ("reduce_panel", "push_pivots"):
        spent = [by_phase[phase] for by_phase in fibre]
        assert max(spent) < 1.05 * min(spent), (phase, spent)
    assert max(times[2, 1, 128]) < 1.05 * min(times[2, 1, 128])
    scatter = [by_phase["scatter_slices"] for by_phase in phases[128, 1, 2]]
    assert scatter[2] < 1.25 * scatter[0], scatter


def test_conflux_messages_between_nodes_equal_the_walk():
    """Every group whose members share nodes (rows, columns, fibres on nodes of 2 and 4
    ranks; chains and, at v = 16, binomial trees): its bytes between nodes per rank equal
    those of the walk that lists each message between world ranks (tests/conflux_walk.py),
    and a group whose members sit on distinct nodes is not split."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from conflux_walk import walk
    from linalg_io.models.conflux import ACROSS, conflux_plan_counts
    from linalg_io.models.profile import InterNode

    split = set()
    for per_node, grids in ((2, [(4, 1, 1), (1, 4, 1), (1, 1, 4), (2, 1, 2), (2, 2, 1)]),
                            (4, [(8, 1, 1), (4, 2, 1), (2, 1, 4), (1, 2, 4), (1, 8, 1),
                                 (4, 1, 2)])):
        machine = MachineProfile(1e-6, 1e-10, 1e10, 1e10, ranks_per_node=per_node,
                                 inter_node=InterNode(1e-5, 1e8))
        for grid in grids:
            placement = machine.placement(int(np.prod(grid)))
            for n, v in ((512, 64), (256, 16)):
                walked = walk(n, v, *grid, "none", machine, placement)
                model = conflux_plan_counts(n, v, *grid, "none", machine, placement,
                                            by_group=True)
                for group, (sent, recv) in walked["across"].items():
                    np.testing.assert_array_equal(model["by_group"][group + ACROSS],
                                                  np.stack([sent, recv]), err_msg=str(grid))
                    split.add(group)
                assert set(walked["across"]) == {key[:-len(ACROSS)] for key in model["by_group"]
                                                 if key.endswith(ACROSS)}
                if grid == (2, 2, 1):       # the columns' members on distinct nodes
                    assert walked["across"] == {}
    assert split == {"row", "col", "fibre"}


@pytest.mark.parametrize("grid, n, v, pivots", [
    ((16, 1, 1), 1000, 64, "uniform"),       # c = 1: the Bruck's windows between nodes
    ((8, 2, 2), 700, 32, "none"),            # c > 1: the gatherv from other nodes
    ((32, 1, 2), 512, 16, "proportional"),   # binomial trees down the columns
])
def test_shared_column_classes_in_blocks_of_steps_equal_the_walk(monkeypatch, grid, n, v,
                                                                  pivots):
    """A process column's members on nodes of 8 ranks (stride Py, 8 / Py to a node): its
    classes, built a few steps at a time (BLOCK_ELEMENTS: 3 or fewer steps a block),
    give every rank the bytes, messages and flops of the per-rank walk (tests/
    conflux_walk.py), the same bytes between nodes, and its critical path; and the
    counts do not change with the blocks (one block of every step)."""
    import sys
    from dataclasses import replace
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from conflux_walk import walk
    from linalg_io.models import conflux_classes
    from linalg_io.models.conflux import ACROSS, conflux_plan_counts
    from linalg_io.models.conflux_nodes import node_groups
    from linalg_io.models.profile import load_profile

    machine = replace(load_profile("example_cpu"), ranks_per_node=8, nodes=10000)
    placement = machine.placement(int(np.prod(grid)))
    assert "col" in node_groups(*grid, placement)
    whole = conflux_plan_counts(n, v, *grid, pivots, machine, placement, by_group=True)
    monkeypatch.setattr(conflux_classes, "BLOCK_ELEMENTS", 3 * grid[0])
    blocks = conflux_plan_counts(n, v, *grid, pivots, machine, placement, by_group=True)
    walked = walk(n, v, *grid, pivots, machine, placement)
    for key in ("sent", "recv", "msgs", "flops"):
        np.testing.assert_array_equal(blocks[key], whole[key], err_msg=key)
        np.testing.assert_allclose(blocks[key], walked[key], rtol=1e-10, atol=1e-6,
                                   err_msg=key)
    for group, (sent, recv) in walked["across"].items():
        np.testing.assert_array_equal(blocks["by_group"][group + ACROSS],
                                      whole["by_group"][group + ACROSS], err_msg=group)
        np.testing.assert_allclose(blocks["by_group"][group + ACROSS], np.stack([sent, recv]),
                                   rtol=1e-10, atol=1e-6, err_msg=group)
    assert "col" in walked["across"]
    assert blocks["time_s"] == whole["time_s"]
    assert blocks["time_s"] == pytest.approx(walked["time_s"], rel=1e-9)
