"""keep_freed_memory: large arrays reuse freed heap memory instead of fresh mappings."""

import ctypes
import resource
import subprocess
import sys

import pytest

SCRIPT = """
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from linalg_io.model_command.heap import keep_freed_memory
    keep_freed_memory()
x = np.ones(8 << 20); del x          # 64 MB: mapped, or from the heap
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    x = np.ones(8 << 20); del x
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], check=True,
                         capture_output=True, text=True)
    return int(out.stdout)


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt") or not hasattr(resource,
                    "getrusage"), reason="glibc's mallopt only")
def test_freed_arrays_reused_without_page_faults():
    # ten fresh 64 MB mappings fault at least once per 2 MB huge page (320 faults);
    # reused heap memory faults not at all but for Python's own small allocations
    plain, kept = _faults("plain"), _faults("keep")
    assert plain >= 300
    assert kept < 50


HUGE = """
from numpy._core.multiarray import _set_madvise_hugepage
from linalg_io.model_command.heap import keep_freed_memory
before = _set_madvise_hugepage(True)
keep_freed_memory()
print(before, _set_madvise_hugepage(True))
"""


def test_model_arrays_in_ordinary_pages():
    """NumPy asks for huge pages on import (where the kernel offers them); after
    keep_freed_memory it does not (the switch returns its previous state)."""
    out = subprocess.run([sys.executable, "-c", HUGE], check=True, capture_output=True,
                         text=True)
    assert out.stdout.split() == ["True", "False"]
