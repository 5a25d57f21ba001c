"""The links measured at a run's start across nodes (`linalg_io.tools.network_probe`), on
the emulated cluster at 300 Mbit/s: `lu --algo conflux --grid auto --nb auto` without a
machine file records the network it measured (the shaped link's rate, rank 0's figures),
the on-node link where ranks share a node, and chooses what the model chooses with a
machine file carrying those figures (`--algo 2d --grid auto` too); with a machine
file that has a network nothing is measured.

Needs root and network namespaces (tests/emulated_cluster.py): skipped with the reason
without them, failed under LINALG_IO_REQUIRE_NETNS=1."""

import pytest
from emulated_cluster import cluster, run_records
from linalg_io.models.profile import load_profile
from test_network_probe import machine_file

from linalg_io.lu.choice import choose_lu

# its launches go through the cluster's prterun; alone: it measures the link's bandwidth
pytestmark = [pytest.mark.mpi, pytest.mark.alone]

SHAPED_BYTES_PER_S = 300e6 / 8
LU = ["lu", "--algo", "conflux", "--grid", "auto", "--nb", "auto", "--n", "1024",
      "--dist", "diagdom", "--reps", "1", "--warmup", "0"]

LU_2D = ["lu", "--algo", "2d", "--grid", "auto", "--n", "1024", "--dist", "diagdom",
         "--reps", "1", "--warmup", "0"]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    machine = machine_file(tmp_path_factory.mktemp("machine") / "net.json",
                           {"intra_alpha_s": None, "latency_s": 1e-4,
                            "bandwidth_bytes_per_s": SHAPED_BYTES_PER_S, "nodes": 2,
                            "ranks_per_node": 1, "nodes_per_machine": 2})
    with cluster(2, "300mbit"):
        yield {"2x1": run_records(2, LU)[0], "2x2": run_records(4, LU)[0],
               "2x1 machine": run_records(2, LU + ["--machine", machine])[0],
               "2d 2x2": run_records(4, LU_2D)[0]}


@pytest.mark.parametrize("layout, peer", [("2x1", 1), ("2x2", 2)])
def test_the_record_carries_the_measured_link(records, layout, peer):
    probe = records[layout]["network_probe"]
    assert probe["nodes"] == 2 and probe["peer"] == peer
    assert probe["ranks_per_node"] == peer and probe["nodes_per_machine"] == 2
    # TCP's payload over a 300 Mbit/s token bucket: calibrate fits 35.8 MB/s
    assert 0.4 * SHAPED_BYTES_PER_S < probe["bandwidth_bytes_per_s"] < 1.05 * SHAPED_BYTES_PER_S
    assert 0 < probe["latency_s"] < 0.1 and 0 < probe["seconds"]
    if peer == 1:
        assert probe["intra_alpha_s"] is None and probe["intra_beta_s_per_byte"] is None
    else:   # ranks 0 and 1 share node 0: shared memory, far faster than the link
        assert probe["intra_beta_s_per_byte"] * probe["bandwidth_bytes_per_s"] < 0.5
        assert 0 < probe["intra_alpha_s"]


@pytest.mark.parametrize("layout", ["2x1", "2x2"])
def test_the_choice_is_the_models_with_a_machine_file_of_the_figures(records, layout,
                                                                     tmp_path):
    record = records[layout]
    probe = record["network_probe"]
    profile = load_profile(machine_file(tmp_path / "probed.json", probe))
    p = record["nranks"]
    placement = profile.for_run(probe["ranks_per_node"]).placement(p)
    assert placement == profile.placement(p)   # as `model lu --machine` places them
    choice = choose_lu("conflux", 1024, p, record["params"]["mem_per_rank"], profile,
                       placement)
    assert (record["params"]["grid"], record["params"]["nb"]) == ([*choice.grid], choice.nb)


def test_a_machine_file_with_a_network_measures_nothing(records):
    record = records["2x1 machine"]
    assert record["network_probe"] is None
    assert record["verify"]["passed"]


def test_the_2d_grid_is_the_2d_models_with_a_machine_file_of_the_figures(records, tmp_path):
    """The 2D LU's auto grid is the 2D model's fastest (`fastest_2d`): across nodes it
    measures the links as the 2.5D choice does."""
    record = records["2d 2x2"]
    probe = record["network_probe"]
    assert probe["nodes"] == 2 and probe["peer"] == 2
    assert 0.4 * SHAPED_BYTES_PER_S < probe["bandwidth_bytes_per_s"] < 1.05 * SHAPED_BYTES_PER_S
    profile = load_profile(machine_file(tmp_path / "probed.json", probe))
    choice = choose_lu("2d", 1024, 4, 1e9, profile, profile.placement(4))
    assert record["params"]["grid"] == choice.record_grid
    assert record["params"]["nb"] == choice.nb and record["verify"]["passed"]
