"""The one greppable line a run prints from its record (docs/records.md#headline), in
the spirit of HPL's: `summary_line`, and its time part `time_text`."""

from __future__ import annotations

from linalg_io.families import family


def _megabytes(block: dict | None, *path: str) -> str:
    """block[path...] / 1e6 as text, 'n/a' where the block or a key is missing."""
    for key in path:
        if not isinstance(block, dict) or block.get(key) is None:
            return "n/a"
        block = block[key]
    return f"{block / 1e6:.3f}"


def time_text(record: dict) -> str:
    """'time=0.766 s (model 0.150 s, x5.11; median of 5 reps of the slowest rank,
    factorization only)': the measured time beside the model's and their ratio (three
    digits, so a ratio near one keeps its decimals: x1.03, not x1)."""
    median = record["time_s"]["median"]
    model = (record.get("model") or {}).get("time_s")
    versus = (f"model {model:.3g} s, x{median / model:.3g}; " if model and model > 0
              else "no model time; ")
    reps = len(record.get("times_s") or []) or record.get("reps")
    kernel = family(str(record.get("kernel")))   # what its time covers: `case.run()` only
    timed = kernel.timed if kernel is not None else "the kernel only"
    return (f"time={median:.3g} s ({versus}median of {reps} reps of the slowest rank, "
            f"{timed})")


def summary_line(describe: str, record: dict) -> str:
    """One greppable line per run, in the spirit of HPL's: the time beside the model's,
    then the bytes each rank received (logical, the quantity the I/O lower bound
    bounds) and the bytes the MPI library moved (wire: sent/received), the busiest
    rank's, with the model's beside each (docs/records.md#headline)."""
    traffic, model = record["traffic"], record["model"] or {}
    gflops = record["gflops"] or 0.0
    status = "PASSED" if record["verify"]["passed"] else "FAILED"
    if record["verify"].get("numerically_singular"):
        status += (f" (numerically singular: smallest |pivot| / max|A| = "
                   f"{record['verify']['min_pivot_ratio']:.2e} < N eps)")
    model_wire = model.get("wire")
    wire = (f"wire_max sent/recv={_megabytes(traffic['wire'], 'bytes_sent', 'max')}/"
            f"{_megabytes(traffic['wire'], 'bytes_recv', 'max')} MB "
            f"(model {_megabytes(model_wire, 'bytes_sent', 'max')}/"
            f"{_megabytes(model_wire, 'bytes_recv', 'max')})"
            if traffic.get("wire") else "wire=n/a")
    return (f"{record['kernel']:<7} {record['algo']:<9} {describe} P={record['nranks']} "
            f"{time_text(record)} GFLOP/s={gflops:.3f} "
            f"recv_max={_megabytes(traffic, 'bytes_recv', 'max')} MB "
            f"(model {_megabytes(model, 'bytes_recv', 'max')}) {wire} "
            f"sent_max={_megabytes(traffic, 'bytes_sent', 'max')} MB "
            f"{record['verify']['metric']}={record['verify']['value']:.3g} {status}")
