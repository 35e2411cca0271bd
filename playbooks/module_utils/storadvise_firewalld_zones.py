# -*- coding: utf-8 -*-
# storadvise: firewalld zone files' rich rules as the nft rules firewalld makes of them (pure text functions).
# Licensed as storadvise itself.
"""Rich rules of a firewalld zone file (``/etc/firewalld/zones/ZONE.xml``, firewalld.zone(5) and
firewalld.richlanguage(5)) and the nft rule firewalld's nftables backend loads for each.

firewalld (0.6 and later, nftables backend) puts a zone's rich rules in ``table inet firewalld``,
chain ``filter_IN_<zone>_<suffix>``: ``deny`` for drop/reject, ``allow`` for accept, ``pre`` / ``post``
for a negative / positive ``priority``. The rule's expression is, in this order: ``meta nfproto``
of the rule's family, the destination address, the source address, the element (``port``,
``source-port``, ``protocol``), the action's ``limit``, the action.

Only the rich rules whose nft form is certain are translated: family, ``source`` / ``destination``
``address`` (with ``invert``), one ``port`` / ``source-port`` / ``protocol`` element or none, and an
``accept`` / ``drop`` / ``reject`` (without ``type``) action with an optional ``limit``. A rule with
a service, ipset, MAC, ICMP, log, audit, mark, masquerade or forward-port part gets ``None``: it is
never matched, so the firewall role refuses it as before rather than guess.

No I/O and no imports from other module_utils: the lab (``storadvise lab reboot``) loads these
functions from this file too, so the lab's firewalld emulation and the role agree on one translation.
"""

from __future__ import annotations

import ipaddress
import re
import xml.etree.ElementTree as ET

_RICH_RULE = re.compile(r"[ \t]*<rule\b[^>]*?(?:/>|>.*?</rule>)[ \t]*\n?", re.S)
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+-]{1,17}")  # firewalld's zone names: at most 17 characters
_LIMIT_PER = {"s": "second", "m": "minute", "h": "hour", "d": "day"}
_PROTO = re.compile(r"[a-z][a-z0-9-]{0,15}")
_PORT = re.compile(r"(\d{1,5})(?:-(\d{1,5}))?")


def zone_name(filename):
    """The zone a file under zones/ defines (``public.xml`` -> ``public``), or None."""
    if not filename.endswith(".xml"):
        return None
    name = filename[:-4]
    return name if _ZONE_NAME.fullmatch(name) else None


def _address(text, family, invert):
    """(nft family keyword, address text) for a rich rule's address, or None when not an address."""
    try:
        net = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    fam = "ip" if net.version == 4 else "ip6"
    if family and family != {"ip": "ipv4", "ip6": "ipv6"}[fam]:
        return None
    addr = str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net)
    return fam, ("!= " if invert else "") + addr


def _true(value):
    return str(value or "").lower() in ("true", "yes", "1")


def _port(text):
    m = _PORT.fullmatch((text or "").strip())
    if not m or int(m.group(1)) > 65535 or (m.group(2) and int(m.group(2)) > 65535):
        return None
    return m.group(0)


def translate(elem, zone):
    """The nft rule firewalld loads for one ``<rule>`` element: {chain, input, listed}, where
    ``input`` is nft syntax (``nft add rule inet firewalld CHAIN INPUT``) and ``listed`` the text
    ``nft list`` prints for it (nft drops a ``meta nfproto`` implied by an address or a reject and
    spells a family's reject out). None when the rule is not one this module translates."""
    family = elem.get("family")
    if family not in (None, "ipv4", "ipv6"):
        return None
    try:
        priority = int(elem.get("priority", "0"))
    except ValueError:
        return None
    parts, addr_family, element, action, limit = [], None, None, None, None
    for child in elem:
        tag = child.tag
        if tag in ("source", "destination"):
            if set(child.attrib) - {"address", "invert"} or "address" not in child.attrib:
                return None  # ipset, mac
            a = _address(child.get("address"), family, _true(child.get("invert")))
            if a is None:
                return None
            addr_family = a[0]
            field = "saddr" if tag == "source" else "daddr"
            parts.append((0 if tag == "destination" else 1, "%s %s %s" % (a[0], field, a[1])))
        elif tag in ("port", "source-port", "protocol"):
            if element is not None:
                return None
            if tag == "protocol":
                proto = child.get("value", "")
                if not _PROTO.fullmatch(proto):
                    return None
                element = "meta l4proto %s" % proto
            else:
                proto, port = child.get("protocol", ""), _port(child.get("port"))
                if proto not in ("tcp", "udp", "sctp", "dccp") or port is None:
                    return None
                element = "%s %s %s" % (proto, "dport" if tag == "port" else "sport", port)
        elif tag in ("accept", "drop", "reject"):
            if action is not None or (tag == "reject" and child.get("type")):
                return None
            action = tag
            for sub in child:
                if sub.tag != "limit" or limit is not None:
                    return None
                value = sub.get("value", "")
                m = re.fullmatch(r"(\d{1,9})/([smhd])[a-z]*", value)
                if not m:
                    return None
                limit = "limit rate %s/%s" % (m.group(1), _LIMIT_PER[m.group(2)])
        else:
            return None  # service, icmp-*, masquerade, forward-port, log, audit, mark, ...
    if action is None:
        return None
    if addr_family and not family:
        return None  # firewalld refuses an address without a family
    suffix = "pre" if priority < 0 else "post" if priority > 0 else ("allow" if action == "accept" else "deny")
    body = [t for _o, t in sorted(parts, key=lambda p: p[0])]
    tail = ([element] if element else []) + ([limit] if limit else [])
    nfproto = ["meta nfproto %s" % family] if family else []
    input_text = " ".join(nfproto + body + tail + [action])
    listed_action = action
    if action == "reject" and family:
        listed_action = "reject with %s port-unreachable" % ("icmp" if family == "ipv4" else "icmpv6")
    implied = bool(body) or action == "reject"
    listed = " ".join(([] if implied else nfproto) + body + tail + [listed_action])
    return {"chain": "filter_IN_%s_%s" % (zone, suffix), "input": input_text, "listed": listed}


def zone_rich_rules(text, zone):
    """Rich rules of a zone file: [{family: inet, table: firewalld, chain, text, input, span}] for
    each ``<rule>`` this module translates (``text`` as ``nft list`` prints it, ``span`` the
    element's (start, end) in the file, with its indentation and line end). Rules it does not
    translate are left out. A file that is not a zone document gives []."""
    out = []
    for m in _RICH_RULE.finditer(text):
        try:
            elem = ET.fromstring(m.group(0).strip())
        except ET.ParseError:
            continue
        rule = translate(elem, zone)
        if rule is None:
            continue
        out.append({"family": "inet", "table": "firewalld", "chain": rule["chain"], "text": rule["listed"],
                    "input": rule["input"], "span": (m.start(), m.end())})
    return out


def zone_nft_script(zones):
    """An nft script that loads the given zones' rich rules the way firewalld lays them out:
    ``zones`` is [(zone, file text)]. Input hook chain ``filter_INPUT`` jumps to each zone's
    ``filter_IN_<zone>``, which jumps to its ``pre``, ``deny``, ``allow`` and ``post`` chains (the
    order firewalld gives them). Used by the lab to emulate a firewalld host at boot."""
    lines = ["table inet firewalld {",
             "  chain filter_INPUT {", "    type filter hook input priority filter + 10; policy accept;"]
    lines += ["    jump filter_IN_%s" % z for z, _t in zones]
    lines.append("  }")
    for zone, text in zones:
        rules = zone_rich_rules(text, zone)
        lines.append("  chain filter_IN_%s {" % zone)
        lines += ["    jump filter_IN_%s_%s" % (zone, s) for s in ("pre", "deny", "allow", "post")]
        lines.append("  }")
        for suffix in ("pre", "deny", "allow", "post"):
            chain = "filter_IN_%s_%s" % (zone, suffix)
            lines.append("  chain %s {" % chain)
            lines += ["    %s" % r["input"] for r in rules if r["chain"] == chain]
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
