#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise nic_tuning: NIC ring sizes, offloads and MTU now (ethtool, ip) and at boot (NetworkManager or udev).

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_nic
short_description: Set NIC ring sizes, offloads and MTU now and where the host persists its NIC settings
description:
  - Sets each interface's RX/TX ring sizes (C(ethtool -G)), offloads gro, tso, gso, lro (C(ethtool -K)) and MTU
    (C(ip link set mtu)) and reads each back; a value the NIC did not take is recorded as failed and the others go on.
  - Persists them as the host keeps its NIC settings. C(persist=auto) uses NetworkManager when it runs and manages
    the interface (C(nmcli connection modify CONN ethtool.ring-rx N ethtool.feature-gro on 802-3-ethernet.mtu N): NM
    applies them whenever it activates the connection and would undo anything else), else one udev rules file whose
    rules run the same commands when the interface appears at boot (C(NAME==) the interface name, after the naming
    rules). A systemd-networkd .link file is never written: the first .link file that matches an interface is the only
    one applied, so a new one would replace the site's (and its naming policy).
  - Records the replaced values, the rules file and the NetworkManager settings in a JSON backup first; C(state=rollback)
    restores them.
options:
  interfaces:
    description: Interface name to {ring_rx, ring_tx, gro, tso, gso, lro, mtu}.
    type: dict
    default: {}
  persist:
    description: Where to persist the values; C(auto) chooses as above.
    type: str
    choices: [auto, networkmanager, udev]
    default: auto
  udev_rules_file:
    description: The udev rules file that applies them at boot.
    type: path
    default: /etc/udev/rules.d/81-storadvise-nic.rules
  sysfs_net:
    description: Where the interfaces are in sysfs.
    type: path
    default: /sys/class/net
  backup_file:
    description: JSON file recording the replaced values.
    type: path
    required: true
  state:
    description: C(present) applies, C(rollback) restores the backup.
    type: str
    choices: [present, rollback]
    default: present
author: storadvise
"""

EXAMPLES = r"""
- name: RX ring at the NIC's maximum and GRO on for eth0
  storadvise_nic:
    interfaces: {eth0: {ring_rx: 4096, gro: "on"}}
    backup_file: /var/lib/storadvise/backup/nic_tuning.json
"""

RETURN = r"""
changed_interfaces:
  description: Interface -> setting -> {old, new}.
  type: dict
  returned: always
persisted_with:
  description: networkmanager or udev, per interface.
  type: dict
  returned: always
"""

import os
import re
import shutil

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_ethtool import offload_states, ring_values
    from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                       record_failure, restore_text, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_ethtool import offload_states, ring_values
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
        run_backed_module, save_backup)

RINGS = ("ring_rx", "ring_tx")
OFFLOADS = ("gro", "tso", "gso", "lro")
SETTINGS = RINGS + OFFLOADS + ("mtu",)
_IFACE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,14}\Z")
#: NetworkManager's property of each setting
NM_PROPERTY = {"ring_rx": "ethtool.ring-rx", "ring_tx": "ethtool.ring-tx", "gro": "ethtool.feature-gro",
               "tso": "ethtool.feature-tso", "gso": "ethtool.feature-gso", "lro": "ethtool.feature-lro",
               "mtu": "802-3-ethernet.mtu"}


def _tool(module, name, *extra):
    path = shutil.which(name) or next((p for p in extra if os.access(p, os.X_OK)), None)
    if path is None:
        module.fail_json(msg="%s not found on this host (needed to set NIC settings)" % name)
    return path


def _run(module, argv):
    rc, out, err = module.run_command(argv)
    return rc, out, (err or out or "").strip().splitlines()[-1:] or [""]


def current(module, p, iface):
    """{setting: value} of the interface now: rings and offloads from ethtool, mtu from sysfs."""
    ethtool = _tool(module, "ethtool", "/usr/sbin/ethtool", "/sbin/ethtool")
    out = {}
    rc, text, _ = _run(module, [ethtool, "-g", iface])
    rings = ring_values(text) if rc == 0 and "Ring parameters for" in text else {}
    out["ring_rx"], out["ring_tx"] = rings.get("rx"), rings.get("tx")
    out["ring_rx_max"], out["ring_tx_max"] = rings.get("rx_max"), rings.get("tx_max")
    rc, text, _ = _run(module, [ethtool, "-k", iface])
    states = offload_states(text) if rc == 0 else {}
    for k in OFFLOADS:
        if k in states:
            out[k] = "on" if states[k][0] else "off"
            out[k + "_fixed"] = states[k][1]
    mtu = read_text(os.path.join(p["sysfs_net"], iface, "mtu"))
    out["mtu"] = int(mtu) if mtu and mtu.strip().isdigit() else None
    return out


def _command(module, iface, key, value):
    ethtool = _tool(module, "ethtool", "/usr/sbin/ethtool", "/sbin/ethtool")
    if key in RINGS:
        return [ethtool, "-G", iface, key[5:], str(value)]
    if key in OFFLOADS:
        return [ethtool, "-K", iface, key, str(value)]
    return [_tool(module, "ip", "/usr/sbin/ip", "/sbin/ip"), "link", "set", "dev", iface, "mtu", str(value)]


def set_value(module, p, iface, key, value):
    """Set and read back; why it did not take, or None."""
    rc, _, last = _run(module, _command(module, iface, key, value))
    if rc != 0:
        return "%s failed: %s" % (" ".join(_command(module, iface, key, value)[1:]), last[0])
    now = current(module, p, iface).get(key)
    if str(now) != str(value):
        return "did not take: the NIC reports %s" % now
    return None


def _check_wanted(result, iface, want, now):
    """The settings of ``want`` that can be asked of this NIC, as text; the rest recorded as failed."""
    ok = {}
    for key in sorted(set(want) - set(SETTINGS)):
        record_failure(result, "%s %s" % (iface, key), "not a setting nic_tuning makes (%s)" % ", ".join(SETTINGS))
    for key in SETTINGS:
        v = want.get(key)
        if v is None:
            continue
        v = str(v).strip().lower()
        if key in RINGS:
            most = now.get(key + "_max")
            if not v.isdigit() or int(v) < 1:
                record_failure(result, "%s %s" % (iface, key), "not a positive number of descriptors: %r" % v)
                continue
            if now.get(key) is None:
                record_failure(result, "%s %s" % (iface, key), "the NIC reports no %s ring (ethtool -g)" % key[5:])
                continue
            if most is not None and int(v) > most:
                record_failure(result, "%s %s" % (iface, key), "%s is above the NIC's maximum %s" % (v, most))
                continue
        elif key in OFFLOADS:
            # YAML 1.1 reads an unquoted on/off as a boolean: both spellings mean the same
            v = {"true": "on", "yes": "on", "1": "on", "false": "off", "no": "off", "0": "off"}.get(v, v)
            if v not in ("on", "off"):
                record_failure(result, "%s %s" % (iface, key), "on or off, not %r" % v)
                continue
            if key not in now:
                record_failure(result, "%s %s" % (iface, key), "the NIC reports no %s feature (ethtool -k)" % key)
                continue
            if now.get(key + "_fixed") and now[key] != v:
                record_failure(result, "%s %s" % (iface, key), "the driver fixes %s %s ([fixed])" % (key, now[key]))
                continue
        elif not v.isdigit() or not 68 <= int(v) <= 65535:
            record_failure(result, "%s mtu" % iface, "not an MTU (68-65535): %r" % v)
            continue
        ok[key] = v
    return ok


# -- persistence ---------------------------------------------------------------------------------

def nm_connection(module, iface):
    """The NetworkManager connection active on ``iface`` when NM runs and manages it, else None."""
    nmcli = shutil.which("nmcli")
    if not nmcli:
        return None
    rc, out, _ = _run(module, [nmcli, "-t", "-f", "RUNNING", "general"])
    if rc != 0 or out.strip() != "running":
        return None
    rc, out, _ = _run(module, [nmcli, "-g", "GENERAL.CONNECTION", "device", "show", iface])
    conn = out.strip()
    return conn if rc == 0 and conn and conn != "--" else None


def nm_values(module, conn):
    rc, out, _ = _run(module, [shutil.which("nmcli"), "-g", ",".join(NM_PROPERTY.values()), "connection", "show", conn])
    values = (out.rstrip("\n").split("\n") if rc == 0 else [])
    return {k: (values[i].strip() if i < len(values) else "") for i, k in enumerate(NM_PROPERTY)}


def nm_set(module, conn, values):
    argv = [shutil.which("nmcli"), "connection", "modify", conn]
    for k, v in values.items():
        argv += [NM_PROPERTY[k], str(v)]
    rc, _, last = _run(module, argv)
    return None if rc == 0 else "nmcli connection modify %s failed: %s" % (conn, last[0])


def udev_text(values, ethtool, ip):
    lines = ["# Managed by storadvise (nic_tuning): NIC ring sizes, offloads and MTU when the interface appears.",
             "# NAME== matches once the naming rules (80-net-setup-link.rules) have run: this file sorts after them.",
             "# Rollback: ansible-playbook rollback.yml in the plan directory."]
    for iface in sorted(values):
        v = values[iface]
        runs = []
        rings = " ".join("%s %s" % (k[5:], v[k]) for k in RINGS if k in v)
        if rings:
            runs.append('RUN+="%s -G $name %s"' % (ethtool, rings))
        offl = " ".join("%s %s" % (k, v[k]) for k in OFFLOADS if k in v)
        if offl:
            runs.append('RUN+="%s -K $name %s"' % (ethtool, offl))
        if "mtu" in v:
            runs.append('RUN+="%s link set dev $name mtu %s"' % (ip, v["mtu"]))
        if runs:
            lines.append('ACTION=="add", SUBSYSTEM=="net", NAME=="%s", %s' % (iface, ", ".join(runs)))
    return "\n".join(lines) + "\n"


def parse_udev(text):
    """{iface: {setting: value}} of a rules file this module wrote."""
    out = {}
    for line in (text or "").splitlines():
        m = re.search(r'NAME=="([^"]+)"', line)
        if not m or line.lstrip().startswith("#"):
            continue
        v = out.setdefault(m.group(1), {})
        for args in re.findall(r'RUN\+="\S+ -G \$name ([^"]*)"', line):
            pairs = args.split()
            v.update({"ring_" + pairs[i]: pairs[i + 1] for i in range(0, len(pairs) - 1, 2)})
        for args in re.findall(r'RUN\+="\S+ -K \$name ([^"]*)"', line):
            pairs = args.split()
            v.update({pairs[i]: pairs[i + 1] for i in range(0, len(pairs) - 1, 2)})
        m = re.search(r'link set dev \$name mtu (\d+)', line)
        if m:
            v["mtu"] = m.group(1)
    return out


def apply(module, p):
    result = {"changed": False, "changed_interfaces": {}, "persisted_with": {}, "changed_settings": [],
              "failed_settings": []}
    if not p["interfaces"]:
        return result
    changes, planned, nm, methods = {}, {}, {}, {}
    for iface, want in sorted((p["interfaces"] or {}).items()):
        if not _IFACE.match(str(iface)) or not os.path.isdir(os.path.join(p["sysfs_net"], iface)):
            record_failure(result, str(iface), "no such interface (%s)" % os.path.join(p["sysfs_net"], str(iface)))
            continue
        now = current(module, p, iface)
        ok = _check_wanted(result, iface, want or {}, now)
        if not ok:
            continue
        conn = nm_connection(module, iface) if p["persist"] in ("auto", "networkmanager") else None
        if p["persist"] == "networkmanager" and conn is None:
            for k in ok:
                record_failure(result, "%s %s" % (iface, k), "NetworkManager does not manage %s" % iface)
            continue
        methods[iface] = "networkmanager" if conn else "udev"
        if conn:
            nm[iface] = conn
        planned[iface] = ok
        for k, v in ok.items():
            if str(now.get(k)) != v:
                changes.setdefault(iface, {})[k] = {"old": now.get(k), "new": v}
    result["persisted_with"] = methods
    ethtool, ip = _tool(module, "ethtool", "/usr/sbin/ethtool", "/sbin/ethtool"), _tool(module, "ip", "/usr/sbin/ip", "/sbin/ip")
    by_udev = {i: v for i, v in planned.items() if methods.get(i) == "udev"}
    before = read_text(p["udev_rules_file"])
    after = udev_text(merged(before, by_udev), ethtool, ip) if by_udev or before is not None else None
    nm_before = {i: nm_values(module, c) for i, c in nm.items()}
    nm_todo = {i: {k: v for k, v in planned[i].items() if nm_before[i].get(k) != _nm_form(k, v)} for i in nm}
    nm_todo = {i: kv for i, kv in nm_todo.items() if kv}
    result["changed_interfaces"] = changes
    result["changed"] = bool(changes) or before != after or bool(nm_todo)
    if module._diff and result["changed"]:
        result["diff"] = [{"before_header": "NIC settings", "after_header": "NIC settings",
                           "before": "".join("%s %s = %s\n" % (i, k, c["old"]) for i, kc in sorted(changes.items()) for k, c in sorted(kc.items())),
                           "after": "".join("%s %s = %s\n" % (i, k, c["new"]) for i, kc in sorted(changes.items()) for k, c in sorted(kc.items()))},
                          {"before_header": p["udev_rules_file"], "after_header": p["udev_rules_file"],
                           "before": before or "", "after": after or ""}]
    if not result["changed"]:
        return result
    if module.check_mode:
        for i, kc in sorted(changes.items()):
            for k, c in sorted(kc.items()):
                record_change(result, "%s %s" % (i, k), c["old"], c["new"])
        return result
    backup = load_backup(p["backup_file"]) or {"role": "nic_tuning", "interfaces": {}, "files": {}, "networkmanager": {}}
    for i, kc in changes.items():
        for k, c in kc.items():
            backup["interfaces"].setdefault(i, {}).setdefault(k, c["old"])
    backup["files"].setdefault(p["udev_rules_file"], before)
    for i, conn in nm.items():
        entry = backup["networkmanager"].setdefault(i, {"connection": conn, "values": {}})
        for k in planned[i]:
            entry["values"].setdefault(k, nm_before[i].get(k, ""))
    save_backup(p["backup_file"], backup)
    order = RINGS + OFFLOADS + ("mtu",)
    for i, kc in sorted(changes.items()):
        for k in [k for k in order if k in kc]:
            why = set_value(module, p, i, k, kc[k]["new"])
            if why:
                record_failure(result, "%s %s" % (i, k), why)
                planned[i].pop(k, None)  # not persisted either
                if i in nm_todo:
                    nm_todo[i].pop(k, None)
            else:
                record_change(result, "%s %s" % (i, k), kc[k]["old"], kc[k]["new"])
    for i, kv in sorted(nm_todo.items()):
        if kv:
            why = nm_set(module, nm[i], {k: _nm_form(k, v) for k, v in kv.items()})
            if why:
                record_failure(result, "%s persisted" % i, why)
    by_udev = {i: v for i, v in planned.items() if methods.get(i) == "udev"}
    after = udev_text(merged(before, by_udev), ethtool, ip) if by_udev or before is not None else None
    if after is not None and before != after:
        d = os.path.dirname(p["udev_rules_file"])
        if not os.path.isdir(d):
            module.fail_json(msg="%s: directory does not exist" % d, **result)
        atomic_write(p["udev_rules_file"], after, mode=0o644)
    result["changed"] = bool(result["changed_settings"]) or before != after or bool(nm_todo)
    return result


def _nm_form(key, value):
    """A value as ``nmcli -g`` prints the property (features on/off as ``true``/``false``)."""
    if key in OFFLOADS:
        return "true" if str(value) == "on" else "false"
    return str(value)


def merged(before, planned):
    values = parse_udev(before)
    for iface, want in planned.items():
        if want:
            values.setdefault(iface, {}).update(want)
    return values


def rollback(module, p):
    result = {"changed": False, "changed_interfaces": {}, "rolled_back": False, "changed_settings": [],
              "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    result["changed"] = result["rolled_back"] = True
    for iface, kv in sorted((backup.get("interfaces") or {}).items()):
        now = current(module, p, iface)
        for k in [k for k in RINGS + OFFLOADS + ("mtu",) if kv.get(k) is not None]:
            if str(now.get(k)) == str(kv[k]):
                continue
            result["changed_interfaces"].setdefault(iface, {})[k] = {"old": now.get(k), "new": kv[k]}
            if module.check_mode:
                continue
            why = set_value(module, p, iface, k, kv[k])
            if why:
                record_failure(result, "%s %s" % (iface, k), why)
            else:
                record_change(result, "%s %s" % (iface, k), now.get(k), kv[k])
    if module.check_mode:
        return result
    for iface, entry in sorted((backup.get("networkmanager") or {}).items()):
        why = nm_set(module, entry["connection"], entry.get("values") or {})
        if why:
            record_failure(result, "%s persisted" % iface, why)
    for path, text in (backup.get("files") or {}).items():
        restore_text(path, text)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            interfaces=dict(type="dict", default={}),
            persist=dict(type="str", choices=["auto", "networkmanager", "udev"], default="auto"),
            udev_rules_file=dict(type="path", default="/etc/udev/rules.d/81-storadvise-nic.rules"),
            sysfs_net=dict(type="path", default="/sys/class/net"),
        ),
        apply, rollback,
    )


if __name__ == "__main__":
    main()
