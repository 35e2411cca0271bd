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

from advisor.model.findings import BootSource, BootValue, Change
from advisor.util.shipped_code import canonical

#: probe name -> that probe's facts (plain data) on one host; a probe that did not run is absent
HostProbeFacts = Mapping[str, dict[str, Any]]

#: values compared by meaning (playbooks/module_utils/storadvise_canonical.py, shared with the roles)
same_value = canonical.same_value


def size_value(v: Any) -> float | None:
    return canonical.size_bytes(v)


def int_fields(v: Any) -> list[int] | None:
    fields = str(v).split() if v is not None else []
    if not fields or not all(re.fullmatch(r"-?\d+", f) for f in fields):
        return None
    return [int(f) for f in fields]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: the key of ``facts`` holding the site-wide facts an adapter's ``site_probes`` name
SITE_FACTS = "@site"


class Adapter:
    """The default behaviour; an adapter module subclasses it and sets ``ADAPTER``."""

    #: the name rule packs use in ``remediation.changes[].adapter``
    name: str = ""
    #: the Ansible role (playbooks/roles/<role>) that applies this adapter's changes
    role: str = ""
    #: the title of the role's play in apply-tuning.yml (advisor.apply.playbooks_gen)
    play_title: str = ""
    #: its changes act on the network (verify then measures the mesh again)
    touches_network: bool = False
    #: the probes whose facts ``current`` reads (None: any probe); the rule engine hands it only
    #: those, and reads the current values once per group of hosts holding the same facts of them
    probes: tuple[str, ...] | None = None
    #: probes whose facts on every host of the site ``current`` and ``boot`` also read, where a
    #: setting's persisted home is another host (a Lustre client's permanent parameters live on the
    #: MGS): they find them in ``facts[SITE_FACTS]``, {probe: {host: facts}}
    site_probes: tuple[str, ...] = ()

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        """(runtime, persisted) values of ``key`` as the scan saw them; None where unknown."""
        raise NotImplementedError

    def key_problem(self, key: str) -> str | None:
        """Why ``key`` can never be one of this adapter's settings (None: it can). The planner asks it
        of every change before anything else (a saved scan's change may name any text). Default: a
        key of at most 4096 characters, without control characters or a ``..`` path component."""
        if not key or len(key) > 4096:
            return "not a setting name (empty or longer than 4096 characters)"
        if _CONTROL.search(key):
            return "a setting name holds no control characters"
        if ".." in re.split(r"[/\\]", key):
            return "a setting name is not a path out of its place ('..')"
        return None

    def default_value(self, facts: HostProbeFacts, key: str) -> tuple[Any, str] | None:
        """(value, source) the setting has at boot when no file sets it: the kernel's or the
        service's default. None: unknown (the default of the default)."""
        return None

    def boot(self, facts: HostProbeFacts, key: str, persisted: Any) -> BootValue | None:
        """The value ``key`` gets at the next boot: the persisted value, else the default."""
        if persisted is not None:
            return BootValue(value=persisted, source=BootSource.file)
        found = self.default_value(facts, key)
        if found is None:
            return None
        return BootValue(value=found[0], source=BootSource.default, origin=found[1])

    def same(self, a: Any, b: Any) -> bool:
        return same_value(a, b)

    def normalize_target(self, key: str, target: Any) -> Any:
        return target

    def host_target(self, facts: HostProbeFacts, key: str, target: Any) -> Any:
        """The target on one host, for a rule's target that the host's own facts decide (a NIC ring's
        ``max``: that NIC's maximum). Default: the target as the rule gives it."""
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

    def finish(self, plan_vars: dict[str, dict[str, Any]], facts: Mapping[str, HostProbeFacts]) -> list[str] | None:
        """Cross-host adjustments once every host's variables of this role are known
        (``plan_vars``: host -> this role's variables; ``facts``: every host's facts). It may add a
        host that runs the role for the others (a cluster's management host). Returns PLAN.md
        notices about them. Default: nothing."""
        return None
