"""Machine files (models/profile.py): the layout, where ranks sit, the link a message
crosses, and what the time models make of them."""

import json
from dataclasses import replace

import numpy as np
import pytest
from linalg_io.models import conflux
from linalg_io.models.costs import RankCosts, link_span, link_time, shared_makespan
from linalg_io.models.lu2d import lu2d_costs
from linalg_io.models.profile import InterNode, load_profile

from linalg_io.errors import InputError

CPU = load_profile("example_cpu")
GPU = load_profile("example_gpu")


def test_shipped_examples_say_so_and_place_ranks_in_blocks():
    for machine in (CPU, GPU):
        assert machine.example and "EXAMPLE" in machine.note and "EXAMPLE" in machine.name
    one = CPU.placement(64)          # fewer ranks than a node holds: one node, its memory
    assert (one.nodes, one.ranks_per_node, one.shared_cores) == (1, 64, None)
    assert one.memory_per_rank == CPU.memory_per_node_bytes / 64
    many = CPU.placement(16384)
    assert (many.nodes, many.ranks_per_node, many.memory_per_rank) == (
        128, 128, CPU.memory_per_node_bytes / 128)
    with pytest.raises(InputError, match="need 257 nodes"):
        CPU.placement(128 * 257)
    # the shipped default (a profile without a layout): this machine, every rank on it
    here = load_profile().placement(64)
    assert here.nodes == 1 and here.ranks_per_node == 64 and here.shared_cores is not None


def test_a_message_pays_the_link_it_crosses():
    placement = CPU.placement(1024)               # 8 nodes of 128 ranks
    assert CPU.link(32, placement) == (CPU.alpha_s, CPU.beta_s_per_byte)   # 32 | 128
    assert CPU.link(1024, placement) == (1.8e-6, 128 / 2.5e10)            # shared NIC
    assert CPU.link(96, placement)[0] == 1.8e-6   # 96 does not divide 128: some rows cross
    assert GPU.link(16, GPU.placement(16)) == (3e-6, 1 / 2.5e10)          # a NIC per GPU
    assert GPU.link(4, GPU.placement(16)) == (GPU.alpha_s, GPU.beta_s_per_byte)
    # alpha msgs + max(beta sent, beta recv), summed per link
    links = {32: (np.array([1e6]), np.array([2e6]), np.array([3.0])),
             1024: (np.array([4e6]), np.array([0.0]), np.array([5.0]))}
    expected = 3 * 4e-7 + 5 * 1.8e-6 + max(1e6 * 1e-10 + 4e6 * 128 / 2.5e10, 2e6 * 1e-10)
    assert link_time(links, CPU, placement)[0] == pytest.approx(expected)


def test_cores_are_shared_only_when_ranks_outnumber_them():
    work = np.array([1.0, 2.0, 3.0, 4.0])
    assert shared_makespan(work, None) == 4.0
    # 2 cores: 4 ranks at half speed until 1 s of work is done (2 s), then 3 at 2/3 ...
    assert shared_makespan(work, 2) == pytest.approx(2 * 1 + 1.5 * 1 + 1 * 1 + 1 * 1)
    assert shared_makespan(np.array([1.0, 4.0]), 2, weights=np.array([3, 1])) == pytest.approx(
        2 * 1 + 3)
    here = replace(CPU, ranks_per_node=4, cores_per_node=2, nodes=None)
    costs = RankCosts(np.zeros(4), np.zeros(4), np.zeros(4), work * CPU.gamma_flops, "test")
    assert costs.record_block(here)["time_s"] == pytest.approx(5.5)
    assert costs.record_block(CPU)["time_s"] == pytest.approx(4.0)


def test_the_network_slows_the_lu_as_its_rates_say():
    """The same 2D and 2.5D runs on nodes of 4 ranks: the same bytes, more time when the
    network is slower, none of it when every communicator stays on a node."""
    fast = replace(CPU, ranks_per_node=4, cores_per_node=4, nodes=None,
                   inter_node=InterNode(latency_s=1e-6, bandwidth_bytes_per_s=1e10))
    slow = replace(fast, inter_node=InterNode(latency_s=1e-4, bandwidth_bytes_per_s=1e8))
    one_node = replace(fast, ranks_per_node=16, cores_per_node=16)
    times = {name: conflux.conflux_plan_counts(2048, 128, 4, 4, 1, "uniform", m,
                                               m.placement(16))["time_s"]
             for name, m in (("fast", fast), ("slow", slow), ("one", one_node))}
    assert times["one"] < times["fast"] < times["slow"]
    blocks = {name: lu2d_costs(2048, 64, 4, 4, "expected").record_block(m, m.placement(16))
              for name, m in (("fast", fast), ("slow", slow), ("one", one_node))}
    assert blocks["one"]["bytes_recv"] == blocks["slow"]["bytes_recv"]
    assert blocks["one"]["time_s"] < blocks["fast"]["time_s"] < blocks["slow"]["time_s"]
    # 4 ranks per node, rows of Pc = 4: the L broadcast stays on the node, the rest not
    costs = lu2d_costs(2048, 64, 4, 4, "expected")
    links = costs.links_at(fast.placement(16))
    assert {link_span(key) for key in links} == {4, 16}
    np.testing.assert_allclose(sum(a[0] for a in links.values()), costs.bytes_sent,
                               rtol=1e-12)


def test_machine_files_are_checked(tmp_path):
    good = json.loads(load_profile("example_cpu").to_json())
    for broken, message in (({"inter_node": {"latency_s": 1e-6}}, "inter_node must be"),
                            ({"ranks_per_node": 1.5}, "ranks_per_node must be"),
                            ({"memory_per_node_bytes": -1}, "memory_per_node_bytes must be")):
        path = tmp_path / "machine.json"
        path.write_text(json.dumps({**good, **broken}))
        with pytest.raises(InputError, match=message):
            load_profile(path)
    path.write_text(json.dumps(good))
    assert load_profile(path) == CPU
