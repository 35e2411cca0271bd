"""`storadvise lab reboot HOST`: restart a lab host's namespace state from its persisted files.

What a reboot does to the parts of a host the lab emulates, and nothing else (the host's sshd and
iperf3 keep running, its addresses and links stay):

1. **sysctls**: every ``net.*`` parameter of the host's network namespace goes back to the value
   the namespace had when ``lab up`` created it, before any fault (recorded then in
   ``<host dir>/sysctl-defaults.json``: a fresh namespace's values are the kernel's defaults);
   then the host's persisted files are loaded the way ``sysctl --system`` does (order and masking
   from probes/sysctl_conf.py) *as the host sees them*: its private ``/etc/sysctl.d``
   (``<host dir>/sysctl.d``), the machine's vendor directories and ``/etc/sysctl.conf``. Only
   ``net.*`` keys are written (they are per network namespace); a key the namespace cannot change
   is reported, as ``systemd-sysctl`` logs it.
2. **firewall**: the namespace's whole ruleset is flushed (``nft flush ruleset``: nft and
   iptables-nft tables) and the persisted ruleset loaded: ``<host dir>/etc/nftables.conf``
   (``nft -f``), ``<host dir>/etc/iptables/rules.v4`` / ``rules.v6`` (``iptables-restore`` /
   ``ip6tables-restore``) and, as firewalld would at start, the rich rules of
   ``<host dir>/etc/firewalld/zones/*.xml`` into ``table inet firewalld`` (the translation the
   firewall role matches with: playbooks/module_utils/storadvise_firewalld_zones.py). These are the
   files the firewall role edits in the lab (role variables set in the lab's site file).
3. **emulated systems**: each lab emulation the host carries rebuilds itself from its persisted state
   (its ``reboot`` hook, advisor/lab/emulation.py: a node restarting its daemons, a client mounting
   again, a service started from its configuration file, block queues reset and udev rules applied, or
   a declaration that the system's state is all persisted); this module names no system. The report
   lists the sections (``emulations_rebooted``) and what each did (``emulations``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from advisor.util.errors import StoradviseError
from advisor.lab import netns as nx
from advisor.lab.records import LabRecord
from probes.sysctl_conf import SYSCTL_CONF, SYSCTL_DIRS, order_sysctl_files, parse_sysctl_conf

DEFAULTS_FILE = "sysctl-defaults.json"


def record_defaults(ns: str, hdir: Path) -> None:
    """Record the namespace's ``net.*`` values (at ``up``, before faults): the reboot's baseline."""
    cp = nx.in_ns(ns, ["sysctl", "-a", "-r", r"^net\."], check=False)
    values = {}
    for line in cp.stdout.splitlines():
        k, sep, v = line.partition(" = ")
        # an interface's IPv6 MTU follows its link's MTU (a host's ``mtu:``, a role's ip link set): not a setting
        if sep and k.startswith("net.") and not re.fullmatch(r"net\.ipv6\.conf\.[^.]+\.mtu", k.strip()):
            values[k.strip()] = " ".join(v.split())
    (hdir / DEFAULTS_FILE).write_text(json.dumps(values, indent=0, sort_keys=True) + "\n")


def host_sysctl_files(hdir: Path) -> list[tuple[str, Path]]:
    """(path as the host sees it, path to read it from) of every sysctl file the host would load."""
    seen: list[tuple[str, Path]] = []
    for d in SYSCTL_DIRS:
        real = hdir / "sysctl.d" if d == "/etc/sysctl.d" else None if d == "/run/sysctl.d" else Path(d)
        if real is None or not real.is_dir():
            continue  # the host's /run is a private tmpfs without sysctl.d
        for f in sorted(real.iterdir()):
            if f.name.endswith(".conf"):
                seen.append((f"{d}/{f.name}", f))
    if Path(SYSCTL_CONF).is_file():
        seen.append((SYSCTL_CONF, Path(SYSCTL_CONF)))
    return seen


def persisted_net_sysctls(hdir: Path) -> dict[str, str]:
    """The ``net.*`` values the host's files set at boot (later files win)."""
    files = dict(host_sysctl_files(hdir))
    applied, _masked = order_sysctl_files(list(files))
    values: dict[str, str] = {}
    for path in applied:
        src = files[path]
        if os.path.realpath(src) == "/dev/null":
            continue
        try:
            text = src.read_text(errors="replace")
        except OSError:
            continue
        for line in parse_sysctl_conf(path, text):
            if line.key.startswith("net."):
                values[line.key] = line.value
    return values


def _write_sysctls(ns: str, values: dict[str, str]) -> list[str]:
    """Write values in the namespace (``sysctl -w``, one key at a time, as systemd-sysctl goes on
    after a failing key); returns the keys that still differ afterwards."""
    for k, v in values.items():
        nx.in_ns(ns, ["sysctl", "-q", "-w", f"{k}={v}"], check=False)
    return sorted(_changed_only(ns, values))


def _changed_only(ns: str, values: dict[str, str]) -> dict[str, str]:
    cp = nx.in_ns(ns, ["sysctl", "-a", "-r", r"^net\."], check=False)
    now = {}
    for line in cp.stdout.splitlines():
        k, sep, v = line.partition(" = ")
        if sep:
            now[k.strip()] = " ".join(v.split())
    return {k: v for k, v in values.items() if k in now and now[k] != v}


def _firewalld_zones_module():
    """The firewall role's translation of zone rich rules (one translation for the role and the lab),
    loaded as every shipped module_utils is (once, under the loader's lock)."""
    from advisor.util.shipped_code import module_utils

    return module_utils("storadvise_firewalld_zones")


def firewalld_zone_files(zones_dir: Path) -> list[tuple[Path, str, str]]:
    """(path, zone, text) of the host's firewalld zone files, sorted by name."""
    if not zones_dir.is_dir():
        return []
    zone_name = _firewalld_zones_module().zone_name
    out = []
    for f in sorted(zones_dir.iterdir()):
        zone = zone_name(f.name)
        if zone and f.is_file():
            out.append((f, zone, f.read_text(errors="replace")))
    return out


def firewalld_script(zones: list[tuple[Path, str, str]]) -> str:
    """The nft script firewalld's start would load for these zone files (their rich rules)."""
    return _firewalld_zones_module().zone_nft_script([(z, t) for _p, z, t in zones])


def reboot_host(rec: LabRecord, host: str) -> dict:
    if host not in rec.hosts:
        raise StoradviseError(f"lab {rec.name} has no host {host!r} (hosts: {', '.join(rec.hosts)})")
    ns = rec.hosts[host]["ns"]
    hdir = rec.dir / "hosts" / host
    if ns not in nx.list_netns():
        raise StoradviseError(f"host {host} of lab {rec.name}: namespace {ns} is gone; run lab up --recreate")
    report: dict = {"lab": rec.name, "host": host, "sysctls_reset": 0, "sysctls_loaded": {}, "sysctls_refused": [],
                    "firewall_files": [], "emulations_rebooted": [], "emulations": {}}
    # 1. sysctls: defaults, then the persisted files
    try:
        defaults = json.loads((hdir / DEFAULTS_FILE).read_text())
    except (OSError, ValueError):
        raise StoradviseError(f"host {host}: no {DEFAULTS_FILE} (lab made by an older storadvise); run lab up --recreate") from None
    reset = _changed_only(ns, defaults)
    report["sysctls_reset"] = len(reset)
    refused = _write_sysctls(ns, reset)
    persisted = persisted_net_sysctls(hdir)
    to_load = _changed_only(ns, persisted)
    refused += _write_sysctls(ns, to_load)
    report["sysctls_loaded"] = persisted
    report["sysctls_refused"] = sorted(set(refused))
    # 2. firewall
    nx.in_ns(ns, ["nft", "flush", "ruleset"])
    etc = hdir / "etc"
    loads = [(etc / "nftables.conf", ["nft", "-f"]), (etc / "iptables" / "rules.v4", ["iptables-restore"]),
             (etc / "iptables" / "rules.v6", ["ip6tables-restore"])]
    for path, cmd in loads:
        if path.is_file():
            arg = [str(path)] if cmd[0] == "nft" else []
            cp = nx.in_ns(ns, cmd + arg, input=None if arg else path.read_text(), check=False)
            if cp.returncode != 0:
                raise StoradviseError(f"host {host}: loading {path} failed: {(cp.stderr or cp.stdout).strip()[-300:]}")
            report["firewall_files"].append(str(path))
    zones = firewalld_zone_files(etc / "firewalld" / "zones")
    if zones:
        cp = nx.in_ns(ns, ["nft", "-f", "-"], input=firewalld_script(zones), check=False)
        if cp.returncode != 0:
            raise StoradviseError(f"host {host}: loading its firewalld zone files failed: {(cp.stderr or cp.stdout).strip()[-300:]}")
        report["firewall_files"] += [str(p) for p, _z, _t in zones]
    # 3. emulated systems (advisor/lab/emulation.py): each declares its own rebuild
    from advisor.lab.emulation import lab_emulations

    for section, emulation in sorted(lab_emulations().items()):
        try:
            did = emulation.reboot(hdir, host)
            if did:
                report["emulations_rebooted"].append(section)
                report["emulations"][section] = did if isinstance(did, str) else "rebooted"
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            raise StoradviseError(f"host {host}: {section} emulation: {exc}") from None
    return report
