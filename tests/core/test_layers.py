"""The layers of advisor/ (docs/architecture.md): a package imports only packages of lower layers.

The top level of advisor/ holds only packages and the storage-kind registry (storage_kinds.py). The
imports are read from the source (tests/support/import_graph.py), deferred ones included, so a
stage that reaches back up to a later one fails here whatever the route. No module of the product
(advisor/, probes/, the playbooks' Python) and no test module imports a test module: what tests share
lives in tests/support/.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.import_graph import REPO, import_graph, stage_of

#: lowest first; a package may import its own modules and those of lower layers, never a package of
#: its own layer or of a higher one. ``advisor`` alone (its __init__: the version) is below all.
LAYERS: list[tuple[str, ...]] = [
    ("advisor.util",),                                          # errors, units, files, YAML, --help layout
    ("advisor.storage_kinds", "advisor.model", "advisor.paths"),  # registry, facts/findings, path records
    ("probes",),                                                # what runs on a host and its parsers
    ("advisor.site", "advisor.adapters"),                       # the site model; the settings adapters
    ("advisor.transport",),                                     # ssh, local, captured outputs
    ("advisor.mesh",),                                          # the iperf3 mesh and its models
    ("advisor.diagnosis", "advisor.flows"),                     # causes of slow paths; production flows
    ("advisor.collect", "advisor.rules"),                       # the collect stage; the rules stage
    ("advisor.report",),                                        # the scan report and its renderings
    ("advisor.cache", "advisor.efficiency", "advisor.history"),  # what-ifs and accounting; the scan store
    ("advisor.scan",),                                          # the pipeline
    ("advisor.apply", "advisor.audit"),                         # plan/apply/verify; the audit checklist
    ("advisor.lab",),                                           # labs: sites in network namespaces
    ("advisor.cli",),                                           # the storadvise command line
]
ROOT = "advisor"


def layer_violations(graph: dict[str, set[str]], layers: list[tuple[str, ...]]) -> list[str]:
    rank = {pkg: i for i, layer in enumerate(layers) for pkg in layer}
    problems = []
    for mod in sorted(graph):
        src = stage_of(mod)
        if src == ROOT:
            continue
        if src not in rank:
            problems.append(f"{mod}: its package {src} is in no layer")
            continue
        for target in sorted(graph[mod]):
            dst = stage_of(target)
            if dst in (src, ROOT):
                continue
            if dst not in rank:
                problems.append(f"{mod} imports {target}: its package {dst} is in no layer")
            elif rank[dst] >= rank[src]:
                where = "the same layer" if rank[dst] == rank[src] else "a higher layer"
                problems.append(f"{mod} imports {target}, of {where} ({src}: layer {rank[src]}, {dst}: layer {rank[dst]})")
    return problems


def top_level_modules(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "advisor").glob("*.py") if p.name not in ("__init__.py", "storage_kinds.py"))


def imported_test_modules(root: Path) -> list[str]:
    """``file: module`` for every import of a test module (tests/**/test_*.py) anywhere in the tree's Python."""
    files = [p for d in ("advisor", "probes", "playbooks", "bench", "tests") for p in sorted((root / d).rglob("*.py"))]
    found = []
    for path in files:
        rel = path.relative_to(root)
        package = list(rel.parent.parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "tests" and parts[-1].startswith("test_") \
                        and root.joinpath(*parts).with_suffix(".py").is_file():
                    found.append(f"{rel}: {name}")
    return found


def test_the_layer_check_finds_an_import_from_a_higher_layer(tmp_path):
    for d in ("advisor/util", "advisor/scan", "advisor/cli", "probes"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "__init__.py").write_text("")
    (tmp_path / "advisor" / "__init__.py").write_text("__version__ = '0'\n")
    (tmp_path / "advisor" / "util" / "errors.py").write_text("from advisor import __version__\n")
    (tmp_path / "advisor" / "scan" / "pipeline.py").write_text("from advisor.util.errors import x\n")
    (tmp_path / "advisor" / "cli" / "root.py").write_text("from advisor.scan import pipeline\n")
    layers = [("advisor.util",), ("probes",), ("advisor.scan",), ("advisor.cli",)]
    assert layer_violations(import_graph(tmp_path), layers) == []
    # an import deferred into a function counts as much as one at the top
    (tmp_path / "advisor" / "util" / "errors.py").write_text("def f():\n    from advisor.cli.root import main\n")
    assert layer_violations(import_graph(tmp_path), layers) == [
        "advisor.util.errors imports advisor.cli.root, of a higher layer (advisor.util: layer 0, advisor.cli: layer 3)"]
    (tmp_path / "advisor" / "new").mkdir()
    (tmp_path / "advisor" / "new" / "__init__.py").write_text("from ..scan import pipeline\n")
    assert "advisor.new: its package advisor.new is in no layer" in layer_violations(import_graph(tmp_path), layers)


def test_packages_import_only_lower_layers():
    problems = layer_violations(import_graph(REPO), LAYERS)
    assert not problems, "imports against the layers (docs/architecture.md):\n" + "\n".join(problems)


def test_every_package_of_advisor_is_in_a_layer():
    declared = {pkg for layer in LAYERS for pkg in layer}
    packages = {f"advisor.{p.parent.name}" for p in (REPO / "advisor").glob("*/__init__.py")} | {"probes", "advisor.storage_kinds"}
    assert packages == declared


def test_the_top_level_holds_only_packages_and_the_storage_kind_registry():
    assert top_level_modules(REPO) == []


def test_the_test_module_check_finds_one(tmp_path):
    for d in ("advisor", "probes", "playbooks", "bench", "tests/core", "tests/support"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "tests" / "core" / "test_a.py").write_text("def helper():\n    return 1\n")
    (tmp_path / "tests" / "support" / "cli.py").write_text("")
    (tmp_path / "tests" / "core" / "test_b.py").write_text("from tests.support import cli\nfrom .test_a import helper\n")
    (tmp_path / "advisor" / "x.py").write_text("def f():\n    import tests.core.test_a\n")
    assert imported_test_modules(tmp_path) == ["advisor/x.py: tests.core.test_a", "tests/core/test_b.py: tests.core.test_a"]


def test_no_module_imports_a_test_module():
    found = imported_test_modules(REPO)
    assert not found, "imports of test modules (move what they share to tests/support/):\n" + "\n".join(found)
