"""conflux's step-sample budget set for a test alike at any P: its own thresholds and
those it takes beyond MANY_RANKS ranks (`conflux.step_sample`)."""

from linalg_io.models import conflux

NAMES = {"exact": ("EXACT_CELLS", "MANY_EXACT_CELLS"),
         "cells": ("SAMPLE_CELLS", "MANY_SAMPLE_CELLS"),
         "least": ("SAMPLE_LEAST", "MANY_SAMPLE_LEAST")}


def budget(monkeypatch, **values: int) -> None:
    """Each of `values` (exact, cells, least) set on both thresholds of its name."""
    for key, value in values.items():
        for name in NAMES[key]:
            monkeypatch.setattr(conflux, name, value)
