"""The commands of `linalg-io`, in --help order: `info`, one per kernel family of the
registry (`linalg_io.families`), `calibrate`, `model` (one subcommand per family with a
model), `report`, `sweep` and `slurm`; and the parser built from them."""

from __future__ import annotations

import argparse

from linalg_io.families import registry
from linalg_io.options import CALIBRATE, INFO, REPORT, SLURM, SWEEP, Command, Option, parser_for


def commands() -> tuple[Command, ...]:
    """Every command, the registry's families among them."""
    families = registry().values()
    models = tuple(c for c in (f.model_command() for f in families) if c is not None)
    model = Command("model", "predicted words, messages and time per rank (no MPI)",
                    subcommands=models, dest="family", metavar="FAMILY")
    return (INFO, *(f.command() for f in families), CALIBRATE, model, REPORT, SWEEP, SLURM)


def command_options(command: str) -> dict[str, Option] | None:
    """The options (not the positional arguments) of `linalg-io COMMAND` by key, in --help
    order; None for a name that is no command."""
    found = next((c for c in commands() if c.name == command), None)
    if found is None:
        return None
    return {o.key: o for o in found.all_options() if not o.positional}


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of `linalg-io`."""
    return parser_for(commands())
