"""The model commands' heap: glibc's malloc keeps freed memory for the next arrays."""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD = -1   # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3
KEEP = 2**31 - 1        # the largest the int parameter takes


def keep_freed_memory() -> None:
    """Serve large allocations from the heap and keep what is freed there: the models'
    NumPy temporaries (P-sized and [step, run] arrays, tens of MB each, many per grid)
    would otherwise each be a fresh mapping, a page fault per page (most of the system
    time of `model lu`'s 2D rows at large P), unmapped again when freed. The peak memory
    stays that of the largest live set (freed memory is reused, not returned). Set
    before the workers fork, which inherit it; a no-op without glibc's mallopt."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(M_MMAP_THRESHOLD, KEEP)
    mallopt(M_TRIM_THRESHOLD, KEEP)
