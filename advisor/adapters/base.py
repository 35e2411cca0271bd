"""What every remediation adapter provides (advisor.adapters registers them).

An adapter is the one place that knows one kind of setting: the Ansible role that changes it and
the variables that role reads, how the scan's facts show the setting's current runtime and
persisted values, and whether a host can change it at all. The rule engine asks an adapter for the
current values of a change it renders; the planner asks it whether the change can be made and for
the role variables. Nothing else in the pipeline knows a role by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from advisor.findings import Change

#: probe name -> that probe's facts (plain data) on one host; a probe that did not run is absent
HostProbeFacts = Mapping[str, dict[str, Any]]

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)i?B?\s*$", re.I)
_MULT = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_BOOL = {"true": "1", "false": "0", "yes": "1", "no": "0", "on": "1", "off": "0", "enable": "1", "disable": "0"}


def same_value(a: Any, b: Any) -> bool:
    """Values equal as text (blanks and case ignored), as booleans, as integers or as sizes
    (1G == 1024M). None equals only None."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        a, b = str(a).lower(), str(b).lower()
    sa, sb = " ".join(str(a).split()).lower(), " ".join(str(b).split()).lower()
    if sa == sb:
        return True
    if sa in _BOOL and sb in _BOOL:
        return _BOOL[sa] == _BOOL[sb]
    ma, mb = _SIZE.match(sa), _SIZE.match(sb)
    if ma and mb:
        return float(ma.group(1)) * _MULT[ma.group(2).upper()] == float(mb.group(1)) * _MULT[mb.group(2).upper()]
    return False


def size_value(v: Any) -> float | None:
    m = _SIZE.match(str(v)) if v is not None else None
    return float(m.group(1)) * _MULT[m.group(2).upper()] if m else None


def int_fields(v: Any) -> list[int] | None:
    fields = str(v).split() if v is not None else []
    if not fields or not all(re.fullmatch(r"-?\d+", f) for f in fields):
        return None
    return [int(f) for f in fields]


class Adapter:
    """The default behaviour; an adapter module subclasses it and sets ``ADAPTER``."""

    #: the name rule packs use in ``remediation.changes[].adapter``
    name: str = ""
    #: the Ansible role (playbooks/roles/<role>) that applies this adapter's changes
    role: str = ""
    #: its changes act on the network (verify then measures the mesh again)
    touches_network: bool = False
    #: the probes whose facts ``current`` reads (None: any probe); the rule engine hands it only
    #: those, and reads the current values once per group of hosts holding the same facts of them
    probes: tuple[str, ...] | None = None

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        """(runtime, persisted) values of ``key`` as the scan saw them; None where unknown."""
        raise NotImplementedError

    def same(self, a: Any, b: Any) -> bool:
        return same_value(a, b)

    def normalize_target(self, key: str, target: Any) -> Any:
        return target

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        """Why the host cannot make ``change`` (None: it can, as far as the scan knows).

        ``host_vars`` are the site file's host settings (``vars`` plus a storage kind's host keys)."""
        return None

    def resolve(self, key: str, a: Any, b: Any) -> Any | None:
        """The one target when two rules ask for ``a`` and ``b``: the larger safe value, or None
        when the two cannot be ordered (the planner then keeps the more severe rule's)."""
        na, nb = int_fields(a), int_fields(b)
        if na and nb and len(na) == len(nb):
            return " ".join(str(max(x, y)) for x, y in zip(na, nb))
        sa, sb = size_value(a), size_value(b)
        if sa is not None and sb is not None:
            return a if sa >= sb else b
        return None

    def label(self, key: str) -> str:
        """How PLAN.md names the setting."""
        return key

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        """The role variables (host_vars/<host>.yml) that make ``changes`` on one host."""
        raise NotImplementedError

    def notice(self, host: str, changes: list[Change], host_vars: Mapping[str, Any]) -> str | None:
        """What PLAN.md's notices say about ``changes`` on ``host`` (e.g. when they take effect). Default: nothing."""
        return None

    def finish(self, plan_vars: dict[str, dict[str, Any]]) -> None:
        """Cross-host adjustments once every host's variables of this role are known
        (``plan_vars``: host -> this role's variables). Default: nothing."""
