"""dCache configuration files: role ``dcache_tuning``. Keys:

* ``layout:DOMAIN:PROPERTY`` -- a property under ``[DOMAIN]`` of the layout file;
  ``layout:DOMAIN/SERVICE:PROPERTY`` -- under ``[DOMAIN/SERVICE]`` (a service's own value wins over
  its domain's, dCache Book, "Defining domains and services");
* ``setup:POOL:QUEUE`` -- ``mover set max active -queue=QUEUE N`` in the pool's setup file.

Current values come from the ``dcache.layout`` probe (the value in force, dCache's default when
unset). A domain reads both files when it starts: the file is what it will run, so runtime and
persisted are one value. The role restarts the changed domains (``dcache restart DOMAIN``) only on a
host whose site settings say ``dcache_restart_domains: true``; elsewhere the plan says the change takes
effect at the domain's next restart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts, size_value
from advisor.model.findings import Change

PROBE = "dcache.layout"
#: dCache's defaults for the properties the rule pack changes (dCache Book; probes.dcache)
DEFAULTS = {"dcache.java.memory.direct": "512m", "dcache.java.memory.heap": "512m",
            "srm.limits.transfer-tcp-buffer.size": "1048576"}
RESTART_SETTING = "dcache_restart_domains"


def split_key(key: str) -> tuple[str, str, str | None, str]:
    """(kind, domain or pool, service or None, property or queue)."""
    kind, _, rest = key.partition(":")
    where, _, what = rest.rpartition(":")
    domain, _, service = where.partition("/")
    return kind, domain, service or None, what


def _facts(facts: HostProbeFacts) -> dict[str, Any]:
    return facts.get(PROBE) or {}


def _service(domain: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((s for s in domain.get("services") or [] if s.get("name") == name), None)


def restarts(host_vars: Mapping[str, Any]) -> bool:
    return str(host_vars.get(RESTART_SETTING, "")).strip().lower() in ("true", "yes", "1")


class DcacheAdapter(Adapter):
    name = "dcache"
    role = "dcache_tuning"
    play_title = "Set dCache layout properties and pool mover limits (restart domains only where the site opts in)"

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        kind, where, service, what = split_key(key)
        f = _facts(facts)
        v: Any = None
        if kind == "layout":
            d = (f.get("domains") or {}).get(where)
            if d is not None:
                props = dict(d.get("properties") or {})
                s = _service(d, service) if service else None
                if s is not None:
                    props.update(s.get("properties") or {})
                v = props.get(what, DEFAULTS.get(what))
        elif kind == "setup":
            v = ((f.get("pools") or {}).get(where) or {}).get("mover_max_active", {}).get(what)
        v = None if v is None else str(v)
        return v, v

    def normalize_target(self, key: str, target: Any) -> Any:
        return " ".join(str(target).split())

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        kind, where, service, what = split_key(change.key)
        f = _facts(facts)
        if PROBE not in facts:
            return "the scan has no dCache layout from this host"
        if kind == "layout":
            d = (f.get("domains") or {}).get(where)
            if d is None:
                return f"the layout file has no domain {where!r}"
            if service and _service(d, service) is None:
                return f"domain {where} runs no {service} service"
            if not f.get("layout_name"):
                return "the scan does not name the layout file"
            if what in ("dcache.java.memory.direct", "dcache.java.memory.heap"):
                mem = (facts.get("host") or {}).get("memory_bytes")
                other = d.get("heap_bytes" if what.endswith("direct") else "direct_bytes") or 0
                want = size_value(change.target)
                if mem and want is not None and want + other > mem:
                    return (f"{what}={change.target} plus the domain's other Java memory ({other} bytes) is more than "
                            f"the host's memory ({mem} bytes)")
            return None
        if kind == "setup":
            pool = (f.get("pools") or {}).get(where)
            if pool is None:
                return f"the layout file has no pool {where!r}"
            if not pool.get("setup_read"):
                return f"pool {where}: its setup file ({pool.get('setup_file')}) was not read"
            if not str(change.target).isdigit():
                return f"mover set max active takes a number, not {change.target!r}"
            return None
        return f"dcache_tuning changes layout:DOMAIN:PROPERTY or setup:POOL:QUEUE, not {change.key!r}"

    def label(self, key: str) -> str:
        kind, where, service, what = split_key(key)
        if kind == "setup":
            return f"dCache pool {where}: mover set max active -queue={what}"
        return f"dCache [{where}{'/' + service if service else ''}] {what}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        f = _facts(facts)
        layout, setup = [], []
        for c in changes:
            kind, where, service, what = split_key(c.key)
            if kind == "layout":
                d = f["domains"][where]
                header = _service(d, service)["line"] if service else d["line"]
                layout.append({"header": header, "domain": where, "property": what, "value": str(c.target)})
            else:
                pool = f["pools"][where]
                setup.append({"file": pool["setup_file"], "queue": what, "value": int(str(c.target)),
                              "domain": pool["domain"]})
        return {"dcache_layout_file": f"/etc/dcache/layouts/{f.get('layout_name')}.conf",
                "dcache_layout_settings": layout, "dcache_setup_settings": setup,
                "dcache_restart": restarts(host_vars)}

    def notice(self, host: str, changes: list[Change], host_vars: Mapping[str, Any]) -> str | None:
        if restarts(host_vars):
            return None
        domains = sorted({split_key(c.key)[1] for c in changes if c.key.startswith("layout:")})
        pools = sorted({split_key(c.key)[1] for c in changes if c.key.startswith("setup:")})
        what = ", ".join([f"domain {d}" for d in domains] + [f"pool {p}" for p in pools])
        return (f"dcache_tuning changes the files only ({what}): takes effect at next domain restart "
                f"(dcache restart DOMAIN; set {RESTART_SETTING}: true for the host to let the role restart them)")


ADAPTER = DcacheAdapter()
