"""ansible-lint (when installed) finds nothing in the shipped playbooks and roles, with the module-argument check
(``args``) on for every role: each role's module is loaded in-process with its module_utils, here from the built
and installed collection, and a load that fails (the check then skipped) fails the test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.util.resources import playbooks_dir

# ansible-lint runs ansible-playbook --syntax-check on every playbook
pytestmark = pytest.mark.usefixtures("ansible_playbook")

BIN = Path(sys.executable).parent
ANSIBLE_LINT = shutil.which("ansible-lint", path=str(BIN)) or shutil.which("ansible-lint")


def _install_collection(tmp_path: Path, env: dict) -> Path:
    def run(*argv: str) -> None:
        cp = subprocess.run([str(BIN / "ansible-galaxy"), "collection", *argv], capture_output=True, text=True,
                            timeout=300, env=env, cwd=tmp_path)
        assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]

    run("build", str(playbooks_dir()), "--output-path", str(tmp_path / "dist"))
    (tarball,) = (tmp_path / "dist").glob("storadvise-tuning-*.tar.gz")
    run("install", "--offline", "-p", str(tmp_path / "installed"), str(tarball))
    return tmp_path / "installed"


def test_every_role_has_an_argument_spec():
    import yaml

    roles = sorted(p for p in (playbooks_dir() / "roles").iterdir() if (p / "tasks").is_dir())
    assert len(roles) == 16  # the 15 apply roles and collect_batch
    for role in roles:
        spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
        defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
        # every default is an option with a type and a description, and nothing is declared that has no default
        assert set(spec["options"]) == set(defaults), role.name
        assert all(o.get("type") and o.get("description") for o in spec["options"].values()), role.name


@pytest.mark.skipif(ANSIBLE_LINT is None, reason="ansible-lint not installed")
def test_playbooks_are_ansible_lint_clean_with_every_roles_module_arguments_checked(tmp_path):
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "ANSIBLE_HOME": str(tmp_path / "ansible-home")}
    env["ANSIBLE_COLLECTIONS_PATH"] = str(_install_collection(tmp_path, env))
    proj = tmp_path / "proj"
    shutil.copytree(playbooks_dir(), proj, ignore=shutil.ignore_patterns("__pycache__"))
    assert "args" in (proj / ".ansible-lint").read_text()
    (proj / "ansible.cfg").write_text("[defaults]\nroles_path = roles\nmodule_utils = module_utils\n")
    cp = subprocess.run([ANSIBLE_LINT, "--nocolor", "-c", ".ansible-lint",
                         "apply-tuning.yml", "rollback.yml", "collect.yml", "roles"],
                        cwd=proj, capture_output=True, text=True, timeout=600, env=env)
    out = cp.stdout + cp.stderr
    assert cp.returncode == 0, out[-6000:]
    assert "0 failure(s), 0 warning(s)" in out
    # the args check ran on every module: none failed to load (ansible-lint logs it and goes on)
    for sign in ("Traceback", "ModuleNotFoundError", "ImportError", "Unable to load module"):
        assert sign not in out, out[-6000:]
