"""The probe helper and its sudoers snippet stay least privilege (docs/privileges.md, docs/security.md).

* ``sudoers`` wrote a rule for a helper under /home/scanner/bin or /tmp (whoever may write there is
  root through it), and for ``--user ALL`` or ``defaults: {user: ALL}``: ``ALL ALL=(root) ...``.
  A helper must now lie in a root-owned system directory and the user must be one login name.
* The scan checked the helper's hash as the login user before sudo, which protects nothing when the
  user may replace it: it now first checks, on the host, that the helper and every directory above
  it are root's and not group- or world-writable (as OpenSSH's StrictModes), and refuses with the fix.
* The helper ran ``cat`` as root on whatever a site variable named (``firewall_nftables_conf:
  /etc/sudoers``, ``xcache_log: /etc/shadow``): through the helper a root probe now reads only the
  locations it documents, which docs/privileges.md prints per probe.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.collect.collector import probe_context
from advisor.collect.probe_helper import HostCommands, helper_text
from advisor.collect.probe_plan import root_probes
from advisor.site.file import load_site
from probes import all_probes

REPO = Path(__file__).resolve().parents[2]
#: a system directory that exists on every Debian host; the root tests bind a directory of their own
#: over it in a private mount namespace
HELPER_DIR = "/usr/local/sbin"


def run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def site(tmp_path: Path, host: dict | None = None, **top) -> Path:
    doc = {"name": "ph", "profiles": ["generic"], **top,
           "hosts": [{"name": "st01", "address": "127.0.0.1", "user": "scanner", "roles": ["storage", "cache"],
                      **(host or {})}]}
    p = tmp_path / "site.yml"
    p.write_text(yaml.safe_dump(doc))
    return p


def one_line(cp: subprocess.CompletedProcess) -> str:
    assert cp.returncode == 1, (cp.returncode, cp.stdout[-500:], cp.stderr[-1000:])
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr, cp.stderr
    return lines[0]


# --------------------------------------------------------------------------- sudoers


@pytest.mark.parametrize("path", ["/home/scanner/bin/storadvise-probe", "/tmp/storadvise-probe",
                                  "/opt/storadvise-probe", "/var/tmp/x/storadvise-probe"])
def test_sudoers_refuses_a_helper_outside_the_system_directories(tmp_path, path):
    line = one_line(run("sudoers", "--site", site(tmp_path, {"vars": {"probe_helper": path}}), cwd=tmp_path))
    assert "probe_helper" in line and "root-owned system directory" in line, line


@pytest.mark.parametrize("path", ["/usr/local/sbin/storadvise-probe", "/usr/local/libexec/storadvise/probe",
                                  "/usr/sbin/storadvise-probe", "/opt/storadvise/bin/storadvise-probe"])
def test_sudoers_takes_a_helper_in_a_system_directory(tmp_path, path):
    cp = run("sudoers", "--site", site(tmp_path, {"vars": {"probe_helper": path}}), cwd=tmp_path)
    assert cp.returncode == 0 and f"    {path} firewall" in cp.stdout, cp.stderr
    if shutil.which("visudo"):
        snippet = tmp_path / "snippet"
        snippet.write_text(cp.stdout)
        assert subprocess.run(["visudo", "-cf", str(snippet)], capture_output=True, timeout=30).returncode == 0


@pytest.mark.parametrize("user", ["ALL", "ADMINS", "%wheel", "#0", "+netgroup", "a,b", "scanner\n"])
def test_sudoers_refuses_all_and_what_is_not_one_login_name(tmp_path, user):
    line = one_line(run("sudoers", "--site", site(tmp_path, {"vars": {"probe_helper": True}}), "--user", user,
                        cwd=tmp_path))
    assert "--user" in line, line


def test_sudoers_refuses_all_from_the_site_defaults(tmp_path):
    s = site(tmp_path, {"vars": {"probe_helper": True}}, defaults={"user": "ALL"})
    doc = yaml.safe_load(s.read_text())
    del doc["hosts"][0]["user"]
    s.write_text(yaml.safe_dump(doc))
    line = one_line(run("sudoers", "--site", s, cwd=tmp_path))
    assert "'ALL'" in line and "site.yml" in line and "ALL ALL" not in line, line


# --------------------------------------------------------------------------- the scan's own check on the host


def in_helper_dir(own_dir: Path, script: str) -> subprocess.CompletedProcess:
    """``script`` run by sh in a private mount namespace where ``own_dir`` is bound over HELPER_DIR."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           'mount --bind "$1" "$2" && exec sh -c "$3"', "sh", str(own_dir), HELPER_DIR, script],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.root
@pytest.mark.parametrize("loosen, why, fix", [
    (lambda d, h: d.chmod(0o775), "is writable by its group or by others", f"chmod go-w {HELPER_DIR}"),
    (lambda d, h: d.chmod(0o757), "is writable by its group or by others", f"chmod go-w {HELPER_DIR}"),
    (lambda d, h: h.chmod(0o777), "is writable by its group or by others", f"chmod go-w {HELPER_DIR}/storadvise-probe"),
    (lambda d, h: os.chown(h, 4711, 0), "is owned by uid 4711, not root", f"chown root:root {HELPER_DIR}/storadvise-probe"),
    (lambda d, h: os.chown(d, 4711, 0), "is owned by uid 4711, not root", f"chown root:root {HELPER_DIR}"),
])
def test_the_scan_refuses_a_helper_others_can_change(tmp_path, loosen, why, fix):
    s = load_site(str(site(tmp_path, {"vars": {"probe_helper": f"{HELPER_DIR}/storadvise-probe"}})))
    ctx = probe_context(s, s.hosts[0], False, 5.0)
    own = tmp_path / "sbin"
    own.mkdir(mode=0o755)
    helper = own / "storadvise-probe"
    probes = root_probes(s, s.hosts[0])
    helper.write_text(helper_text(ctx, probes))
    helper.chmod(0o755)
    cmd = HostCommands(ctx, probes).command(all_probes()["firewall"])
    ok = in_helper_dir(own, cmd.script)  # root-owned, 0755 all the way up: run (as root, without sudo)
    assert ok.returncode == 0 and "@@section" in ok.stdout, ok.stderr
    loosen(own, helper)
    r = in_helper_dir(own, cmd.script)
    assert r.returncode == 126 and not r.stdout, r
    assert "cannot be trusted" in r.stderr and why in r.stderr and f"Fix: {fix}" in r.stderr, r.stderr


@pytest.mark.root
def test_the_scan_refuses_a_helper_that_is_a_symlink(tmp_path):
    s = load_site(str(site(tmp_path, {"vars": {"probe_helper": f"{HELPER_DIR}/storadvise-probe"}})))
    ctx = probe_context(s, s.hosts[0], False, 5.0)
    own = tmp_path / "sbin"
    own.mkdir(mode=0o755)
    real = tmp_path / "real-helper"
    probes = root_probes(s, s.hosts[0])
    real.write_text(helper_text(ctx, probes))
    real.chmod(0o755)
    (own / "storadvise-probe").symlink_to(real)
    r = in_helper_dir(own, HostCommands(ctx, probes).command(all_probes()["firewall"]).script)
    assert r.returncode == 126 and "is a symlink" in r.stderr, r


# --------------------------------------------------------------------------- what the helper reads as root


@pytest.mark.parametrize("var, value", [
    ("firewall_nftables_conf", "/etc/sudoers"),
    ("firewall_nftables_conf", "/etc/nftables/../shadow"),
    ("firewall_iptables_files", {"ip": ["/etc/iptables/rules.v4", "/etc/shadow"]}),
    ("xcache_log", "/etc/shadow"),
    ("xcache_log", ["/var/log/xrootd/cache/xrootd.log", "/root/.ssh/id_rsa"]),
])
def test_a_helper_host_may_not_name_an_undocumented_location(tmp_path, var, value):
    s = site(tmp_path, {"vars": {"probe_helper": True, var: value}})
    for command in (["scan", "--dry-run"], ["sudoers"], ["probe", "helper", "--host", "st01"]):
        line = one_line(run(*command, "--site", s, cwd=tmp_path))
        assert "site.yml" in line and var in line and "docs/privileges.md" in line, line
    # the site-wide vars count for every host
    s2 = site(tmp_path, {"vars": {"probe_helper": True}}, vars={var: value})
    assert var in one_line(run("scan", "--dry-run", "--site", s2, cwd=tmp_path))


def test_probe_helper_refuses_an_undocumented_location_for_a_host_without_the_variable(tmp_path):
    s = site(tmp_path, {"vars": {"xcache_log": "/etc/shadow"}})  # no probe_helper: the scripts run as sudo sh
    assert run("scan", "--dry-run", "--site", s, cwd=tmp_path).returncode == 0
    line = one_line(run("probe", "helper", "--site", s, "--host", "st01", cwd=tmp_path))
    assert "xcache_log" in line and "/etc/shadow" in line, line


def test_documented_locations_are_read_through_the_helper(tmp_path):
    s = load_site(str(site(tmp_path, {"vars": {"probe_helper": True,
                                               "firewall_nftables_conf": "/etc/nftables/main.nft",
                                               "firewall_iptables_files": {"ip": ["/etc/sysconfig/iptables"]},
                                               "xcache_log": "/var/log/xrootd/cache/xrootd.log"}})))
    text = helper_text(probe_context(s, s.hosts[0], False, 5.0), root_probes(s, s.hosts[0]))
    assert "/etc/nftables/main.nft" in text and "/etc/sysconfig/iptables" in text
    assert "/var/log/xrootd/cache/xrootd.log" in text and "readlink -f" in text


@pytest.mark.root
def test_the_helper_does_not_follow_a_log_symlink_out_of_the_log_directory(tmp_path):
    """The xrootd user writes /var/log/xrootd: a symlink it plants there is not read as root."""
    s = load_site(str(site(tmp_path, {"vars": {"probe_helper": True}})))
    helper = tmp_path / "storadvise-probe"
    helper.write_text(helper_text(probe_context(s, s.hosts[0], False, 5.0), root_probes(s, s.hosts[0])))
    secret = tmp_path / "secret"
    secret.write_text("Config effective /etc/xrootd/x.cfg pfc configuration:\n  pfc.ram SECRET-FROM-OUTSIDE\n")
    real = tmp_path / "real.log"
    real.write_text("Config effective /etc/xrootd/x.cfg pfc configuration:\n  pfc.ram 8g\n")
    setup = ('mount -t tmpfs none /var/log && mkdir -p /var/log/xrootd/a /var/log/xrootd/b && '
             f'ln -s {secret} /var/log/xrootd/a/xrootd.log && cp {real} /var/log/xrootd/b/xrootd.log && '
             f'touch -d "2020-01-01" /var/log/xrootd/b/xrootd.log && exec sh {helper} xcache.log')
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", setup],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "SECRET-FROM-OUTSIDE" not in r.stdout and "pfc.ram 8g" in r.stdout, r.stdout


def test_docs_print_each_probes_allowed_locations():
    doc = (REPO / "docs" / "privileges.md").read_text()
    for probe in all_probes().values():
        for var, locations in probe.root_paths.items():
            row = next((ln for ln in doc.splitlines() if ln.startswith(f"| `{probe.name}` | `{var}` |")), None)
            assert row is not None, f"docs/privileges.md: no row for {probe.name} {var}"
            assert all(f"`{loc}`" in row for loc in locations), row
