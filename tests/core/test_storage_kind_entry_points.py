"""Storage kinds from installed distributions: an entry point of the group ``storadvise.storage_kinds``
(advisor.storage_kinds) names a StorageKind or a list of them. Each case writes a distribution (its
package and ``*.dist-info``) into a temporary directory that importlib.metadata finds through
PYTHONPATH, and runs the real CLI: a good plug-in's probe and rules are there; a broken one stops the
command with one line naming the entry point and its distribution, never a traceback."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from tests.support.cli import storadvise

REPO = Path(__file__).resolve().parents[2]

PROBE = '''
from pydantic import BaseModel
from probes.probe import Probe, ProbeContext


class TapeFacts(BaseModel):
    drives: int


class TapeProbe(Probe):
    name = "tapefs.drives"
    title = "tapefs drives"
    facts_model = TapeFacts

    def script(self, ctx: ProbeContext) -> str:
        return "echo 2\\n"

    def parse(self, text: str) -> TapeFacts:
        return TapeFacts(drives=int(text.strip()))
'''

PACK = '''
rules:
  - id: TAPEFS-DRIVES
    title: tapefs has two drives at least
    roles: [storage]
    probe: tapefs.drives
    fact: drives
    operator: ge
    expected: 2
    severity: low
    rationale: a test storage system's rule
    remediation: {text: Add a drive.}
'''


def distribution(root: Path, dist: str, entry: str, modules: dict[str, str]) -> Path:
    pkg = dist.replace("-", "_")
    for rel, text in modules.items():
        f = root / pkg / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text).lstrip())
    info = root / f"{pkg}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[storadvise.storage_kinds]\n{entry}\n")
    return root


def cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return storadvise(*args, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(REPO)])}, timeout=120)


def one_line_error(cp: subprocess.CompletedProcess[str]) -> str:
    assert cp.returncode == 1, (cp.returncode, cp.stdout[-500:], cp.stderr[-2000:])
    assert "Traceback" not in cp.stderr and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    return cp.stderr.strip()


def test_an_installed_plugin_brings_its_probe_and_rules(tmp_path):
    root = distribution(tmp_path, "tapefs-storadvise", "tapefs = tapefs_storadvise.kind:KINDS", {
        "__init__.py": "",
        "probe.py": PROBE,
        "tapefs.yml": PACK,
        # a list of kinds: the second only names an alias of the first's kind
        "kind.py": '''
            from pathlib import Path
            from advisor.storage_kinds import StorageKind

            KINDS = [StorageKind("tapefs", probe_module="tapefs_storadvise.probe",
                                 rule_pack=str(Path(__file__).parent / "tapefs.yml")),
                     StorageKind("tapefs2", aliases=("tape",))]
        ''',
    })
    cp = cli(root, "probe", "list", "--json")
    assert cp.returncode == 0, cp.stderr
    assert "tapefs.drives" in cp.stdout
    cp = cli(root, "rules", "list", "--json")
    assert cp.returncode == 0, cp.stderr
    assert "TAPEFS-DRIVES" in cp.stdout
    # the site model knows the kinds and the alias
    site = tmp_path / "tape.yml"
    site.write_text("name: tape\nstorage_systems: [tapefs, tape]\ntransport: local\nhosts: [{name: t1, address: localhost}]\n")
    cp = cli(root, "scan", "--site", str(site), "--dry-run", "--json")
    assert cp.returncode == 0, cp.stderr[-2000:]
    assert "tapefs.drives" in cp.stdout
    # without the distribution on the path, the same site file names an unknown kind
    cp = cli(tmp_path / "nothing", "scan", "--site", str(site), "--dry-run", "--json")
    assert cp.returncode != 0 and "unknown storage" in cp.stderr and "tapefs" in cp.stderr, cp.stderr


def test_a_plugin_that_cannot_be_imported_is_one_line_naming_it(tmp_path):
    root = distribution(tmp_path, "broken-storadvise", "brokenfs = broken_storadvise.kind:KIND", {
        "__init__.py": "", "kind.py": "import no_such_module_anywhere\n"})
    line = one_line_error(cli(root, "probe", "list"))
    assert "storage-kind plug-in 'brokenfs' (broken_storadvise.kind:KIND) of distribution 'broken-storadvise'" in line
    assert "ModuleNotFoundError: No module named 'no_such_module_anywhere'" in line


def test_a_plugin_that_is_not_a_storage_kind_is_refused(tmp_path):
    root = distribution(tmp_path, "odd-storadvise", "oddfs = odd_storadvise.kind:KIND", {
        "__init__.py": "", "kind.py": "KIND = {'name': 'oddfs'}\n"})
    line = one_line_error(cli(root, "rules", "list"))
    assert "'oddfs'" in line and "'odd-storadvise'" in line and "is a dict, not an advisor.storage_kinds.StorageKind" in line


def test_a_plugin_may_not_take_a_shipped_kind_name(tmp_path):
    root = distribution(tmp_path, "my-gpfs", "gpfs = my_gpfs.kind:KIND", {
        "__init__.py": "", "kind.py": "from advisor.storage_kinds import StorageKind\nKIND = StorageKind('mygpfs', aliases=('cephfs',))\n"})
    line = one_line_error(cli(root, "probe", "list"))
    assert "plug-in 'gpfs' (my_gpfs.kind:KIND) of distribution 'my-gpfs': the name 'cephfs' is taken by a shipped kind" in line


def test_a_plugin_naming_a_module_or_role_that_is_not_there_is_refused(tmp_path):
    root = distribution(tmp_path / "a", "typo-storadvise", "typofs = typo_storadvise.kind:KIND", {
        "__init__.py": "", "kind.py": "from advisor.storage_kinds import StorageKind\n"
                                      "KIND = StorageKind('typofs', probe_module='typo_storadvise.prob')\n"})
    line = one_line_error(cli(root, "probe", "list"))
    assert "'typo-storadvise': kind 'typofs': probe_module 'typo_storadvise.prob' is not an importable module" in line
    root = distribution(tmp_path / "b", "norole-storadvise", "norolefs = norole_storadvise.kind:KIND", {
        "__init__.py": "", "kind.py": "from advisor.storage_kinds import StorageKind\n"
                                      "KIND = StorageKind('norolefs', role='/nonexistent/norole_tuning')\n"})
    line = one_line_error(cli(root, "rules", "list"))
    assert "kind 'norolefs': role '/nonexistent/norole_tuning' is not a directory" in line
