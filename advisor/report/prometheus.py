"""Prometheus metrics in the text exposition format, for node_exporter's textfile collector.

Point node_exporter at a directory (``--collector.textfile.directory``) and write
``--prometheus DIR/storadvise.prom`` there: the file is replaced atomically (written beside, then
renamed), as the collector's documentation asks, so a scrape never reads half a file.
docs/grafana-storadvise.json is a dashboard over these series.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from advisor.util.atomic_files import write_atomic
from advisor.util.errors import StoradviseError
from advisor.model.findings import SEVERITY_ORDER, FindingStatus
from advisor.mesh.results import path_ratio
from advisor.report.model import ScanReport

PREFIX = "storadvise_"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _label(value: object) -> str:
    # a lone surrogate (undecodable bytes read from a host) cannot be written as UTF-8: shown as \udcxx
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", str(value))
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "}"


def _num(v: float) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


class _Family:
    def __init__(self, name: str, help_text: str):
        self.name, self.help, self.samples = PREFIX + name, help_text, []

    def add(self, value: float, **labels: object) -> None:
        self.samples.append(f"{self.name}{_labels(**labels)} {_num(value)}")

    def lines(self) -> Iterable[str]:
        if self.samples:
            yield f"# HELP {self.name} {self.help}"
            yield f"# TYPE {self.name} gauge"
            yield from self.samples


def _epoch(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        try:
            return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z"))
        except ValueError:
            return None


def prometheus_text(report: ScanReport) -> str:
    site = report.site
    fam = {k: _Family(k, h) for k, h in (
        ("scan_duration_seconds", "Wall time of the last storadvise scan."),
        ("scan_timestamp_seconds", "When the last storadvise scan started (Unix time)."),
        ("scan_incomplete", "1 when the last scan missed a host, a probe or a measurement."),
        ("host_reachable", "1 when storadvise reached the host in the last scan."),
        ("finding", "One series per rule, host and subject: 1 for the status and severity it had in the last scan."),
        ("findings_failed", "Failed findings of the last scan per severity."),
        ("path_throughput_bytes_per_second", "Measured throughput of a mesh path (iperf3 receiver side)."),
        ("path_expected_bytes_per_second", "Expected rate of a mesh path."),
        ("path_ratio", "Measured over expected throughput of a mesh path."),
        ("path_ok", "1 when the mesh path's test ran, 0 when it failed."),
        ("efficiency_ratio", "CPU efficiency (CPU time over wall time) of the active test per worker."),
    )}
    fam["scan_duration_seconds"].add(report.duration_s, site=site)
    started = _epoch(report.started_at)
    if started is not None:
        fam["scan_timestamp_seconds"].add(started, site=site)
    fam["scan_incomplete"].add(1 if report.summary.incomplete else 0, site=site)
    for h in report.hosts:
        fam["host_reachable"].add(1 if h.reachable else 0, site=site, host=h.name)
    seen: set[tuple] = set()
    for f in report.findings:
        for host in f.hosts or [""]:
            key = (f.rule_id, host, f.subject or "")
            if key in seen:  # one series per rule x host x subject (the worst, findings come worst first)
                continue
            seen.add(key)
            fam["finding"].add(1, site=site, rule=f.rule_id, host=host, subject=f.subject or "",
                               status=f.status.value, severity=f.severity.value)
    for sev in SEVERITY_ORDER:
        fam["findings_failed"].add(sum(1 for f in report.findings
                                       if f.status == FindingStatus.fail and f.severity.value == sev),
                                   site=site, severity=sev)
    for p in (report.mesh or {}).get("paths") or []:
        where = {"site": site, "src": p.get("src", ""), "dst": p.get("dst", "")}
        fam["path_ok"].add(1 if p.get("status") == "ok" else 0, **where)
        if p.get("status") == "ok" and p.get("measured_bps") is not None:
            fam["path_throughput_bytes_per_second"].add(p["measured_bps"] / 8, **where)
        if p.get("expected_bps"):
            fam["path_expected_bytes_per_second"].add(p["expected_bps"] / 8, **where)
        ratio = path_ratio(p)
        if ratio is not None:
            fam["path_ratio"].add(round(ratio, 4), **where)
    for host, rec in ((report.efficiency or {}).get("hosts") or {}).items():
        if isinstance(rec, dict) and isinstance(rec.get("efficiency"), (int, float)):
            fam["efficiency_ratio"].add(rec["efficiency"], site=site, host=host)
    return "\n".join(line for f in fam.values() for line in f.lines()) + "\n"


def write_prometheus(report: ScanReport, path: Path) -> None:
    """Write the textfile atomically (a scrape sees the old file or the new one, never half)."""
    path = Path(path)
    text = prometheus_text(report)
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise StoradviseError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except UnicodeEncodeError as exc:
        raise StoradviseError(f"{path}: cannot write: text not encodable as UTF-8 at {exc.start}") from None
