"""The runner's view of an LU run (`linalg-io lu`): `make_case` picks the case of --algo
(2d: `linalg_io.lu.lu2d_case`, conflux: `conflux_case`, its drop-in for pdgetrf:
`dropin_case`, scalapack: `scalapack_case`, hpl and other libraries: `external.case`),
after refusing a size that cannot fit.
The 2D case loads with this module, as the runner imports it before it times the
set-up; the others load when asked for.
"""

from __future__ import annotations

from linalg_io.comm.counting import CountedComm
from linalg_io.contract import RunConfig
from linalg_io.errors import InputError
from linalg_io.lu.external import ADAPTERS
from linalg_io.lu.lu2d_case import make_lu2d_case


def make_case(comm: CountedComm, config: RunConfig):
    """The case object of `linalg-io lu` (see linalg_io.runner)."""
    check_memory(comm, config)
    options = config.options
    algo = options.get("algo")
    if options.get("scalapack_lib") and algo != "scalapack":
        raise InputError("--scalapack-lib goes with --algo scalapack")
    if options.get("input_layout") and algo != "conflux":
        raise InputError("--input-layout goes with --algo conflux (the drop-in for pdgetrf)")
    if options.get("redist_mem") and not options.get("input_layout"):
        raise InputError("--redist-mem goes with --input-layout")
    if options.get("hpl") and algo != "hpl":
        raise InputError("--hpl goes with --algo hpl")
    if algo in ADAPTERS:
        from linalg_io.lu.external.case import make_external_case

        return make_external_case(comm, config)
    if algo == "scalapack":
        from linalg_io.lu.scalapack_case import make_scalapack_case

        return make_scalapack_case(comm, config)
    if algo == "conflux" and options.get("input_layout"):
        from linalg_io.lu.dropin_case import make_dropin_case

        return make_dropin_case(comm, config)
    if algo == "conflux":
        from linalg_io.lu.conflux_case import make_conflux_case

        return make_conflux_case(comm, config)
    return make_lu2d_case(comm, config)


def check_memory(comm: CountedComm, config: RunConfig) -> None:
    """Collective: refuse at once an N that cannot fit the memory per rank (--mem, else
    this node's memory over its ranks), before any set-up or grid search. With --dist
    file and no --n the order comes from the file, which already holds the matrix."""
    from linalg_io.launch.agree import agreed
    from linalg_io.launch.node import memory_per_rank
    from linalg_io.lu.fits import check_lu_memory

    options = config.options
    if options.get("n") is None:
        return
    if options.get("mem"):   # the same on every rank, so the collective below is on all
        available, source = options["mem"], "--mem"
    else:
        available, source = memory_per_rank(comm.comm)
        source += "; --mem sets it"
    algo = options.get("algo") or "2d"
    if algo in ADAPTERS:
        algo = "2d"     # the other libraries' LU is 2D block-cyclic
    if algo == "conflux" and options.get("input_layout"):
        algo = "dropin"
    agreed(comm.comm, lambda: check_lu_memory(int(options["n"]), comm.size, (algo,),
                                              available, source))
