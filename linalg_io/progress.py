"""Progress lines on stderr for the silent parts of a run (set-up, warm-up) and the
counts of a long search (`Tally`)."""

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


EVERY_S = 15.0   # a tally's line at most this often


class Tally:
    """Items done of each of `kinds` of a long part (`count`, `done`), told on stderr as
    '  LABEL: 12 of 179 2.5D, 3 of 12 2D candidates evaluated, 45 s' every EVERY_S
    seconds while it `runs` (a search that stops early leaves items undone)."""

    def __init__(self, label: str, what: str, kinds: tuple[str, ...], enabled: bool) -> None:
        self.label, self.what, self.enabled = label, what, enabled
        self.totals = dict.fromkeys(kinds, 0)
        self.counts = dict.fromkeys(kinds, 0)
        self._lock = threading.Lock()

    def count(self, kind: str, items):
        """The items, counted as `kind`'s to do: a sized iterable as it is, none drawn (a
        branch and bound's, `linalg_io.lu.choice.UntilSettled`, hands each out only
        while the results in hand leave it open: drawn here, ahead of them, every one
        would go to the workers); another made a list."""
        if not hasattr(items, "__len__"):
            items = list(items)
        with self._lock:
            self.totals[kind] += len(items)
        return items

    def done(self, kind: str, count: int = 1) -> None:
        with self._lock:
            self.counts[kind] += count

    def line(self, elapsed: float) -> str:
        with self._lock:
            parts = [f"{self.counts[kind]} of {total} {kind}"
                     for kind, total in self.totals.items()]
        return f"  {self.label}: {', '.join(parts)} {self.what}, {elapsed:.0f} s"

    @contextmanager
    def runs(self) -> Iterator[None]:
        """Around the part: its line every EVERY_S seconds, and once more at its end
        where it told any (not after an error)."""
        if not self.enabled:
            yield
            return
        start, stop = time.monotonic(), threading.Event()

        def tell() -> None:
            while not stop.wait(EVERY_S):
                print(self.line(time.monotonic() - start), file=sys.stderr, flush=True)

        teller = threading.Thread(target=tell, daemon=True)
        teller.start()
        try:
            yield
        finally:
            stop.set()
            teller.join()
        if time.monotonic() - start >= EVERY_S:      # it told some
            print(self.line(time.monotonic() - start), file=sys.stderr, flush=True)
