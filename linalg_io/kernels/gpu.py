"""The gate of every GPU path: CuPy and a GPU, or a clear exit-3 error. Modules that
import cupy/cupyx themselves do so only on data this gate let through (`info` probes
for CuPy on its own, to report it)."""

from __future__ import annotations

from linalg_io.errors import EnvironmentProblem


def require_cupy():
    """Return the cupy module with a usable GPU selected, or raise EnvironmentProblem."""
    try:
        import cupy
    except ImportError:
        raise EnvironmentProblem(
            "--backend gpu needs CuPy: pip install 'linalg-io[gpu]' (no CuPy installed)"
        ) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - CUDA driver/runtime missing
        raise EnvironmentProblem(f"--backend gpu: CuPy finds no usable GPU ({error})") from None
    if count == 0:
        raise EnvironmentProblem("--backend gpu: CuPy finds no GPU on this node")
    return cupy


def select_device_for_node(comm):
    """Collective over the raw communicator `comm`: this rank's index on its node first
    (every rank reaches the MPI split before anything can fail), then its GPU selected
    (select_device_for_rank); returns the cupy module."""
    from linalg_io.launch.node import node_rank_and_size

    select_device_for_rank(node_rank_and_size(comm)[0])
    return require_cupy()


def select_device_for_rank(local_rank: int) -> int:
    """One rank per GPU: rank i of a node (`linalg_io.launch.node.node_rank_and_size`, taken
    on every rank before anything can fail) uses GPU i mod (GPUs on the node)."""
    cupy = require_cupy()
    device = local_rank % cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(device).use()
    return device
