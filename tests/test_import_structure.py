"""The package's structure, from its source (`import_graph.py`, function-level imports
counted): no import cycle; `models/` and `layout/` import no mpi4py, `linalg_io.lu`,
`comm`, `launch` or `runner`; `comm/` imports no `launch` nor algorithm; the runner's
contract (`linalg_io.contract`) imports nothing of the package."""

from import_graph import cycles, graph, upward_edges


def test_no_import_cycle():
    edges, _ = graph()
    assert len(edges) > 90 and sum(map(len, edges.values())) > 250   # the walk sees the tree
    assert cycles(edges) == []


def test_no_layer_imports_what_it_must_not():
    _, raw = graph()
    assert "linalg_io.models.conflux" in raw and "linalg_io.layout.redist_plan" in raw
    assert "linalg_io.comm.counting" in raw and "linalg_io.launch.relaunch" in raw
    assert upward_edges(raw) == []


def test_the_walk_finds_what_it_forbids():
    """The checks can fail: a cycle and an upward edge made up here are found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    raw = {"linalg_io.models.x": {"mpi4py", "mpi4py.MPI", "numpy"},
           "linalg_io.layout.y": {"linalg_io.comm.counting"}, "linalg_io.lu.z": {"mpi4py"},
           "linalg_io.comm.w": {"linalg_io.launch.agree", "linalg_io.comm.waiting"}}
    assert upward_edges(raw) == [("linalg_io.comm.w", "linalg_io.launch.agree"),
                                 ("linalg_io.layout.y", "linalg_io.comm.counting"),
                                 ("linalg_io.models.x", "mpi4py")]


def test_contract_and_options_are_leaves():
    edges, _ = graph()
    assert edges["linalg_io.contract"] == set()
    assert edges["linalg_io.options"] <= {"linalg_io.argtypes", "linalg_io.errors",
                                          "linalg_io.helptext", "linalg_io.version"}
    assert edges["linalg_io.helptext"] == set()


def test_the_family_registry_loads_no_family_code():
    """The registry names each family's code by "module:function" and imports it only
    when a command runs it, so parsing, the sweep and the report load no algorithm."""
    edges, _ = graph()
    assert edges["linalg_io.families"] == {"linalg_io.argtypes", "linalg_io.options"}
    assert edges["linalg_io.commands"] == {"linalg_io.families", "linalg_io.options"}
