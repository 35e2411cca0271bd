"""The planner: failed findings of a scan -> per-host role variables and a list of changes.

Pure data work (no I/O besides what the caller hands in). The rule packs' remediation variables
are kept as they are (docs/apply.md); the planner only merges them per host and reshapes the two
that name their object in the finding's ``subject`` (block devices) or need a cluster view (GPFS
node groups, SAN controllers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from advisor.errors import StoradviseError
from advisor.findings import Finding, FindingStatus
from advisor.report.model import ScanReport
from advisor.site import Host, Site

#: the roles shipped in playbooks/roles, in the order apply-tuning.yml runs them
ROLES = ["firewall", "network_tuning", "block_tuning", "gpfs_tuning", "san_cache", "xcache"]


@dataclass
class Change:
    host: str
    role: str
    setting: str
    old: Any
    new: Any
    rule_ids: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "role": self.role, "setting": self.setting, "old": self.old, "new": self.new,
                "rules": self.rule_ids}


@dataclass
class Plan:
    site: str
    scan_started_at: str
    #: host -> role -> variables (what host_vars/<host>.yml holds)
    host_vars: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    #: findings that failed but have no automatic remediation: {rule, hosts, text}
    manual: list[dict[str, Any]] = field(default_factory=list)
    #: hosts left out: {host, reason}
    refused: list[dict[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        return sorted(self.host_vars)

    def roles_of(self, host: str) -> list[str]:
        return [r for r in ROLES if r in self.host_vars.get(host, {})]

    def as_dict(self) -> dict[str, Any]:
        return {
            "site": self.site, "scan_started_at": self.scan_started_at,
            "hosts": {h: {"roles": self.roles_of(h), "vars": self.flat_vars(h)} for h in self.hosts},
            "changes": [c.as_dict() for c in self.changes],
            "manual": self.manual, "refused": self.refused, "notices": self.notices,
        }

    def flat_vars(self, host: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for role in self.roles_of(host):
            out.update(self.host_vars[host][role])
        return out


class PlanError(StoradviseError):
    pass


# ----------------------------------------------------------------------------- merging


def merge_vars(into: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Merge role variables: mappings deep-merge, lists extend (no duplicates), scalars replace.
    Returns the keys whose scalar values disagreed (the later value wins)."""
    conflicts: list[str] = []
    for k, v in new.items():
        if v is None:
            continue
        cur = into.get(k)
        if isinstance(v, dict) and isinstance(cur, dict):
            conflicts += [f"{k}.{c}" for c in merge_vars(cur, v)]
        elif isinstance(v, list) and isinstance(cur, list):
            cur.extend(x for x in v if x not in cur)
        else:
            if cur is not None and cur != v and not isinstance(v, (dict, list)):
                conflicts.append(k)
            into[k] = _copy(v)
    return conflicts


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)i?B?\s*$", re.I)
_MULT = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


def same_value(a: Any, b: Any) -> bool:
    """Values equal as text, as integers or as sizes (1G == 1024M)."""
    if a is None or b is None:
        return a is b
    sa, sb = " ".join(str(a).split()).lower(), " ".join(str(b).split()).lower()
    if sa == sb:
        return True
    ma, mb = _SIZE.match(sa), _SIZE.match(sb)
    if ma and mb:
        return float(ma.group(1)) * _MULT[ma.group(2).upper()] == float(mb.group(1)) * _MULT[mb.group(2).upper()]
    return False


# ----------------------------------------------------------------------------- old values from facts


def _facts(report: ScanReport, host: str, probe: str) -> dict[str, Any]:
    for h in report.hosts:
        if h.name == host:
            return h.facts.get(probe) or {}
    return {}


def _sysctl_old(report: ScanReport, host: str, key: str) -> Any:
    s = (_facts(report, host, "network.sysctl").get("sysctls") or {}).get(key) or {}
    return s.get("runtime")


def _gpfs_old(report: ScanReport, host: str, attr: str) -> Any:
    eff = (_facts(report, host, "gpfs.mmlsconfig").get("effective") or {}).get(attr) or {}
    return eff.get("value")


def _block_old(report: ScanReport, host: str, dev: str, key: str) -> Any:
    d = (_facts(report, host, "block.queue").get("devices") or {}).get(dev) or {}
    return d.get(key)


def _san_old(report: ScanReport, host: str, drive: str, keyword: str) -> Any:
    d = (_facts(report, host, "san.logical_drives").get("drives") or {}).get(drive) or {}
    field_of = {"readCacheEnabled": "read_cache", "cacheReadPrefetch": "read_prefetch", "writeCacheEnabled": "write_cache",
                "cacheWithoutBatteryEnabled": "write_cache_without_batteries",
                "modificationPriority": "modification_priority"}
    v = d.get(field_of.get(keyword, keyword))
    return ("TRUE" if v else "FALSE") if isinstance(v, bool) else v


def _xcache_instance(report: ScanReport, host: str) -> dict[str, Any]:
    return _facts(report, host, "xcache.config").get("cache") or {}


def _xcache_old(report: ScanReport, host: str, directive: str) -> Any:
    for d in reversed(_xcache_instance(report, host).get("directives") or []):
        if d.get("name") == directive:
            return d.get("args")
    return None


# ----------------------------------------------------------------------------- the plan


def check_report_matches(report: ScanReport, site: Site, source: str) -> None:
    if report.site != site.name:
        raise PlanError(f"{source}: the scan is of site {report.site!r}, not {site.name!r}; scan this site first")


def build_plan(report: ScanReport, site: Site, source: str = "scan") -> Plan:
    """Per-host role variables and the changes they make, from the report's FAILED findings."""
    check_report_matches(report, site, source)
    plan = Plan(site=site.name, scan_started_at=report.started_at)
    reachable = {h.name: h.reachable for h in report.hosts}
    errors = {h.name: "; ".join(h.errors) for h in report.hosts}
    site_hosts = {h.name: h for h in site.hosts}
    refused: dict[str, str] = {}
    for f in report.findings:
        if f.status != FindingStatus.fail:
            continue
        role = f.remediation.role
        if not role or role not in ROLES or not f.remediation.vars:
            plan.manual.append({"rule": f.rule_id, "hosts": f.hosts, "severity": f.severity.value,
                                "subject": f.subject, "text": f.remediation.text})
            continue
        for host in f.hosts:
            if host not in site_hosts:
                refused.setdefault(host, f"not in site {site.name} (the scan names it, the site file does not)")
                continue
            if not reachable.get(host, True):
                refused.setdefault(host, f"unreachable at scan time ({errors.get(host) or 'no connection'}); "
                                         "fix the connection and scan again")
                continue
            _add_finding(plan, report, site, site_hosts[host], f)
    plan.refused = [{"host": h, "reason": r} for h, r in sorted(refused.items())]
    _group_gpfs(plan, site_hosts)
    return plan


def _add_finding(plan: Plan, report: ScanReport, site: Site, host: Host, f: Finding) -> None:
    role = f.remediation.role
    rvars = _copy(f.remediation.vars)
    hv = plan.host_vars.setdefault(host.name, {})
    name = host.name
    rid = f.rule_id

    def change(setting: str, old: Any, new: Any) -> None:
        for c in plan.changes:
            if c.host == name and c.role == role and c.setting == setting:
                c.new = new
                if rid not in c.rule_ids:
                    c.rule_ids.append(rid)
                return
        plan.changes.append(Change(name, role, setting, old, new, [rid]))

    if role == "network_tuning":
        sysctls = {k: str(v) for k, v in (rvars.get("network_tuning_sysctls") or {}).items()}
        if not sysctls:
            plan.manual.append({"rule": rid, "hosts": [name], "severity": f.severity.value, "subject": f.subject,
                                "text": f.remediation.text})
            return
        merge_vars(hv.setdefault(role, {}), {"network_tuning_sysctls": sysctls})
        for k, v in sysctls.items():
            change(k, _sysctl_old(report, name, k), v)
    elif role == "firewall":
        rules = rvars.get("firewall_remove_rules") or []
        merge_vars(hv.setdefault(role, {}), {"firewall_remove_rules": rules})
        for r in rules:
            change(f"{r.get('backend')} {r.get('family') or ''} {r.get('table')} {r.get('chain')}: {r.get('text')}".replace("  ", " "),
                   "present", "removed")
    elif role == "block_tuning":
        dev = f.subject
        if not dev:
            plan.manual.append({"rule": rid, "hosts": [name], "severity": f.severity.value, "subject": None,
                                "text": f.remediation.text + " (the finding names no device)"})
            return
        dv: dict[str, Any] = {}
        if "block_tuning_read_ahead_kb" in rvars:
            dv["read_ahead_kb"] = int(rvars["block_tuning_read_ahead_kb"])
        if "block_tuning_scheduler" in rvars:
            dv["scheduler"] = str(rvars["block_tuning_scheduler"])
        merge_vars(hv.setdefault(role, {}), {"block_tuning_devices": {dev: dv}})
        for k, v in dv.items():
            change(f"{dev} {k}", _block_old(report, name, dev, k), v)
    elif role == "gpfs_tuning":
        cfg = {k: str(v) for k, v in (rvars.get("gpfs_config") or {}).items()}
        merge_vars(hv.setdefault(role, {}), {"gpfs_config": cfg, "gpfs_tuning_node_name": host.gpfs_node or host.name})
        if rvars.get("gpfs_restart"):
            hv[role]["gpfs_tuning_pending_attrs"] = sorted(set(hv[role].get("gpfs_tuning_pending_attrs", [])) | set(cfg))
        for k, v in cfg.items():
            change(f"gpfs {k}", _gpfs_old(report, name, k), v)
    elif role == "san_cache":
        drives = rvars.get("san_logical_drives") or {}
        controllers = list(host.san_controllers) or list(rvars.get("san_controllers") or [])
        if not controllers:
            plan.manual.append({"rule": rid, "hosts": [name], "severity": f.severity.value, "subject": f.subject,
                                "text": f.remediation.text + " (no SAN controllers known: set san_controllers on the host in the site file)"})
            return
        merge_vars(hv.setdefault(role, {}), {"san_logical_drives": {d: {k: str(v) for k, v in s.items()} for d, s in drives.items()},
                                             "san_controllers": controllers})
        for d, s in drives.items():
            for k, v in s.items():
                change(f"SAN {d} {k}", _san_old(report, name, d, k), str(v))
    elif role == "xcache":
        directives = {k: str(v) for k, v in (rvars.get("xcache_directives") or {}).items()}
        inst = _xcache_instance(report, name)
        cfg_file = inst.get("config_file")
        if not cfg_file or cfg_file.startswith("<"):
            plan.manual.append({"rule": rid, "hosts": [name], "severity": f.severity.value, "subject": f.subject,
                                "text": f.remediation.text + " (the scan names no XCache configuration file)"})
            return
        files = {}
        for d in inst.get("directives") or []:
            if d.get("name") in directives and d.get("file"):
                files[d["name"]] = d["file"]
        xv: dict[str, Any] = {"xcache_directives": directives, "xcache_config_file": cfg_file,
                              "xcache_directive_files": files}
        m = re.match(r"^.*/xrootd-([A-Za-z0-9_.@-]+)\.cfg$", cfg_file)
        if m:
            xv["xcache_service"] = f"xrootd@{m.group(1)}"
        merge_vars(hv.setdefault(role, {}), xv)
        for k, v in directives.items():
            change(f"{k} ({files.get(k, cfg_file)})", _xcache_old(report, name, k), v)


def _group_gpfs(plan: Plan, site_hosts: dict[str, Host]) -> None:
    """mmchconfig is cluster-wide: hosts that need the same settings form one group whose first
    host runs ``mmchconfig ... -N <the group's nodes>``; every member checks and records its own
    value (the runner collects them)."""
    groups: dict[str, list[str]] = {}
    for host in sorted(plan.host_vars):
        g = plan.host_vars[host].get("gpfs_tuning")
        if not g:
            continue
        key = repr(sorted(g["gpfs_config"].items()))
        groups.setdefault(key, []).append(host)
    for members in groups.values():
        runner = members[0]
        for h in members:
            plan.host_vars[h]["gpfs_tuning"]["gpfs_tuning_runner"] = runner
        plan.host_vars[runner]["gpfs_tuning"]["gpfs_tuning_group"] = members
