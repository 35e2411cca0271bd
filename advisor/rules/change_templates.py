"""A rule's remediation as data: change templates rendered into a failed finding's changes.

In a rule pack::

    remediation:
      text: Raise {subject} to {target} and persist it.
      changes:
        - {adapter: sysctl, key: "{subject}", target: "{target}"}
        - {adapter: firewall, each: rules, key: "{item}", target: absent}

``{name}`` is replaced by a finding field (``host``, ``subject``, ``observed``, ``expected``), a value
the rule hands over (an analytic rule's ``values``: ``target``, ``rules``, ...) or, with ``each``, the
current item (``{item}``, or ``{item.key}`` for a mapping item). ``${var}`` is a profile variable.
Templating is plain substitution of known names: no expressions, no attribute access, no Jinja,
so a value read from a host is only ever text in the result. A template naming an unknown field
is a rule-pack error.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from advisor.rules.profile_vars import PROFILE_VAR, lookup, split_vars, whole_var

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\}")
_WHOLE_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\}")

#: fields every finding offers to its templates
FINDING_FIELDS = ("host", "subject", "observed", "expected")


class TemplateError(ValueError):
    pass


class ChangeTemplate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: the adapter (advisor.adapters) that applies the change: sysctl, firewall, block, gpfs, ...
    adapter: str
    key: str
    target: Any
    #: render once per item of this list value (the finding's ``values``); ``{item}`` names it
    each: str | None = None
    #: the host the change is for (default: each host of the finding)
    host: str | None = None

    def fields(self) -> set[str]:
        out: set[str] = set()
        for text in (self.key, self.target, self.host):
            if isinstance(text, str):
                out |= {m.group(1).split(".")[0] for m in _FIELD.finditer(PROFILE_VAR.sub("", text))}
        return out


class RemediationSpec(BaseModel):
    """What a rule pack says about fixing a rule's failures."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    #: the changes that fix a failure (none: the remediation is done by hand, ``text`` says how)
    changes: list[ChangeTemplate] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _no_role_vars(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("role" in data or "vars" in data):
            raise ValueError("'role'/'vars' are replaced by 'changes: [{adapter, key, target}]' (docs/rules.md)")
        return data

    @property
    def role(self) -> str | None:
        """The Ansible role of the first change's adapter (informative)."""
        if not self.changes:
            return None
        from advisor.adapters import get_adapter

        a = get_adapter(self.changes[0].adapter)
        return a.role if a else None


def _lookup(name: str, fields: dict[str, Any]) -> Any:
    head, _, attr = name.partition(".")
    if head not in fields:
        raise TemplateError(f"unknown template field {{{name}}} (known: {', '.join(sorted(fields))})")
    v = fields[head]
    if attr:
        if not isinstance(v, dict) or attr not in v:
            raise TemplateError(f"template field {{{name}}}: {head} has no {attr!r}")
        v = v[attr]
    return v


def render_value(template: Any, fields: dict[str, Any], variables: dict[str, Any]) -> Any:
    """Substitute ``${var}`` (profile variables) and ``{field}`` (finding fields) in one value.
    A template that is one whole placeholder keeps the value's type (a number stays a number)."""
    if not isinstance(template, str):
        return template
    name = whole_var(template)
    if name:
        return lookup(name, variables, TemplateError)
    whole = _WHOLE_FIELD.fullmatch(template.strip())
    if whole:
        return _lookup(whole.group(1), fields)
    # profile variables first, then fields; a value substituted in is never scanned again
    return "".join(str(lookup(var, variables, TemplateError)) if var else
                   _FIELD.sub(lambda m: str(_lookup(m.group(1), fields)), piece)
                   for piece, var in split_vars(template))


def render_text(text: str, fields: dict[str, Any]) -> str:
    """A remediation sentence with ``{name}`` replaced by the finding's fields and the rule's
    values where they are known (other braces stay as written: the text is for people)."""

    def sub(m: re.Match) -> str:
        try:
            v = _lookup(m.group(1), fields)
        except TemplateError:
            return m.group(0)
        return m.group(0) if v is None else str(v)

    return _FIELD.sub(sub, text or "")


def render_change_groups(templates: list[ChangeTemplate], hosts: list[str], fields: dict[str, Any],
                         variables: dict[str, Any]) -> list[dict[str, Any]]:
    """The templates rendered for a finding: ``[{hosts, adapter, key, target}]``. A template that
    names neither ``{host}`` nor a ``host:`` is rendered once for all the finding's hosts (a
    finding of 10,000 hosts: one rendering, not 10,000); one that does, once per host."""
    out: list[dict[str, Any]] = []
    for t in templates:
        items: list[Any] = [None]
        if t.each:
            seq = fields.get(t.each)
            if seq is None:
                continue  # the rule had nothing of this kind to change
            if not isinstance(seq, (list, tuple)):
                raise TemplateError(f"'each: {t.each}' needs a list, got {type(seq).__name__}")
            items = list(seq)
        per_host = bool(t.host) or "host" in t.fields()
        for item in items:
            f = dict(fields, item=item) if t.each else fields
            if not per_host:
                hf = dict(f, host=None)
                out.append({"hosts": list(hosts), "adapter": t.adapter, "key": str(render_value(t.key, hf, variables)),
                            "target": render_value(t.target, hf, variables)})
                continue
            targets = [str(render_value(t.host, f, variables))] if t.host else hosts
            for h in targets:
                hf = dict(f, host=h)
                out.append({"hosts": [h], "adapter": t.adapter, "key": str(render_value(t.key, hf, variables)),
                            "target": render_value(t.target, hf, variables)})
    return out


def render_changes(templates: list[ChangeTemplate], hosts: list[str], fields: dict[str, Any],
                   variables: dict[str, Any]) -> list[dict[str, Any]]:
    """The templates rendered for a finding, one entry per host: ``[{host, adapter, key, target}]``."""
    return [{"host": h, "adapter": g["adapter"], "key": g["key"], "target": g["target"]}
            for g in render_change_groups(templates, hosts, fields, variables) for h in g["hosts"]]
