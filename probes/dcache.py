"""dCache probe: ``dcache.layout``, the domains and services of a dCache node with their properties
(``dcache.status``, which of them run: probes/dcache_status.py).

dCache reads ``/etc/dcache/dcache.conf`` and the layout file ``/etc/dcache/layouts/<dcache.layout>.conf``
(``dcache.layout`` defaults to the host name). Both hold ``key = value`` properties and ``#`` comments; a
layout adds ``[domain]`` and ``[domain/service]`` headers: a property before the first header applies to
every domain, one under ``[domain]`` to that domain, one under ``[domain/service]`` to that service
(dCache Book, "Defining domains and services"). ``${host.name}`` in names is replaced by the host's name.

Facts per domain: its services, its properties in force (dcache.conf, then the layout's top, then the
domain's own), the Java heap and direct memory in bytes (dCache's defaults, 512m each, when unset) and
whether it runs a pool or a door. Script output (sections): ``conf`` (dcache.conf), ``layout`` (the
layout file), ``hostname``, and ``setup:<pool.path>`` per pool: the pool's ``setup`` file, the admin
commands a pool runs at start (``mover set max active [-queue=NAME] N``: the mover queue limits; dCache
Book, "mover set max active"). ``parse`` also accepts a raw layout file.

Per pool (``pools``, by ``pool.name``): its domain, path, setup file and the mover limits that file sets
(None when it sets none: the pool then runs with the limit it had, which the file does not tell).
Per domain with an ``srm`` service: ``srm.limits.transfer-tcp-buffer.size`` in force for it (dCache's
default 1048576 when unset; dCache Book, "Advanced Tuning", "Tunable Properties", SRM).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import SECTION_MARKER, Probe, ProbeContext, ProbeParseError, section, split_sections

#: dCache Book, "Java heap size": dcache.java.memory.heap=512m, dcache.java.memory.direct=512m by default
DEFAULT_MEMORY = "512m"
#: dCache Book, "Advanced Tuning", "Tunable Properties" (SRM): the TCP buffer of SRM-driven transfers
SRM_TCP_BUFFER = "srm.limits.transfer-tcp-buffer.size"
SRM_TCP_BUFFER_DEFAULT = "1048576"
DOOR_SERVICES = {"dcap", "ftp", "gridftp", "webdav", "xrootd", "nfs", "srm", "frontend"}
NO_SETUP = "storadvise: no readable setup file"
_HEADER = re.compile(r"^\[([^\]/\s]+)(?:/([^\]\s]+))?\]$")
_PROP = re.compile(r"^([A-Za-z0-9_.!-]+(?:![A-Za-z0-9_.-]+)?)\s*=\s*(.*)$")
_SIZE = re.compile(r"(\d+)\s*([kKmMgGtT]?)")
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
    has_srm: bool = False
    #: srm.limits.transfer-tcp-buffer.size in force for the domain's srm service (None: no srm service)
    srm_tcp_buffer_bytes: int | None = None
    line: str


class DcachePool(BaseModel):
    name: str
    domain: str
    path: str | None = None
    #: the ``[domain/pool]`` header as the layout file writes it
    service_line: str
    setup_file: str | None = None
    #: the setup file was read (False: no such file, or the scan did not read it)
    setup_read: bool = False
    #: queue -> maximum active movers, as the setup file sets them
    mover_max_active: dict[str, int] = Field(default_factory=dict)
    #: the default ("regular") queue's limit (None: the setup file sets none)
    regular_max_active: int | None = None
    lines: dict[str, str] = Field(default_factory=dict)


class DcacheLayoutFacts(BaseModel):
    host: str | None = None
    layout_name: str | None = None
    conf_properties: dict[str, str] = Field(default_factory=dict)
    domains: dict[str, DcacheDomain] = Field(default_factory=dict)
    pools: dict[str, DcachePool] = Field(default_factory=dict)


_SETUP_LINE = re.compile(r"^[a-z][a-z0-9_-]*(\s.*)?$")
_MOVER = re.compile(r"^mover\s+set\s+max\s+active\s+(.*)$")


def parse_setup(text: str, what: str = "pool setup file") -> tuple[dict[str, int], dict[str, str]]:
    """A pool's setup file (admin commands, ``#`` comments): (queue -> max active movers, queue -> line).
    ``mover set max active N`` without ``-queue`` is the default queue, ``regular``; the last line wins."""
    limits: dict[str, int] = {}
    lines: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not _SETUP_LINE.match(line):
            raise ProbeParseError(f"{what}, line {n}: not a pool admin command: {line[:80]!r}")
        m = _MOVER.match(line)
        if not m:
            continue
        queue, number = "regular", None
        for word in m.group(1).split():
            if word.startswith("-queue="):
                queue = word.split("=", 1)[1] or "regular"
            elif re.fullmatch(r"\d{1,9}", word):
                number = int(word)
            else:
                raise ProbeParseError(f"{what}, line {n}: 'mover set max active' takes a number and -queue=NAME: {line[:80]!r}")
        if number is None:
            raise ProbeParseError(f"{what}, line {n}: 'mover set max active' without a number: {line[:80]!r}")
        limits[queue], lines[queue] = number, line
    return limits, lines


def _size(value: str) -> int | None:
    m = _SIZE.fullmatch(value.strip())
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


def parse_layout(layout: str, conf: str = "", host: str | None = None,
                 setups: dict[str, str | None] | None = None) -> DcacheLayoutFacts:
    """``setups``: pool path -> its setup file's text (None: the file could not be read)."""
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
            d.has_srm = d.has_srm or svc == "srm"
    for d in facts.domains.values():
        d.heap_bytes = _size(d.properties.get("dcache.java.memory.heap", DEFAULT_MEMORY))
        d.direct_bytes = _size(d.properties.get("dcache.java.memory.direct", DEFAULT_MEMORY))
        d.lines.setdefault("dcache.java.memory.direct", f"dcache.java.memory.direct unset (dCache default {DEFAULT_MEMORY})")
        d.lines.setdefault("dcache.java.memory.heap", f"dcache.java.memory.heap unset (dCache default {DEFAULT_MEMORY})")
        for svc in d.services:
            if svc.name == "srm":
                value = svc.properties.get(SRM_TCP_BUFFER, d.properties.get(SRM_TCP_BUFFER, SRM_TCP_BUFFER_DEFAULT))
                d.srm_tcp_buffer_bytes = _size(value)
                line = (f"{SRM_TCP_BUFFER} = {svc.properties[SRM_TCP_BUFFER]} under {svc.line}" if SRM_TCP_BUFFER in svc.properties
                        else d.lines.get(SRM_TCP_BUFFER) or f"{SRM_TCP_BUFFER} unset (dCache default {SRM_TCP_BUFFER_DEFAULT})")
                d.lines[SRM_TCP_BUFFER] = line
            if svc.name != "pool":
                continue
            props = {**d.properties, **svc.properties}
            pname = props.get("pool.name")
            if not pname:
                continue
            pname = name(pname)
            path = props.get("pool.path")
            path = name(path) if path else None
            pool = facts.pools[pname] = DcachePool(name=pname, domain=d.name, path=path, service_line=svc.line,
                                                   setup_file=f"{path.rstrip('/')}/setup" if path else None)
            text = (setups or {}).get(path) if path else None
            if text is not None:
                limits, lines = parse_setup(text, f"{pool.setup_file}")
                pool.setup_read, pool.mover_max_active = True, limits
                pool.regular_max_active = limits.get("regular")
                pool.lines["mover_max_active"] = lines.get("regular") or (
                    f"{pool.setup_file}: no 'mover set max active' line for the regular queue")
            else:
                pool.lines["mover_max_active"] = f"{pool.setup_file or pname}: setup file not read"
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
            # each pool's setup file (pool.path lines of the layout, ${host.name} replaced)
            + "sed -n 's/^[[:space:]]*pool\\.path[[:space:]]*=[[:space:]]*//p' \"/etc/dcache/layouts/$L.conf\" 2>/dev/null"
            + ' | sed "s/\\${host.name}/$H/g;s/[[:space:]]*$//" | sort -u | while IFS= read -r P; do\n'
            + f'  echo "{SECTION_MARKER}setup:$P"\n'
            + '  if [ -r "$P/setup" ]; then cat "$P/setup"; else echo "' + NO_SETUP + '"; fi\n'
            + "done\n"
        )

    def parse(self, text: str) -> DcacheLayoutFacts:
        if SECTION_MARKER + "layout" not in text:
            return parse_layout(text)
        s = split_sections(text)
        host = (s.get("hostname") or "").strip() or None
        setups = {k.split(":", 1)[1]: (None if v.strip() == NO_SETUP else v)
                  for k, v in s.items() if k.startswith("setup:")}
        facts = parse_layout(s.get("layout", ""), s.get("conf", ""), host, setups)
        facts.layout_name = (s.get("layout_name") or "").strip() or None
        return facts

