"""Least privilege: a scan that logs in as a plain user, allowed by the generated sudoers snippet and no other
sudo rule, runs every root probe through the installed probe helper. Real sshd, real sudo, in a host namespace of
this test's own: the user, its /etc/passwd line and the sudoers.d directory exist only in that host's mount
namespace (bind mounts); the machine's /etc is never changed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support.ns_host import STORADVISE, requirements_missing

pytestmark = pytest.mark.skipif(requirements_missing() is not None or STORADVISE is None or not shutil.which("sudo"),
                                reason=str(requirements_missing() or "storadvise or sudo not installed"))

USER, UID = "saprobe", 47113
#: where the helper is installed on the host: a system directory (advisor.site.probe_helper_path.SYSTEM_DIRS)
HELPER_DIR = "/usr/local/sbin"
HELPER = f"{HELPER_DIR}/storadvise-probe"
#: a helper reads as root only the firewall files its probe documents: the machine's own (read only)
DOCUMENTED_FIREWALL_FILES = {"firewall_nftables_conf": "/etc/nftables.conf",
                             "firewall_iptables_files": {"ip": ["/etc/iptables/rules.v4"], "ip6": ["/etc/iptables/rules.v6"]}}


def _private_user(d: Path) -> list[str]:
    """The scan's user in copies of /etc/passwd, /etc/group and /etc/shadow, an empty sudoers.d and sudo's
    own state directories, all bound over the real ones in the host's mount namespace only."""
    etc = d / "etc-user"
    etc.mkdir()
    home = d / "home"
    home.mkdir()
    os.chown(home, UID, UID)
    (etc / "passwd").write_text(Path("/etc/passwd").read_text() + f"{USER}:x:{UID}:{UID}::{home}:/bin/sh\n")
    (etc / "group").write_text(Path("/etc/group").read_text() + f"{USER}:x:{UID}:\n")
    shutil.copy2("/etc/shadow", etc / "shadow")
    with open(etc / "shadow", "a") as fh:
        fh.write(f"{USER}:*:19000:0:99999:7:::\n")
    for sub in ("sudoers.d", "sudo-lib", "sbin"):
        (d / sub).mkdir(mode=0o755)
    (d / "sudoers.d").chmod(0o755)
    # the helper's directory: the host's own, at the system path the sudoers rule names (root-owned, 0755)
    binds = [(etc / "passwd", "/etc/passwd"), (etc / "group", "/etc/group"), (etc / "shadow", "/etc/shadow"),
             (d / "sudoers.d", "/etc/sudoers.d"), (d / "sudo-lib", "/var/lib/sudo"), (d / "sbin", HELPER_DIR)]
    # sudo keeps its time stamps in /run/sudo: a private /run (sshd needs only /run/sshd there)
    return [f"mount -n --bind {src} {dst}" for src, dst in binds if Path(dst).exists()] + [
        "mount -n -t tmpfs -o mode=0755 tmpfs /run", "mkdir -p /run/sshd /run/sudo"]


def _probe_states(host, site: Path) -> dict:
    cp = host.controller([STORADVISE, "scan", "--site", str(site), "--json", "--no-history", "--no-mesh",
                          "--no-efficiency"], check=False)
    assert cp.returncode in (0, 2, 3), cp.stderr[-2000:]
    h = json.loads(cp.stdout)["hosts"][0]
    return {p: (s, h["probe_messages"].get(p, "")) for p, s in h["probes"].items()}


def test_a_plain_user_scans_with_the_generated_sudoers_and_helper_only(ns_hosts):
    host, cleanup = ns_hosts("lp01", {}, prepare=_private_user)
    try:
        helper = host.dir / "sbin" / "storadvise-probe"  # the host sees it at HELPER
        site = host.site_file(host.dir / "site.yml", ["storage"],
                              host_vars={"probe_helper": HELPER, **DOCUMENTED_FIREWALL_FILES})
        doc = site.read_text().replace("user: root", f"user: {USER}")
        site.write_text(doc)
        gen = host.controller([STORADVISE, "probe", "helper", "--site", str(site), "--host", "lp01", "-o", str(helper)])
        assert helper.stat().st_mode & 0o777 == 0o755, gen.stderr
        snippet = host.dir / "sudoers.d" / "storadvise"
        host.controller([STORADVISE, "sudoers", "--site", str(site), "-o", str(snippet)])
        assert snippet.stat().st_mode & 0o777 == 0o440
        assert host.controller(["visudo", "-cf", str(snippet)], check=False).returncode == 0
        # the snippet is the only rule for the user: sudo -l on the host lists exactly the helper's probes
        listed = host.on_host(f"su -s /bin/sh {USER} -c 'sudo -n -l'", check=False)
        assert HELPER in listed.stdout and "ALL" not in listed.stdout.split("may run the following", 1)[-1] \
            .replace("(root)", "").replace("NOPASSWD", ""), listed.stdout + listed.stderr

        states = _probe_states(host, site)
        root_probes = {"firewall", "block.ioerrors"}
        assert root_probes <= set(states), states
        for p in root_probes:
            assert states[p][0] == "ok", (p, states[p])
        # the firewall was read as root: iptables-save in the host's namespace needs it
        assert not [p for p, (s, _) in states.items() if s == "error"], states

        # without the helper the same user may run no root probe: sudo refuses the script
        site.write_text(doc.replace(f"probe_helper: {HELPER}", "probe_helper: false"))
        plain = _probe_states(host, site)
        assert plain["firewall"][0] == "error" and "sudo" in plain["firewall"][1], plain["firewall"]

        # a helper in a directory others may write is refused before sudo runs, naming the fix
        site.write_text(doc)
        (host.dir / "sbin").chmod(0o777)
        loose = _probe_states(host, site)
        (host.dir / "sbin").chmod(0o755)
        assert loose["firewall"][0] == "error" and "cannot be trusted" in loose["firewall"][1] \
            and f"chmod go-w {HELPER_DIR}" in loose["firewall"][1], loose["firewall"]

        # a helper that is not the one this storadvise generates (edited here) is refused before sudo runs
        helper.write_text(helper.read_text().replace("umask 077", "umask 022"))
        edited = _probe_states(host, site)
        assert edited["firewall"][0] == "error" and "is not the helper this storadvise generates" in \
            edited["firewall"][1], edited["firewall"]
    finally:
        cleanup()
