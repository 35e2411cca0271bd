"""BeeGFS client probe: ``beegfs.client_conf``, the settings of /etc/beegfs/beegfs-client.conf.

The file holds ``key = value`` lines (an empty value is allowed: ``sysMgmtdHost =``) and ``#`` comments,
as ThinkParQ ships it (client_module/build/dist/etc/beegfs-client.conf). A host without the file has no
BeeGFS client: not applicable. Mount options (``-ocfgFile=...``) can point a mount at another file; the
probe reads the default one only.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int

CONF = "/etc/beegfs/beegfs-client.conf"
_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*=\s*(.*)$")


class BeegfsSetting(BaseModel):
    value: str
    #: the value as a number, where it is a whole number
    number: int | None = None
    line: str


class BeegfsClientFacts(BaseModel):
    settings: dict[str, BeegfsSetting] = Field(default_factory=dict)


def parse_client_conf(text: str) -> BeegfsClientFacts:
    facts = BeegfsClientFacts()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ProbeParseError(f"beegfs-client.conf, line {n}: not 'key = value': {line[:80]!r}")
        key, value = m.group(1), m.group(2).strip()
        number = bounded_int(value, f"beegfs-client.conf line {n}: {key}") if re.fullmatch(r"-?\d+", value) else None
        facts.settings[key] = BeegfsSetting(value=value, number=number, line=line)
    if not facts.settings:
        raise ProbeParseError("beegfs-client.conf: no settings")
    return facts


class BeegfsClientConfProbe(Probe):
    name = "beegfs.client_conf"
    title = "BeeGFS client settings (beegfs-client.conf)"
    facts_model = BeegfsClientFacts

    def script(self, ctx: ProbeContext) -> str:
        return (f'[ -r {CONF} ] || {{ echo "{NOT_APPLICABLE_MARKER} no {CONF}"; exit 0; }}\n'
                f"cat {CONF}\n")

    def parse(self, text: str) -> BeegfsClientFacts:
        return parse_client_conf(text)
