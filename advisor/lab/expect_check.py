"""A scenario's ``expect`` held against a scan report's diagnosis: what the generated-site test
(tests/lab/test_generated_sites.py) asserts and bench/bench_diagnosis_lab.py scores, in one place."""

from __future__ import annotations

from typing import Any

#: the findings of a measured path symptom (what a cause of a slow path explains)
PATH_SYMPTOMS = ("MESH-PATH-SLOW", "MESH-ASYMMETRY", "MESH-LOSS", "MESH-BUFFER-LIMITED")


def symptom_named(report: dict[str, Any], e: dict[str, Any]) -> bool:
    """Is the measured symptom ``e`` (``symptom: true``) named by a cause on its host: a cause whose
    hosts hold it and which explains a slow path of that host (a cause on the host for something
    else, a failing disk say, does not count)."""
    host = e["host"]
    return any(host in c["hosts"] and any(r["rule_id"] in PATH_SYMPTOMS and host in (r.get("hosts") or [])
                                          for r in c["explains"])
               for c in report.get("causes") or [])


def measurement_faults(expect: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
    """(the expected findings, the hosts whose measurements are inconclusive by design: cpu-load)."""
    return ([e for e in expect if not e.get("inconclusive")], {e["host"] for e in expect if e.get("inconclusive")})


def unplaced_findings(report: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    """The failed findings of a report that no part of its diagnosis holds: neither a cause (what it
    explains, what it acts on), nor hygiene, nor the unexplained or not-concluded symptoms. The
    diagnosis places every failed finding, so this is empty."""
    def key(r: dict) -> tuple[str, str, tuple[str, ...]]:
        return r["rule_id"], r.get("subject") or "", tuple(r.get("hosts") or ())

    placed = {key(r) for part in ("hygiene", "unexplained", "inconclusive") for r in report.get(part) or []}
    for c in report.get("causes") or []:
        placed |= {key(r) for r in (c.get("explains") or []) + (c.get("findings") or [])}
    return [key(f) for f in report.get("findings") or [] if f.get("status") == "fail" and key(f) not in placed]
