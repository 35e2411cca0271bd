"""A changed host key is refused by every Ansible run of a plan, also one that follows a
successful run within seconds (issue 25 case 10, "a reused multiplexed connection"): Ansible's
default ssh_args multiplex (ControlMaster=auto, ControlPersist=60s), and a command sent through a
live master connection is never checked against known_hosts again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.util.ansible_data import dump_data
from advisor.apply.project import ANSIBLE_CFG, connection_vars
from tests.support.sshd import generate_key, running_sshd, sshd_available

ANSIBLE = str(Path(sys.executable).parent / "ansible")


def _ping(project: Path, cp_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_CONFIG": str(project / "ansible.cfg"),
           "ANSIBLE_SSH_CONTROL_PATH_DIR": str(cp_dir), "ANSIBLE_LOCAL_TEMP": str(project / "tmp")}
    return subprocess.run([ANSIBLE, "all", "-m", "ping", "-e", f"ansible_python_interpreter={sys.executable}"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_changed_host_key_refused_right_after_a_successful_run(tmp_path):
    if not sshd_available():
        pytest.skip("needs /usr/sbin/sshd")
    cp_dir = tmp_path / "cp"
    cp_dir.mkdir()
    with running_sshd() as s:
        project = tmp_path / "plan"
        project.mkdir()
        (project / "ansible.cfg").write_text(ANSIBLE_CFG)
        host = s.host("n1")
        (project / "inventory.yml").write_text(dump_data({"all": {"hosts": {"n1": connection_vars(host)}}}))
        try:
            first = _ping(project, cp_dir)
            assert first.returncode == 0 and "pong" in first.stdout, first.stdout[-2000:] + first.stderr[-2000:]
            # the host's key "changes": known_hosts now holds another key for it
            other = generate_key(tmp_path / "other_host_key")
            blob = Path(str(other) + ".pub").read_text().split()[:2]
            s.known_hosts_path.write_text(f"[{s.address}]:{s.port} {' '.join(blob)}\n")
            second = _ping(project, cp_dir)
            out = second.stdout + second.stderr
            assert second.returncode != 0 and "pong" not in second.stdout, \
                "the second run reused the first run's SSH connection: the changed key was never checked"
            assert "host key" in out.lower() or "host identification has changed" in out.lower(), out[-2000:]
        finally:
            for sock in cp_dir.iterdir():  # a master left by multiplexing: stopped through its socket
                subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "n1"], capture_output=True,
                               timeout=30)
