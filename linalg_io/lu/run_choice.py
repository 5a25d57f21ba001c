"""The choice of one `linalg-io lu` run (grid, block), agreed across its ranks
(`linalg_io.lu.choice`).

Collective: rank 0 chooses (`choose_lu`: the model's search for an auto 2.5D grid
or tile), every rank takes its choice or its InputError (`agreed_on_root`). The memory
per rank is --mem, else this node's memory over the ranks on it; the placement is
this run's own (the ranks per node it was launched with), as the record's prediction.
"""

from __future__ import annotations

from linalg_io.comm.counting import CountedComm
from linalg_io.launch.agree import agreed_on_root
from linalg_io.lu.choice import LUChoice, choose_lu
from linalg_io.models.memory import memory_over
from linalg_io.models.profile import MachineProfile


def agreed_choice(comm: CountedComm, algorithm: str, n: int, options: dict,
                profile: MachineProfile, ranks_on_node: int) -> LUChoice:
    """The choice of `lu --algo ALGORITHM` for N = n with `options` (grid, nb, mem,
    objective) on the ranks of `comm`, `ranks_on_node` of them to a node."""
    placement = profile.for_run(ranks_on_node).placement(comm.size)
    memory = options.get("mem") or memory_over(ranks_on_node)
    return agreed_on_root(comm.comm, lambda: choose_lu(
        algorithm, n, comm.size, memory, profile, placement, options.get("grid") or "auto",
        options.get("nb") or "auto", options.get("objective") or "time"))
