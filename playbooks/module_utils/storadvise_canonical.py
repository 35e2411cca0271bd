# -*- coding: utf-8 -*-
# storadvise: values compared by meaning, never by text (pure functions, no I/O).
# Licensed as storadvise itself.
"""The one place where a persisted value and a runtime value are compared by meaning.

Used by the product (advisor.adapters, through advisor.util.shipped_code) and by the roles' modules
(``from ansible.module_utils.storadvise_canonical import ...``), so a plan and the role that
applies it agree on what "already right" means:

* ``sysctl_value``: blanks collapsed (``4096\\t87380\\t6291456`` == ``4096 87380 6291456``).
* ``size_bytes``: ``1G`` == ``1024M`` == ``1073741824`` (binary multiples, as GPFS, SAN and
  XRootD configuration files mean them; ``k``/``KB``/``KiB`` alike).
* ``bool_value``: ``TRUE``, ``true``, ``1``, ``yes``, ``on``, ``Enabled`` are all true.
* ``xrootd_directives``: an XRootD configuration's directives with comments dropped, ``\\``
  continuation lines joined and blanks collapsed.
* ``same_value``: two values equal as text (blanks and case ignored), as booleans or as sizes.
* ``ipt_rule_canonical``: the pure-Python normaliser of an iptables rule line, the fallback when
  a ruleset cannot be loaded into a scratch network namespace and read back (the controller's
  canonicaliser, advisor.adapters.firewall_canonical). It rewrites what iptables itself rewrites when it
  stores a rule and prints it back (iptables-extensions(8); libxt_hashlimit.c and libxt_limit.c of
  iptables 1.8): rates are stored as a period in the match's own units and printed back rounded
  (``--hashlimit-above 60000/sec`` reads back as ``62500/sec``), default bursts, long option
  names, a host address without ``/32``, the address/interface/protocol options printed first, the
  implicit ``-m tcp``/``-m udp``/``-m icmp`` of ``--dport``/``--icmp-type``, conntrack states in
  the kernel's order, REJECT's default ``--reject-with``. What it does not know (the order of
  other matches, other modules' defaults) it leaves as written.
"""

from __future__ import annotations

import ipaddress
import re

# ---------------------------------------------------------------------------------------------
# scalar values
# ---------------------------------------------------------------------------------------------

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(?:i?B)?\s*$", re.I)
_MULT = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40, "P": 2 ** 50}
_TRUE = ("1", "true", "yes", "on", "enable", "enabled")
_FALSE = ("0", "false", "no", "off", "disable", "disabled")


def sysctl_value(value):
    """A sysctl value as ``sysctl`` compares it: fields separated by one blank."""
    return None if value is None else " ".join(str(value).split())


def size_bytes(value):
    """Bytes of a size such as ``512M``, ``1G``, ``4KiB``, ``1073741824`` (None: not a size)."""
    if value is None or isinstance(value, bool):
        return None
    m = _SIZE.match(str(value))
    return float(m.group(1)) * _MULT[m.group(2).upper()] if m else None


def bool_value(value):
    """True/False for the spellings of a boolean; None when the value is not one."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if value is not None else ""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def same_value(a, b):
    """Values equal as text (blanks and case ignored), as booleans or as sizes (1G == 1024M).
    None equals only None."""
    if a is None or b is None:
        return a is None and b is None
    sa, sb = " ".join(str(a).split()).lower(), " ".join(str(b).split()).lower()
    if sa == sb:
        return True
    ba, bb = bool_value(a), bool_value(b)
    if ba is not None and bb is not None:
        return ba == bb
    za, zb = size_bytes(a), size_bytes(b)
    return za is not None and za == zb


# ---------------------------------------------------------------------------------------------
# XRootD configuration directives
# ---------------------------------------------------------------------------------------------


def xrootd_directives(text):
    """[(directive, arguments)] of an XRootD configuration text, as xrootd reads it: ``#``
    comments dropped, a line ending in ``\\`` continued on the next, blanks collapsed."""
    out, pending = [], ""
    for raw in str(text).splitlines():
        line = raw.split("#", 1)[0] if not raw.lstrip().startswith("#") else ""
        line = line.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            words = line.split()
            out.append((words[0], " ".join(words[1:])))
    if pending.strip():
        words = pending.split()
        out.append((words[0], " ".join(words[1:])))
    return out


def xrootd_directive(text):
    """One directive's text (maybe over continuation lines) as ``name args`` with single blanks."""
    found = xrootd_directives(text)
    return " ".join(" ".join(found[0]).split()) if found else ""


# ---------------------------------------------------------------------------------------------
# iptables rule lines (the pure-Python fallback)
# ---------------------------------------------------------------------------------------------

#: XT_HASHLIMIT_SCALE_v2 (revisions 2 and 3 of the hashlimit match, what iptables >= 1.6 uses)
HASHLIMIT_SCALE = 1000000
#: XT_LIMIT_SCALE (the limit match)
LIMIT_SCALE = 10000
_UNIT_SECONDS = (("day", 86400), ("hour", 3600), ("min", 60), ("sec", 1))
_LONG_OPTIONS = {
    "--append": "-A", "--source": "-s", "--src": "-s", "--destination": "-d", "--dst": "-d",
    "--protocol": "-p", "--in-interface": "-i", "--out-interface": "-o", "--jump": "-j", "--goto": "-g",
    "--match": "-m", "--destination-port": "--dport", "--source-port": "--sport",
    "--hashlimit": "--hashlimit-upto", "--fragment": "-f",
}
_RATE_OPTIONS = {"--hashlimit-upto": HASHLIMIT_SCALE, "--hashlimit-above": HASHLIMIT_SCALE, "--limit": LIMIT_SCALE}
_IPT_COUNTERS = re.compile(r"^\[\d+:\d+\]\s*")


def _rate_period(text, scale):
    """The period iptables stores for a rate (``N/unit``, unit a prefix of second/minute/hour/day)."""
    number, _, unit = str(text).partition("/")
    unit = unit.strip().lower()
    mult = 1
    if unit:
        for name, secs in (("second", 1), ("minute", 60), ("hour", 3600), ("day", 86400)):
            if name.startswith(unit):
                mult = secs
                break
        else:
            return None
    try:
        r = int(number)
    except ValueError:
        return None
    if r <= 0:
        return None
    period = scale * mult // r
    return period or None


def _print_rate(period, scale):
    """The rate text iptables prints for a stored period (print_rate() of libxt_hashlimit/limit)."""
    rates = [(name, scale * secs) for name, secs in _UNIT_SECONDS]
    i = 1
    while i < len(rates):
        mult = rates[i][1]
        if period > mult or mult // period < mult % period:
            break
        i += 1
    name, mult = rates[i - 1]
    return "%d/%s" % (mult // period, name)


def ipt_rate(text, scale=HASHLIMIT_SCALE):
    """A rate as iptables prints it back after storing it (``60000/sec`` -> ``62500/sec``)."""
    period = _rate_period(text, scale)
    return _print_rate(period, scale) if period else str(text)


def _address(text, family):
    try:
        net = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return text
    return str(net) if "/" in text or family else "%s/%d" % (net.network_address, net.max_prefixlen)


def _tokens(text):
    """Words of a rule line; a double-quoted word keeps its quotes (as iptables-save prints it)."""
    out, cur, quoted = [], "", False
    for ch in str(text):
        if ch == '"':
            quoted = not quoted
            cur += ch
        elif ch.isspace() and not quoted:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


_BASE_ORDER = ("-s", "-d", "-i", "-o", "-p", "-f")
_IMPLICIT_MATCH = {"--dport": ("tcp", "udp", "sctp"), "--sport": ("tcp", "udp", "sctp"), "--tcp-flags": ("tcp",),
                   "--syn": ("tcp",), "--icmp-type": ("icmp",), "--icmpv6-type": ("ipv6-icmp", "icmpv6")}
_PROTO_MATCH = {"ipv6-icmp": "icmp6", "icmpv6": "icmp6"}
_STATE_ORDER = ("INVALID", "NEW", "RELATED", "ESTABLISHED", "UNTRACKED", "SNAT", "DNAT")
_REJECT_DEFAULT = {"ip": "icmp-port-unreachable", "ip6": "icmp6-port-unreachable"}


def _base_first(words):
    """iptables-save prints the address, interface and protocol options (``-s -d -i -o -p -f``,
    each with its ``!``) first, in that order, whatever order the rule was written in."""
    head, base, rest = words[:2], {}, []
    i = 2
    while i < len(words):
        neg = words[i] == "!" and i + 1 < len(words) and words[i + 1] in _BASE_ORDER
        w = words[i + 1] if neg else words[i]
        if w in _BASE_ORDER:
            at = i + (2 if neg else 1)
            arg = [] if w == "-f" else words[at:at + 1]
            base[w] = (["!"] if neg else []) + [w] + arg
            i = at + len(arg)
            continue
        rest.append(words[i])
        i += 1
    return head + [t for k in _BASE_ORDER if k in base for t in base[k]] + rest


def ipt_rule_canonical(text, family="ip"):
    """An iptables rule line (``-A CHAIN ...`` of a rules file or of iptables-save) in the form
    iptables prints it back, as far as the pure-Python rules above know it."""
    words = _tokens(_IPT_COUNTERS.sub("", str(text).strip()))
    words = _base_first([_LONG_OPTIONS.get(w, w) for w in words])
    out = []
    proto = None
    matches = set()
    i = 0
    while i < len(words):
        w = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if w in ("-s", "-d") and nxt is not None:
            out += [w, ",".join(_address(a, "") for a in nxt.split(","))]
            i += 2
            continue
        if w == "-p" and nxt is not None:
            proto = nxt.lower()
            out += [w, proto]
            i += 2
            continue
        if w == "-m" and nxt is not None:
            matches.add(nxt)
            out += [w, nxt]
            i += 2
            continue
        if w in _IMPLICIT_MATCH and proto in _IMPLICIT_MATCH[w]:
            # a protocol option loads the protocol's match implicitly; iptables-save names it
            match = _PROTO_MATCH.get(proto, proto)
            if match not in matches:
                out += ["-m", match]
                matches.add(match)
        if w in ("--state", "--ctstate") and nxt is not None:
            states = nxt.upper().split(",")
            known = [st for st in _STATE_ORDER if st in states]
            out += [w, ",".join(known + [st for st in states if st not in known])]
            i += 2
            continue
        if w in _RATE_OPTIONS and nxt is not None:
            out += [w, ipt_rate(nxt, _RATE_OPTIONS[w])]
            i += 2
            continue
        out.append(w)
        i += 1
    if out[-2:] == ["-j", "REJECT"] and family in _REJECT_DEFAULT:
        out += ["--reject-with", _REJECT_DEFAULT[family]]
    return " ".join(_default_bursts(out))


def _default_bursts(words):
    """``--limit-burst 5`` is the default iptables does not print; a hashlimit match without
    ``--hashlimit-burst`` is printed with the default 5."""
    out = []
    i = 0
    while i < len(words):
        if words[i] == "--limit-burst" and i + 1 < len(words) and words[i + 1] == "5":
            i += 2
            continue
        out.append(words[i])
        i += 1
    if "--hashlimit-burst" not in out:
        for rate in ("--hashlimit-upto", "--hashlimit-above"):
            if rate in out:
                at = out.index(rate) + 2
                out[at:at] = ["--hashlimit-burst", "5"]
                break
    return out


def same_ipt_rule(a, b):
    """Two iptables rule lines that give the same rule once iptables has stored them."""
    return ipt_rule_canonical(a) == ipt_rule_canonical(b)
