"""A production controller: `pip install storadvise` without the test extras has everything the
controller needs. The wheel is built (offline, as a packager would), unpacked, and the controller
is run from it alone with every test-extra distribution made unimportable: scan, collect, plan
(its Ansible project from the packaged playbooks), report, rules lint. And no module of advisor/ or
probes/ imports a third-party package that is not a base dependency."""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


BASE = _names(PROJECT["dependencies"])
TEST_ONLY = _names(PROJECT["optional-dependencies"]["test"]) - BASE


def _import_names(distributions: set[str]) -> set[str]:
    """Top-level import names of the installed distributions among ``distributions``."""
    out = set()
    for top, dists in md.packages_distributions().items():
        if any(d.lower().replace("_", "-") in distributions for d in dists):
            out.add(top)
    return out


def test_every_third_party_import_is_a_base_dependency():
    by_module = md.packages_distributions()
    # typer's own dependency, imported only by older typer versions that do not vendor it
    allowed = BASE | {"click"}
    problems = []
    for root in ("advisor", "probes"):
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("advisor", "probes", "__future__"):
                        continue
                    dists = {d.lower().replace("_", "-") for d in by_module.get(top, [top])}
                    if not dists & allowed:
                        problems.append(f"{path.relative_to(REPO)}: imports {top} ({', '.join(sorted(dists))})")
    assert problems == []


BLOCKER = """
import sys
class NoTestExtras:
    blocked = set({blocked!r})
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ImportError(f"{{name}} is a test extra, not installed on a production controller")
sys.meta_path.insert(0, NoTestExtras())
# the checkout's own source (the editable install's path), not a virtualenv that lives inside it
sys.path = [p for p in sys.path if not (p.rstrip("/") == {repo!r}
                                        or (p.startswith({repo!r} + "/") and "site-packages" not in p))]
sys.path.insert(0, {wheel!r})
import advisor
assert advisor.__file__.startswith({wheel!r}), advisor.__file__
from advisor.cli.root import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_wheel_without_test_extras_runs_the_controller(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(tmp_path / "dist"), str(REPO)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("storadvise-*.whl"))
    unpacked = tmp_path / "installed"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked)
    assert (unpacked / "advisor" / "_data" / "rules" / "network.yml").is_file()
    assert (unpacked / "advisor" / "_data" / "playbooks" / "apply-tuning.yml").is_file()
    blocked = sorted(_import_names(TEST_ONLY) | {"pytest", "hypothesis", "playwright", "lxml"})
    runner = tmp_path / "controller.py"
    runner.write_text(BLOCKER.format(blocked=blocked, repo=str(REPO), wheel=str(unpacked)))
    work = tmp_path / "work"
    work.mkdir()
    site = work / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [storage]}\n")

    def controller(*args):
        return subprocess.run([sys.executable, "-I", str(runner), *map(str, args)], capture_output=True, text=True,
                              cwd=work, timeout=600, env={"PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin",
                                                          "HOME": str(tmp_path), "STORADVISE_HISTORY": str(tmp_path / "h.db")})

    r = controller("--version")
    assert r.returncode == 0 and r.stdout.startswith("storadvise "), r.stderr
    r = controller("rules", "lint")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(controller("probe", "list", "--json").stdout)) > 20
    r = controller("collect", "--site", site, "--out-dir", work / "cap", "--sample-seconds", "0.2")
    assert r.returncode == 0, r.stderr
    r = controller("scan", "--from", work / "cap", "-o", work / "scan.json", "--fail-on", "critical")
    assert r.returncode in (0, 2), r.stderr
    r = controller("plan", "--site", site, "--scan", work / "scan.json", "--out-dir", work / "fix",
                   "--min-severity", "info")
    assert r.returncode in (0, 3), r.stderr
    assert (work / "fix" / "apply-tuning.yml").is_file() and (work / "fix" / "roles" / "network_tuning").is_dir()
    r = controller("report", work / "scan.json", "--html", work / "s.html", "--junit", work / "s.xml",
                   "--prometheus", work / "s.prom")
    assert r.returncode == 0, r.stderr
    assert all((work / f).stat().st_size > 0 for f in ("s.html", "s.xml", "s.prom"))
    r = controller("history", "list", "--json")
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr
