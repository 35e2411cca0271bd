"""Lustre client tunables: role ``lustre_tuning``, variables ``lustre_params`` {full parameter name:
value} (``lctl set_param`` on the client, the running mount) and, on the MGS, ``lustre_permanent``
{pattern: value} (``lctl set_param -P``, what every client applies when it mounts).

A key is the parameter's full name as ``lctl get_param`` prints it
(``osc.lustre-OST0000-osc-ffff88203b1e4000.max_rpcs_in_flight``); the runtime value comes from the
client's ``lustre.params`` probe. The persisted value is the MGS's: the last record of its params
log whose pattern matches the name (the MGS's own ``lustre.params`` facts, read through
``site_probes``). With no MGS in the scan (or more than one) it is unknown; with the MGS read and no
record matching, the boot value is the client's default, where Lustre documents it.

The plan persists a client's change on the MGS as one pattern per OST/MDT or mount for every client
(``osc.lustre-OST0000-osc-*.max_rpcs_in_flight``): ``finish`` moves the clients' asks there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import SITE_FACTS, Adapter, HostProbeFacts
from advisor.model.findings import Change, ChangeScope
from advisor.util.shipped_code import module_utils

PROBE = "lustre.params"
DEVICE_TYPES = ("osc", "mdc", "llite")
#: a client mount's defaults where the Lustre Operations Manual states one ("Tuning the Client I/O
#: RPC Stream": max_rpcs_in_flight 8 per OSC and MDC, max_mod_rpcs_in_flight 7; "Checksums": on)
DEFAULTS = {("osc", "max_rpcs_in_flight"): "8", ("mdc", "max_rpcs_in_flight"): "8",
            ("mdc", "max_mod_rpcs_in_flight"): "7", ("osc", "checksums"): "1"}
DEFAULTS_SOURCE = "Lustre Operations Manual (a client mount's default)"
#: role variable a client's plan carries to finish: the permanent settings it asks the MGS for
_ASKS = "lustre_permanent_asks"


def split_key(key: str) -> tuple[str, str, str]:
    kind, _, rest = key.partition(".")
    device, _, param = rest.rpartition(".")
    return kind, device, param


def _params():
    return module_utils("storadvise_lustre_params")


def the_mgs(facts: Mapping[str, Any]) -> tuple[str, dict] | None:
    """(host, lustre.params facts) of the one MGS among ``facts`` ({host: that host's lustre.params
    facts}); None when the scan read no MGS's log, or several (which one serves a mount is not read)."""
    found = [(h, f) for h, f in facts.items() if isinstance(f, Mapping) and f.get("mgs") is True]
    return found[0] if len(found) == 1 else None


#: (the last site map read, its MGS): every client of a scan asks of the same map, once per key,
#: and a site of many clients would otherwise walk every host for each of them
_last_site: tuple[Any, Any] = (None, None)


def _mgs_of(facts: HostProbeFacts) -> tuple[str, dict] | None:
    global _last_site
    site = (facts.get(SITE_FACTS) or {}).get(PROBE) or {}
    seen, mgs = _last_site  # one read: another thread may replace the pair meanwhile
    if seen is not site:
        mgs = the_mgs(site)
        _last_site = (site, mgs)
    return mgs


class LustreAdapter(Adapter):
    name = "lustre"
    role = "lustre_tuning"
    play_title = "Set Lustre parameters: lctl set_param on the clients, set_param -P on the MGS"

    probes = (PROBE,)
    site_probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        kind, device, param = split_key(key)
        dev = (((facts.get(PROBE) or {}).get(kind) or {}).get(device) or {}) if kind in DEVICE_TYPES else {}
        v = (dev.get("values") or {}).get(param)
        mgs = _mgs_of(facts)
        record = _params().boot_record(mgs[1].get("permanent") or [], key) if mgs else None
        return (None if v is None else str(v)), (None if record is None else str(record["value"]))

    def default_value(self, facts: HostProbeFacts, key: str) -> tuple[Any, str] | None:
        if not _mgs_of(facts):
            return None  # the MGS's log was not read: a record may set it
        kind, _, param = split_key(key)
        found = DEFAULTS.get((kind, param))
        return None if found is None else (found, DEFAULTS_SOURCE)

    def normalize_target(self, key: str, target: Any) -> Any:
        return str(target)

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        kind, device, param = split_key(change.key)
        if kind not in DEVICE_TYPES or not device or not param:
            return f"lustre_tuning sets osc/mdc/llite parameters by full name, not {change.key!r}"
        if PROBE not in facts:
            return "the scan has no lctl get_param output from this host"
        return None

    def label(self, key: str) -> str:
        return f"lustre {key}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        asks = {}
        for c in changes:
            pattern = _params().any_client_pattern(c.key)
            if c.scope != ChangeScope.runtime and pattern:
                asks[pattern] = str(c.target)
        return {"lustre_params": {c.key: str(c.target) for c in changes if c.scope != ChangeScope.persisted},
                _ASKS: asks}

    def finish(self, plan_vars: dict[str, dict[str, Any]], facts: Mapping[str, HostProbeFacts]) -> list[str]:
        """The clients' permanent asks become ``lustre_permanent`` on the MGS (the larger value where
        two clients ask one pattern differently); without one MGS in the scan, nothing is persisted
        and the role says the values are runtime only."""
        asks: dict[str, str] = {}
        asking = []
        for h, v in plan_vars.items():
            mine = v.pop(_ASKS, None) or {}
            if mine:
                asking.append(h)
            for pattern, value in mine.items():
                asks[pattern] = value if pattern not in asks else (self.resolve(pattern, asks[pattern], value)
                                                                   or asks[pattern])
        if not asks:
            return []
        mgs = the_mgs({h: (f or {}).get(PROBE) for h, f in facts.items()})
        if mgs is None:
            return [f"lustre: {len(asks)} client setting(s) stay runtime only: the scan read no single MGS's params "
                    "log (scan the MGS too, or persist them with lctl set_param -P there by hand)"]
        for h in asking:
            plan_vars[h]["lustre_persisted_by"] = mgs[0]
        plan_vars.setdefault(mgs[0], {"lustre_params": {}})["lustre_permanent"] = dict(sorted(asks.items()))
        shown = ", ".join(f"{p}={v}" for p, v in sorted(asks.items())[:4])
        return [f"{mgs[0]}: lctl set_param -P (the MGS: every client applies it when it mounts): {shown}"
                + (f" and {len(asks) - 4} more" if len(asks) > 4 else "")]


ADAPTER = LustreAdapter()
