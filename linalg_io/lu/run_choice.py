"""The choice of one `linalg-io lu` run (grid, block), agreed across its ranks
(`linalg_io.lu.choice`).

Collective: rank 0 chooses (`choose_lu`: the model's search for an auto 2.5D grid
or tile), every rank takes its choice or its InputError (`agreed_on_root`). The memory
per rank is --mem, else this node's memory over the ranks on it; the placement is
this run's own (the ranks per node it was launched with), as the record's prediction.

Where the choice asks the model (2.5D with --grid or --nb auto; 2D, ScaLAPACK and HPL
with --grid auto, the 2D model's fastest grid), the ranks span several
nodes and the machine profile says nothing of the network between them (no
`inter_node`: the shipped profile, a one-node calibration), every rank first measures
the links (`linalg_io.tools.network_probe.probe_links`, rank 0's figures on all) and
the choice takes the profile with them (`with_links`); the choice carries the probe
(`LUChoice.link_probe`) for the record's `network_probe` and the case's prediction.
Elsewhere nothing is measured: one node, a fixed grid (and, 2.5D, tile) or a machine
file with a network.
"""

from __future__ import annotations

from dataclasses import replace

from linalg_io.comm.counting import CountedComm
from linalg_io.launch.agree import agreed, agreed_on_root
from linalg_io.lu.choice import BLOCK_CYCLIC, LUChoice, choose_lu
from linalg_io.models.memory import memory_over
from linalg_io.models.profile import MachineProfile


def asks_the_network(algorithm: str, options: dict, profile: MachineProfile) -> bool:
    """Whether the choice of `algorithm` with `options` would price messages between
    nodes that `profile` has no rates for (module doc); the same on every rank."""
    grid_auto = (options.get("grid") or "auto") == "auto"
    if algorithm == "conflux":
        auto = grid_auto or (options.get("nb") or "auto") == "auto"
    else:   # the block-cyclic LUs: NB auto is default_nb, whatever the machine
        auto = algorithm in BLOCK_CYCLIC and grid_auto
    return auto and profile.inter_node is None


def agreed_choice(comm: CountedComm, algorithm: str, n: int, options: dict,
                profile: MachineProfile, ranks_on_node: int) -> LUChoice:
    """The choice of `lu --algo ALGORITHM` for N = n with `options` (grid, nb, mem,
    objective) on the ranks of `comm`, `ranks_on_node` of them to a node; with the
    links measured first where the choice needs them (module doc)."""
    probe = None
    if asks_the_network(algorithm, options, profile):
        from linalg_io.tools.network_probe import probe_links, with_links

        probe = agreed(comm.comm, lambda: probe_links(comm.comm))
        profile = with_links(profile, probe)
    placement = profile.for_run(ranks_on_node).placement(comm.size)
    memory = options.get("mem") or memory_over(ranks_on_node)
    choice = agreed_on_root(comm.comm, lambda: choose_lu(
        algorithm, n, comm.size, memory, profile, placement, options.get("grid") or "auto",
        options.get("nb") or "auto", options.get("objective") or "time"))
    return replace(choice, link_probe=probe)


def probe_record(choice: LUChoice) -> dict | None:
    """The record's `network_probe` of a run with this choice (None: nothing measured)."""
    return choice.link_probe.record() if choice.link_probe is not None else None


def probe_words(choice: LUChoice) -> str:
    """The probe's part of the summary line ("" when nothing was measured)."""
    return f" {choice.link_probe.describe()}" if choice.link_probe is not None else ""
