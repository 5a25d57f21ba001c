"""The start-up probe of the links (`linalg_io.tools.network_probe`) and when a run takes
it (`linalg_io.lu.run_choice.asks_the_network`): only a grid or (2.5D) tile left to the
model, with no network in the machine file; on one node nothing is measured. The probe across
nodes: tests/test_cluster_probe.py."""

import json
from dataclasses import replace

import pytest
from linalg_io.models.memory import physical_memory
from linalg_io.models.profile import (
    DEFAULT_PROFILE_PATH,
    InterNode,
    load_profile,
    this_machine_cores,
)
from mpi_harness import run_cli_records

from linalg_io.lu.choice import choose_lu
from linalg_io.lu.run_choice import asks_the_network
from linalg_io.tools.network_probe import (
    PROBE_REPS,
    PROBE_SIZES,
    LinkProbe,
    probe_iterations,
    with_links,
)


def machine_file(path, probe: dict) -> str:
    """The shipped profile with a probe's figures (the record's `network_probe`), as a
    cluster machine file says them (layout and sharing as `calibrate` writes them)."""
    data = json.loads(DEFAULT_PROFILE_PATH.read_text())
    if probe["intra_alpha_s"] is not None:
        data.update(alpha_s=probe["intra_alpha_s"], beta_s_per_byte=probe["intra_beta_s_per_byte"])
    sharing = probe["nodes_per_machine"]
    data.update(ranks_per_node=probe["ranks_per_node"], nodes=probe["nodes"],
                cores_per_node=max(1, int(this_machine_cores() // sharing)),
                memory_per_node_bytes=physical_memory() / sharing,
                inter_node={"latency_s": probe["latency_s"],
                            "bandwidth_bytes_per_s": probe["bandwidth_bytes_per_s"],
                            "links_per_node": 1, "overlap": True})
    path.write_text(json.dumps(data))
    return str(path)


PROBE = LinkProbe(latency_s=2e-4, bandwidth_bytes_per_s=35.8e6, peer=2, intra_alpha_s=3e-6,
                  intra_beta_s_per_byte=2e-10, nodes=2, ranks_per_node=2, nodes_per_machine=2,
                  seconds=0.4)


def test_only_an_auto_2_5d_choice_without_a_network_asks_for_it():
    shipped = load_profile()
    auto = {"grid": None, "nb": None}
    assert asks_the_network("conflux", auto, shipped)
    assert asks_the_network("conflux", {"grid": "2x1x1", "nb": None}, shipped)
    assert asks_the_network("conflux", {"grid": None, "nb": 128}, shipped)
    assert not asks_the_network("conflux", {"grid": "2x1x1", "nb": 128}, shipped)
    for algo in ("2d", "scalapack", "hpl"):   # the 2D model's grid; NB is default_nb
        assert asks_the_network(algo, auto, shipped)
        assert asks_the_network(algo, {"grid": None, "nb": 64}, shipped)
        assert not asks_the_network(algo, {"grid": "2x1", "nb": None}, shipped)
    networked = replace(shipped, inter_node=InterNode(1e-5, 1e9))
    assert not asks_the_network("conflux", auto, networked)
    assert not asks_the_network("conflux", auto, load_profile("example_cpu"))


def test_the_probed_profile_is_the_machine_file_of_its_figures(tmp_path):
    probed = with_links(load_profile(), PROBE)
    from_file = load_profile(machine_file(tmp_path / "m.json", PROBE.record()))
    for field in ("alpha_s", "beta_s_per_byte", "gamma_flops", "mem_bw_bytes_per_s",
                  "ranks_per_node", "nodes", "cores_per_node", "memory_per_node_bytes",
                  "inter_node"):
        assert getattr(probed, field) == pytest.approx(getattr(from_file, field)), field
    assert probed.inter_node == InterNode(2e-4, 35.8e6, 1, True)
    assert with_links(load_profile(), None) == load_profile()
    for n in (1024, 4096, 8192):   # and the same choice
        ours = choose_lu("conflux", n, 4, 2**32, probed, probed.for_run(2).placement(4))
        theirs = choose_lu("conflux", n, 4, 2**32, from_file, from_file.placement(4))
        assert (ours.grid, ours.nb) == (theirs.grid, theirs.nb)


def test_the_probe_is_short():
    """One round trip of each large message, a few of the small one: at 300 Mbit/s the
    two large sizes cost 3 rounds x 2 directions x 4 MiB / 37.5 MB/s = 0.67 s."""
    assert [probe_iterations(n) for n in PROBE_SIZES] == [5, 1, 1]
    assert (PROBE_REPS + 1) * 2 * sum(PROBE_SIZES) / 37.5e6 < 0.7
    assert PROBE.describe() == "net=probed(200us,35.8MB/s)"


def test_one_node_measures_nothing():
    record = run_cli_records(2, ["lu", "--algo", "conflux", "--grid", "auto", "--nb", "auto",
                                 "--n", "512", "--dist", "diagdom", "--reps", "1",
                                 "--warmup", "0", "--quiet"])[0]
    assert record["network_probe"] is None and len(record["hosts"]) == 1
    assert record["verify"]["passed"]
