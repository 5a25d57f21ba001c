"""Progress lines on stderr for the silent parts of a run (set-up, warm-up)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

AFTER_S = 1.0   # a part shorter than this prints nothing


@contextmanager
def progress(label: str, enabled: bool) -> Iterator[None]:
    """Around a part of a run: '  LABEL ...' once it has taken AFTER_S, then
    '  LABEL: 12.3 s' when it ends (nothing for a short part, nor after an error)."""
    if not enabled:
        yield
        return
    start = time.monotonic()
    notice = threading.Timer(AFTER_S, lambda: print(f"  {label} ...", file=sys.stderr,
                                                     flush=True))
    notice.daemon = True
    notice.start()
    try:
        yield
    finally:
        notice.cancel()
    elapsed = time.monotonic() - start
    if elapsed > AFTER_S:
        print(f"  {label}: {elapsed:.1f} s", file=sys.stderr, flush=True)
