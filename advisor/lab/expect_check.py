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
