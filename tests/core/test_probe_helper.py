"""The probe helper and the sudoers snippet (advisor.collect.probe_helper): the helper holds each root probe's
own script and runs it by name only; a site's probe_helper path is checked when the site is read; the
scan's command refuses a helper that is not the one generated for the host. (The end-to-end run as a plain
user through real sudo is tests/apply/test_least_privilege.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.collect.collector import probe_context
from advisor.util.errors import SiteFileError
from advisor.collect.probe_helper import HostCommands, helper_text, sudoers_text
from advisor.collect.probe_plan import root_probes
from advisor.site.probe_helper_path import DEFAULT_HELPER_PATH
from advisor.site.file import load_site
from advisor.transport.base import sudo_flag
from probes import all_probes

REPO = Path(__file__).resolve().parents[2]


def _site(tmp_path: Path, host_vars: dict | None = None, user: str = "scanner") -> Path:
    doc = {"name": "ph", "profiles": ["generic"], "hosts": [
        {"name": "st01", "address": "127.0.0.1", "user": user, "roles": ["storage"], "vars": host_vars or {}}]}
    p = tmp_path / "site.yml"
    p.write_text(yaml.safe_dump(doc))
    return p


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_the_helper_runs_each_root_probe_by_name_and_nothing_else(tmp_path):
    s = load_site(str(_site(tmp_path)))
    ctx = probe_context(s, s.hosts[0], False, 5.0)
    helper = tmp_path / "storadvise-probe"
    probes = root_probes(s, s.hosts[0])
    helper.write_text(helper_text(ctx, probes))
    helper.chmod(0o755)
    names = {p.name for p in probes}
    assert names == {p.name for p in all_probes().values() if p.needs_root and p.applies_to(["storage"])}
    assert "firewall" in names
    listed = subprocess.run([str(helper), "--list"], capture_output=True, text=True, timeout=30)
    assert set(listed.stdout.split()) == names
    for bad in ("", "firewall;id", "../firewall", "host"):  # 'host' is a probe, but not a root one
        r = subprocess.run([str(helper), bad], capture_output=True, text=True, timeout=30)
        assert r.returncode == 64 and "unknown probe" in r.stderr and not r.stdout, (bad, r)
    # each case is the probe's own script, as one quoted word (a script with quotes and $ survives)
    fw = all_probes()["firewall"].script(ctx)
    assert "'" in fw or "$" in fw
    shown = tmp_path / "shown"
    shown.write_text(helper_text(ctx, probes).replace("exec sh -c ", "exec printf '%s\\n' "))
    traced = subprocess.run(["sh", str(shown), "firewall"], capture_output=True, text=True, timeout=30)
    assert traced.stdout == fw.rstrip() + "\nstoradvise-probe\n", traced.stderr


#: where the tests below install a helper: a directory of the test's own, bound over this path in a
#: private mount namespace (unshare), so that the helper's directories above it are the system's own
HELPER_DIR = "/usr/local/sbin"


def in_helper_dir(own_dir: Path, script: str) -> subprocess.CompletedProcess:
    """``script`` run by sh in a private mount namespace where ``own_dir`` is bound over HELPER_DIR."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           'mount --bind "$1" "$2" && exec sh -c "$3"', "sh", str(own_dir), HELPER_DIR, script],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.root
def test_the_scan_command_refuses_a_helper_generated_for_other_variables(tmp_path):
    s = load_site(str(_site(tmp_path, {"probe_helper": True})))
    ctx = probe_context(s, s.hosts[0], False, 5.0)
    other = probe_context(s, s.hosts[0], False, 5.0)
    other.vars["firewall_nftables_conf"] = "/etc/nftables/main.nft"  # another path the firewall probe reads
    own = tmp_path / "libexec"
    own.mkdir(mode=0o755)
    helper = own / "storadvise-probe"
    probe = all_probes()["firewall"]
    ctx.vars["probe_helper"] = other.vars["probe_helper"] = f"{HELPER_DIR}/storadvise-probe"
    probes = root_probes(s, s.hosts[0])
    cmd = HostCommands(ctx, probes).command(probe)
    assert cmd.sudo is False and f"sudo -n -- \"$h\" firewall" in cmd.script
    assert not sudo_flag(cmd, True)  # a host with 'sudo: true' still calls the helper itself
    assert HostCommands(ctx, probes).command(all_probes()["host"]).script == all_probes()["host"].script(ctx)

    r = in_helper_dir(own, cmd.script)
    assert r.returncode == 126 and "is not installed" in r.stderr, r
    helper.write_text(helper_text(other, probes))
    helper.chmod(0o755)
    r = in_helper_dir(own, cmd.script)
    assert r.returncode == 126 and "is not the helper this storadvise generates" in r.stderr, r
    helper.write_text(helper_text(ctx, probes[1:]))  # generated for fewer probes (other roles): refused
    assert in_helper_dir(own, cmd.script).returncode == 126
    helper.write_text(helper_text(ctx, probes))
    r = in_helper_dir(own, cmd.script)  # as root here: the helper itself, no sudo
    assert r.returncode == 0 and "@@section" in r.stdout, r.stderr


@pytest.mark.parametrize("value", ["relative/storadvise-probe", "/usr/local/sbin/x y", "/opt/$(id)", 7])
def test_a_bad_helper_path_is_refused_when_the_site_is_read(tmp_path, value):
    with pytest.raises(SiteFileError, match="host st01: vars: probe_helper"):
        load_site(str(_site(tmp_path, {"probe_helper": value})))
    r = _cli("scan", "--site", _site(tmp_path, {"probe_helper": value}), "--dry-run")
    assert r.returncode == 1 and "probe_helper" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_sudoers_names_the_helper_once_per_root_probe(tmp_path):
    site = _site(tmp_path, {"probe_helper": True})
    r = _cli("sudoers", "--site", site)
    assert r.returncode == 0, r.stderr
    lines = [ln.strip().rstrip(", \\") for ln in r.stdout.splitlines() if ln.strip().startswith(DEFAULT_HELPER_PATH)]
    s = load_site(str(site))
    assert lines == [f"{DEFAULT_HELPER_PATH} {p.name}" for p in root_probes(s, s.hosts[0])]
    assert r.stdout.rstrip().endswith("scanner ALL=(root) NOPASSWD: STORADVISE_PROBES")
    assert "ALL" not in r.stdout.replace("scanner ALL=(root)", "")
    dry = _cli("scan", "--site", site, "--dry-run")
    assert f"sudo -n {DEFAULT_HELPER_PATH} firewall" in dry.stdout, dry.stdout[-2000:]
    for user, why in (("root", "needs no sudo"), ("a b", "not a user name")):
        bad = _cli("sudoers", "--site", site, "--user", user)
        assert bad.returncode == 1 and why in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    with pytest.raises(ValueError):
        sudoers_text("x,ALL", DEFAULT_HELPER_PATH, [all_probes()["firewall"]])
