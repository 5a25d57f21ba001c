"""Layouts from JSON-able specs, shared by tests/test_redistribution.py and its MPI script.

{"kind": "scalapack", "mb", "nb", "pr", "pc", "rsrc", "csrc", "order"},
{"kind": "rows", "lengths": [...] or absent (balanced)},
{"kind": "tiles", "v", "px", "py", "c"} (square matrices only).
"""

from linalg_io.layout.layouts import Descriptor, conflux_tiles, row_blocks


def build_layout(spec: dict, m: int, n: int, p: int):
    if spec["kind"] == "scalapack":
        return Descriptor(m, n, spec["mb"], spec["nb"], spec["pr"], spec["pc"], spec["rsrc"],
                          spec["csrc"], spec["order"]).layout(p)
    if spec["kind"] == "rows":
        return row_blocks(m, n, p, spec.get("lengths"))
    assert m == n and spec["px"] * spec["py"] * spec["c"] == p
    return conflux_tiles(n, spec["v"], spec["px"], spec["py"], spec["c"])
