"""Ceph client configuration probe: ``ceph.client_conf``, the options of /etc/ceph/ceph.conf that
clients (ceph-fuse, libcephfs) read.

ceph.conf is an INI file (ceph src/common/ConfUtils.cc): ``[section]`` headers (``global``, ``client``,
``client.NAME``, ``mon``, ``osd.3`` ...), ``key = value`` lines whose key may spell its words with
spaces, underscores or dashes (``client oc size`` == ``client_oc_size``), comments after ``#`` or ``;``
(whole lines or the end of a line). A client takes ``[global]``, then ``[client]``, then its own
``[client.NAME]``; ``client`` below is what every client gets (global overridden by client). A host
without the file has no Ceph client configuration: not applicable.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError

CONF = "/etc/ceph/ceph.conf"
_SECTION = re.compile(r"^\[([A-Za-z0-9_.$ -]+)\]$")
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_ -]*?)\s*=\s*(.*)$")
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def option_name(key: str) -> str:
    """The canonical spelling of an option: words joined by underscores (``client oc`` -> ``client_oc``)."""
    return re.sub(r"[ _-]+", "_", key.strip()).lower()


class CephOption(BaseModel):
    value: str
    #: the value read as a boolean the way Ceph does (true/false, yes/no, 1/0), else None
    flag: bool | None = None
    section: str
    line: str
    lineno: int


class CephConfFacts(BaseModel):
    #: section name -> option (canonical name) -> setting
    sections: dict[str, dict[str, CephOption]] = Field(default_factory=dict)
    #: the options every client reads: [global] overridden by [client]
    client: dict[str, CephOption] = Field(default_factory=dict)
    #: monitor addresses (``mon_host`` of [global]), as written
    mon_host: list[str] = Field(default_factory=list)


def _strip_comment(text: str) -> str:
    out, quoted = [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch in "#;" and not quoted:
            break
        out.append(ch)
    return "".join(out).strip()


def parse_ceph_conf(text: str) -> CephConfFacts:
    facts = CephConfFacts()
    section: str | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = _SECTION.match(_strip_comment(line))
        if m:
            section = m.group(1).strip()
            facts.sections.setdefault(section, {})
            continue
        k = _KEY.match(line)
        if not k:
            raise ProbeParseError(f"ceph.conf, line {n}: neither '[section]' nor 'key = value': {line[:80]!r}")
        if section is None:
            raise ProbeParseError(f"ceph.conf, line {n}: option before any [section]: {line[:80]!r}")
        value = _strip_comment(k.group(2)).strip('"')
        low = value.lower()
        facts.sections[section][option_name(k.group(1))] = CephOption(
            value=value, flag=True if low in _TRUE else False if low in _FALSE else None,
            section=section, line=line, lineno=n)
    if not facts.sections:
        raise ProbeParseError("ceph.conf: no [section]")
    facts.client = {**facts.sections.get("global", {}), **facts.sections.get("client", {})}
    mons = facts.sections.get("global", {}).get("mon_host")
    if mons:
        facts.mon_host = [a for a in re.split(r"[,\s]+", mons.value) if a]
    return facts


class CephClientConfProbe(Probe):
    name = "ceph.client_conf"
    title = "Ceph client options (/etc/ceph/ceph.conf)"
    facts_model = CephConfFacts

    def script(self, ctx: ProbeContext) -> str:
        return (f'[ -r {CONF} ] || {{ echo "{NOT_APPLICABLE_MARKER} no {CONF}"; exit 0; }}\n'
                f"cat {CONF}\n")

    def parse(self, text: str) -> CephConfFacts:
        return parse_ceph_conf(text)
