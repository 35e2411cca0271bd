# -*- coding: utf-8 -*-
# storadvise: find a firewall rule in a host's persisted ruleset and take it out (pure text functions).
# Licensed as storadvise itself.
"""Rule text normalisation and the persisted rulesets the firewall role edits.

Pure functions on text (no I/O), shared by the firewall module and its tests:

* ``nft_norm`` / ``ipt_norm``: the one normalisation rules are compared under. Matching is
  equality after normalisation, never a substring or a subsequence.
* ``nft_conf_rules`` / ``nft_conf_includes``: rules and ``include`` statements of an nft script
  (``/etc/nftables.conf`` and what it includes), in the block syntax (``table F T { chain C { ...
  } }``) and the command syntax (``add rule F T C ...``, ``insert rule ...``).
* ``ipt_save_rules``: rules of an iptables-save file (``/etc/iptables/rules.v4``,
  ``/etc/sysconfig/iptables``), per ``*table`` section, with or without ``[pkts:bytes]`` counters.
* ``firewalld_direct_rules``: ``<rule>`` elements of firewalld's ``direct.xml`` (their runtime
  chain is ``CHAIN_direct``).
* ``comment_out``: the file with the given lines replaced by ``# storadvise removed: <line>``.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import unescape

MARK = "# storadvise removed (the plan's firewall role): "

_COUNTER = re.compile(r"\bcounter packets \d+ bytes \d+")
_DEFAULT_BURST = re.compile(r"\s+burst 5 packets\b")
_HOST_PREFIX = re.compile(r"\b((?:\d{1,3}\.){3}\d{1,3})/32\b|\b([0-9A-Fa-f:]*:[0-9A-Fa-f:]+)/128\b")
_IPT_COUNTERS = re.compile(r"^\[\d+:\d+\]\s*")
#: an anonymous set of one element, ``{ 10.0.0.1 }``: nft lists it as the bare element
_ONE_ELEMENT_SET = re.compile(r"\{\s*([^{},\s]+)\s*\}")


def norm(text):
    """Whitespace collapsed, double quotes dropped (nft and iptables-save quote differently)."""
    return " ".join(str(text).replace('"', " ").split())


def nft_norm(text):
    """nft rule text compared as ``nft list`` prints it: no run-time counters, no default limit
    burst (the JSON rendering spells out ``burst 5 packets``), no /32 or /128 on a single address,
    no braces around a one-element set."""
    t = _COUNTER.sub("counter", norm(text))
    t = _ONE_ELEMENT_SET.sub(r"\1", t)
    t = _DEFAULT_BURST.sub("", t)
    t = _HOST_PREFIX.sub(lambda m: m.group(1) or m.group(2), t)
    return norm(t)


def ipt_norm(text):
    """An iptables-save rule line without a leading ``[pkts:bytes]`` counter."""
    return norm(_IPT_COUNTERS.sub("", str(text).strip()))


def _strip_comment(line):
    """The line without a ``#`` comment (a ``#`` inside double quotes is kept)."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            return line[:i]
    return line


def _statements(line):
    """Parts of a line separated by ``;`` outside double quotes: [(start, end, text)]."""
    out, quoted, start = [], False, 0
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            out.append((start, i, line[start:i]))
            start = i + 1
    out.append((start, len(line), line[start:]))
    return [(s, e, t) for s, e, t in out if t.strip()]


_TABLE = re.compile(r"^(?:add\s+|create\s+)?table\s+(?:(ip|ip6|inet|arp|bridge|netdev)\s+)?(\S+)\s*\{\s*(.*)$")
_CHAIN = re.compile(r"^(?:add\s+|create\s+)?chain\s+(\S+)\s*\{\s*(.*)$")
_COMMAND_RULE = re.compile(r"^(?:add\s+|insert\s+)?rule\s+(?:(ip|ip6|inet|arp|bridge|netdev)\s+)?(\S+)\s+(\S+)\s+(.*)$")
_NOT_RULES = ("type ", "policy ", "comment ", "devices ", "device ", "hook ", "priority ", "flags ", "counter", "elements ")
_INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"\s*(?:#.*)?$')


def nft_conf_includes(text):
    """Paths (as written, maybe globs or relative) of the file's ``include "..."`` statements."""
    return [m.group(1) for m in (_INCLUDE.match(line) for line in text.splitlines()) if m]


def nft_conf_rules(text):
    """Rules of an nft script: [{family, table, chain, text, line (0-based), whole_line}].

    ``whole_line`` is False when the rule shares its line with other statements. Rules inside sets,
    maps or other objects are not rules and are skipped; so is anything after a brace the parser
    does not understand (its depth is tracked, its content ignored).
    """
    rules = []
    stack = []  # ("table", family, name) | ("chain", name) | ("other",)
    for n, raw in enumerate(text.splitlines()):
        line = _strip_comment(raw).strip()
        while line:
            if line.startswith("}"):
                if stack:
                    stack.pop()
                line = line[1:].strip().lstrip(";").strip()
                continue
            m = _TABLE.match(line) if not stack else None
            if m:
                stack.append(("table", m.group(1) or "ip", m.group(2)))
                line = m.group(3).strip()
                continue
            m = _CHAIN.match(line) if stack and stack[-1][0] == "table" else None
            if m:
                stack.append(("chain", m.group(1)))
                line = m.group(2).strip()
                continue
            if stack and stack[-1][0] != "chain":
                # a table-level statement or the inside of a set, map, ...: only its braces count
                brace = _first_brace(line)
                if brace is None:
                    line = ""
                elif line[brace] == "{":
                    stack.append(("other",))
                    line = line[brace + 1:].strip()
                else:
                    line = line[brace:]
                continue
            if not stack:
                m = _COMMAND_RULE.match(line)
                if m:
                    rules.append({"family": m.group(1) or "ip", "table": m.group(2), "chain": m.group(3),
                                  "text": m.group(4).strip(), "line": n, "whole_line": True})
                line = ""
                continue
            # inside a chain: statements up to a closing brace
            close = _closing_brace(line)
            body, line = (line[:close], line[close:]) if close is not None else (line, "")
            parts = _statements(body)
            table = next(s for s in reversed(stack) if s[0] == "table")
            for _s, _e, stmt in parts:
                stmt = stmt.strip()
                if stmt.startswith(_NOT_RULES) and not _looks_like_rule(stmt):
                    continue
                rules.append({"family": table[1], "table": table[2], "chain": stack[-1][1], "text": stmt,
                              "line": n, "whole_line": len(parts) == 1 and close is None})
    return rules


def _looks_like_rule(stmt):
    """``counter ... accept`` is a rule; ``counter`` alone in a chain (an anonymous counter) too."""
    return stmt.startswith("counter") and (len(stmt.split()) > 1 or stmt == "counter")


def _first_brace(line):
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch in "{}" and not quoted:
            return i
    return None


def _closing_brace(line):
    """Index of the ``}`` that closes the enclosing block (braces of anonymous sets such as
    ``tcp dport { 22, 1094 }`` are skipped), or None."""
    quoted, depth = False, 0
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return i
            depth -= 1
    return None


_IPT_TABLE = re.compile(r"^\*(\S+)\s*$")


def ipt_save_rules(text):
    """Rules of an iptables-save file: [{table, chain, text, line}] (text without counters)."""
    rules, table = [], None
    for n, raw in enumerate(text.splitlines()):
        line = raw.strip()
        m = _IPT_TABLE.match(line)
        if m:
            table = m.group(1)
            continue
        if line == "COMMIT":
            table = None
            continue
        body = _IPT_COUNTERS.sub("", line)
        if table and body.startswith("-A "):
            parts = body.split(None, 2)
            if len(parts) >= 2:
                rules.append({"table": table, "chain": parts[1], "text": body, "line": n})
    return rules


_DIRECT_RULE = re.compile(r"<rule\b([^>]*)>(.*?)</rule>[ \t]*\n?", re.S)
_XML_QUOTES = {"&quot;": '"', "&apos;": "'"}
_ATTR = re.compile(r'(\w+)\s*=\s*"([^"]*)"|(\w+)\s*=\s*\'([^\']*)\'')


def firewalld_direct_rules(text):
    """``<rule ipv table chain priority>ARGS</rule>`` of a direct.xml: [{family, table, chain,
    text, span}] where ``text`` is the iptables-save line the rule gives at run time
    (``-A CHAIN_direct ARGS``) and ``span`` the element's (start, end) in the file."""
    out = []
    for m in _DIRECT_RULE.finditer(text):
        attrs = {}
        for a in _ATTR.finditer(m.group(1)):
            attrs[a.group(1) or a.group(3)] = unescape(a.group(2) if a.group(1) else a.group(4), _XML_QUOTES)
        if "chain" not in attrs:
            continue
        family = {"ipv4": "ip", "ipv6": "ip6", "eb": "eb"}.get(attrs.get("ipv", "ipv4"), attrs.get("ipv"))
        chain = attrs["chain"] + "_direct"
        args = " ".join(unescape(m.group(2), _XML_QUOTES).split())
        out.append({"family": family, "table": attrs.get("table", "filter"), "chain": chain,
                    "text": "-A %s %s" % (chain, args), "span": (m.start(), m.end())})
    return out


def remove_spans(text, spans):
    """The text without the given (start, end) spans."""
    out, pos = [], 0
    for s, e in sorted(spans):
        out.append(text[pos:s])
        pos = e
    out.append(text[pos:])
    return "".join(out)


def comment_out(text, lines, statements=None):
    """``text`` with each 0-based line in ``lines`` turned into ``MARK + line``. ``statements``
    maps a line number to the statement to take out of a line that holds several: that line keeps
    the others and the removed statement goes in a marked comment line above it."""
    statements = statements or {}
    out = text.splitlines()
    for n in sorted(set(lines) | set(statements), reverse=True):
        line = out[n]
        indent = line[: len(line) - len(line.lstrip())]
        if n in statements:
            stmt = statements[n].strip()
            at = line.find(stmt)
            end = at + len(stmt)
            rest = line[end:]
            if rest.lstrip().startswith(";"):
                end += len(rest) - len(rest.lstrip()) + 1
            out[n:n + 1] = [indent + MARK + stmt, line[:at].rstrip() + " " + line[end:].lstrip()]
        else:
            out[n] = indent + MARK + line.strip()
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
