"""Command outputs a user can paste, as their probes' own output (``storadvise probe parse``).

A probe's script frames several reads in ``@@section`` blocks; a site administrator has the plain
output of one command at hand (a ticket, a colleague's terminal). For the probes whose parser can work
from one such output, :data:`PASTED` turns it into the probe's own framing, which the probe's ordinary
``parse`` then reads: nothing is guessed that the output does not say (a pasted ``sysctl -a`` has no
persisted values; a pasted ``ip addr`` no link speed). A converter returns None for a text that is not
its command's output, so ``probe parse`` can say what it accepts.

=================  ============================================================================
network.sysctl     ``sysctl -a`` (or any ``key = value`` lines of it)
network.nic        ``ip addr``, ``ip link``, ``ip -s link`` (text) or ``ip -j addr`` (JSON)
firewall           ``iptables-save``, ``ip6tables-save`` or ``nft -j list ruleset``
block.ioerrors     ``dmesg`` or ``journalctl -k``
disk.smart         ``smartctl --json -a /dev/DISK`` (one disk)
=================  ============================================================================

(gpfs.mmlsconfig, gpfs.mmdiag, mounts, services.xrootd, xcache.config, ceph.*, eos.*, dcache.status,
san.logical_drives and lustre.params read their command's plain output already.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from probes.probe import SECTION_MARKER
from probes.sysctl_conf import SYSCTL_KEY_RE

#: ``ip``'s link types as sysfs ``type`` numbers (ARPHRD_*)
_LINK_TYPES = {"ether": 1, "loopback": 772, "none": 65534, "infiniband": 32, "ipip": 768, "gre": 778, "sit": 776}
_SYSCTL_LINE = re.compile(r"^(\S+) = ?(.*)$")
_IP_HEAD = re.compile(r"^\d+:\s+([^\s:@]+)(?:@[^\s:]+)?:\s+<[^>]*>(.*)$")
_IP_ATTR = re.compile(r"\b(mtu|qlen|state)\s+(\S+)")
_IP_LINK = re.compile(r"^\s+link/(\S+)(?:\s+([0-9a-f:]+))?")
_IP_ADDR = re.compile(r"^\s+(inet6?)\s+(\S+/\d+)")
_IO_ERROR = re.compile(r"I/O error|error, dev |failed command: ")
_DMESG_LINE = re.compile(r"^\[\s*\d+\.\d+\]")
_JOURNAL_LINE = re.compile(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) \S+ kernel: ")


def _section(name: str, body: str) -> str:
    return f"{SECTION_MARKER}{name}\n{body.rstrip(chr(10))}\n"


def from_sysctl_a(text: str) -> str | None:
    """``key = value`` lines (sysctl's own messages, ``sysctl: ...``, are left out)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("sysctl: ")]
    pairs = [_SYSCTL_LINE.match(ln) for ln in lines]
    if not lines or not all(m and SYSCTL_KEY_RE.match(m.group(1)) for m in pairs):
        return None
    # sysctl -a separates the fields of a multi-field value with tabs: the probe's value is blank-separated
    runtime = "\n".join(f"{m.group(1)}\t{' '.join(m.group(2).split())}" for m in pairs if m)
    return _section("runtime", runtime)


def _sysfs(interfaces: list[dict]) -> str:
    rows = []
    for i in interfaces:
        for field in ("speed", "mtu", "tx_queue_len", "operstate", "address", "type", "driver"):
            rows.append(f"{i['name']}\t{field}\t{i.get(field, '')}")
    return "\n".join(rows)


def from_ip_text(text: str) -> str | None:
    """``ip addr`` / ``ip link`` / ``ip -s link``: one interface per ``N: name: <FLAGS> ...`` line."""
    interfaces: list[dict] = []
    addresses: list[str] = []
    for line in text.splitlines():
        head = _IP_HEAD.match(line)
        if head:
            attrs = dict(_IP_ATTR.findall(head.group(2)))
            interfaces.append({"name": head.group(1), "mtu": attrs.get("mtu", ""), "tx_queue_len": attrs.get("qlen", ""),
                               "operstate": attrs.get("state", "").lower(), "address": "", "type": ""})
            continue
        if not interfaces:
            if line.strip():
                return None
            continue
        link = _IP_LINK.match(line)
        if link:
            interfaces[-1]["type"] = _LINK_TYPES.get(link.group(1), "")
            interfaces[-1]["address"] = link.group(2) or ""
        addr = _IP_ADDR.match(line)
        if addr:
            n = len(interfaces)
            addresses.append(f"{n}: {interfaces[-1]['name']}    {addr.group(1)} {addr.group(2)} scope global")
    if not interfaces:
        return None
    return _section("sysfs", _sysfs(interfaces)) + _section("ip-o-addr", "\n".join(addresses))


def from_ip_json(text: str) -> str | None:
    """``ip -j addr`` (``ip -j link`` too: no addresses)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, list) or not all(isinstance(i, dict) and isinstance(i.get("ifname"), str) for i in data):
        return None
    interfaces = [{"name": i["ifname"], "mtu": i.get("mtu", ""), "tx_queue_len": i.get("txqlen", ""),
                   "operstate": str(i.get("operstate", "")).lower(), "address": i.get("address", ""),
                   "type": _LINK_TYPES.get(str(i.get("link_type", "")), "")} for i in data]
    return _section("sysfs", _sysfs(interfaces)) + _section("ip-j-addr", text)


def from_nic_output(text: str) -> str | None:
    return from_ip_json(text) if text.lstrip().startswith("[") else from_ip_text(text)


def from_firewall_output(text: str) -> str | None:
    """``nft -j list ruleset`` (JSON), or ``iptables-save`` / ``ip6tables-save`` (``*table`` ... ``COMMIT``)."""
    body = text.strip()
    if body.startswith("{"):
        return _section("nft", body + "\n@@exit 0")
    if re.search(r"^\*\w+\s*$", body, re.M) and re.search(r"^COMMIT\s*$", body, re.M):
        tool = "ip6tables-save" if "ip6tables-save" in body.split("\n", 1)[0] or re.search(r"\s-[sd] [0-9a-f]*:[0-9a-f:]*/", body) \
            else "iptables-save"
        return _section(tool, body + "\n@@exit 0")
    return None


def from_kernel_log(text: str) -> str | None:
    """``dmesg`` (``[ seconds] message``) or ``journalctl -k`` (``Mon DD HH:MM:SS host kernel: ...``)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    if all(_DMESG_LINE.match(ln) for ln in lines[:20]):
        source = "dmesg"
    elif all(_JOURNAL_LINE.match(ln) or ln.startswith("-- ") for ln in lines[:20]):
        source = "journalctl"
    else:
        return None
    errors = [ln for ln in lines if _IO_ERROR.search(ln)]
    return (_section("source", source) + _section("errors", "\n".join(errors))
            + _section("log-lines", str(len(lines))) + _section("end", ""))


def from_smartctl_json(text: str) -> str | None:
    """One disk's ``smartctl --json -a /dev/DISK``: the disk is the one it names."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    name = ((data.get("device") or {}).get("name") if isinstance(data, dict) else None) or ""
    if not isinstance(name, str) or not name.startswith("/dev/"):
        return None
    return _section(f"device {name[len('/dev/'):].replace('/', '!')}", text) + _section("end", "")


#: probe name -> (the commands whose pasted output it takes, the converter)
PASTED: dict[str, tuple[str, Callable[[str], str | None]]] = {
    "network.sysctl": ("sysctl -a", from_sysctl_a),
    "network.nic": ("ip addr, ip link, ip -s link or ip -j addr", from_nic_output),
    "firewall": ("iptables-save, ip6tables-save or nft -j list ruleset", from_firewall_output),
    "block.ioerrors": ("dmesg or journalctl -k", from_kernel_log),
    "disk.smart": ("smartctl --json -a /dev/DISK", from_smartctl_json),
}
