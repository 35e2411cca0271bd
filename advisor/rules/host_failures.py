"""A host or probe failure is reported once, with its cause, not once per rule that needed it.

Every rule that reads a host's facts yields an ``error`` finding when the host could not be
reached or the probe it reads failed: one unreachable host used to give one error finding per rule
(19 for a storage host), each repeating the same cause. After evaluation those repeats are replaced
by one ``SCAN-HOST-UNREACHABLE`` finding per unreachable host and one ``SCAN-PROBE-ERROR`` finding
per failed probe of a reachable host (its subject is the probe; probes that failed with the same cause,
such as a host that froze mid-scan, share one finding). Error findings with any other
message (a rule that could not compare a value) are kept. The scan's ``incomplete`` flag and exit
code 3 are decided from the facts, as before.
"""

from __future__ import annotations

from advisor.model.facts import FactSet, ProbeStatus
from advisor.model.findings import Finding, FindingStatus, Severity

UNREACHABLE_RULE = "SCAN-HOST-UNREACHABLE"
PROBE_ERROR_RULE = "SCAN-PROBE-ERROR"
_PROBE_PREFIX = "probe "
_PROBE_SEP = " failed: "


def _unreachable(factset: FactSet) -> dict[str, str]:
    return {h.name: "; ".join(h.errors) or "host unreachable" for h in factset.hosts.values() if not h.reachable}


def _probe_errors(factset: FactSet) -> dict[tuple[str, str], str]:
    return {(h.name, name): r.message or "failed" for h in factset.hosts.values() if h.reachable
            for name, r in h.probes.items() if r.status == ProbeStatus.error}


def _repeats_a_failure(f: Finding, unreachable: dict[str, str], probe_errors: dict[tuple[str, str], str]) -> bool:
    if f.status != FindingStatus.error or not f.hosts or not f.message:
        return False
    for host in f.hosts:
        if host in unreachable and f.message == unreachable[host]:
            continue
        if f.message.startswith(_PROBE_PREFIX) and _PROBE_SEP in f.message:
            probe = f.message[len(_PROBE_PREFIX):].split(_PROBE_SEP, 1)[0]
            if (host, probe) in probe_errors:
                continue
        return False
    return True


def collapse_host_failures(findings: list[Finding], factset: FactSet) -> list[Finding]:
    """``findings`` without the per-rule repeats of a host or probe failure, plus one finding per failure."""
    unreachable, probe_errors = _unreachable(factset), _probe_errors(factset)
    if not unreachable and not probe_errors:
        return findings
    out = [f for f in findings if not _repeats_a_failure(f, unreachable, probe_errors)]
    for host, cause in unreachable.items():
        out.append(Finding(rule_id=UNREACHABLE_RULE, title="Host could not be scanned", hosts=[host],
                           status=FindingStatus.error, severity=Severity.high, message=cause,
                           rationale="No rule could be evaluated on this host; the scan is incomplete."))
    by_cause: dict[tuple[str, str], list[str]] = {}
    for (host, probe), cause in probe_errors.items():
        by_cause.setdefault((host, cause), []).append(probe)
    for (host, cause), probes in by_cause.items():  # a host frozen mid-scan: one finding for its unfinished probes
        raw = factset.hosts[host].probes[probes[0]].raw or ""
        out.append(Finding(rule_id=PROBE_ERROR_RULE, title=f"Probe {', '.join(probes)} failed", hosts=[host],
                           subject=", ".join(probes), status=FindingStatus.error, severity=Severity.medium,
                           message=cause, evidence=[ln[:200] for ln in raw.splitlines()[:5]],
                           rationale="Rules that read these probes' facts could not be evaluated on this host."))
    return out
