"""dCache probe ``dcache.status``: ``dcache status``, which domains of the node run.

dCache's ``dcache`` script prints a header ``DOMAIN STATUS PID USER LOG`` and one row per domain of the
node's layout, the columns aligned under the header's words (dCache Book, "Starting and stopping dCache";
a stopped domain has no PID). No ``dcache`` command or no /etc/dcache/dcache.conf -> not applicable.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import Probe, ProbeContext, ProbeParseError


class DcacheDomainState(BaseModel):
    name: str
    #: the STATUS column as printed ("running (for 16 minutes)", "stopped", "restarting" ...)
    status: str
    running: bool
    pid: int | None = None
    user: str | None = None
    log: str | None = None
    line: str


class DcacheStatusFacts(BaseModel):
    domains: dict[str, DcacheDomainState] = Field(default_factory=dict)


_STATUS_HEADER = re.compile(r"^DOMAIN\s+STATUS\s+PID\s+USER(\s+LOG)?\s*$")


def parse_status(text: str) -> DcacheStatusFacts:
    """``dcache status``: a header ``DOMAIN STATUS PID USER LOG`` and one row per domain, the columns
    aligned under the header's words (STATUS holds blanks: ``running (for 16 minutes)``)."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    if not lines or not _STATUS_HEADER.match(lines[0]):
        raise ProbeParseError("dcache status: no 'DOMAIN STATUS PID USER LOG' header")
    head = lines[0]
    cols = [head.index(w) for w in ("STATUS", "PID", "USER")] + ([head.index("LOG")] if "LOG" in head else [])
    facts = DcacheStatusFacts()
    for n, line in enumerate(lines[1:], 2):
        cut = [0, *cols, max(len(line), len(head)) + 1]
        parts = [line[a:b].strip() for a, b in zip(cut, cut[1:])]
        name, status, pid, user = parts[:4]
        log = parts[4] if len(parts) > 4 else ""
        if not re.fullmatch(r"[A-Za-z0-9_.${}-]+", name) or not status or (pid and not re.fullmatch(r"\d{1,9}", pid)):
            raise ProbeParseError(f"dcache status, line {n}: not a domain row under the header: {line[:100]!r}")
        facts.domains[name] = DcacheDomainState(name=name, status=status, running=status.startswith("running"),
                                                pid=int(pid) if pid else None, user=user or None, log=log or None,
                                                line=" ".join(line.split()))
    return facts


class DcacheStatusProbe(Probe):
    name = "dcache.status"
    title = "dCache domains running or not (dcache status)"
    roles = frozenset({"storage", "door"})
    facts_model = DcacheStatusFacts

    def script(self, ctx: ProbeContext) -> str:
        from probes.probe import NOT_APPLICABLE_MARKER

        return (
            'D=$(command -v dcache 2>/dev/null)\n'
            'for c in /usr/bin/dcache /usr/sbin/dcache /opt/d-cache/bin/dcache; do [ -n "$D" ] || { [ -x "$c" ] && D=$c; }; done\n'
            f'[ -n "$D" ] || {{ echo "{NOT_APPLICABLE_MARKER} no dcache command"; exit 0; }}\n'
            f'[ -r /etc/dcache/dcache.conf ] || {{ echo "{NOT_APPLICABLE_MARKER} no /etc/dcache/dcache.conf"; exit 0; }}\n'
            '"$D" status 2>&1\n'
        )

    def parse(self, text: str) -> DcacheStatusFacts:
        return parse_status(text)
