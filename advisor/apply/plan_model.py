"""What a plan holds (plan.json, PLAN.md): the changes it makes, per-host role variables, and
what it leaves out and why. Built by advisor.apply.planner; written by advisor.apply.project."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.util.errors import StoradviseError
from advisor.model.findings import Change, ChangeScope

SCOPE_TEXT = {
    ChangeScope.both: "runtime and persisted",
    ChangeScope.runtime: "runtime only (the persisted value is already right)",
    ChangeScope.persisted: "persisted file only (the runtime value is already right)",
}


def registered_roles() -> list[str]:
    from advisor.adapters import adapters

    return list(dict.fromkeys(a.role for a in adapters().values()))


@dataclass
class PlannedChange:
    """One change a plan makes: the change (the values the scan saw, the target it resolved, the scope),
    the Ansible role that makes it, how PLAN.md names the setting, and the rules that asked for it."""

    change: Change
    role: str
    #: how PLAN.md names the setting
    setting: str
    rule_ids: list[str]

    def as_dict(self) -> dict[str, Any]:
        c = self.change
        return {"host": c.host, "adapter": c.adapter, "role": self.role, "key": c.key,
                "setting": self.setting, "runtime": c.runtime, "persisted": c.persisted,
                "target": c.target, "scope": c.scope.value,
                # the names plan.json had before runtime/persisted/target (kept for readers of it)
                "old": c.persisted if c.scope == ChangeScope.persisted else c.runtime, "new": c.target,
                "rules": self.rule_ids,
                "boot": None if c.boot is None else c.boot.model_dump(mode="json")}


@dataclass
class Plan:
    site: str
    scan_started_at: str
    #: the ordered roles of the registered adapters (apply-tuning.yml's order)
    role_order: list[str] = field(default_factory=lambda: registered_roles())
    #: host -> role -> variables (written as the group_vars of the host's change set and its
    #: host_vars, advisor.apply.changesets)
    host_vars: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    changes: list[PlannedChange] = field(default_factory=list)
    #: changes that never reach Ansible: {host, adapter, key, target, rules, reason}
    cannot_apply: list[dict[str, Any]] = field(default_factory=list)
    #: findings that failed but name no change to make: {rule, hosts, severity, subject, text}
    manual: list[dict[str, Any]] = field(default_factory=list)
    #: failed findings below --min-severity: {rule, hosts, severity, subject}
    below_min_severity: list[dict[str, Any]] = field(default_factory=list)
    min_severity: str = "low"
    #: hosts left out: {host, reason}
    refused: list[dict[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: changes only an analysis of symptoms proposed that explain no symptom: {host, adapter, key, target, rules, reason}
    set_aside: list[dict[str, Any]] = field(default_factory=list)
    #: the scan's causes, worst first, with the planned changes of each (advisor.apply.plan_outcome)
    causes: list[dict[str, Any]] = field(default_factory=list)
    #: every path and metric after exactly the planned changes, by-hand causes still in place
    prediction: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        return sorted(self.host_vars)

    def roles_of(self, host: str) -> list[str]:
        return [r for r in self.role_order if r in self.host_vars.get(host, {})]

    def flat_vars(self, host: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for role in self.roles_of(host):
            out.update(self.host_vars[host][role])
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "site": self.site, "scan_started_at": self.scan_started_at,
            "hosts": {h: {"roles": self.roles_of(h), "vars": self.flat_vars(h)} for h in self.hosts},
            "changes": [c.as_dict() for c in self.changes],
            "cannot_apply": self.cannot_apply,
            "manual": self.manual,
            "min_severity": self.min_severity,
            "below_min_severity": self.below_min_severity,
            "refused": self.refused, "notices": self.notices,
            "set_aside": self.set_aside, "causes": self.causes, "plan_prediction": self.prediction,
        }


class PlanError(StoradviseError):
    pass
