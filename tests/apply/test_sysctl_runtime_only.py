"""The network_tuning module's runtime_only: a key whose boot value is already right (no file sets
it, the kernel default is the target) is set at run time and written to no file. Real module,
real ansible, in a private network namespace (root: CI is root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.root  # unshare -n
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace)")
def test_a_runtime_only_key_is_set_now_and_not_persisted(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    args = {"sysctls": {"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_timestamps": "1"},
            "runtime_only": ["net.ipv4.tcp_sack"], "sysctl_file": str(conf / "90-storadvise.conf"),
            "conf_paths": [str(conf)], "editable_prefixes": [str(tmp_path) + "/"], "backup_file": str(tmp_path / "b.json")}
    script = ("sysctl -q -w net.ipv4.tcp_sack=0 && "
              f"{BIN / 'ansible'} localhost -c local -m storadvise_sysctl -a \"$ARGS\" && cat /proc/sys/net/ipv4/tcp_sack")
    env = {**os.environ, "ARGS": json.dumps(args), "HOME": str(tmp_path), "ANSIBLE_HOME": str(tmp_path / "ah"),
           "ANSIBLE_LIBRARY": str(REPO / "playbooks" / "roles" / "network_tuning" / "library"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1"}
    cp = subprocess.run(["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    assert cp.stdout.strip().endswith("1")  # set now
    persisted = (conf / "90-storadvise.conf").read_text()
    assert "net.ipv4.tcp_timestamps = 1" in persisted and "tcp_sack" not in persisted
