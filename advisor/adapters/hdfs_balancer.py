"""HDFS balancer properties in hdfs-site.xml: role ``hdfs_balancer``, variable ``hdfs_balancer_properties``
{property: value}. The current value is what the ``hdfs.balancer`` probe read (``hdfs getconf``: the file
over Hadoop's defaults). The balancer reads the file when it starts, DataNodes (``dfs.datanode.*``) when they
start: a change takes effect then (the role restarts nothing unless ``hdfs_balancer_restart_command`` is
given). The file is ``hdfs_balancer_site_xml`` (/etc/hadoop/conf/hdfs-site.xml unless the site says where)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change

PROBE = "hdfs.balancer"
_NAME = re.compile(r"dfs\.[A-Za-z0-9_.-]+")


class HdfsBalancerAdapter(Adapter):
    name = "hdfs_balancer"
    role = "hdfs_balancer"
    play_title = "Set HDFS balancer properties in hdfs-site.xml"
    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        v = (((facts.get(PROBE) or {}).get("settings") or {}).get(key) or {}).get("value")
        return v, v

    def normalize_target(self, key: str, target: Any) -> Any:
        return str(target)

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        if not _NAME.fullmatch(change.key):
            return f"hdfs_balancer sets dfs.* properties by name, not {change.key!r}"
        got = facts.get(PROBE)
        if got is None:
            return "the scan has no hdfs getconf output from this host"
        if got.get("source") != "getconf":
            return "the values come from a balancer log, not from this host's configuration"
        return None

    def label(self, key: str) -> str:
        who = "the DataNodes and the balancer" if key.startswith("dfs.datanode.") else "the balancer"
        return f"hdfs-site.xml {key} (takes effect when {who} start again)"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"hdfs_balancer_properties": {c.key: str(c.target) for c in changes}}
        if host_vars.get("hdfs_site_xml"):
            out["hdfs_balancer_site_xml"] = str(host_vars["hdfs_site_xml"])
        return out


ADAPTER = HdfsBalancerAdapter()
