"""HDFS probe: ``hdfs.balancer``, the balancer's concurrency and bandwidth settings.

The script asks the configuration in force with ``hdfs getconf -confKey KEY`` (one value per key, each
in its own section, the key as the section name). ``parse`` also reads the lines the HDFS Balancer logs
at start-up, ``... INFO balancer.Balancer: KEY = VALUE (default=DEFAULT)``, the same settings as the
balancer itself saw them. Runs on hosts with the ``hdfs`` command (role storage).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import SECTION_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int, require_tool, section, split_sections

KEYS = (
    "dfs.datanode.balance.max.concurrent.moves",
    "dfs.datanode.balance.bandwidthPerSec",
    "dfs.balancer.moverThreads",
    "dfs.balancer.dispatcherThreads",
    "dfs.balancer.max-size-to-move",
)
_LOG = re.compile(r"INFO balancer\.Balancer: (dfs\.[A-Za-z0-9_.-]+) = (\S+) \(default=(\S*)\)\s*$")


class BalancerSetting(BaseModel):
    value: str
    number: int | None = None
    default: str | None = None
    line: str


class HdfsBalancerFacts(BaseModel):
    settings: dict[str, BalancerSetting] = Field(default_factory=dict)
    #: where the values come from: ``getconf`` or ``balancer-log``
    source: str


def _number(value: str, what: str) -> int | None:
    return bounded_int(value, what) if re.fullmatch(r"\d+", value) else None


def parse_balancer_log(text: str) -> HdfsBalancerFacts:
    facts = HdfsBalancerFacts(source="balancer-log")
    for n, line in enumerate(text.splitlines(), 1):
        m = _LOG.search(line)
        if m:
            facts.settings[m.group(1)] = BalancerSetting(value=m.group(2), number=_number(m.group(2), f"line {n}: {m.group(1)}"),
                                                         default=m.group(3), line=line.strip())
    if not facts.settings:
        raise ProbeParseError("hdfs balancer: no 'INFO balancer.Balancer: KEY = VALUE (default=...)' line and no getconf sections")
    return facts


def parse_getconf(sections: dict[str, str]) -> HdfsBalancerFacts:
    facts = HdfsBalancerFacts(source="getconf")
    for key in KEYS:
        body = sections.get(key)
        if body is None:
            continue
        lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
        if not lines:
            continue
        if len(lines) != 1 or " " in lines[0]:
            # getconf prints the value alone; a key it does not know prints "... is not found" (skipped)
            if "not found" in " ".join(lines).lower():
                continue
            raise ProbeParseError(f"hdfs getconf -confKey {key}: not one value: {' | '.join(lines)[:120]!r}")
        facts.settings[key] = BalancerSetting(value=lines[0], number=_number(lines[0], key),
                                              line=f"hdfs getconf -confKey {key}: {lines[0]}")
    if not facts.settings:
        raise ProbeParseError("hdfs getconf: no value for any balancer key")
    return facts


class HdfsBalancerProbe(Probe):
    name = "hdfs.balancer"
    title = "HDFS balancer concurrency and bandwidth (hdfs getconf)"
    roles = frozenset({"storage"})
    facts_model = HdfsBalancerFacts

    def script(self, ctx: ProbeContext) -> str:
        out = require_tool("hdfs", "/usr/bin", "/opt/hadoop/bin", "/usr/lib/hadoop/bin")
        for key in KEYS:
            out += section(key) + f'timeout 60 "$TOOL_hdfs" getconf -confKey {key} 2>&1\n'
        return out

    def parse(self, text: str) -> HdfsBalancerFacts:
        if SECTION_MARKER in text:
            return parse_getconf(split_sections(text))
        return parse_balancer_log(text)
