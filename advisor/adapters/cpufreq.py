"""The CPU frequency governor: role ``cpu_tuning``, variable ``cpu_tuning_governor``. The one key is
``governor``; its current value comes from the ``cpu.frequency`` probe (every policy's governor, or
their distinct ones joined by ``,``). The role writes every policy's ``scaling_governor`` now and
persists the governor as the host does: a tuned profile when tuned runs (tuned sets the governor at
every boot and would undo anything else), else a systemd unit run at boot. The persisted value is not
read by the scan (None)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change

PROBE = "cpu.frequency"
KEY = "governor"


class CpufreqAdapter(Adapter):
    name = "cpufreq"
    role = "cpu_tuning"
    play_title = "Set the CPU frequency governor now and at boot (tuned profile or a systemd unit)"
    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        return (facts.get(PROBE) or {}).get("governor") if key == KEY else None, None

    def key_problem(self, key: str) -> str | None:
        return None if key == KEY else f"cpu_tuning sets the CPU frequency governor (key 'governor'), not {key[:80]!r}"

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        f = facts.get(PROBE) or {}
        if not f.get("policies"):
            return "no cpufreq policy on this host (the firmware or the hypervisor sets the frequency)"
        offered = f.get("available") or []
        if offered and str(change.target) not in offered:
            return f"the {f.get('driver') or 'cpufreq'} driver offers no governor {change.target} (it offers {', '.join(offered)})"
        return None

    def label(self, key: str) -> str:
        return "CPU frequency governor"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        return {"cpu_tuning_governor": str(changes[-1].target)}


ADAPTER = CpufreqAdapter()
