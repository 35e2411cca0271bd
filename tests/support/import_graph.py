"""The import graph of advisor/ and probes/, read from the source: every ``import`` statement, also
those inside functions and under ``if TYPE_CHECKING`` (tests/core/test_import_graph.py, test_layers.py)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("advisor", "probes")


def module_files(root: Path) -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for p in sorted((root / pkg).rglob("*.py")):
            parts = list(p.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = p
    return mods


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of advisor/probes it imports (``from pkg import mod`` names mod)."""
    mods = module_files(root)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges: set[str] = set()
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    if f"{target}.{a.name}" in mods:
                        edges.add(f"{target}.{a.name}")
                    elif target in mods:
                        edges.add(target)
        edges.discard(name)
        graph[name] = edges
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        circles.append(sorted(comp))
    return circles


def stage_of(module: str) -> str:
    """The part of the code a module belongs to: ``probes``, a package of advisor/ (``advisor.rules``,
    ``advisor.apply`` ...), the one top-level module of advisor/ (``advisor.storage_kinds``), or
    ``advisor`` for its __init__."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "advisor" and len(parts) > 1 else parts[0]


def stage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mod, edges in graph.items():
        src = stage_of(mod)
        out.setdefault(src, set()).update(stage_of(e) for e in edges if stage_of(e) != src)
    for targets in list(out.values()):
        for t in targets:
            out.setdefault(t, set())
    return out
