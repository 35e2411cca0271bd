"""No import circles in advisor/ and probes/, and advisor/apply/ never imports the root CLI.

The graph is read from the source (every ``import`` statement, also those inside functions and
under ``if TYPE_CHECKING``), so a circle hidden behind a deferred import counts too.
"""

from __future__ import annotations

from tests.support.import_graph import REPO, import_circles, import_graph, stage_graph


def test_the_detector_finds_a_circle(tmp_path):
    (tmp_path / "advisor").mkdir()
    (tmp_path / "probes").mkdir()
    (tmp_path / "advisor" / "__init__.py").write_text("")
    (tmp_path / "probes" / "__init__.py").write_text("")
    (tmp_path / "advisor" / "a.py").write_text("from advisor.b import x\n")
    (tmp_path / "advisor" / "b.py").write_text("def f():\n    from . import c\n")
    (tmp_path / "advisor" / "c.py").write_text("import advisor.a\n")
    (tmp_path / "advisor" / "d.py").write_text("from advisor import a\n")
    assert import_circles(import_graph(tmp_path)) == [["advisor.a", "advisor.b", "advisor.c"]]


def test_no_import_circles():
    circles = import_circles(import_graph(REPO))
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_apply_does_not_import_the_cli():
    graph = import_graph(REPO)
    offenders = sorted(m for m, edges in graph.items() if m.startswith("advisor.apply") and "advisor.cli.root" in edges)
    assert not offenders, f"{offenders} import advisor.cli.root"


def test_the_stage_detector_finds_packages_that_import_each_other(tmp_path):
    for d in ("advisor/one", "advisor/two", "probes"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "__init__.py").write_text("")
    # no circle between modules, but advisor.one and advisor.two import each other
    (tmp_path / "advisor" / "one" / "a.py").write_text("from advisor.two.b import x\n")
    (tmp_path / "advisor" / "two" / "c.py").write_text("from advisor.one import d\n")
    (tmp_path / "advisor" / "one" / "d.py").write_text("")
    (tmp_path / "advisor" / "two" / "b.py").write_text("x = 1\n")
    graph = import_graph(tmp_path)
    assert import_circles(graph) == []
    assert import_circles(stage_graph(graph)) == [["advisor.one", "advisor.two"]]


def test_no_package_of_advisor_imports_one_that_imports_it_back():
    """The stages flow one way (docs/architecture.md): a package of advisor/ (the rules, the diagnosis,
    the report, apply, the mesh ...) never imports one that imports it back, even through different
    modules, so that no import runs back up from a later stage to an earlier one."""
    circles = import_circles(stage_graph(import_graph(REPO)))
    assert not circles, "packages that import each other: " + "; ".join(" <-> ".join(c) for c in circles)
