"""XCache (xrootd proxy file cache) directives: role ``xcache``, variables ``xcache_directives``
{directive: args}, ``xcache_config_file``, ``xcache_directive_files``, ``xcache_service``. Current
values from the ``xcache.config`` probe (the last line of a directive wins, as in xrootd); the
instance runs what its files say (the role restarts it when they change), so runtime and
persisted are one."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change

PROBE = "xcache.config"


def _instance(facts: HostProbeFacts) -> dict[str, Any]:
    return (facts.get(PROBE) or {}).get("cache") or {}


def _config_file(facts: HostProbeFacts) -> str | None:
    f = _instance(facts).get("config_file")
    return None if not f or str(f).startswith("<") else str(f)


class XcacheAdapter(Adapter):
    name = "xcache"
    role = "xcache"
    play_title = "Set XCache pfc directives and restart the instance when they changed"

    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        for d in reversed(_instance(facts).get("directives") or []):
            if d.get("name") == key:
                return d.get("args"), d.get("args")
        return None, None

    def normalize_target(self, key: str, target: Any) -> Any:
        return " ".join(str(target).split())

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        if _config_file(facts) is None:
            return "the scan names no XCache configuration file"
        return None

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        cfg = _config_file(facts)
        directives = {c.key: str(c.target) for c in changes}
        files = {d["name"]: d["file"] for d in _instance(facts).get("directives") or []
                 if d.get("name") in directives and d.get("file")}
        out: dict[str, Any] = {"xcache_directives": directives, "xcache_config_file": cfg, "xcache_directive_files": files}
        m = re.fullmatch(r".*/xrootd-([A-Za-z0-9_.@-]+)\.cfg", cfg or "")
        if m:
            out["xcache_service"] = f"xrootd@{m.group(1)}"
        # where the instance is no systemd unit (a lab host, a container): the site's restart command
        if host_vars.get("xcache_restart_command"):
            out["xcache_restart_command"] = str(host_vars["xcache_restart_command"])
            out.pop("xcache_service", None)
        return out


ADAPTER = XcacheAdapter()
