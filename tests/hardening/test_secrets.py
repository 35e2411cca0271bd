"""A become password (or any secret-named variable) planted in a site file reaches only the plan's
inventory.yml, which is 0600; every report, capture, stdout/stderr and plan.json is free of it."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from advisor.secret_vars import is_secret_name, redact_vars

SECRET = "PLANTED-s3cr3t-7f1d"
SITE_SECRET = "PLANTED-token-99ab"


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=tmp)


def test_planted_secret_only_in_the_0600_inventory(tmp_path):
    # link_rate 100gbit: the TCP buffer maxima this machine has are below what that rate needs, so
    # the plan names the host (with nothing to change, the inventory would list no host at all)
    (tmp_path / "site.yml").write_text(
        "name: sec\ntransport: local\nvars:\n  site_api_token: " + SITE_SECRET + "\nhosts:\n"
        "  - name: me\n    address: localhost\n    roles: [storage]\n    link_rate: 100gbit\n    vars:\n"
        "      ansible_become_password: " + SECRET + "\n      ansible_ssh_pass: " + SECRET + "\n")
    outs = [
        _run(tmp_path, "scan", "--site", "site.yml", "--sample-seconds", "0.2", "-o", "scan.json", "--junit", "junit.xml",
             "--json"),
        _run(tmp_path, "collect", "--site", "site.yml", "--sample-seconds", "0.2", "--out", "cap"),
        _run(tmp_path, "scan", "--from", "cap", "--json"),
        _run(tmp_path, "plan", "--site", "site.yml", "--scan", "scan.json", "--out", "plan", "--json"),
        _run(tmp_path, "plan", "--site", "site.yml", "--scan", "scan.json", "--out", "plan"),
    ]
    assert all(cp.returncode in (0, 2, 3) for cp in outs), [cp.stderr for cp in outs]
    assert (tmp_path / "plan" / "inventory.yml").exists() and (tmp_path / "cap" / "manifest.json").exists()
    for cp in outs:
        assert SECRET not in cp.stdout + cp.stderr and SITE_SECRET not in cp.stdout + cp.stderr
    holders = []
    for f in sorted(tmp_path.rglob("*")):
        if f.is_file() and f.name != "site.yml":
            text = f.read_bytes()
            if SECRET.encode() in text or SITE_SECRET.encode() in text:
                holders.append(f.relative_to(tmp_path).as_posix())
    assert holders == ["plan/inventory.yml"]
    for f in [tmp_path / "plan" / "inventory.yml", *(tmp_path / "plan" / "host_vars").glob("*.yml")]:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_secret_names():
    for name in ("ansible_become_password", "ansible_become_pass", "ansible_password", "ansible_ssh_pass",
                 "ansible_ssh_private_key_passphrase", "vault_password_file", "api_token", "db_secret"):
        assert is_secret_name(name), name
    for name in ("passive_mode", "bypass", "xcache_config", "storadvise_backup_dir", "ansible_host"):
        assert not is_secret_name(name), name
    assert redact_vars({"hosts": [{"vars": {"ansible_password": "x", "a": 1}}]}) == \
        {"hosts": [{"vars": {"ansible_password": "<redacted>", "a": 1}}]}
