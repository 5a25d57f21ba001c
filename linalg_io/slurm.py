"""`linalg-io slurm render TEMPLATE [...]`: a ready sbatch script from a template in slurm/.

A template is a bash script with placeholders ``{name}`` (lower-case names; bash's
own ``${VAR}`` is left alone) and header lines the output drops::

    #@ gpu                      a GPU template: one rank per GPU (--gpus-per-task 1)
    #@ default KEY=VALUE        the value of {KEY} unless --set KEY=VALUE is given

Placeholders every template may use: ``nodes``, ``ntasks_per_node``, ``ntasks``
(nodes x ntasks-per-node), ``cpus_per_task``, ``gpus_per_task``, ``time``,
``partition``, ``account`` (the last two optional: an ``#SBATCH`` line holding an
unset one is dropped) and ``job_name`` (default ``linalg-io-TEMPLATE``); any other
comes from ``--set`` or a ``#@ default`` line. A placeholder left without a value,
or a ``--set`` key the template does not use, is an error (exit 2).

TEMPLATE is a path to a file, or a name looked up as ``NAME`` / ``NAME.sbatch`` in
``./slurm/``, in the checkout's ``slurm/`` beside the package, and in the package's
``linalg_io/slurm_templates/`` (the same files as installed package data).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from linalg_io.errors import InputError
from linalg_io.families import benchmarks

PLACEHOLDER = re.compile(r"(?<!\$)\{([a-z][a-z0-9_]*)\}")
OPTIONAL = ("partition", "account")
DEDICATED = ("nodes", "ntasks_per_node", "ntasks", "gpus_per_task", "cpus_per_task", "time",
             "partition", "account")
SLURM_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$")


def template_dirs() -> list[Path]:
    """Where template names are looked up, in order."""
    package = Path(__file__).resolve().parent
    return [Path.cwd() / "slurm", package.parent / "slurm", package / "slurm_templates"]


def find_template(name: str) -> Path:
    """The template file for a path or a name (see the module docstring)."""
    given = Path(name)
    if given.is_file():
        return given
    candidates = [d / n for d in template_dirs()
                  for n in (name, f"{name}.sbatch") if "/" not in name]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    available = sorted({p.stem for d in template_dirs() if d.is_dir() for p in d.glob("*.sbatch")})
    raise InputError(f"no slurm template {name!r} (not a file; templates: "
                     f"{', '.join(available) or 'none found'})")


# characters that make the shell do more than split words
SHELL_SPECIAL = set(";&|`$()<>\\\"'\n*?[]{}#")
# options the template adds after {args} (the last one given wins, so the user's would be
# silently replaced): each with what to give instead
TEMPLATE_OPTIONS = {"--out": "--set out=PATH", "--threads": "--cpus-per-task N"}


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """['n=4096', 'algo=2d'] -> {'n': '4096', 'algo': '2d'}; keys lower-cased, '-' -> '_'."""
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not re.fullmatch(r"[a-z][a-z0-9_]*", key):
            raise InputError(f"--set {pair!r}: expected KEY=VALUE with KEY a placeholder name")
        if key in DEDICATED:
            raise InputError(f"--set {key}=...: use --{key.replace('_', '-')} instead")
        if not value.strip():
            raise InputError(f"--set {key}=: empty value")
        unsafe = sorted(set(value) & SHELL_SPECIAL)
        if unsafe:
            raise InputError(f"--set {key}={value!r}: the script pastes values as words; "
                             f"{' '.join(unsafe)} would be read by the shell")
        values[key] = value
    if "args" in values and values["args"].split()[0] not in benchmarks():
        raise InputError(f"--set args={values['args']!r}: must start with one of "
                         f"{', '.join(benchmarks())} (the script adds --threads and --out)")
    for word in values.get("args", "").split():
        name = word.split("=", 1)[0]
        for option, instead in TEMPLATE_OPTIONS.items():
            if len(name) > 3 and option.startswith(name):   # argparse takes abbreviations
                raise InputError(f"--set args=...: {word} would be replaced by the template's "
                                 f"own {option}; give {instead} instead")
    return values


def split_header(text: str) -> tuple[str, dict[str, str], bool]:
    """The script without its '#@' lines, the template's defaults, and whether it is a GPU one."""
    defaults: dict[str, str] = {}
    gpu = False
    body = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if not line.startswith("#@"):
            body.append(line)
            continue
        words = line[2:].strip()
        if words == "gpu":
            gpu = True
        elif words.startswith("default "):
            key, sep, value = words.removeprefix("default ").partition("=")
            if not sep:
                raise InputError(f"template line {number}: expected '#@ default KEY=VALUE'")
            defaults[key.strip()] = value.strip()
        else:
            raise InputError(f"template line {number}: unknown header {line.strip()!r}")
    return "".join(body), defaults, gpu


def fill(body: str, values: dict[str, str | None], source: str) -> str:
    """Replace every placeholder; drop '#SBATCH' lines of unset optional ones."""
    missing = []
    lines = []
    for line in body.splitlines(keepends=True):
        names = PLACEHOLDER.findall(line)
        if any(values.get(n) is None and n in OPTIONAL for n in names) \
                and line.startswith("#SBATCH"):
            continue
        missing += [n for n in names if values.get(n) is None and n not in missing]
        lines.append(PLACEHOLDER.sub(lambda m: str(values.get(m.group(1))), line))
    if missing:
        raise InputError(f"template {source}: no value for " + ", ".join(
            f"{{{n}}} (give "
            + (f"--{n.replace('_', '-')}" if n in DEDICATED else f"--set {n}=VALUE")
            + ")" for n in missing))
    return "".join(lines)


def render_template(args: argparse.Namespace) -> str:
    """The sbatch script of `args.template` with the options of `slurm render` filled in."""
    path = find_template(args.template)
    body, defaults, gpu = split_header(path.read_text(encoding="utf-8"))
    sets = parse_sets(args.set or [])
    used = set(PLACEHOLDER.findall(body))
    unused = sorted(set(sets) - used)
    if unused:
        raise InputError(f"template {path.name}: no placeholder {{{unused[0]}}} for --set "
                         f"(its placeholders: {', '.join(sorted(used))})")
    gpus = args.gpus_per_task
    if gpu:
        if gpus > 1:
            raise InputError(f"template {path.name} runs one rank per GPU: --gpus-per-task "
                             f"must be 1, got {gpus} (give more tasks instead)")
        gpus = 1
    elif gpus > 0 and "gpus_per_task" not in used:
        raise InputError(f"template {path.name} is a CPU template: --gpus-per-task "
                         f"{gpus} would be ignored (GPU templates: gpu_tsgemm, sptrsv_multigpu)")
    if not SLURM_TIME.match(args.time):
        raise InputError(f"--time {args.time!r}: expected minutes, HH:MM:SS or D-HH:MM:SS")
    values: dict[str, str | None] = {
        "job_name": f"linalg-io-{path.stem}", **defaults,
        "nodes": str(args.nodes), "ntasks_per_node": str(args.ntasks_per_node),
        "ntasks": str(args.nodes * args.ntasks_per_node), "gpus_per_task": str(gpus),
        "cpus_per_task": str(args.cpus_per_task), "time": args.time,
        "partition": args.partition, "account": args.account, **sets,
    }
    for key, value in values.items():
        if value is not None and "\n" in value:
            raise InputError(f"value of {{{key}}} must be one line")
    return fill(body, values, path.name)
