"""The active efficiency test's plan: everything resolved against the site once, before anything runs.

``build_active_plan(site, settings)`` reads the site's ``extensions.efficiency`` mapping, merges the
settings given (the CLI's options; None: the site's setting), resolves the worker hosts, one source
per protocol (the ``Host`` serving it and its address, see advisor/efficiency/protocols.py), the
scaling host and the healthy rate, and validates every setting: a configuration error is an
``EfficiencyTestError`` naming the site file, raised here, before a data server starts. The
running test (``advisor.efficiency.active.run_active``) takes the plan and never looks a host up
in the site again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from advisor.efficiency.protocols import EfficiencyTestError, parse_protocols
from advisor.efficiency.scaling_curve import MIN_EFFICIENCY, RATE_DROP, find_knee
from advisor.util.errors import StoradviseError
from advisor.site.model import Host, Site, host_address
from advisor.util.units import parse_rate_bps

DEFAULTS: dict[str, Any] = {
    "mb": 64.0,  # MiB per host test
    "cpu_factor": 1.5,  # compute time per MiB / healthy read time per MiB
    "readahead": 1,  # blocks requested ahead of the one being computed
    "slots": 1,  # concurrent jobs per worker in the per-host test (job slots), sharing the healthy rate
    "block_kb": 1024,
    "scaling_budget_mb": 256.0,  # clients x MiB per client at the largest point
    "calibrate_seconds": 0.3,
    "server_lifetime": 1800.0,
    "timeout": None,  # per job; default from the work
    "nodes": 1,  # worker nodes the scaling points spread their clients over
    "knee_rate_drop": RATE_DROP,  # a point is degraded below (1 - this) x the baseline rate per client
    "knee_min_efficiency": MIN_EFFICIENCY,  # ... or below this efficiency
}
#: the settings that are not numbers with a default
SETTINGS = ("source", "hosts", "clients", "healthy_rate", "scaling_host", "python", "address", "protocols",
            "xrootd", "xcache", "posix")


@dataclass(frozen=True)
class ProtocolSource:
    """What one protocol's clients read: ``fields`` as reported (kind, host name, address, port,
    path, url, label; JSON values) and ``host``, the host serving it (None for a path)."""

    protocol: str
    host: Host | None
    fields: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.fields["kind"])


@dataclass(frozen=True)
class ActiveTestPlan:
    """The active test, resolved: the running stage reads this and nothing else of the site."""

    config: Mapping[str, Any]  # extensions.efficiency merged with the settings given, over DEFAULTS
    workers: tuple[Host, ...]  # the per-host test's hosts, one at a time, in this order
    protocols: tuple[str, ...]  # the first one also serves the per-host test
    explicit_protocols: bool  # protocols were asked for (the scaling points run even at 1 client)
    sources: Mapping[str, ProtocolSource]  # per protocol
    clients: tuple[int, ...]  # the scaling points' client counts, ascending
    nodes: int  # workers a scaling point spreads its clients over
    scaling_host: Host | None  # the scaling points' first node (default: the first worker that passed)
    python: str  # the interpreter the hosts run the job with
    mb_per_host: float
    slots: int
    cpu_factor: float
    readahead: int
    block_kb: int
    calibrate_seconds: float
    scaling_budget_mb: float
    server_lifetime: float
    timeout: float | None  # per job (None: from its work)
    healthy_rate_bps: int | None  # the site's setting (None: the slower end's link rate)
    knee_rate_drop: float
    knee_min_efficiency: float

    @property
    def server_host(self) -> Host | None:
        """The host our own data server runs on (the tcp protocol's), if any."""
        tcp = self.sources.get("tcp")
        return tcp.host if tcp is not None else None


def _where(site: Site) -> str:
    return site.source or site.name


def _config(site: Site, overrides: dict[str, Any]) -> dict[str, Any]:
    ext = site.extensions.get("efficiency") or {}
    if not isinstance(ext, dict):
        raise EfficiencyTestError(f"{_where(site)}: 'extensions.efficiency' must be a mapping")
    cfg = dict(DEFAULTS)
    for k in DEFAULTS:
        if ext.get(k) is not None:
            cfg[k] = ext[k]
    for k in SETTINGS:
        cfg[k] = ext.get(k)
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    return cfg


_PYTHON_RE = re.compile(r"[A-Za-z0-9_./+-]{1,256}")
_DIR = re.compile(r"/[A-Za-z0-9_./+-]{0,1023}")


def _section(cfg: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    sec = cfg.get(name) or {}
    if not isinstance(sec, dict):
        raise EfficiencyTestError(f"{where}: extensions.efficiency.{name} must be a mapping")
    return sec


def _port(value: Any, what: str) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = 0
    if not 1 <= port <= 65535:
        raise EfficiencyTestError(f"{what}: not a port: {str(value)[:40]!r}")
    return port


def _dir(value: Any, what: str) -> str:
    d = str(value)
    if not _DIR.fullmatch(d) or "//" in d or "/../" in d + "/":
        raise EfficiencyTestError(f"{what}: not an absolute directory of plain names: {d[:80]!r}")
    return d.rstrip("/") or "/"


def python_command(value: Any) -> str:
    """The interpreter the hosts run the job with: a command name or a path, nothing a shell would read."""
    python = str(value or "python3")
    if not _PYTHON_RE.fullmatch(python) or python.startswith("-"):
        raise EfficiencyTestError(f"extensions.efficiency.python: {python[:60]!r} is not a command name or path")
    return python


def resolve_hosts(site: Site, hosts: Iterable[str] | str | None) -> list[Host]:
    """The hosts the test runs on: a host pattern, the grammar of ``--hosts`` everywhere (names, globs,
    groups, roles, comma lists, ``!exclusion``); a list (a site file's) is its items as one comma list.
    Default: the workers. An item that names nothing is refused (a typo is not a smaller test)."""
    items = ["worker"] if hosts is None else [x.strip() for x in (hosts.split(",") if isinstance(hosts, str) else hosts)]
    items = [x for x in items if x]
    for sel in items:
        try:
            found = site.select(sel.lstrip("!"))
        except ValueError as exc:
            raise EfficiencyTestError(f"{_where(site)}: hosts {sel!r}: {exc}") from None
        if not found:
            raise EfficiencyTestError(f"{_where(site)}: no host, group or role {sel.lstrip('!')!r}")
    try:
        out = site.select(",".join(items)) if items else []
    except ValueError as exc:
        raise EfficiencyTestError(f"{_where(site)}: hosts {','.join(items)!r}: {exc}") from None
    if not out:
        raise EfficiencyTestError(f"{_where(site)}: no worker host to test")
    return out


def _resolve(site: Site, source: Any) -> tuple[Host | None, dict[str, Any]]:
    """The host serving ``source`` (None: a path) and its fields (see ``resolve_source``)."""
    where = _where(site)
    if isinstance(source, dict):
        if source.get("path"):
            return None, {"kind": "path", "path": str(source["path"])}
        if source.get("host"):
            h = site.host(str(source["host"]))
            try:
                address = host_address(str(source.get("address") or h.connect_address))
            except ValueError as exc:
                raise EfficiencyTestError(f"{where}: extensions.efficiency.source.address: {exc}") from None
            return h, {"kind": "tcp", "host": h.name, "address": address}
        raise EfficiencyTestError(f"{where}: efficiency.source needs 'host' or 'path'")
    if isinstance(source, str) and source:
        if source.startswith("path:"):
            if not source[5:]:
                raise EfficiencyTestError("--source path: needs a path, e.g. path:/gpfs/fs1/testfile")
            return None, {"kind": "path", "path": source[5:]}
        try:
            h = site.host(source)
        except StoradviseError as e:
            raise EfficiencyTestError(str(e)) from None
        return h, {"kind": "tcp", "host": h.name, "address": h.connect_address}
    found = _first_with_role(site, "storage")
    if found is None:
        raise EfficiencyTestError(f"{where}: no host with role storage and no efficiency.source: nothing to read from")
    return found, {"kind": "tcp", "host": found.name, "address": found.connect_address}


def resolve_source(site: Site, source: Any) -> dict[str, Any]:
    """``{"kind": "tcp", "host": NAME, "address": ADDR}`` or ``{"kind": "path", "path": P}``.

    ``source``: None (first storage host), "HOST", "path:PATH", or the site extension's
    mapping ``{host: NAME[, address: A]}`` / ``{path: P}``.
    """
    return _resolve(site, source)[1]


def _first_with_role(site: Site, role: str) -> Host | None:
    return next((h for h in site.hosts if h.has_role(role)), None)


def _xrd_source(site: Site, protocol: str, sec: dict[str, Any], origin: dict[str, Any] | None) -> ProtocolSource:
    where = _where(site)
    role = "storage" if protocol == "xrootd" else "cache"
    if sec.get("host"):
        try:
            h = site.host(str(sec["host"]))
        except Exception as e:
            raise EfficiencyTestError(f"{where}: extensions.efficiency.{protocol}.host: {e}") from None
    else:
        found = _first_with_role(site, role)
        if found is None:
            raise EfficiencyTestError(f"{where}: --protocol {protocol}: no host with role {role} and no "
                                      f"extensions.efficiency.{protocol}.host")
        h = found
    try:
        address = host_address(str(sec.get("address") or h.connect_address))
    except ValueError as exc:
        raise EfficiencyTestError(f"{where}: extensions.efficiency.{protocol}.address: {exc}") from None
    port = _port(sec.get("port") or h.vars.get("xrootd_port") or 1094, f"{where}: {protocol} port")
    default_dir = (origin or {}).get("path") or h.vars.get("xrootd_export") or "/store"
    path = _dir(sec.get("path") or default_dir, f"{where}: extensions.efficiency.{protocol}.path")
    server = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    return ProtocolSource(protocol, h, {
        "kind": protocol, "protocol": protocol, "host": h.name, "address": address, "port": port,
        "path": path, "url": f"root://{server}/{path}", "label": f"root://{h.name}:{port}/{path}"})


def _sources(site: Site, protocols: list[str], cfg: dict[str, Any], source: Any) -> dict[str, ProtocolSource]:
    where = _where(site)
    out: dict[str, ProtocolSource] = {}
    origin: dict[str, Any] | None = None
    for proto in protocols:
        if proto == "tcp":
            given = source if source is not None else cfg.get("source")
            if isinstance(given, str) and given.startswith("path:"):
                given = None  # the path is posix's
            if isinstance(given, dict) and not given.get("host"):
                given = None
            host, fields = _resolve(site, given)
            out[proto] = ProtocolSource(proto, host, {**fields, "protocol": "tcp"})
        elif proto == "posix":
            sec = _section(cfg, "posix", where)
            given = source if source is not None else cfg.get("source")
            if sec.get("path"):
                given = {"path": sec["path"]}
            if given is None:  # a file of the origin's export as the workers see it (the lab records one)
                local = next((h.vars["xrootd_local_file"] for h in site.hosts
                              if h.has_role("storage") and h.vars.get("xrootd_local_file")), None)
                if local is not None:
                    given = {"path": _dir(local, f"{where}: vars.xrootd_local_file")}
            if not (isinstance(given, str) and given.startswith("path:")) and not (isinstance(given, dict)
                                                                                   and given.get("path")):
                raise EfficiencyTestError(f"{where}: --protocol posix needs a file: --source path:PATH or "
                                          "extensions.efficiency.posix.path")
            out[proto] = ProtocolSource(proto, None, {**_resolve(site, given)[1], "protocol": "posix"})
        else:
            if proto == "xcache" and origin is None:
                try:
                    origin = dict(_xrd_source(site, "xrootd", _section(cfg, "xrootd", where), None).fields)
                except EfficiencyTestError:
                    origin = None  # the cache's directory then comes from its own settings
            out[proto] = _xrd_source(site, proto, _section(cfg, proto, where), origin if proto == "xcache" else None)
            if proto == "xrootd":
                origin = dict(out[proto].fields)
    return out


def protocol_sources(site: Site, protocols: list[str], cfg: dict[str, Any], source: Any) -> dict[str, dict[str, Any]]:
    """Every protocol's source as reported (``ProtocolSource.fields``), resolved before anything runs."""
    return {p: dict(s.fields) for p, s in _sources(site, protocols, cfg, source).items()}


def default_protocol(site: Site, cfg: dict[str, Any], source: Any) -> str:
    """The protocol of the test without ``--protocol``: that of its ``source`` (tcp or posix)."""
    given = source if source is not None else cfg.get("source")
    return "posix" if _resolve(site, given)[1]["kind"] == "path" else "tcp"


#: settings that are not part of the test's configuration (the run's callbacks)
CALLBACKS = ("progress", "step_progress")


def build_active_plan(site: Site, settings: Mapping[str, Any] | None = None) -> ActiveTestPlan:
    """The test ``settings`` ask for on ``site``, resolved and validated (see the module's doc).

    ``settings``: hosts, source, clients, protocols, mb, cpu_factor, readahead, slots, nodes,
    knee_rate_drop, knee_min_efficiency, or any key of the site's ``extensions.efficiency``;
    None values mean the site's setting, else the default."""
    given = {k: v for k, v in (settings or {}).items() if k not in CALLBACKS}
    if not given.get("clients"):
        given.pop("clients", None)  # an empty list: the site's counts
    cfg = _config(site, given)
    where = _where(site)
    protocols = parse_protocols(cfg.get("protocols"))
    explicit = protocols is not None
    if protocols is None:
        protocols = [default_protocol(site, cfg, None)]
    sources = _sources(site, protocols, cfg, None)
    nodes = int(cfg["nodes"])
    rate_drop, min_eff = float(cfg["knee_rate_drop"]), float(cfg["knee_min_efficiency"])
    try:
        find_knee([], rate_drop, min_eff)  # the bounds are checked before anything runs
    except ValueError as e:
        raise EfficiencyTestError(f"knee: {e}") from None
    workers = resolve_hosts(site, cfg.get("hosts"))
    counts = sorted({int(c) for c in (cfg.get("clients") or [1])})
    if not counts or counts[0] < 1:
        raise EfficiencyTestError(f"clients must be positive integers, got {counts}")
    python = python_command(cfg.get("python"))
    mb_host = float(cfg["mb"])
    if mb_host <= 0:
        raise EfficiencyTestError(f"mb must be positive, got {mb_host:g}")
    if nodes < 1 or nodes > len(workers):
        raise EfficiencyTestError(f"nodes {nodes}: between 1 and the {len(workers)} worker(s) of the test "
                                  f"({', '.join(h.name for h in workers)})")
    tcp = sources.get("tcp")
    if tcp is not None and cfg.get("address"):
        try:
            sources["tcp"] = ProtocolSource("tcp", tcp.host, {**tcp.fields, "address": host_address(str(cfg["address"]))})
        except ValueError as exc:
            raise EfficiencyTestError(f"{where}: extensions.efficiency.address: {exc}") from None
    slots = int(cfg["slots"])
    if slots < 1:
        raise EfficiencyTestError(f"slots must be a positive integer, got {slots}")
    healthy: int | None = None
    if cfg.get("healthy_rate"):
        try:
            healthy = parse_rate_bps(cfg["healthy_rate"])
        except (StoradviseError, ValueError) as exc:
            raise EfficiencyTestError(f"{where}: extensions.efficiency.healthy_rate: {exc}") from None
    scaling_host = None
    if cfg.get("scaling_host"):
        try:
            scaling_host = site.host(str(cfg["scaling_host"]))
        except StoradviseError as exc:
            raise EfficiencyTestError(f"{where}: extensions.efficiency.scaling_host: {exc}") from None
    return ActiveTestPlan(
        config=MappingProxyType(cfg), workers=tuple(workers), protocols=tuple(protocols), explicit_protocols=explicit,
        sources=MappingProxyType({p: ProtocolSource(s.protocol, s.host, MappingProxyType(dict(s.fields)))
                                  for p, s in sources.items()}),
        clients=tuple(counts), nodes=nodes, scaling_host=scaling_host, python=python, mb_per_host=mb_host,
        slots=slots, cpu_factor=float(cfg["cpu_factor"]), readahead=int(cfg["readahead"]),
        block_kb=int(cfg["block_kb"]), calibrate_seconds=float(cfg["calibrate_seconds"]),
        scaling_budget_mb=float(cfg["scaling_budget_mb"]), server_lifetime=float(cfg["server_lifetime"]),
        timeout=float(cfg["timeout"]) if cfg.get("timeout") else None, healthy_rate_bps=healthy,
        knee_rate_drop=rate_drop, knee_min_efficiency=min_eff)
