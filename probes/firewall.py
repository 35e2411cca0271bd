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

Persisted rulesets: the script also prints, read only, the iptables-save files (the firewall
role's ``firewall_iptables_files``) and the nft script (``firewall_nftables_conf``) a host loads at
boot, each in a ``persisted <family|nft> <path>`` section; ``parse`` keeps their text in
``persisted_files``. Their canonical form is computed on the controller (advisor/adapters/firewall_canonical.py).

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

import re
import shlex

from probes.firewall_facts import (  # noqa: F401  (re-exported: the probe's facts model)
    IPT_LIMIT_MATCHES,
    IPT_VERDICTS,
    FirewallChain,
    FirewallFacts,
    FirewallRule,
    PersistedRuleset,
    normalize_network,
)
from probes.nftables_json import parse_nft_json
from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError, split_sections

_TOOLS = (("iptables-save", "iptables-save"), ("ip6tables-save", "ip6tables-save"), ("nft", "nft -j list ruleset"))
_EXIT_RE = re.compile(r"^@@exit (\d+)$")


#: the iptables-save files loaded at boot, per family (the firewall role's ``firewall_iptables_files``)
DEFAULT_PERSISTED_IPTABLES = {"ip": ["/etc/iptables/rules.v4", "/etc/sysconfig/iptables"],
                              "ip6": ["/etc/iptables/rules.v6", "/etc/sysconfig/ip6tables"]}
PERSISTED_SECTION = "persisted "


def persisted_iptables_paths(variables: dict) -> list[tuple[str, str]]:
    """(family, path) of the iptables-save files a host loads at boot: the firewall role's
    ``firewall_iptables_files`` variable when the site sets it, else the distributions' paths."""
    given = variables.get("firewall_iptables_files")
    files = given if isinstance(given, dict) else DEFAULT_PERSISTED_IPTABLES
    out = []
    for family in ("ip", "ip6"):
        for path in files.get(family) or []:
            if isinstance(path, str) and path.startswith("/") and "\n" not in path:
                out.append((family, path))
    return out


def persisted_nft_path(variables: dict) -> str | None:
    """The nft script a host loads at boot: the firewall role's ``firewall_nftables_conf``, else
    /etc/nftables.conf (an empty value: not looked at)."""
    given = variables.get("firewall_nftables_conf", "/etc/nftables.conf")
    return given if isinstance(given, str) and given.startswith("/") and "\n" not in given else None


def _firewall_script(persisted: list[tuple[str, str]] | None = None) -> str:
    lines = [
        "cap() { name=$1; shift; echo \"@@section $name\"; "
        "{ err=$( { \"$@\" 3>&-; echo \"@@exit $?\" >&3; } 2>&1 1>&3 ); } 3>&1; "
        "if [ -n \"$err\" ]; then echo \"@@section $name.stderr\"; printf '%s\\n' \"$err\"; fi; }",
        "found=0",
    ]
    for name, cmd in _TOOLS:
        lines.append(f"if command -v {name} >/dev/null 2>&1; then found=1; cap {name} {cmd}; fi")
    # the persisted ruleset, read only: its canonical form is computed on the controller
    for family, path in persisted or []:
        q = shlex.quote(path)
        lines.append(f'if [ -f {q} ] && [ -r {q} ]; then echo "@@section {PERSISTED_SECTION}{family} "{q}; cat {q}; echo; fi')
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


# ---------------------------------------------------------------------------------------------
# iptables-save
# ---------------------------------------------------------------------------------------------

_BUILTIN_HOOKS = {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}


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
    """One ``-A`` line; ``-j`` to a chain declared in the table is a jump, other targets (LOG, MARK ...) no verdict.

    ``! -d NET`` (and the old ``-d ! NET``) is a negation: NET goes to ``excluded_addresses``, not ``addresses``.
    """
    verdict = None
    limit = False
    addresses: list[str] = []
    interfaces: list[str] = []
    excluded_addresses: list[str] = []
    excluded_interfaces: list[str] = []
    negate = False
    for i, tok in enumerate(tokens):
        if tok == "!":
            negate = True
            continue
        arg = tokens[i + 1] if i + 1 < len(tokens) else ""
        negated, negate = negate, False
        if arg == "!" and tok in ("-s", "--source", "-d", "--destination", "-i", "--in-interface", "-o", "--out-interface"):
            negated, arg = True, tokens[i + 2] if i + 2 < len(tokens) else ""
        if tok in ("-j", "--jump"):
            if arg in IPT_VERDICTS:
                verdict = IPT_VERDICTS[arg]
            elif arg in user_chains:
                verdict = f"jump {arg}"
        elif tok in ("-g", "--goto"):
            verdict = f"goto {arg}"
        elif tok in ("-m", "--match") and arg in IPT_LIMIT_MATCHES:
            limit = True
        elif tok in ("-s", "--source", "-d", "--destination"):
            nets = [n for n in (normalize_network(a) for a in arg.split(",")) if n]
            (excluded_addresses if negated else addresses).extend(nets)
        elif tok in ("-i", "--in-interface", "-o", "--out-interface") and arg:
            (excluded_interfaces if negated else interfaces).append(arg)
    return FirewallRule(
        backend="iptables", family=family, table=table, chain=tokens[1], verdict=verdict, limit=limit,
        addresses=addresses, interfaces=interfaces, excluded_addresses=excluded_addresses,
        excluded_interfaces=excluded_interfaces, text=line,
    )


class FirewallProbe(Probe):
    name = "firewall"
    title = "Host firewall: iptables and nftables chains, policies and rules"
    needs_root = True
    facts_model = FirewallFacts
    root_paths = {"firewall_iptables_files": ("/etc/iptables/", "/etc/sysconfig/iptables", "/etc/sysconfig/ip6tables"),
                  "firewall_nftables_conf": ("/etc/nftables.conf", "/etc/nftables/", "/etc/sysconfig/nftables.conf")}

    def script(self, ctx: ProbeContext) -> str:
        variables = ctx.vars if ctx is not None else {}
        nft = persisted_nft_path(variables)
        return _firewall_script(persisted_iptables_paths(variables) + ([("nft", nft)] if nft else []))

    def parse(self, text: str) -> FirewallFacts:
        sections = split_sections(text)
        known = {name for name, _ in _TOOLS}
        unknown = [s for s in sections if s and s.removesuffix(".stderr") not in known
                   and not s.startswith(PERSISTED_SECTION)]
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
        for name, body in sections.items():
            if name.startswith(PERSISTED_SECTION):
                family, _, path = name[len(PERSISTED_SECTION):].partition(" ")
                if family in ("ip", "ip6") and path:
                    facts.persisted_files.append(PersistedRuleset(family=family, path=path, text=body))
                elif family == "nft" and path:
                    facts.persisted_files.append(PersistedRuleset(backend="nft", family="", path=path, text=body))
        return facts
