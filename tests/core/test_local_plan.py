"""plan --site local with --role: the local host gets the roles, the project runs with a local connection."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import storadvise


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.usefixtures("ansible_playbook")
def test_plan_site_local_with_role(tmp_path):
    out = tmp_path / "plan"
    # --min-severity info: on a well-tuned machine the only failed findings may be info ones (the
    # default qdisc, tcp_no_metrics_save); the plan must still name this host for the check below
    r = storadvise("plan", "--site", "local", "--role", "storage", "--out", out, "--sample-seconds", "0.2",
            "--min-severity", "info", "--json")
    assert r.returncode == 0, r.stderr
    before = json.loads((out / "scan-before.json").read_text())
    assert before["site"] == "local" and before["hosts"][0]["roles"] == ["storage"]
    inv = (out / "inventory.yml").read_text()
    hosts = [line for line in inv.splitlines() if line.strip().startswith(("ansible_connection", "ansible_host"))]
    assert hosts and all(re.fullmatch(r"\s*ansible_connection: (!unsafe )?'?local'?", h) for h in hosts), inv
    # the project runs against this machine with real ansible-playbook; --check changes nothing
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    p = subprocess.run(["ansible-playbook", "apply-tuning.yml", "--check"], cwd=out, capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "unreachable=0" in p.stdout and "failed=0" in p.stdout


def test_role_refusals(tmp_path):
    r = storadvise("scan", "--role", "nosuch", "--no-history")
    assert r.returncode == 1 and "'nosuch' is not a role" in r.stderr and r.stderr.count("\n") == 1
    site = tmp_path / "s.yml"
    site.write_text("name: remote\nhosts:\n  - {name: a, address: 192.0.2.1, roles: [worker]}\n")
    r = storadvise("scan", "--site", site, "--role", "storage", "--no-history")
    assert r.returncode == 1 and "--role gives the local host its roles" in r.stderr
