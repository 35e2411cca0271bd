"""XRootD server directives: role ``xrootd_tuning``. Keys ``INSTANCE:DIRECTIVE`` (the whole argument list,
``origin:xrootd.async``) or ``INSTANCE:DIRECTIVE:OPTION`` for one option of a directive whose other options
stay as the scan saw them (``origin:xrd.sched:maxt``: the new ``xrd.sched`` line keeps mint, avlt and idle).
INSTANCE is the ``xrootd.server`` probe's instance name (``xrootd-NAME.cfg`` -> NAME). The instance runs
what its files say once restarted (the role restarts it when a file changed: ``xrootd@NAME``, or the
site's ``xrootd_restart_command``), so runtime and persisted are one value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change

PROBE = "xrootd.server"
#: directives whose options the adapter can set one by one (the probe's parsed dict of each)
OPTION_DIRECTIVES = {"xrd.sched": "sched"}


def split_key(key: str) -> tuple[str, str, str | None]:
    parts = key.split(":")
    if len(parts) == 2:
        return parts[0], parts[1], None
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    return "", "", None


def _server(facts: HostProbeFacts, name: str) -> dict[str, Any] | None:
    return ((facts.get(PROBE) or {}).get("servers") or {}).get(name)


class XrootdAdapter(Adapter):
    name = "xrootd"
    role = "xrootd_tuning"
    play_title = "Set XRootD server directives and restart the instances whose files changed"

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        inst, directive, option = split_key(key)
        srv = _server(facts, inst) or {}
        v: Any = None
        if option and directive in OPTION_DIRECTIVES:
            v = (srv.get(OPTION_DIRECTIVES[directive]) or {}).get(option)
        elif not option:
            line = (srv.get("lines") or {}).get(directive)
            v = line.split(None, 1)[1] if line and line.startswith(directive + " ") else None
        v = None if v is None else str(v)
        return v, v

    def normalize_target(self, key: str, target: Any) -> Any:
        return " ".join(str(target).split())

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        inst, directive, option = split_key(change.key)
        if not inst or not directive:
            return f"xrootd_tuning sets INSTANCE:DIRECTIVE[:OPTION], not {change.key!r}"
        if PROBE not in facts:
            return "the scan has no XRootD configuration from this host"
        srv = _server(facts, inst)
        if srv is None:
            return f"no XRootD instance {inst!r} in the scan"
        if option and (directive not in OPTION_DIRECTIVES or option not in (srv.get(OPTION_DIRECTIVES[directive]) or {})):
            return f"{directive} has no option {option!r} the role can set alone"
        if option and not str(change.target).isdigit():
            return f"{directive} {option} takes a number, not {change.target!r}"
        return None

    def label(self, key: str) -> str:
        inst, directive, option = split_key(key)
        return f"xrootd {inst}: {directive}{' ' + option if option else ''}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        by_inst: dict[str, dict[str, str]] = {}
        options: dict[tuple[str, str], dict[str, int]] = {}
        for c in changes:
            inst, directive, option = split_key(c.key)
            if option:
                base = options.setdefault((inst, directive), dict(_server(facts, inst)[OPTION_DIRECTIVES[directive]]))
                base[option] = int(str(c.target))
            else:
                by_inst.setdefault(inst, {})[directive] = str(c.target)
        for (inst, directive), opts in options.items():
            by_inst.setdefault(inst, {})[directive] = " ".join(f"{k} {v}" for k, v in opts.items())
        instances = []
        for inst, directives in sorted(by_inst.items()):
            srv = _server(facts, inst)
            files = {d: f for d, f in (srv.get("files") or {}).items() if d in directives and not str(f).startswith("<")}
            item: dict[str, Any] = {"name": inst, "config_file": srv["config_file"], "directives": directives,
                                    "directive_files": files, "service": f"xrootd@{inst}"}
            if host_vars.get("xrootd_restart_command"):
                item["restart_command"] = str(host_vars["xrootd_restart_command"])
                item["service"] = ""
            instances.append(item)
        return {"xrootd_instances": instances}


ADAPTER = XrootdAdapter()
