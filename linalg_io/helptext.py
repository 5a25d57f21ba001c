"""What `linalg-io ... --help` says beyond the option table's own texts: the top level's
description for users (no internal references), and the formatter every parser of
`linalg_io.options.parser_for` uses, under which an option's help ends with its
default where it has one and does not already say it.
"""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Benchmarks of communication-optimal distributed linear algebra (LU, tall-and-skinny
GEMM, sparse triangular solve): each run's time and MPI traffic beside an analytic
model. `linalg-io COMMAND --help` describes a command; docs/records.md the records."""


class DefaultsShown(argparse.RawDescriptionHelpFormatter):
    """The help of an option with a default ends with '(default: X)' unless it already
    names it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or default in (None, False, argparse.SUPPRESS)
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        if not shown or f"({shown})" in text or "default" in text:
            return text
        return f"{text} (default: {shown})".strip()
