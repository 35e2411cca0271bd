"""Kernel network settings (``/proc/sys/net``): role ``network_tuning``, variable
``network_tuning_sysctls`` {key: value}. Current values from the ``network.sysctl`` probe
(runtime from /proc/sys, persisted from the sysctl.d files as ``sysctl --system`` applies them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import BootSource, Change, ChangeScope
from advisor.adapters.kernel_defaults import sysctl_default
from advisor.util.shipped_code import module_utils

#: the one key grammar and the families storadvise tunes, shared with the role's module
_keys = module_utils("storadvise_sysctl_keys")

PROBE = "network.sysctl"


def _entry(facts: HostProbeFacts, key: str) -> dict[str, Any] | None:
    return ((facts.get(PROBE) or {}).get("sysctls") or {}).get(key)


class SysctlAdapter(Adapter):
    touches_network = True
    name = "sysctl"
    role = "network_tuning"
    play_title = "Set kernel network parameters now and at boot"

    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        e = _entry(facts, key) or {}
        return e.get("runtime"), e.get("persisted")

    def key_problem(self, key: str) -> str | None:
        """net.* and vm.* only, as the role's module admits (storadvise_sysctl_keys.tunable_problem):
        never kernel.core_pattern and the like."""
        why = _keys.tunable_problem(key)
        return f"{key[:80]!r}: {why}" if why else None

    def normalize_target(self, key: str, target: Any) -> Any:
        return " ".join(str(target).split())

    def default_value(self, facts: HostProbeFacts, key: str) -> tuple[Any, str] | None:
        """The host's own boot default when it reports one (a lab host: its namespace's values at
        creation), else the kernel's documented default (advisor.adapters.kernel_defaults)."""
        own = ((facts.get(PROBE) or {}).get("boot_defaults") or {}).get(key)
        if own is not None:
            return own, "the host's recorded boot values"
        return sysctl_default(key)

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        key = change.key
        if PROBE not in facts:
            return None
        e = _entry(facts, key)
        if e is None:
            return None  # a key the probe did not track: the role will say if it cannot be set
        if e.get("absent"):
            return f"{key} does not exist on this host (no /proc/sys entry: another kernel, or a network namespace)"
        if e.get("writable") is False:
            why = e.get("read_only_reason") or "read-only /proc/sys entry"
            return f"{key} cannot be changed on this host: {why}"
        return None

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"network_tuning_sysctls": {c.key: str(c.target) for c in changes}}
        # boot value already right (the default, no file sets the key): set now, write no file
        runtime_only = sorted(c.key for c in changes if c.scope == ChangeScope.runtime
                              and c.boot is not None and c.boot.source == BootSource.default)
        if runtime_only:
            out["network_tuning_runtime_only"] = runtime_only
        return out


ADAPTER = SysctlAdapter()
