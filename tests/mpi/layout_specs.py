"""Layouts from JSON-able specs, random ones, and their owner maps, shared by
tests/test_redistribution.py, tests/test_redistribution_mpi.py and the MPI script.

{"kind": "scalapack", "mb", "nb", "pr", "pc", "rsrc", "csrc", "order"},
{"kind": "rows", "lengths": [...] or absent (balanced)},
{"kind": "tiles", "v", "px", "py", "c"} (square matrices only).
"""

import numpy as np

from linalg_io.layout.layouts import Descriptor, conflux_tiles, row_blocks


def build_layout(spec: dict, m: int, n: int, p: int):
    if spec["kind"] == "scalapack":
        return Descriptor(m, n, spec["mb"], spec["nb"], spec["pr"], spec["pc"], spec["rsrc"],
                          spec["csrc"], spec["order"]).layout(p)
    if spec["kind"] == "rows":
        return row_blocks(m, n, p, spec.get("lengths"))
    assert m == n and spec["px"] * spec["py"] * spec["c"] == p
    return conflux_tiles(n, spec["v"], spec["px"], spec["py"], spec["c"])


def random_spec(rng, m: int, n: int, p: int) -> dict:
    kinds = ["scalapack", "rows"] + (["tiles"] if m == n else [])
    kind = kinds[rng.integers(len(kinds))]
    divisors = [d for d in range(1, p + 1) if p % d == 0]
    if kind == "scalapack":
        pr = int(rng.choice(divisors))
        return {"kind": kind, "mb": int(rng.integers(1, 9)), "nb": int(rng.integers(1, 9)),
                "pr": pr, "pc": p // pr, "rsrc": int(rng.integers(pr)),
                "csrc": int(rng.integers(p // pr)), "order": str(rng.choice(["row", "col"]))}
    if kind == "rows":
        if rng.random() < 0.5:
            return {"kind": kind}
        cuts = np.sort(rng.integers(0, m + 1, p - 1))
        return {"kind": kind, "lengths": np.diff(np.concatenate(([0], cuts, [m]))).tolist()}
    c = int(rng.choice(divisors))
    px = int(rng.choice([d for d in divisors if (p // c) % d == 0]))
    return {"kind": kind, "v": int(rng.integers(1, 9)), "px": px, "py": p // c // px, "c": c}


def owners(layout, m: int, n: int) -> np.ndarray:
    i, j = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return layout.owner(i, j)
