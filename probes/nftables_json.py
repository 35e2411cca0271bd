"""Reading ``nft -j list ruleset`` (libnftables-json(5)) into firewall chains and rules.

A rule's ``expr`` list is rendered back into nft syntax for ``text``; verdicts, rate limits,
quotas, meters and connection limits, addresses (``saddr``/``daddr`` matches, with named sets of
literal elements inlined and ranges summarised into prefixes) and interfaces (``iif``/``oif``/
``iifname``/``oifname``) are picked out of the match expressions. A ``!=`` match is a negation: its
values go to ``excluded_addresses`` / ``excluded_interfaces``. A verdict map (``ip saddr vmap @m``
or an inline ``vmap { ... }``) gives the rule the verdict of its most acting element (drop, then
reject, queue, accept ...) and the addresses (or interfaces) mapped to that verdict.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from probes.firewall_facts import IPT_LIMIT_MATCHES, IPT_VERDICTS, FirewallChain, FirewallRule, normalize_network
from probes.json_text import load_host_json
from probes.probe import ProbeParseError

_NFT_VERDICTS = ("accept", "drop", "reject", "queue", "return")
#: statements that limit a rate, a volume or a connection count (``ct count`` is nft's connlimit)
_NFT_LIMITS = ("limit", "quota", "meter", "ct count")
_META_BARE = {"iifname", "oifname", "iif", "oif", "iiftype", "oiftype"}


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
            return str(k) if k in _META_BARE else f"meta {k}"
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
        if key in _NFT_VERDICTS + ("continue",) and body is None:
            return key
        if key in ("jump", "goto") and isinstance(body, dict):
            return f"{key} {body.get('target')}"
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
    if key == "vmap" and isinstance(body, dict):
        return f"{_render_value(body.get('key'))} vmap {_render_map_data(body.get('data'))}"
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


def _render_map_data(data: Any) -> str:
    """``@name`` or ``{ 10.0.0.0/8 : accept, 192.0.2.7 : drop }``."""
    if isinstance(data, dict) and isinstance(data.get("set"), list):
        return "{ " + ", ".join(
            f"{_render_value(e[0])} : {_render_value(e[1])}" if isinstance(e, list) and len(e) == 2 else _render_value(e)
            for e in data["set"]) + " }"
    return _render_value(data)


#: verdicts by how much they act on packets: a verdict map is judged by its most acting element
_VERDICT_RANK = ("drop", "reject", "queue", "jump", "goto", "return", "continue", "accept")


def _element_verdict(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        (key, body), = value.items()
        if key in ("jump", "goto") and isinstance(body, dict):
            return f"{key} {body.get('target')}"
        if key in _VERDICT_RANK:
            return key
    return None


def _vmap_verdict(body: Any, family: str, table: str, maps: dict[tuple[str, str, str], list[Any]]) -> tuple[str | None, list[Any]]:
    """(verdict, keys mapped to it) of a ``vmap`` statement: its most acting element's verdict."""
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, str) and data.startswith("@"):
        elems = maps.get((family, table, data[1:]), [])
    elif isinstance(data, dict) and isinstance(data.get("set"), list):
        elems = data["set"]
    else:
        elems = []
    by_verdict: dict[str, list[Any]] = {}
    for e in elems:
        if isinstance(e, list) and len(e) == 2 and (verdict := _element_verdict(e[1])) is not None:
            by_verdict.setdefault(verdict, []).append(e[0])
    if not by_verdict:
        return None, []
    best = min(by_verdict, key=lambda v: _VERDICT_RANK.index(v.split()[0]))
    return best, by_verdict[best]


def _nft_rule(obj: dict[str, Any], sets: dict[tuple[str, str, str], list[Any]],
              maps: dict[tuple[str, str, str], list[Any]] | None = None) -> FirewallRule:
    family, table, chain = obj["family"], obj["table"], obj["chain"]
    exprs = obj.get("expr", [])
    if not isinstance(exprs, list):
        raise ProbeParseError(f"firewall: nft rule in {family} {table} {chain}: expr is not a list")
    verdict = None
    limit = False
    addresses: list[str] = []
    interfaces: list[str] = []
    excluded_addresses: list[str] = []
    excluded_interfaces: list[str] = []
    for stmt in exprs:
        if not isinstance(stmt, dict) or len(stmt) != 1:
            continue
        (key, body), = stmt.items()
        if key in _NFT_VERDICTS:
            verdict = key
        elif key in ("jump", "goto") and isinstance(body, dict):
            verdict = f"{key} {body.get('target')}"
        elif key == "xt" and isinstance(body, dict) and body.get("type") == "target":
            verdict = IPT_VERDICTS.get(str(body.get("name")), verdict)
        elif key in _NFT_LIMITS or (key == "xt" and isinstance(body, dict) and str(body.get("name")) in IPT_LIMIT_MATCHES):
            limit = True
        elif key == "vmap":
            verdict, keys = _vmap_verdict(body, family, table, maps or {})
            left = body.get("key") if isinstance(body, dict) else None
            addresses += _match_networks(left, keys)
            interfaces += _match_interfaces(left, keys)
        elif key == "match" and isinstance(body, dict):
            left = body.get("left")
            values = _literal_values(body.get("right"), family, table, sets)
            negated = body.get("op") == "!="
            (excluded_addresses if negated else addresses).extend(_match_networks(left, values))
            (excluded_interfaces if negated else interfaces).extend(_match_interfaces(left, values))
            if isinstance(left, dict) and isinstance(left.get("ct"), dict) and left["ct"].get("key") == "count":
                limit = True
    text = " ".join(_render_statement(s) for s in exprs)
    comment = obj.get("comment")
    if isinstance(comment, str) and comment:
        # as `nft list` prints it: the rule's text names the rule, its comment included
        text += ' comment "%s"' % comment.replace('"', "")
    return FirewallRule(
        backend="nft", family=family, table=table, chain=chain, verdict=verdict, limit=limit,
        addresses=addresses, interfaces=interfaces, excluded_addresses=excluded_addresses,
        excluded_interfaces=excluded_interfaces, text=text,
    )


def _match_networks(left: Any, values: list[Any]) -> list[str]:
    if isinstance(left, dict) and isinstance(left.get("payload"), dict) and left["payload"].get("field") in ("saddr", "daddr"):
        return [n for v in values for n in _to_networks(v)]
    return []


def _match_interfaces(left: Any, values: list[Any]) -> list[str]:
    if isinstance(left, dict) and isinstance(left.get("meta"), dict) and left["meta"].get("key") in ("iifname", "oifname", "iif", "oif"):
        return [str(v) for v in values if isinstance(v, (str, int)) and not isinstance(v, bool)]
    return []


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
    data = load_host_json(text, "firewall: nft -j output")
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
    maps = {
        (o["family"], o["table"], o["name"]): (o.get("elem") if isinstance(o.get("elem"), list) else [])
        for k, o in objs if k == "map"
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
            rule = _nft_rule(o, sets, maps)
            chain = chains.get((o["family"], o["table"], o["chain"]))
            if chain is None:
                raise ProbeParseError(f"firewall: nft -j: rule for undeclared chain {o['family']} {o['table']} {o['chain']}")
            chain.rule_count += 1
            rules.append(rule)
    return list(chains.values()), rules, skipped
