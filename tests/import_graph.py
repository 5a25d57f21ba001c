"""The package's import graph from the source (`ast`), function-level imports included:
modules of `linalg_io` (and `linalg_io.models`, which is the top-level `models/` folder)
and the edges between them; its cycles and the imports that point against the layering
(`models/` and `layout/` importing mpi4py, `linalg_io.lu`, `comm`, `launch` or
`runner`; `comm/`, the counted communicator and collectives, importing `launch`, the
starting and ending of jobs, or an algorithm).

`python tests/import_graph.py` prints both lists (used as evidence in a change's notes).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# models/ is installed as linalg_io.models (pyproject's package-dir)
SOURCES = {"linalg_io": ROOT / "linalg_io", "linalg_io.models": ROOT / "models"}
# what a module of a package must not import (a prefix of the imported name)
PURE = ("mpi4py", "linalg_io.lu", "linalg_io.comm", "linalg_io.launch", "linalg_io.runner")
FORBIDDEN = {"linalg_io.models": PURE,
             "linalg_io.layout": PURE,
             "linalg_io.comm": ("linalg_io.launch", "linalg_io.lu", "linalg_io.runner"),
             # the model commands run without MPI
             "linalg_io.model_command": ("mpi4py", "linalg_io.comm", "linalg_io.launch",
                                         "linalg_io.runner")}


def modules() -> dict[str, Path]:
    """Module name -> source file, for every .py of the package."""
    found = {}
    for package, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([package] + parts)
            if package == "linalg_io" and name.startswith("linalg_io.models"):
                continue
            found[name] = path
    return found


def imported_names(path: Path, name: str, is_package: bool, known: set[str] = frozenset()
                   ) -> set[str]:
    """Every module name the file imports, at any depth (function bodies included);
    `from package import module` names the module (of `known`), not the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = name.split(".") if is_package else name.split(".")[:-1]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                prefix = ".".join(base[:len(base) - node.level + 1])
                module = f"{prefix}.{node.module}" if node.module else prefix
            else:
                module = node.module or ""
            targets = {f"{module}.{alias.name}" for alias in node.names}
            if not targets <= set(known):
                names.add(module)
            names.update(targets)
    return names


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(edges between the package's modules, every imported name per module)."""
    found = modules()
    edges, raw = {}, {}
    for name, path in found.items():
        names = imported_names(path, name, path.name == "__init__.py", set(found))
        raw[name] = names
        edges[name] = {target for target in names if target in found and target != name}
    return edges, raw


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(result)


def upward_edges(raw: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(module, imported name) for every import FORBIDDEN forbids."""
    bad = []
    for module, names in sorted(raw.items()):
        for layer, forbidden in FORBIDDEN.items():
            if module == layer or module.startswith(layer + "."):
                bad += [(module, target) for target in sorted(names)
                        if any(target == f or target.startswith(f + ".") for f in forbidden)
                        and target.rpartition(".")[0] not in names]   # a name of a module
    return bad


def main() -> int:
    edges, raw = graph()
    found = cycles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} edges")
    print(f"cycles: {len(found)}")
    for component in found:
        print(f"  ({len(component)}) " + " ".join(component))
    up = upward_edges(raw)
    print(f"upward edges: {len(up)}")
    for module, target in up:
        print(f"  {module} -> {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
