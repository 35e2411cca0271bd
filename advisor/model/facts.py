"""Facts: what the collector hands to the rule engine.

Every model here crosses a stage boundary and is plain data (JSON round-trips).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr


class ProbeStatus(str, Enum):
    ok = "ok"
    not_applicable = "not_applicable"
    error = "error"


class ProbeResult(BaseModel):
    """The outcome of one probe on one host."""

    probe: str
    status: ProbeStatus
    #: the parsed facts (the probe's facts model, dumped to plain data); empty unless ok
    facts: dict[str, Any] = Field(default_factory=dict)
    #: the raw text the facts were parsed from (evidence); kept for captured replay
    raw: str = ""
    #: why not applicable / what failed (one line)
    message: str | None = None
    duration_s: float | None = None


class HostFacts(BaseModel):
    name: str
    roles: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    address: str | None = None
    reachable: bool = True
    #: host-level errors (unreachable, host key refused, permission denied ...), one line each
    errors: list[str] = Field(default_factory=list)
    probes: dict[str, ProbeResult] = Field(default_factory=dict)

    def facts(self, probe: str) -> dict[str, Any] | None:
        r = self.probes.get(probe)
        if r is None or r.status != ProbeStatus.ok:
            return None
        return r.facts


class FactSet(BaseModel):
    """Per-host facts plus the cross-host measurements (mesh, efficiency)."""

    site: str
    hosts: dict[str, HostFacts] = Field(default_factory=dict)
    #: pairwise throughput results (advisor.mesh), when measured
    mesh: dict[str, Any] | None = None
    #: active CPU-efficiency test results (advisor.efficiency), when measured
    efficiency: dict[str, Any] | None = None
    #: the production flows as paths (advisor.flows.paths): ``{window_s, hosts, paths}``, when sampled
    flows: dict[str, Any] | None = None
    #: site-level context the rules may use (storage network, link rates, ...)
    context: dict[str, Any] = Field(default_factory=dict)
    _by_probe: dict[tuple[str, ...], dict[str, dict[str, Any]]] = PrivateAttr(default_factory=dict)

    def site_facts(self, probes: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        """{probe: {host: facts}} of the hosts where each probe succeeded; built once per set of
        probes (read after collection, when the hosts are all in)."""
        found = self._by_probe.get(probes)
        if found is None:
            found = {p: {name: f for name, hf in self.hosts.items() if (f := hf.facts(p)) is not None} for p in probes}
            self._by_probe[probes] = found
        return found
