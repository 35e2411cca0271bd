"""A become password (or any secret-named variable) planted in a site file reaches only the plan's
inventory.yml, which is 0600; every report, capture, stdout/stderr and plan.json is free of it."""

from __future__ import annotations

import stat

from advisor.site.secret_vars import is_secret_name, redact_vars
from tests.support.cli import storadvise

SECRET = "PLANTED-s3cr3t-7f1d"
SITE_SECRET = "PLANTED-token-99ab"
#: names the first list of secret names missed (issue 25 case 5)
PW_SECRET = "PLANTED-pw-41c2"
KEY_SECRET = "PLANTED-privkey-5e0b"
ALL = (SECRET, SITE_SECRET, PW_SECRET, KEY_SECRET)


def test_planted_secret_only_in_the_0600_inventory(tmp_path):
    # link_rate 100gbit: the TCP buffer maxima this machine has are below what that rate needs, so
    # the plan names the host (with nothing to change, the inventory would list no host at all)
    (tmp_path / "site.yml").write_text(
        "name: sec\ntransport: local\nvars:\n  site_api_token: " + SITE_SECRET + "\n  backup_pw: " + PW_SECRET
        + "\n  xrootd_private_key: " + KEY_SECRET + "\n  ansible_ssh_private_key_file: /k/id\nhosts:\n"
        "  - name: me\n    address: localhost\n    roles: [storage]\n    link_rate: 100gbit\n    vars:\n"
        "      ansible_become_password: " + SECRET + "\n      ansible_ssh_pass: " + SECRET + "\n")
    outs = [
        storadvise("scan", "--site", "site.yml", "--sample-seconds", "0.2", "-o", "scan.json", "--junit", "junit.xml",
             "--json", "--history", "h.db", cwd=tmp_path),
        storadvise("collect", "--site", "site.yml", "--sample-seconds", "0.2", "--out", "cap", cwd=tmp_path),
        storadvise("scan", "--from", "cap", "--json", "--history", "h.db", cwd=tmp_path),
        storadvise("plan", "--site", "site.yml", "--scan", "scan.json", "--out", "plan", "--json", cwd=tmp_path),
        storadvise("plan", "--site", "site.yml", "--scan", "scan.json", "--out", "plan", cwd=tmp_path),
    ]
    assert all(cp.returncode in (0, 2, 3) for cp in outs), [cp.stderr for cp in outs]
    assert (tmp_path / "plan" / "inventory.yml").exists() and (tmp_path / "cap" / "manifest.json").exists()
    for cp in outs:
        for planted in ALL:
            assert planted not in cp.stdout + cp.stderr
    holders = []
    for f in sorted(tmp_path.rglob("*")):
        if f.is_file() and f.name != "site.yml":
            text = f.read_bytes()
            if any(planted.encode() in text for planted in ALL):
                holders.append(f.relative_to(tmp_path).as_posix())
    assert holders == ["plan/inventory.yml"]
    # every file that could hold a host variable is the owner's only
    private = [tmp_path / "plan" / "inventory.yml", *(tmp_path / "plan" / "host_vars").glob("*.yml"),
               tmp_path / "plan" / "plan.json", tmp_path / "cap" / "manifest.json", tmp_path / "h.db",
               *(tmp_path / "cap" / "hosts").glob("*/*.json")]
    assert len(private) >= 7
    for f in private:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_secret_names():
    for name in ("ansible_become_password", "ansible_become_pass", "ansible_password", "ansible_ssh_pass",
                 "ansible_ssh_private_key_passphrase", "vault_password_file", "api_token", "db_secret",
                 "db_pw", "PW", "tls_private_key", "privatekey", "become_pass", "vault_addr", "s3_credentials",
                 "dbpassword", "ldap_passwd"):
        assert is_secret_name(name), name
    for name in ("passive_mode", "bypass", "xcache_config", "storadvise_backup_dir", "ansible_host",
                 "ansible_ssh_private_key_file", "tls_private_key_path", "pwd_dir", "sha256sum"):
        assert not is_secret_name(name), name
    assert redact_vars({"hosts": [{"vars": {"ansible_password": "x", "a": 1}}]}) == \
        {"hosts": [{"vars": {"ansible_password": "<redacted>", "a": 1}}]}
