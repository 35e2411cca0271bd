"""A finding's changes checked against what its rule declares: a plan is derived, never copied.

A saved scan (``plan --scan FILE``) is a file anyone who could write it may have edited: a finding
``NET-TCP-SACK`` whose ``changes`` say ``kernel.core_pattern = |/bin/sh -c ...`` reached the
Ansible project as it was. The planner now takes a change only when the finding's rule, as this
site's rule packs define it (the shipped ones and the site's ``rules_dirs``), declares its
(adapter, key):

* the rule's ``remediation.changes`` templates give each key's form: a profile variable
  (``${var}``) is its value, ``{subject}`` the finding's subject, ``{host}`` the change's host, a
  value the rule hands over (``{item}``, ``{target}``, ...) any text; a change whose host is not
  one of the finding's hosts is declared only by a template that names its own ``host:``;
* a target the template fixes (a literal or profile variables) is derived here, not read: a
  report that asks ``net.ipv4.tcp_sack = 0`` of NET-TCP-SACK is planned at the rule's ``1``;
* the adapter then checks the key's form (``Adapter.key_problem``): the sysctl adapter takes net.*
  and vm.* only, a path such as ``../../../etc/passwd`` is no adapter's key.

Anything else is refused, naming the rule, the adapter and the key, and listed under "cannot apply".
"""

from __future__ import annotations

import re
from typing import Any

from advisor.adapters import Adapter
from advisor.rules.change_templates import ChangeTemplate, render_value
from advisor.rules.profile_vars import PROFILE_VAR, split_vars
from advisor.rules.specs import RuleCatalog

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\}")
#: the template fields the planner knows from the finding and the change itself
_KNOWN = ("subject", "host")


class DeclaredChanges:
    """The rules' declared changes, for one site's catalog and profile variables."""

    def __init__(self, catalog: RuleCatalog, variables: dict[str, Any]) -> None:
        self.catalog = catalog
        self.variables = variables
        self._patterns: dict[tuple[int, str | None, str], re.Pattern | None] = {}
        #: id(finding) -> its hosts as a set (a finding of 10,000 hosts has as many changes)
        self._hosts: dict[int, tuple[Any, frozenset[str]]] = {}

    def check(self, finding: Any, change: Any, adapter: Adapter | None) -> tuple[Any, str | None]:
        """(the target to plan, None) when the rule declares the change; (None, why) when it does not."""
        rule = self.catalog.rules.get(finding.rule_id)
        if rule is None:
            return None, (f"{finding.rule_id} is not a rule of this site's rule packs: a saved scan's changes are "
                          "planned only as their rules declare them")
        fields = {"subject": finding.subject, "host": change.host}
        held = self._hosts.get(id(finding))
        if held is None or held[0] is not finding:
            held = self._hosts[id(finding)] = (finding, frozenset(finding.hosts))
        for t in rule.remediation.changes:
            if t.adapter != change.adapter or (not t.host and change.host not in held[1]):
                continue
            pattern = self._key_pattern(t, finding.subject, change.host)
            if pattern is None or not pattern.fullmatch(change.key):
                continue
            if adapter is not None:
                why = adapter.key_problem(change.key)
                if why:
                    return None, why
            return self._target(t, fields, change, adapter), None
        declared = ", ".join(f"{t.adapter} {t.key}" for t in rule.remediation.changes) or "none"
        return None, (f"{finding.rule_id} does not declare {change.adapter} {str(change.key)[:80]!r} "
                      f"(its remediation changes: {declared}); a saved scan's changes are planned only as their "
                      "rules declare them")

    def _key_pattern(self, t: ChangeTemplate, subject: str | None, host: str) -> re.Pattern | None:
        """The keys ``t`` renders to, as a regex (None: it renders none here)."""
        ident = (id(t), subject if "{subject}" in t.key else None, host if "{host}" in t.key else "")
        if ident not in self._patterns:
            self._patterns[ident] = self._compile(t.key, {"subject": subject, "host": host})
        return self._patterns[ident]

    def _compile(self, template: str, known: dict[str, Any]) -> re.Pattern | None:
        out = []
        for piece, var in split_vars(template):
            if var:
                if var not in self.variables:
                    return None
                out.append(re.escape(str(self.variables[var])))
                continue
            pos = 0
            for m in _FIELD.finditer(piece):
                out.append(re.escape(piece[pos:m.start()]))
                name = m.group(1)
                if name in _KNOWN:
                    if known.get(name) is None:
                        return None
                    out.append(re.escape(str(known[name])))
                else:  # a value the rule hands over: any text (the adapter checks its form)
                    out.append(".+")
                pos = m.end()
            out.append(re.escape(piece[pos:]))
        return re.compile("".join(out), re.S)

    def _target(self, t: ChangeTemplate, fields: dict[str, Any], change: Any, adapter: Adapter | None) -> Any:
        """The template's own target where it fixes one (a literal, profile variables, the finding's
        subject or host), else the change's (a value the rule computed: the adapter checks it)."""
        target = t.target
        if isinstance(target, str) and any(m.group(1) not in _KNOWN for m in _FIELD.finditer(PROFILE_VAR.sub("", target))):
            return change.target
        try:
            derived = render_value(target, fields, self.variables)
        except ValueError:
            return change.target
        return derived if adapter is None else adapter.normalize_target(change.key, derived)


def declared_changes(report: Any, site: Any) -> DeclaredChanges:
    """The changes the site's rules declare, with the variables of the report's profiles when they are
    profiles of this site (names only: a saved scan names no file to read), else the site's own."""
    from advisor.rules.specs import available_profiles, load_catalog, resolve_profiles

    catalog = load_catalog(site_dirs=site.rules_dirs, storage_systems=site.storage_systems)
    names = [str(n) for n in getattr(report, "profiles", None) or []]
    if not names or not set(names) <= set(available_profiles(None, catalog.site_dirs)):
        names = site.profiles
    resolved = resolve_profiles(names, catalog, overrides=site.vars)
    return DeclaredChanges(catalog, resolved.vars)
