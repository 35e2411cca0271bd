"""A scan report as newline-delimited JSON for search engines (Elasticsearch, OpenSearch, Loki, Grafana).

One JSON document per line, no bulk action lines: a ``scan`` summary, then one document per host, per
finding and host, per measured path and per cause. Every document carries ``doc_type``, ``scan_id``,
``site`` and ``@timestamp`` (the scan's start). A key has one JSON type in every document that has it
(or null), so an index maps it once:

* a finding's ``observed`` and ``expected`` are strings (JSON text for lists and numbers), with
  ``observed_value`` / ``expected_value`` numbers where the value is numeric;
* a host's facts, keyed in the report by open-ended names (sysctls, devices, interfaces), are a list
  of {``name``, ``value`` (string), ``value_num`` (number or null)}: one mapping for any number of keys;
* units are in the key names (``_bps`` bits per second, ``_bytes``, ``_s`` seconds, ``_us``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from advisor.report.finding_text import headline
from advisor.report.model import ScanReport
from advisor.report.wire import number_of, text_of

#: a host document carries at most this many facts (a cache host's file records can be many more)
MAX_FACTS_PER_HOST = 5000


def _flat(prefix: str, v: Any, out: list[dict[str, Any]]) -> None:
    if len(out) > MAX_FACTS_PER_HOST:  # one past the cap: tells a cut list from a full one
        return
    if isinstance(v, dict):
        for k, x in v.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), x, out)
    elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        for i, x in enumerate(v):
            _flat(f"{prefix}[{i}]", x, out)
    else:
        out.append({"name": prefix, "value": text_of(v), "value_num": number_of(v)})


def _facts(facts: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    out: list[dict[str, Any]] = []
    _flat("", facts, out)
    return out[:MAX_FACTS_PER_HOST], len(out) > MAX_FACTS_PER_HOST


def documents(report: ScanReport) -> Iterator[dict[str, Any]]:
    base = {"scan_id": report.scan_id, "site": report.site, "@timestamp": report.started_at}
    s = report.summary
    yield {"doc_type": "scan", **base, "schema_version": report.schema_version, "tool_version": report.tool_version,
           "finished_at": report.finished_at, "duration_s": float(report.duration_s), "profiles": list(report.profiles),
           "hosts_total": s.hosts, "hosts_unreachable": s.unreachable, "probe_errors": s.probe_errors,
           "incomplete": s.incomplete, "worst_failed_severity": s.worst_failed_severity,
           "findings_by_status": [{"name": k, "count": n} for k, n in sorted(s.by_status.items())],
           "failed_by_severity": [{"name": k, "count": n} for k, n in sorted(s.failed_by_severity.items())],
           "causes_total": len(report.causes)}
    for h in report.hosts:
        facts, cut = _facts(h.facts)
        yield {"doc_type": "host", **base, "host": h.name, "roles": list(h.roles), "groups": list(h.groups),
               "address": h.address, "reachable": h.reachable, "errors": list(h.errors),
               "probes": [{"name": p, "status": st, "message": h.probe_messages.get(p)}
                          for p, st in sorted(h.probes.items())],
               "facts": facts, "facts_truncated": cut}
    for f in report.findings:
        doc = {"doc_type": "finding", **base, "rule_id": f.rule_id, "title": f.title, "unit": f.unit,
               "status": f.status.value,
               "severity": f.severity.value, "subject": f.subject, "operator": f.operator or "analytic",
               "observed": text_of(f.observed), "expected": text_of(f.expected),
               "observed_value": number_of(f.observed), "expected_value": number_of(f.expected),
               "message": f.message, "changes_total": len(f.changes), "evidence": list(f.evidence[:20])}
        failed = f.status.value in ("fail", "waived")
        for host in f.hosts:
            yield {**doc, "host": host, "failure": headline(f, host) if failed else None}
    for p in (report.mesh or {}).get("paths") or []:
        measured, expected = number_of(p.get("measured_bps")), number_of(p.get("expected_bps"))
        yield {"doc_type": "path", **base, "src": text_of(p.get("src")), "dst": text_of(p.get("dst")),
               "status": text_of(p.get("status")), "error": text_of(p.get("error")),
               "measured_bps": measured, "expected_bps": expected,
               "ratio": measured / expected if measured is not None and expected else None,
               "retransmits": number_of(p.get("retransmits")), "rtt_us": number_of(p.get("rtt_us")),
               "limited_by": text_of(p.get("limited_by")), "limited_evidence": text_of(p.get("limited_evidence"))}
    for rank, c in enumerate(report.causes, 1):
        yield {"doc_type": "cause", **base, "rank": rank, "cause_id": c.id, "title": c.title, "kind": c.kind,
               "hosts": list(c.hosts), "confidence": float(c.confidence), "severity": c.severity,
               "gain": None if c.gain is None else float(c.gain), "action": c.action,
               "changes": [{"host": ch.host, "adapter": ch.adapter, "key": ch.key, "target": text_of(ch.target)}
                           for ch in c.changes],
               "explains": [{"rule_id": r.rule_id, "subject": r.subject} for r in c.explains]}


def ndjson_lines(report: ScanReport) -> Iterator[str]:
    """The documents, each as one line of ASCII JSON (a lone surrogate from a host is escaped)."""
    for d in documents(report):
        yield json.dumps(d, separators=(",", ":"), allow_nan=False) + "\n"


def write_ndjson(report: ScanReport, dest: Path) -> int:
    """Write the documents to ``dest`` (``-``: stdout), a line at a time; returns how many."""
    from advisor.report.outputs import write_parts

    count = 0

    def counted() -> Iterator[str]:
        nonlocal count
        for line in ndjson_lines(report):
            count += 1
            yield line

    if str(dest) == "-":
        sys.stdout.writelines(counted())
    else:
        write_parts(dest, counted())
    return count
