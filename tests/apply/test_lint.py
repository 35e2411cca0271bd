"""ansible-lint (when installed) finds nothing in the shipped playbooks and roles."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.resources import playbooks_dir

ANSIBLE_LINT = shutil.which("ansible-lint", path=str(Path(sys.executable).parent)) or shutil.which("ansible-lint")


@pytest.mark.skipif(ANSIBLE_LINT is None, reason="ansible-lint not installed")
def test_playbooks_are_ansible_lint_clean(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(playbooks_dir(), proj, ignore=shutil.ignore_patterns("__pycache__"))
    (proj / "ansible.cfg").write_text("[defaults]\nroles_path = roles\nmodule_utils = module_utils\n")
    cp = subprocess.run([ANSIBLE_LINT, "--offline", "--nocolor", "--profile", "production",
                         "apply-tuning.yml", "rollback.yml", "collect.yml", "roles"],
                        cwd=proj, capture_output=True, text=True, timeout=600,
                        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
                             "ANSIBLE_HOME": str(tmp_path / "ansible-home")})
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    assert "0 failure(s), 0 warning(s)" in cp.stdout + cp.stderr
