"""The model commands' heap: glibc's malloc keeps freed memory for the next arrays, in
ordinary pages."""

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
    before the workers fork, which inherit it; a no-op without glibc's mallopt. And
    NumPy no longer asks for transparent huge pages (`_no_huge_pages`)."""
    _no_huge_pages()
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(M_MMAP_THRESHOLD, KEEP)
    mallopt(M_TRIM_THRESHOLD, KEEP)


def _no_huge_pages() -> None:
    """Stop NumPy's madvise(MADV_HUGEPAGE) on each array of 4 MiB or more (its own switch,
    as NUMPY_MADVISE_HUGEPAGE=0 at its import): a first touch in such a range zeroes a
    whole 2 MiB page, and with the kernel's THP defrag "madvise" may compact memory
    first: most of the system time of `model lu` at large P (forked workers touch their
    heap afresh), for no gain to these short-lived temporaries. The figures are the
    same either way."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:      # NumPy 1.x
        try:
            from numpy.core.multiarray import _set_madvise_hugepage
        except ImportError:
            return
    _set_madvise_hugepage(False)
