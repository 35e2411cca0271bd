"""A site's rules directory is read as regular files of that directory only (docs/security.md, "Rule packs").

``rules_dirs:`` (and ``--rules DIR``) may hold a symlink to a file its reader may read and its
writer may not (root-only YAML): ``rules lint`` printed pieces of it in its errors. A pack or a
profile of a site rules directory that is a symlink, a FIFO (which also hung the read) or anything
but a regular file is now refused unread, naming only its path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SECRET = "hunter2-TOPSECRET"
#: a YAML file whose every error would quote the secret
SECRET_YAML = (f"name: x\nrules:\n  - {{id: SITE-X, title: t, probe: network.sysctl, fact: x, operator: present, "
               f"rationale: r, severity: '{SECRET}'}}\n")


def run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def _secret(tmp_path: Path) -> Path:
    outside = tmp_path / "root-only"
    outside.mkdir(mode=0o700)
    f = outside / "secret.yml"
    f.write_text(SECRET_YAML)
    f.chmod(0o600)
    return f


def _problem(cp: subprocess.CompletedProcess) -> str:
    out = cp.stdout + cp.stderr
    assert cp.returncode == 1 and "Traceback" not in out, out
    assert SECRET not in out, out
    return out


def test_a_pack_that_is_a_symlink_is_not_read(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "local.yml").symlink_to(_secret(tmp_path))
    out = _problem(run("rules", "lint", "--rules", rules, cwd=tmp_path))
    assert f"{rules / 'local.yml'}" in out and "symlink" in out, out
    # the same through a site file's rules_dirs, and for a scan
    site = tmp_path / "site.yml"
    site.write_text(f"name: t\nrules_dirs: [{rules}]\nhosts:\n  - name: a\n")
    _problem(run("rules", "lint", "--site", site, cwd=tmp_path))
    _problem(run("scan", "--site", site, "--dry-run", cwd=tmp_path))


def test_a_profile_that_is_a_symlink_is_not_read(tmp_path):
    rules = tmp_path / "rules"
    (rules / "profiles").mkdir(parents=True)
    (rules / "profiles" / "ours.yml").symlink_to(_secret(tmp_path))
    out = _problem(run("rules", "lint", "--rules", rules, cwd=tmp_path))
    assert "ours.yml" in out and "symlink" in out, out


def test_a_fifo_in_the_rules_directory_neither_hangs_nor_is_read(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    os.mkfifo(rules / "pipe.yml")
    out = _problem(run("rules", "lint", "--rules", rules, cwd=tmp_path))
    assert "pipe.yml" in out and "not a regular file" in out, out


def test_a_regular_pack_of_the_directory_is_still_read_and_its_errors_quote_it(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "local.yml").write_text(SECRET_YAML)
    cp = run("rules", "lint", "--rules", rules, cwd=tmp_path)
    assert cp.returncode == 1 and SECRET in cp.stdout + cp.stderr  # its own file: what is wrong is shown


def test_the_directory_itself_may_be_a_symlink_the_user_gave(tmp_path):
    real = tmp_path / "real-rules"
    real.mkdir()
    (real / "local.yml").write_text("rules: []\n")
    link = tmp_path / "rules"
    link.symlink_to(real)
    cp = run("rules", "lint", "--rules", link, cwd=tmp_path)
    assert cp.returncode == 0, cp.stdout + cp.stderr
