"""Ceph cluster probe: ``ceph.osd_perf``, the per-OSD commit and apply latency ``ceph osd perf`` prints.

``ceph osd perf`` prints a table: a header ``osd commit_latency(ms) apply_latency(ms)`` (FileStore-era
releases: ``fs_commit_latency(ms) fs_apply_latency(ms)``, ceph src/mon/PGMap.cc
``print_osd_perf_stats``), then one row per OSD: id and the two latencies in whole milliseconds.
It needs the cluster's admin credentials, so it runs on storage hosts (monitors / admin nodes); a host
without the ``ceph`` command is not applicable.

Script output (sections): ``osd_perf`` -- ``ceph osd perf`` (stderr merged); ``rc`` -- its exit status.
``parse`` also accepts a raw capture without sections.
"""

from __future__ import annotations

import re
import statistics

from pydantic import BaseModel, Field

from probes.probe import SECTION_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int, require_tool, section, split_sections

_HEADER = re.compile(r"^osd\s+(fs_)?commit_latency\(ms\)\s+(fs_)?apply_latency\(ms\)\s*$")
_ROW = re.compile(r"^(\d+)\s+(\d+)\s+(\d+)\s*$")


class OsdLatency(BaseModel):
    id: int
    commit_latency_ms: int
    apply_latency_ms: int
    #: the larger of the two
    worst_ms: int
    line: str


class OsdPerfFacts(BaseModel):
    #: OSD id (as text) -> its latencies
    osds: dict[str, OsdLatency] = Field(default_factory=dict)
    #: the header names the FileStore-era columns (fs_commit_latency)
    filestore_columns: bool = False
    #: median of the OSDs' worst latency (None without OSDs)
    median_worst_ms: float | None = None


def parse_osd_perf(text: str) -> OsdPerfFacts:
    lines = [(n, ln.strip()) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise ProbeParseError("ceph osd perf: empty output")
    first_n, first = lines[0]
    m = _HEADER.match(first)
    if not m:
        raise ProbeParseError(f"ceph osd perf: line {first_n} is not the 'osd commit_latency(ms) apply_latency(ms)' "
                              f"header: {first[:80]!r}")
    facts = OsdPerfFacts(filestore_columns=bool(m.group(1)))
    for n, line in lines[1:]:
        r = _ROW.match(line)
        if not r:
            raise ProbeParseError(f"ceph osd perf: line {n} is not 'ID COMMIT_MS APPLY_MS': {line[:80]!r}")
        osd = bounded_int(r.group(1), f"ceph osd perf line {n}: osd id")
        commit = bounded_int(r.group(2), f"ceph osd perf line {n}: commit latency")
        apply = bounded_int(r.group(3), f"ceph osd perf line {n}: apply latency")
        if str(osd) in facts.osds:
            raise ProbeParseError(f"ceph osd perf: line {n}: osd {osd} listed twice")
        facts.osds[str(osd)] = OsdLatency(id=osd, commit_latency_ms=commit, apply_latency_ms=apply,
                                          worst_ms=max(commit, apply), line=line)
    if facts.osds:
        facts.median_worst_ms = float(statistics.median(o.worst_ms for o in facts.osds.values()))
    return facts


class OsdPerfProbe(Probe):
    name = "ceph.osd_perf"
    title = "Ceph OSD commit/apply latency (ceph osd perf)"
    roles = frozenset({"storage"})
    needs_root = True
    facts_model = OsdPerfFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("ceph", "/usr/bin")
            + section("osd_perf")
            + 'out=$(timeout 20 "$TOOL_ceph" osd perf 2>&1); rc=$?\n'
            + "printf '%s\\n' \"$out\"\n"
            + section("rc")
            + 'echo "$rc"\n'
        )

    def parse(self, text: str) -> OsdPerfFacts:
        if SECTION_MARKER + "osd_perf" in text:
            sections = split_sections(text)
            body = sections.get("osd_perf", "")
            rc = (sections.get("rc") or "0").strip() or "0"
            if rc != "0":
                first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
                raise ProbeParseError(f"ceph osd perf exited with status {rc}" + (f": {first[:200]}" if first else ""))
            return parse_osd_perf(body)
        return parse_osd_perf(text)


# --------------------------------------------------------------------------- ceph health detail

_STATUS = re.compile(r"^(HEALTH_OK|HEALTH_WARN|HEALTH_ERR)(?:\s+(.*))?$")
_CHECK = re.compile(r"^\[(WRN|ERR|INF)\]\s+([A-Z0-9_]+):\s*(.*)$")
_DAEMONS = re.compile(r"daemons \[([^\]]+)\]|\b((?:osd|mon|mds|mgr)\.[\w.-]+) has slow ops")


class HealthCheck(BaseModel):
    severity: str
    summary: str
    #: the indented lines under the check (``osd.3 is down (since 2m)``)
    details: list[str] = Field(default_factory=list)
    line: str


class CephHealthFacts(BaseModel):
    status: str
    summary: str = ""
    line: str
    #: check code (SLOW_OPS, OSD_DOWN, ...) -> the check
    checks: dict[str, HealthCheck] = Field(default_factory=dict)
    #: daemons the SLOW_OPS check names (``osd.4``)
    slow_ops_daemons: list[str] = Field(default_factory=list)


def parse_health_detail(text: str) -> CephHealthFacts:
    """``ceph health detail`` (Nautilus and later: ``[WRN] CODE: summary`` per check, details indented)."""
    lines = [(n, ln.rstrip()) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise ProbeParseError("ceph health detail: empty output")
    n0, first = lines[0]
    m = _STATUS.match(first.strip())
    if not m:
        raise ProbeParseError(f"ceph health detail: line {n0} is not HEALTH_OK/HEALTH_WARN/HEALTH_ERR: {first[:80]!r}")
    facts = CephHealthFacts(status=m.group(1), summary=m.group(2) or "", line=first.strip())
    current: HealthCheck | None = None
    for n, line in lines[1:]:
        c = _CHECK.match(line.strip())
        if c and not line[:1].isspace():
            current = HealthCheck(severity=c.group(1), summary=c.group(3), line=line.strip())
            facts.checks[c.group(2)] = current
        elif line[:1].isspace() and current is not None:
            current.details.append(line.strip())
        else:
            raise ProbeParseError(f"ceph health detail: line {n} is neither a '[WRN] CODE: ...' check nor an indented "
                                  f"detail: {line.strip()[:80]!r}")
    slow = facts.checks.get("SLOW_OPS")
    if slow:
        for a, b in _DAEMONS.findall(slow.summary):
            facts.slow_ops_daemons += [d.strip() for d in a.split(",") if d.strip()] if a else [b]
    return facts


class HealthDetailProbe(Probe):
    name = "ceph.health"
    title = "Ceph cluster health checks (ceph health detail)"
    roles = frozenset({"storage"})
    needs_root = True
    facts_model = CephHealthFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("ceph", "/usr/bin")
            + section("health")
            + 'out=$(timeout 20 "$TOOL_ceph" health detail 2>&1); rc=$?\n'
            + "printf '%s\\n' \"$out\"\n"
            + section("rc")
            + 'echo "$rc"\n'
        )

    def parse(self, text: str) -> CephHealthFacts:
        if SECTION_MARKER + "health" in text:
            sections = split_sections(text)
            body = sections.get("health", "")
            rc = (sections.get("rc") or "0").strip() or "0"
            if rc != "0":
                first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
                raise ProbeParseError(f"ceph health detail exited with status {rc}" + (f": {first[:200]}" if first else ""))
            return parse_health_detail(body)
        return parse_health_detail(text)
