"""The files a running lab hands to the rest of storadvise: a site file and an Ansible inventory.

The site file follows advisor.site.model.Site (validated before it is written) and is registered in
``lab_sites_dir()/NAME.yml`` so ``storadvise scan --site NAME`` finds it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from advisor.lab.records import LabRecord
from advisor.lab.scenario import Scenario
from advisor.lab.hosts import HOST_DIR_IN_HOST
from advisor.site.model import Site
from advisor.site.lookup import lab_sites_dir


def rate_text(bps: int | None) -> str | None:
    if bps is None:
        return None
    for unit, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps % mult == 0:
            return f"{bps // mult}{unit}"
    return f"{bps}bit"


def persisted_ruleset_vars(hdir: Path) -> dict[str, Any]:
    """The firewall role's persisted-ruleset paths, pointed at the host's private copies (the
    files ``lab reboot`` loads), so that the role never reads or edits the machine's real /etc.
    ``hdir``: the host's directory as the host sees it."""
    etc = hdir / "etc"
    return {"firewall_nftables_conf": str(etc / "nftables.conf"),
            "firewall_iptables_files": {"ip": [str(etc / "iptables" / "rules.v4")], "ip6": [str(etc / "iptables" / "rules.v6")]},
            "firewall_firewalld_dir": str(etc / "firewalld")}


#: a lab host's /etc/sysctl.d and /run are private, its /etc/sysctl.conf is the machine's: the
#: network role may edit only the former (a conflicting line in the latter is reported, not edited)
LAB_SYSCTL_EDITABLE = ["/etc/sysctl.d/", "/run/"]


def site_document(rec: LabRecord, sc: Scenario) -> dict[str, Any]:
    d = rec.dir
    key, kh = str(d / "client_key"), str(d / "known_hosts")
    hosts = []
    for h in sc.hosts:
        entry: dict[str, Any] = {
            "name": h.name,
            "address": rec.hosts[h.name]["address"],
            "port": 22,
            "user": "root",
            "key": key,
            "known_hosts": kh,
            "roles": [r.value for r in h.roles],
            "groups": list(h.groups),
            "link_rate": rate_text(h.link_rate),
        }
        for emulation, spec in sc.emulated():
            entry.update(emulation.site_host_settings(spec, sc, h.name))
        # the apply roles keep their backups per host; lab hosts share the real /var/lib
        extra = {k: v for e, spec in sc.emulated() for k, v in e.site_host_vars(rec, spec, sc, h.name).items()}
        # the host's own files by the path every host sees its directory at (advisor/lab/hosts.py): the
        # same variables on every host, so that hosts of one kind share a collection batch
        own = Path(HOST_DIR_IN_HOST)
        entry["vars"] = {"storadvise_backup_dir": str(d / "backup" / h.name), **persisted_ruleset_vars(own),
                         # the namespace's values at creation (lab reboot's baseline): the boot value
                         # of a key no file sets (network.sysctl facts boot_defaults)
                         "sysctl_boot_values_file": str(own / "sysctl-defaults.json"),
                         "network_tuning_editable_prefixes": list(LAB_SYSCTL_EDITABLE),
                         # block_tuning's udev rule in the host's own directory (an emulation may say where)
                         "block_tuning_udev_rules_file": str(own / "etc" / "udev" / "rules.d" / "60-storadvise-block.rules"),
                         **extra, **dict(h.vars)}
        hosts.append(entry)
    doc: dict[str, Any] = {
        "name": rec.name,
        "description": f"storadvise lab {rec.name!r} (scenario {sc.name}): " + (sc.site.description or sc.description or ""),
        "storage_kind": sc.site.storage_kind,
        "profiles": list(sc.site.profiles),
        "hosts": hosts,
        "storage_network": {"prefixes": [rec.subnet]},
    }
    if sc.site.storage_systems:
        doc["storage_systems"] = list(sc.site.storage_systems)
        doc.pop("storage_kind")  # the first of them
    if sc.site.vars:
        doc["vars"] = dict(sc.site.vars)
    if sc.site.waivers:
        doc["waivers"] = [dict(w) for w in sc.site.waivers]
    if sc.site.immutable:
        doc["immutable"] = list(sc.site.immutable)
    if sc.site.mesh is not None:
        doc["mesh"] = sc.site.mesh.model_dump(mode="json", exclude_none=True)
    doc["extensions"] = {
        **dict(sc.site.extensions),
        "lab": {
            "name": rec.name,
            "scenario": sc.name,
            "state_dir": str(d),
            "inventory": str(d / "inventory.ini"),
            "controller_address": rec.controller_address,
            "emulator_log": str(d / "emu" / "invocations.jsonl"),
        }
    }
    Site.model_validate(doc)  # the contract: fail here, not in `scan`
    return doc


def _group(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def inventory_text(rec: LabRecord, sc: Scenario) -> str:
    d = rec.dir
    lines = [
        f"# Ansible inventory of storadvise lab {rec.name} (scenario {sc.name})",
        "[all:vars]",
        "ansible_user=root",
        "ansible_python_interpreter=auto_silent",
        f"ansible_ssh_private_key_file={d / 'client_key'}",
        f"ansible_ssh_common_args='-o UserKnownHostsFile={d / 'known_hosts'} -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes'",
        "",
        "[lab]",
    ]
    for h in sc.hosts:
        lines.append(f"{h.name} ansible_host={rec.hosts[h.name]['address']}")
    groups: dict[str, list[str]] = {}
    for h in sc.hosts:
        for g in [r.value for r in h.roles] + list(h.groups):
            groups.setdefault(_group(g), [])
            if h.name not in groups[_group(g)]:
                groups[_group(g)].append(h.name)
    for g, members in groups.items():
        if g == "lab":
            continue
        lines += ["", f"[{g}]", *members]
    return "\n".join(lines) + "\n"


def write_site_files(rec: LabRecord, sc: Scenario) -> Path:
    doc = site_document(rec, sc)
    text = f"# written by `storadvise lab up` for lab {rec.name}; removed by `storadvise lab down`\n" + yaml.safe_dump(
        doc, sort_keys=False, default_flow_style=False
    )
    site = rec.dir / "site.yml"
    site.write_text(text)
    (rec.dir / "inventory.ini").write_text(inventory_text(rec, sc))
    reg = lab_sites_dir()
    reg.mkdir(parents=True, exist_ok=True)
    tmp = reg / f".{rec.name}.yml.tmp"
    tmp.write_text(text)
    os.replace(tmp, reg / f"{rec.name}.yml")
    return reg / f"{rec.name}.yml"


def unregister_site(name: str) -> None:
    p = lab_sites_dir() / f"{name}.yml"
    try:
        text = p.read_text()
    except FileNotFoundError:
        return
    if "written by `storadvise lab up`" in text.splitlines()[0]:
        p.unlink(missing_ok=True)
