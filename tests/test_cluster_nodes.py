"""Inter-node traffic on the emulated cluster (2 nodes x 2 ranks): every rank's wire
bytes to and from the other node, and within its own, as Open MPI's monitoring counted
them, equal the model's split from the placement, rank by rank (2D LU, COnfLUX c = 1
and c = 2, the 2D LU with a process row or a column across the nodes, COnfLUX with a
process row, a process column or a fibre across them, and with each node a layer,
TS-GEMM atb on a chain and on a tree, ab, tsm2r 1D and 2D).

Needs root and network namespaces (tests/emulated_cluster.py): skipped with the reason
without them, failed under LINALG_IO_REQUIRE_NETNS=1."""

import pytest
from emulated_cluster import cluster, run_records

pytestmark = pytest.mark.mpi   # its launches go through the cluster's prterun

RUNS = {
    "lu2d": ["lu", "--algo", "2d", "--n", "256", "--nb", "32", "--grid", "2x2",
             "--dist", "diagdom"],
    # a process row across both nodes (its chain crosses once), then a column
    "lu2d_row_spans": ["lu", "--algo", "2d", "--n", "256", "--nb", "32", "--grid", "1x4",
                       "--dist", "diagdom"],
    "lu2d_column_spans": ["lu", "--algo", "2d", "--n", "256", "--nb", "32", "--grid", "4x1",
                          "--dist", "diagdom"],
    "conflux_c1": ["lu", "--algo", "conflux", "--n", "256", "--nb", "64", "--grid", "2x2x1",
                   "--dist", "diagdom"],
    "conflux_c2": ["lu", "--algo", "conflux", "--n", "256", "--nb", "64", "--grid", "1x2x2",
                   "--dist", "diagdom"],
    # a process row of 4 across both nodes: its broadcasts (chains at this size) cross once
    "conflux_row_spans": ["lu", "--algo", "conflux", "--n", "256", "--nb", "64", "--grid",
                          "1x4x1", "--dist", "diagdom"],
    # a process column of 4 across both nodes, 2 of its members on each (the tournament,
    # the pivot rows' allgather), and c = 2 with each node a layer; then a fibre of 4
    # layers, 2 on each node (the panel's and the pivot rows' reductions, the scatters),
    # with the columns' gather and U's broadcast on one node
    "conflux_column_spans": ["lu", "--algo", "conflux", "--n", "256", "--nb", "64", "--grid",
                             "4x1x1", "--dist", "diagdom"],
    "conflux_layers_apart": ["lu", "--algo", "conflux", "--n", "256", "--nb", "64", "--grid",
                             "2x1x2", "--dist", "diagdom"],
    "conflux_fibre_spans": ["lu", "--algo", "conflux", "--n", "256", "--nb", "64", "--grid",
                            "1x1x4", "--dist", "diagdom"],
    "atb_chain": ["tsgemm", "--variant", "atb", "--m", "4096", "--n", "64", "--k", "64"],
    "atb_tree": ["tsgemm", "--variant", "atb", "--m", "4096", "--n", "16", "--k", "16"],
    "ab": ["tsgemm", "--variant", "ab", "--m", "4096", "--n", "64", "--k", "64"],
    "tsm2r_1d": ["tsgemm", "--variant", "tsm2r", "--m", "4096", "--n", "64", "--k", "64",
                 "--dist", "1d"],
    "tsm2r_2d": ["tsgemm", "--variant", "tsm2r", "--m", "4096", "--n", "64", "--k", "64",
                 "--dist", "2d"],
}


@pytest.fixture(scope="module")
def records():
    with cluster(2):
        yield {name: run_records(4, args + ["--reps", "1", "--warmup", "0"])[0]
               for name, args in RUNS.items()}


@pytest.mark.parametrize("name", RUNS)
def test_inter_node_bytes_match_the_model(records, name):
    record = records[name]
    assert record["hosts"] == sorted(set(record["hosts"])) and len(record["hosts"]) == 2
    measured, model = record["traffic"]["wire"], record["model"]["wire"]
    for part in ("inter_node", "intra_node"):
        for key in ("per_rank_bytes_sent", "per_rank_bytes_recv"):
            assert measured[part][key] == model[part][key], (part, key)
    assert sum(measured["inter_node"]["per_rank_bytes_recv"]) > 0     # the nodes talk
    for key in ("per_rank_bytes_sent", "per_rank_bytes_recv"):
        assert [a + b for a, b in zip(measured["inter_node"][key], measured["intra_node"][key])] \
            == measured[key]
