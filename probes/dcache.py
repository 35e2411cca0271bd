"""dCache probe: ``dcache.layout``, the domains and services of a dCache node with their properties.

dCache reads ``/etc/dcache/dcache.conf`` and the layout file ``/etc/dcache/layouts/<dcache.layout>.conf``
(``dcache.layout`` defaults to the host name). Both hold ``key = value`` properties and ``#`` comments; a
layout adds ``[domain]`` and ``[domain/service]`` headers: a property before the first header applies to
every domain, one under ``[domain]`` to that domain, one under ``[domain/service]`` to that service
(dCache Book, "Defining domains and services"). ``${host.name}`` in names is replaced by the host's name.

Facts per domain: its services, its properties in force (dcache.conf, then the layout's top, then the
domain's own), the Java heap and direct memory in bytes (dCache's defaults, 512m each, when unset) and
whether it runs a pool or a door. Script output (sections): ``conf`` (dcache.conf), ``layout`` (the
layout file), ``hostname``. ``parse`` also accepts a raw layout file.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import SECTION_MARKER, Probe, ProbeContext, ProbeParseError, section, split_sections

#: dCache Book, "Java heap size": dcache.java.memory.heap=512m, dcache.java.memory.direct=512m by default
DEFAULT_MEMORY = "512m"
DOOR_SERVICES = {"dcap", "ftp", "gridftp", "webdav", "xrootd", "nfs", "srm", "frontend"}
_HEADER = re.compile(r"^\[([^\]/\s]+)(?:/([^\]\s]+))?\]$")
_PROP = re.compile(r"^([A-Za-z0-9_.!-]+(?:![A-Za-z0-9_.-]+)?)\s*=\s*(.*)$")
_SIZE = re.compile(r"^(\d+)\s*([kKmMgGtT]?)$")
_MULT = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class DcacheService(BaseModel):
    name: str
    properties: dict[str, str] = Field(default_factory=dict)
    line: str


class DcacheDomain(BaseModel):
    name: str
    services: list[DcacheService] = Field(default_factory=list)
    #: properties in force in the domain (dcache.conf < layout top < the domain's own)
    properties: dict[str, str] = Field(default_factory=dict)
    #: property -> the line that set it
    lines: dict[str, str] = Field(default_factory=dict)
    heap_bytes: int | None = None
    direct_bytes: int | None = None
    has_pool: bool = False
    has_door: bool = False
    line: str


class DcacheLayoutFacts(BaseModel):
    host: str | None = None
    layout_name: str | None = None
    conf_properties: dict[str, str] = Field(default_factory=dict)
    domains: dict[str, DcacheDomain] = Field(default_factory=dict)


def _size(value: str) -> int | None:
    m = _SIZE.match(value.strip())
    return int(m.group(1)) * _MULT[m.group(2).lower()] if m and len(m.group(1)) <= 15 else None


def parse_properties(text: str, what: str) -> tuple[dict[str, tuple[str, str]], list[tuple[int, str, str | None]],
                                                     dict[int, dict[str, tuple[str, str]]]]:
    """(top-level properties, headers [(index, domain, service)], properties per header index);
    a property is (value, line)."""
    top: dict[str, tuple[str, str]] = {}
    headers: list[tuple[int, str, str | None]] = []
    per: dict[int, dict[str, tuple[str, str]]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        h = _HEADER.match(line)
        if h:
            headers.append((len(headers), h.group(1), h.group(2)))
            per[len(headers) - 1] = {}
            continue
        p = _PROP.match(line)
        if not p:
            raise ProbeParseError(f"{what}, line {n}: neither 'key = value', '[domain]' nor '[domain/service]': {line[:80]!r}")
        target = per[len(headers) - 1] if headers else top
        target[p.group(1)] = (p.group(2).strip(), line)
    return top, headers, per


def parse_layout(layout: str, conf: str = "", host: str | None = None) -> DcacheLayoutFacts:
    conf_top, conf_headers, _ = parse_properties(conf, "dcache.conf")
    if conf_headers:
        raise ProbeParseError("dcache.conf: has a [domain] header (headers belong in the layout file)")
    top, headers, per = parse_properties(layout, "layout file")
    if not headers:
        raise ProbeParseError("layout file: no [domain] header")
    facts = DcacheLayoutFacts(host=host, conf_properties={k: v for k, (v, _) in conf_top.items()})

    def name(s: str) -> str:
        return s.replace("${host.name}", host) if host else s

    for i, dom, svc in headers:
        dname = name(dom)
        d = facts.domains.get(dname)
        if d is None:
            d = facts.domains[dname] = DcacheDomain(name=dname, line=f"[{dom}]")
            for src in (conf_top, top):
                for k, (v, ln) in src.items():
                    d.properties[k], d.lines[k] = v, ln
        if svc is None:
            for k, (v, ln) in per[i].items():
                d.properties[k], d.lines[k] = v, ln
        else:
            d.services.append(DcacheService(name=svc, properties={k: v for k, (v, _) in per[i].items()},
                                            line=f"[{dom}/{svc}]"))
            d.has_pool = d.has_pool or svc == "pool"
            d.has_door = d.has_door or svc in DOOR_SERVICES
    for d in facts.domains.values():
        d.heap_bytes = _size(d.properties.get("dcache.java.memory.heap", DEFAULT_MEMORY))
        d.direct_bytes = _size(d.properties.get("dcache.java.memory.direct", DEFAULT_MEMORY))
        d.lines.setdefault("dcache.java.memory.direct", f"dcache.java.memory.direct unset (dCache default {DEFAULT_MEMORY})")
        d.lines.setdefault("dcache.java.memory.heap", f"dcache.java.memory.heap unset (dCache default {DEFAULT_MEMORY})")
    return facts


class DcacheLayoutProbe(Probe):
    name = "dcache.layout"
    title = "dCache domains, services and memory (dcache.conf and the layout file)"
    roles = frozenset({"storage", "door"})
    facts_model = DcacheLayoutFacts

    def script(self, ctx: ProbeContext) -> str:
        from probes.probe import NOT_APPLICABLE_MARKER

        return (
            f'[ -r /etc/dcache/dcache.conf ] || {{ echo "{NOT_APPLICABLE_MARKER} no /etc/dcache/dcache.conf"; exit 0; }}\n'
            + 'H=$(hostname -s 2>/dev/null || uname -n)\n'
            + "L=$(sed -n 's/^[[:space:]]*dcache\\.layout[[:space:]]*=[[:space:]]*//p' /etc/dcache/dcache.conf | tail -n 1)\n"
            + '[ -n "$L" ] || L="$H"\n'
            + 'L=$(printf %s "$L" | sed "s/\\${host.name}/$H/g")\n'
            + section("hostname") + 'echo "$H"\n'
            + section("layout_name") + 'echo "$L"\n'
            + section("conf") + "cat /etc/dcache/dcache.conf\n"
            + section("layout") + 'cat "/etc/dcache/layouts/$L.conf" 2>&1\n'
        )

    def parse(self, text: str) -> DcacheLayoutFacts:
        if SECTION_MARKER + "layout" not in text:
            return parse_layout(text)
        s = split_sections(text)
        host = (s.get("hostname") or "").strip() or None
        facts = parse_layout(s.get("layout", ""), s.get("conf", ""), host)
        facts.layout_name = (s.get("layout_name") or "").strip() or None
        return facts
