"""PLAN.md: what a plan changes, with identical changes across hosts folded into one row.

Changes are folded twice: hosts that get the same setting from the same values for the same rules
share one row (``wn[0001-9996]``); then rows that differ only in the setting's name, on the same
hosts with the same values (one attribute on four LUNs), fold their settings the same way
(``SAN gpfs_data[01-04] cacheReadPrefetch``). "Cannot apply here", the notices, the by-hand list
and "Left out" fold by hosts the same way.

``group_changes`` makes the ordered list of change groups (by role, then setting); ``change_table``
renders any ordered list of them, so another ordering (e.g. by cause) only has to hand over its own
list to ``plan_markdown(..., groups=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.apply.plan_causes import cause_lines, order_by_cause, set_aside_lines
from advisor.apply.plan_model import SCOPE_TEXT, Plan, PlannedChange
from advisor.model.findings import BootSource, Change, ChangeScope
from advisor.util.host_ranges import fold_hosts, hosts_text
from advisor.report.safe_text import markdown_text


#: what a ``?`` in the runtime or persisted column means (PLAN.md and the console say it under the table)
UNKNOWN_VALUE = ("not known from the scan: the running value could not be read (runtime), or no file sets "
                 "the setting and its boot default is not known (persisted)")


@dataclass
class ChangeGroup:
    """One PLAN.md row: the same change on ``hosts`` (of one or more settings)."""

    hosts: list[str]
    role: str
    #: the setting names as PLAN.md shows them, folded (``SAN gpfs_data[01-04] writeCacheEnabled``)
    settings: list[str]
    runtime: Any
    #: the persisted cell as shown (``default (1)`` when no file sets the key)
    persisted: str
    target: Any
    scope: ChangeScope
    rule_ids: list[str]
    changes: list[PlannedChange] = field(default_factory=list)


def _fold(items: Iterable[Any], key: Callable[[Any], Hashable], host: Callable[[Any], Iterable[str]],
          setting: Callable[[Any], str]) -> list[tuple[Hashable, list[str], list[str], list[Any]]]:
    """(key, hosts, folded setting names, members): first the hosts of one setting, then the
    settings of one host set."""
    by_setting: dict[tuple[Hashable, str], tuple[set[str], list[Any]]] = {}
    for it in items:
        hosts, members = by_setting.setdefault((key(it), setting(it)), (set(), []))
        hosts.update(host(it))
        members.append(it)
    by_hosts: dict[tuple[Hashable, tuple[str, ...]], tuple[list[str], list[Any]]] = {}
    for (k, name), (hosts, members) in by_setting.items():
        settings, all_members = by_hosts.setdefault((k, tuple(sorted(hosts))), ([], []))
        settings.append(name)
        all_members.extend(members)
    return [(k, list(hosts), fold_hosts(settings), members) for (k, hosts), (settings, members) in by_hosts.items()]


def group_changes(plan: Plan) -> list[ChangeGroup]:
    """The plan's changes folded into rows, in apply order (role, then setting, then hosts)."""
    folded = _fold(plan.changes,
                   key=lambda c: (c.role, _cell(c.change.runtime), persisted_cell(c.change), _cell(c.change.target),
                                  c.change.scope, tuple(c.rule_ids)),
                   host=lambda c: (c.change.host,), setting=lambda c: str(c.setting))
    groups = [ChangeGroup(hosts=hosts, role=members[0].role, settings=settings, runtime=members[0].change.runtime,
                          persisted=persisted_cell(members[0].change), target=members[0].change.target,
                          scope=members[0].change.scope, rule_ids=list(members[0].rule_ids), changes=members)
              for _key, hosts, settings, members in folded]
    order = {r: i for i, r in enumerate(plan.role_order)}
    groups.sort(key=lambda g: (order.get(g.role, len(order)), g.settings, min(g.hosts)))
    return groups


def change_table(groups: list[ChangeGroup]) -> list[str]:
    """The rows of ``groups``, in the order given."""
    lines = ["| hosts | role | setting | runtime | persisted | target | what changes | why |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for g in groups:
        lines.append(f"| {_cell(hosts_text(g.hosts))} | {_cell(g.role)} | {_cell(', '.join(g.settings))} | {_cell(g.runtime)} | "
                     f"{g.persisted} | {_cell(g.target)} | {SCOPE_TEXT[g.scope]} | {', '.join(g.rule_ids)} |")
    return lines


def _cell(v: Any) -> str:
    """A value from a host inside PLAN.md: Markdown escaped, newlines made visible (advisor/report/safe_text.py)."""
    if v is None:
        return "?"
    return markdown_text(v)


def persisted_cell(c: Change) -> str:
    """The persisted value, or the boot default when no file sets it: ``default (1)``."""
    boot = c.boot
    if c.persisted is None and boot is not None and boot.source == BootSource.default:
        return f"default ({_cell(boot.value)})"
    return _cell(c.persisted)


def plan_markdown(plan: Plan, out: Path | str, groups: list[ChangeGroup] | None = None) -> str:
    """PLAN.md of ``plan`` written to ``out``; ``groups``: the change rows in the order to show
    them (default ``group_changes(plan)``)."""
    lines = [f"# storadvise plan: site {_cell(plan.site)}", "",
             f"From the scan started {plan.scan_started_at}. Review, then apply:", "",
             "```", f"cd {out}", "ansible-playbook apply-tuning.yml --check --diff   # what would change",
             "ansible-playbook apply-tuning.yml                  # apply",
             "ansible-playbook rollback.yml                      # put the recorded old values back", "```", ""]
    lines += cause_lines(plan)
    if not plan.hosts:
        lines += ["Nothing to apply: no failed finding names a change this site can make.", ""]
    else:
        n = len(plan.hosts)
        order = "in the order of the causes they serve, then hygiene" if plan.causes else "in apply order"
        lines += ["## Changes", "", f"{len(plan.changes)} change(s) on {n} host(s), {order}; identical changes share "
                  "one row.", ""]
        table = change_table(order_by_cause(plan, group_changes(plan)) if groups is None else groups)
        lines += table + [""]
        if any(" ? |" in row for row in table[2:]):
            lines += [f"`?`: {UNKNOWN_VALUE}.", ""]
    lines += (_cannot_apply(plan) + set_aside_lines(plan) + _notices(plan) + _manual(plan) + _below(plan)
              + _refused(plan))
    return "\n".join(lines)


def _cannot_apply(plan: Plan) -> list[str]:
    if not plan.cannot_apply:
        return []
    lines = ["## Cannot apply here", "", "Never sent to Ansible:", "",
             "| hosts | setting | target | why | rules |", "| --- | --- | --- | --- | --- |"]
    folded = _fold(plan.cannot_apply, key=lambda c: (_cell(c["target"]), _cell(c["reason"]), tuple(c["rules"])),
                   host=lambda c: (c["host"],), setting=lambda c: str(c["setting"]))
    for _key, hosts, settings, members in sorted(folded, key=lambda f: (f[2], min(f[1]))):
        c = members[0]
        lines.append(f"| {_cell(hosts_text(hosts))} | {_cell(', '.join(settings))} | {_cell(c['target'])} | "
                     f"{_cell(c['reason'])} | {', '.join(c['rules'])} |")
    return lines + [""]


def _notices(plan: Plan) -> list[str]:
    """Notices ``"<host>: text"`` of several hosts with the same text fold into one line."""
    if not plan.notices:
        return []
    known = set(plan.hosts) | {c.change.host for c in plan.changes} | {c["host"] for c in plan.cannot_apply}
    by_text: dict[str, set[str]] = {}
    for n in plan.notices:
        host, sep, text = n.partition(": ")
        if sep and host in known:
            by_text.setdefault(text, set()).add(host)
        else:
            by_text.setdefault(n, set())
    lines = ["## Notices", ""]
    for text, hosts in by_text.items():
        lines.append(f"- {_cell(hosts_text(hosts))}: {_cell(text)}" if hosts else f"- {_cell(text)}")
    return lines + [""]


def _by_hosts(entries: list[dict[str, Any]], fields: tuple[str, ...]) -> list[tuple[dict[str, Any], list[str]]]:
    """Entries that differ only in their hosts, once each with the union of their hosts."""
    out: dict[tuple, tuple[dict[str, Any], set[str]]] = {}
    for e in entries:
        first, hosts = out.setdefault(tuple(str(e.get(f)) for f in fields), (e, set()))
        hosts.update(e.get("hosts") or [])
    return [(e, sorted(hosts)) for e, hosts in out.values()]


def _manual(plan: Plan) -> list[str]:
    if not plan.manual:
        return []
    lines = ["## Not automated (do by hand)", ""]
    for m, hosts in _by_hosts(plan.manual, ("rule", "subject", "text")):
        lines.append(f"- {_cell(m['rule'])} on {_cell(hosts_text(hosts))}" + (f" ({_cell(m['subject'])})" if m.get("subject") else "")
                     + f": {_cell(m['text'])}")
    return lines + [""]


def _below(plan: Plan) -> list[str]:
    if not plan.below_min_severity:
        return []
    lines = [f"## Left out: below --min-severity {plan.min_severity}", ""]
    for b, hosts in _by_hosts(plan.below_min_severity, ("rule", "severity", "subject")):
        lines.append(f"- {_cell(b['rule'])} ({b['severity']}) on {_cell(hosts_text(hosts))}"
                     + (f" ({_cell(b['subject'])})" if b.get("subject") else ""))
    return lines + [""]


def _refused(plan: Plan) -> list[str]:
    if not plan.refused:
        return []
    by_reason: dict[str, list[str]] = {}
    for r in plan.refused:
        by_reason.setdefault(r["reason"], []).append(r["host"])
    return ["## Hosts left out", ""] + [f"- {_cell(hosts_text(hosts))}: {_cell(reason)}"
                                        for reason, hosts in by_reason.items()] + [""]
