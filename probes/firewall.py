"""The ``firewall`` probe: iptables/ip6tables rules (``iptables-save``) and nftables (``nft -j``).

The script runs whichever of ``iptables-save``, ``ip6tables-save`` and ``nft -j list ruleset``
exist (none of them: not applicable) and prints each tool's stdout in a section followed by an
``@@exit N`` line, and its stderr (if any) in a ``<tool>.stderr`` section. A tool that exits
non-zero (not root, nf_tables unavailable, nft built without JSON) makes ``parse`` raise
``ProbeParseError`` naming the tool and its first error line.

Facts are one flat list of chains and one of rules, whichever backend they came from:

* iptables-save: ``*table`` starts a table, ``:CHAIN POLICY [p:b]`` declares a chain (policy
  ``-`` = a user chain), ``-A CHAIN ...`` a rule, ``COMMIT`` ends the table. Family ``ip`` for
  iptables, ``ip6`` for ip6tables. A rule's verdict comes from ``-j``/``-g``.
* nft JSON (libnftables-json(5)): ``table``, ``chain``, ``set`` and ``rule`` objects; a rule's
  ``expr`` list is rendered back into nft syntax for ``text``; named sets with literal elements
  are inlined into ``addresses``.

Double counting: with the nf_tables backend of iptables (``iptables-save`` prints
``(nf_tables)`` in its header), the iptables rules live in nft tables ``ip filter``,
``ip6 nat``, ... and ``nft -j`` lists them too (partly as opaque ``xt`` expressions). When the
save output is from the nf_tables backend, an nft table whose family is ``ip`` (``ip6`` for
ip6tables-save) and whose name is a table in that save output is skipped on the nft side: the
iptables-save rendering is the one reported. With the legacy backend the two rule sets are
distinct kernel objects and both are reported. Tables of iptables-legacy running next to
an nft-backed ``iptables-save`` are not read.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from typing import Any

from pydantic import BaseModel, Field

from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError, split_sections


class FirewallChain(BaseModel):
    backend: str
    family: str
    table: str
    chain: str
    #: netfilter hook of a base chain (``input``, ``forward``, ...); None for a user chain
    hook: str | None = None
    #: ``ACCEPT`` / ``DROP`` for a base chain; None for a user chain
    policy: str | None = None
    rule_count: int = 0


class FirewallRule(BaseModel):
    backend: str
    family: str
    table: str
    chain: str
    #: accept, drop, reject, queue, return, ``jump X``, ``goto X``; None when the rule has none
    verdict: str | None = None
    #: a rate limit, quota, connection limit or meter is part of the match
    limit: bool = False
    #: source/destination networks the rule matches, as ``addr/prefixlen``
    addresses: list[str] = Field(default_factory=list)
    #: interfaces it matches (input or output)
    interfaces: list[str] = Field(default_factory=list)
    #: the rule as iptables-save prints it, or rendered from the nft JSON
    text: str


class FirewallFacts(BaseModel):
    backends: list[str] = Field(default_factory=list)
    chains: list[FirewallChain] = Field(default_factory=list)
    rules: list[FirewallRule] = Field(default_factory=list)
    rule_count: int = 0
    #: nft tables left out because they are the iptables-nft tables already read from iptables-save
    skipped_nft_tables: list[str] = Field(default_factory=list)


_TOOLS = (("iptables-save", "iptables-save"), ("ip6tables-save", "ip6tables-save"), ("nft", "nft -j list ruleset"))
_EXIT_RE = re.compile(r"^@@exit (\d+)$")


def _firewall_script() -> str:
    lines = [
        "cap() { name=$1; shift; echo \"@@section $name\"; "
        "{ err=$( { \"$@\" 3>&-; echo \"@@exit $?\" >&3; } 2>&1 1>&3 ); } 3>&1; "
        "if [ -n \"$err\" ]; then echo \"@@section $name.stderr\"; printf '%s\\n' \"$err\"; fi; }",
        "found=0",
    ]
    for name, cmd in _TOOLS:
        lines.append(f"if command -v {name} >/dev/null 2>&1; then found=1; cap {name} {cmd}; fi")
    lines.append(f'[ "$found" = 1 ] || echo "{NOT_APPLICABLE_MARKER} neither iptables-save nor nft found"')
    return "\n".join(lines) + "\n"


def _tool_output(sections: dict[str, str], name: str) -> str | None:
    if name not in sections:
        return None
    body = sections[name].rstrip("\n").split("\n")
    m = _EXIT_RE.match(body[-1]) if body else None
    if not m:
        raise ProbeParseError(f"firewall: {name} output has no exit status (truncated?)")
    if m.group(1) != "0":
        err = next((ln.strip() for ln in sections.get(name + ".stderr", "").splitlines() if ln.strip()), "no message")
        raise ProbeParseError(f"firewall: {name} exited {m.group(1)}: {err[:200]}")
    return "\n".join(body[:-1])


def normalize_network(text: str) -> str | None:
    """``198.18.0.5`` -> ``198.18.0.5/32``, ``198.18.0.7/24`` -> ``198.18.0.0/24``; None if not an address."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=False))
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# iptables-save
# ---------------------------------------------------------------------------------------------

_BUILTIN_HOOKS = {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}
_IPT_VERDICTS = {"ACCEPT": "accept", "DROP": "drop", "REJECT": "reject", "RETURN": "return", "QUEUE": "queue", "NFQUEUE": "queue"}
_IPT_LIMIT_MATCHES = {"limit", "hashlimit", "quota", "connlimit", "quota2", "rateest"}
_IPTABLES_TABLES = {"filter", "nat", "mangle", "raw", "security"}


def parse_iptables_save(text: str, family: str) -> tuple[list[FirewallChain], list[FirewallRule], set[str], bool]:
    """(chains, rules, table names, nf_tables backend?) from one iptables-save output."""
    chains: list[FirewallChain] = []
    rules: list[FirewallRule] = []
    tables: set[str] = set()
    nft_backend = False
    table: str | None = None
    by_name: dict[str, FirewallChain] = {}
    tool = "iptables-save" if family == "ip" else "ip6tables-save"
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        where = f"firewall: {tool} line {lineno}"
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith("# Generated by") and "(nf_tables)" in line:
                nft_backend = True
            continue
        if line.startswith("*"):
            if table is not None:
                raise ProbeParseError(f"{where}: table {line[1:]!r} starts before COMMIT of {table!r}")
            table = line[1:].strip()
            if not re.fullmatch(r"[a-z_]+", table):
                raise ProbeParseError(f"{where}: bad table name {line[:40]!r}")
            tables.add(table)
            by_name = {}
            continue
        if table is None:
            raise ProbeParseError(f"{where}: {line[:40]!r} outside a table")
        if line == "COMMIT":
            table = None
            continue
        if line.startswith(":"):
            parts = line[1:].split()
            if len(parts) < 2:
                raise ProbeParseError(f"{where}: bad chain line {line[:60]!r}")
            name, policy = parts[0], parts[1]
            builtin = policy != "-"
            chain = FirewallChain(
                backend="iptables", family=family, table=table, chain=name,
                hook=name.lower() if builtin and name in _BUILTIN_HOOKS else None,
                policy=policy if builtin else None,
            )
            by_name[name] = chain
            chains.append(chain)
            continue
        if not (line.startswith("-A ") or line.startswith("-I ")):
            raise ProbeParseError(f"{where}: not an iptables-save line: {line[:60]!r}")
        try:
            tokens = shlex.split(line)
        except ValueError:
            raise ProbeParseError(f"{where}: unbalanced quotes") from None
        if len(tokens) < 2 or tokens[1] not in by_name:
            raise ProbeParseError(f"{where}: rule for an undeclared chain: {line[:60]!r}")
        rule = _iptables_rule(tokens, line, family, table, {n for n, c in by_name.items() if c.policy is None})
        by_name[tokens[1]].rule_count += 1
        rules.append(rule)
    if table is not None:
        raise ProbeParseError(f"firewall: {tool}: table {table!r} has no COMMIT (truncated?)")
    return chains, rules, tables, nft_backend


def _iptables_rule(tokens: list[str], line: str, family: str, table: str, user_chains: set[str]) -> FirewallRule:
    """One ``-A`` line; ``-j`` to a chain declared in the table is a jump, other targets (LOG, MARK ...) no verdict."""
    verdict = None
    limit = False
    addresses: list[str] = []
    interfaces: list[str] = []
    for i, tok in enumerate(tokens):
        arg = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in ("-j", "--jump"):
            if arg in _IPT_VERDICTS:
                verdict = _IPT_VERDICTS[arg]
            elif arg in user_chains:
                verdict = f"jump {arg}"
        elif tok in ("-g", "--goto"):
            verdict = f"goto {arg}"
        elif tok in ("-m", "--match") and arg in _IPT_LIMIT_MATCHES:
            limit = True
        elif tok in ("-s", "--source", "-d", "--destination"):
            addresses += [n for n in (normalize_network(a) for a in arg.split(",")) if n]
        elif tok in ("-i", "--in-interface", "-o", "--out-interface") and arg:
            interfaces.append(arg)
    return FirewallRule(
        backend="iptables", family=family, table=table, chain=tokens[1], verdict=verdict, limit=limit,
        addresses=addresses, interfaces=interfaces, text=line,
    )


# ---------------------------------------------------------------------------------------------
# nft -j list ruleset
# ---------------------------------------------------------------------------------------------

_NFT_VERDICTS = ("accept", "drop", "reject", "queue", "return")
_NFT_LIMITS = ("limit", "quota", "meter", "ct count", "connlimit")
_META_BARE = {"iifname", "oifname", "iif", "oif", "iiftype", "oiftype", "mark", "l4proto", "nfproto"}


def _render_value(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ",".join(_render_value(x) for x in v)
    if isinstance(v, dict) and len(v) == 1:
        (key, body), = v.items()
        if key == "prefix" and isinstance(body, dict):
            return f"{_render_value(body.get('addr'))}/{_render_value(body.get('len'))}"
        if key == "range" and isinstance(body, list) and len(body) == 2:
            return f"{_render_value(body[0])}-{_render_value(body[1])}"
        if key == "set":
            items = body if isinstance(body, list) else [body]
            return "{ " + ", ".join(_render_value(x) for x in items) + " }"
        if key == "meta" and isinstance(body, dict):
            k = body.get("key")
            return str(k) if k in _META_BARE - {"mark", "l4proto", "nfproto"} else f"meta {k}"
        if key == "payload" and isinstance(body, dict):
            if "protocol" in body:
                return f"{body.get('protocol')} {body.get('field')}"
            return f"@{body.get('base')},{body.get('offset')},{body.get('len')}"
        if key == "ct" and isinstance(body, dict):
            return "ct " + " ".join(str(body[k]) for k in ("dir", "key") if k in body)
        if key in ("concat",) and isinstance(body, list):
            return " . ".join(_render_value(x) for x in body)
        if key == "elem" and isinstance(body, dict):
            return _render_value(body.get("val"))
    return json.dumps(v, sort_keys=True)


def _render_statement(stmt: Any) -> str:
    if not isinstance(stmt, dict) or len(stmt) != 1:
        return json.dumps(stmt, sort_keys=True)
    (key, body), = stmt.items()
    if key == "match" and isinstance(body, dict):
        op = body.get("op", "==")
        op_text = "" if op in ("==", "in") else f"{op} "
        return f"{_render_value(body.get('left'))} {op_text}{_render_value(body.get('right'))}"
    if key in ("accept", "drop", "return", "continue") or (key in ("queue", "masquerade", "notrack") and not body):
        return key
    if key in ("jump", "goto") and isinstance(body, dict):
        return f"{key} {body.get('target')}"
    if key == "counter":
        return "counter"
    if key == "reject":
        if isinstance(body, dict) and body.get("expr"):
            return f"reject with {body.get('type', 'icmp')} {body['expr']}"
        return "reject"
    if key == "limit" and isinstance(body, dict):
        unit = f" {body['rate_unit']}" if body.get("rate_unit") and body.get("rate_unit") != "packets" else ""
        over = "over " if body.get("inv") else ""
        burst = f" burst {body['burst']} {body.get('burst_unit', 'packets')}" if body.get("burst") else ""
        return f"limit rate {over}{body.get('rate')}{unit}/{body.get('per', 'second')}{burst}"
    if key == "quota" and isinstance(body, dict):
        over = "over " if body.get("inv") else ""
        return f"quota {over}{body.get('val')} {body.get('val_unit', 'bytes')}"
    if key == "xt" and isinstance(body, dict):
        return f"xt {body.get('type')} {body.get('name')}"
    if key == "mangle" and isinstance(body, dict):
        return f"{_render_value(body.get('key'))} set {_render_value(body.get('value'))}"
    if key == "meter" and isinstance(body, dict):
        return f"meter {body.get('name')} {{ {_render_value(body.get('key'))} {_render_statement(body.get('stmt'))} }}"
    if isinstance(body, dict) and body:
        return key + " " + " ".join(f"{k} {_render_value(v)}" for k, v in body.items())
    return key


def _nft_rule(obj: dict[str, Any], sets: dict[tuple[str, str, str], list[Any]]) -> FirewallRule:
    family, table, chain = obj["family"], obj["table"], obj["chain"]
    exprs = obj.get("expr", [])
    if not isinstance(exprs, list):
        raise ProbeParseError(f"firewall: nft rule in {family} {table} {chain}: expr is not a list")
    verdict = None
    limit = False
    addresses: list[str] = []
    interfaces: list[str] = []
    for stmt in exprs:
        if not isinstance(stmt, dict) or len(stmt) != 1:
            continue
        (key, body), = stmt.items()
        if key in _NFT_VERDICTS:
            verdict = key
        elif key in ("jump", "goto") and isinstance(body, dict):
            verdict = f"{key} {body.get('target')}"
        elif key == "xt" and isinstance(body, dict) and body.get("type") == "target":
            verdict = _IPT_VERDICTS.get(str(body.get("name")), verdict)
        elif key in ("limit", "quota", "meter", "connlimit") or (key == "xt" and isinstance(body, dict) and body.get("name") in _IPT_LIMIT_MATCHES):
            limit = True
        elif key == "match" and isinstance(body, dict):
            left = body.get("left")
            values = _literal_values(body.get("right"), family, table, sets)
            if isinstance(left, dict) and "payload" in left and isinstance(left["payload"], dict):
                if left["payload"].get("field") in ("saddr", "daddr"):
                    addresses += [n for n in (_to_networks(v) for v in values) for n in n]
            elif isinstance(left, dict) and isinstance(left.get("meta"), dict):
                if left["meta"].get("key") in ("iifname", "oifname", "iif", "oif"):
                    interfaces += [str(v) for v in values if isinstance(v, (str, int)) and not isinstance(v, bool)]
            elif isinstance(left, dict) and isinstance(left.get("ct"), dict) and left["ct"].get("key") == "count":
                limit = True
    text = " ".join(_render_statement(s) for s in exprs)
    return FirewallRule(
        backend="nft", family=family, table=table, chain=chain, verdict=verdict, limit=limit,
        addresses=addresses, interfaces=interfaces, text=text,
    )


def _literal_values(right: Any, family: str, table: str, sets: dict[tuple[str, str, str], list[Any]]) -> list[Any]:
    if isinstance(right, str) and right.startswith("@"):
        return sets.get((family, table, right[1:]), [])
    if isinstance(right, dict) and "set" in right:
        items = right["set"]
        return items if isinstance(items, list) else [items]
    if isinstance(right, list):
        return right
    return [right]


def _to_networks(v: Any) -> list[str]:
    if isinstance(v, dict) and isinstance(v.get("elem"), dict):
        v = v["elem"].get("val")
    if isinstance(v, str):
        n = normalize_network(v)
        return [n] if n else []
    if isinstance(v, dict) and isinstance(v.get("prefix"), dict):
        n = normalize_network(f"{v['prefix'].get('addr')}/{v['prefix'].get('len')}")
        return [n] if n else []
    if isinstance(v, dict) and isinstance(v.get("range"), list) and len(v["range"]) == 2:
        try:
            lo, hi = (ipaddress.ip_address(str(x)) for x in v["range"])
            return [str(n) for n in ipaddress.summarize_address_range(lo, hi)]
        except (ValueError, TypeError):
            return []
    return []


def parse_nft_json(text: str, skip_tables: set[tuple[str, str]]) -> tuple[list[FirewallChain], list[FirewallRule], list[str]]:
    """(chains, rules, skipped table names) from ``nft -j list ruleset``."""
    if not text.strip():
        return [], [], []
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ProbeParseError(f"firewall: nft -j output is not JSON ({e.__class__.__name__} at char {getattr(e, 'pos', '?')})") from None
    items = data.get("nftables") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ProbeParseError("firewall: nft -j output has no 'nftables' list")
    objs: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        if not isinstance(item, dict) or len(item) != 1:
            raise ProbeParseError("firewall: nft -j: an entry is not a one-key object")
        (kind, obj), = item.items()
        if kind in ("table", "chain", "rule", "set", "map"):
            if not isinstance(obj, dict):
                raise ProbeParseError(f"firewall: nft -j: {kind} is not an object")
            need = {"table": ("family", "name"), "chain": ("family", "table", "name"), "rule": ("family", "table", "chain"),
                    "set": ("family", "table", "name"), "map": ("family", "table", "name")}[kind]
            if not all(isinstance(obj.get(k), str) for k in need):
                raise ProbeParseError(f"firewall: nft -j: {kind} without {'/'.join(need)}")
            objs.append((kind, obj))
    sets = {
        (o["family"], o["table"], o["name"]): (o.get("elem") if isinstance(o.get("elem"), list) else [])
        for k, o in objs if k == "set"
    }
    chains: dict[tuple[str, str, str], FirewallChain] = {}
    rules: list[FirewallRule] = []
    skipped: list[str] = []
    for kind, o in objs:
        if kind == "table" and (o["family"], o["name"]) in skip_tables:
            skipped.append(f"{o['family']} {o['name']}")
        table_key = (o["family"], o["name"] if kind == "table" else o["table"])
        if table_key in skip_tables:
            continue
        if kind == "chain":
            policy = o.get("policy")
            chains[(o["family"], o["table"], o["name"])] = FirewallChain(
                backend="nft", family=o["family"], table=o["table"], chain=o["name"],
                hook=o["hook"] if isinstance(o.get("hook"), str) else None,
                policy=policy.upper() if isinstance(policy, str) and isinstance(o.get("hook"), str) else None,
            )
        elif kind == "rule":
            rule = _nft_rule(o, sets)
            chain = chains.get((o["family"], o["table"], o["chain"]))
            if chain is None:
                raise ProbeParseError(f"firewall: nft -j: rule for undeclared chain {o['family']} {o['table']} {o['chain']}")
            chain.rule_count += 1
            rules.append(rule)
    return list(chains.values()), rules, skipped


class FirewallProbe(Probe):
    name = "firewall"
    title = "Host firewall: iptables and nftables chains, policies and rules"
    needs_root = True
    facts_model = FirewallFacts

    def script(self, ctx: ProbeContext) -> str:
        return _firewall_script()

    def parse(self, text: str) -> FirewallFacts:
        sections = split_sections(text)
        known = {name for name, _ in _TOOLS}
        unknown = [s for s in sections if s and s.removesuffix(".stderr") not in known]
        if unknown:
            raise ProbeParseError(f"firewall: unexpected section {unknown[0][:40]!r}")
        if sections.get("", "").strip():
            raise ProbeParseError("firewall: output has text before its first section")
        if not known & set(sections):
            raise ProbeParseError("firewall: output has no iptables-save or nft section")
        facts = FirewallFacts()
        skip: set[tuple[str, str]] = set()
        for tool, family in (("iptables-save", "ip"), ("ip6tables-save", "ip6")):
            out = _tool_output(sections, tool)
            if out is None:
                continue
            chains, rules, tables, nft_backend = parse_iptables_save(out, family)
            if "iptables" not in facts.backends:
                facts.backends.append("iptables")
            facts.chains += chains
            facts.rules += rules
            if nft_backend:
                skip |= {(family, t) for t in tables}
        nft_out = _tool_output(sections, "nft")
        if nft_out is not None:
            chains, rules, skipped = parse_nft_json(nft_out, skip)
            facts.backends.append("nft")
            facts.chains += chains
            facts.rules += rules
            facts.skipped_nft_tables = skipped
        facts.rule_count = len(facts.rules)
        return facts
