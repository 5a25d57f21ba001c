"""What `linalg-io ... --help` says: applied to the finished parser, whatever builds it.

Every command and subcommand gets a description (its one-line help where it had none),
every option's help ends with its default where it has one and does not already say it,
and the top level gets `--version` and a description for users (no internal references).
"""

from __future__ import annotations

import argparse

from linalg_io.version import __version__

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


def subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def finish(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`parser` with the help texts of the module doc, every subparser included."""
    parser.description = DESCRIPTION
    parser.add_argument("--version", action="version", version=f"linalg-io {__version__}")

    def walk(node: argparse.ArgumentParser) -> None:
        node.formatter_class = DefaultsShown
        commands = subcommands(node)
        if commands is None:
            return
        helps = {a.dest: a.help for a in commands._choices_actions}
        for name, child in commands.choices.items():
            if not child.description and helps.get(name):
                child.description = helps[name]
            walk(child)

    walk(parser)
    return parser
