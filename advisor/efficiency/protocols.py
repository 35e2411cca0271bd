"""What the test job's clients read through: one source per protocol.

* ``tcp``: our own data server on a storage host (``active_job.py serve``; ``--source HOST``);
* ``posix``: a file on a local or mounted path (``--source path:PATH`` or ``efficiency: {posix: {path: P}}``;
  by default the ``xrootd_local_file`` var of a storage host: the lab's origin records a file of its export);
* ``xrootd``: a real XRootD data server (the origin): ``efficiency: {xrootd: {host, port, path}}``;
  by default the first host with role storage, the port of its ``xrootd_port`` var or 1094, the
  directory of its ``xrootd_export`` var or ``/store``;
* ``xcache``: a real XCache (xrootd with the proxy file cache) in front of the origin:
  ``efficiency: {xcache: {host, port, path}}``; by default the first host with role cache, the
  port of its ``xrootd_port`` var or 1094, the origin's directory.

The clients of both XRootD protocols list the directory with ``xrdfs ls`` and read its files
with ``xrdcp`` (Debian's xrootd-client on the workers).
"""

from __future__ import annotations

import re
from typing import Any

from advisor.errors import StoradviseError
from advisor.site import Host, Site, host_address

PROTOCOLS = ("tcp", "posix", "xrootd", "xcache")


class EfficiencyTestError(StoradviseError):
    """The test could not run at all (no source, no worker, server did not start)."""

    exit_code = 3


def resolve_source(site: Site, source: Any) -> dict[str, Any]:
    """``{"kind": "tcp", "host": NAME, "address": ADDR}`` or ``{"kind": "path", "path": P}``.

    ``source``: None (first storage host), "HOST", "path:PATH", or the site extension's
    mapping ``{host: NAME[, address: A]}`` / ``{path: P}``.
    """
    where = site.source or site.name
    if isinstance(source, dict):
        if source.get("path"):
            return {"kind": "path", "path": str(source["path"])}
        if source.get("host"):
            h = site.host(str(source["host"]))
            try:
                address = host_address(str(source.get("address") or h.connect_address))
            except ValueError as exc:
                raise EfficiencyTestError(f"{site.source or site.name}: extensions.efficiency.source.address: {exc}") from None
            return {"kind": "tcp", "host": h.name, "address": address}
        raise EfficiencyTestError(f"{where}: efficiency.source needs 'host' or 'path'")
    if isinstance(source, str) and source:
        if source.startswith("path:"):
            if not source[5:]:
                raise EfficiencyTestError("--source path: needs a path, e.g. path:/gpfs/fs1/testfile")
            return {"kind": "path", "path": source[5:]}
        try:
            h = site.host(source)
        except StoradviseError as e:
            raise EfficiencyTestError(str(e)) from None
        return {"kind": "tcp", "host": h.name, "address": h.connect_address}
    for h in site.hosts:
        if h.has_role("storage"):
            return {"kind": "tcp", "host": h.name, "address": h.connect_address}
    raise EfficiencyTestError(f"{where}: no host with role storage and no efficiency.source: nothing to read from")
_DIR = re.compile(r"^/[A-Za-z0-9_./+-]{0,1023}$")


def parse_protocols(text: str | list[str] | None) -> list[str] | None:
    """``"xrootd,xcache"`` -> ``["xrootd", "xcache"]`` (each once, in order); None stays None."""
    if text is None:
        return None
    items = text.split(",") if isinstance(text, str) else [str(x) for x in text]
    out: list[str] = []
    for x in (i.strip().lower() for i in items):
        if not x:
            continue
        if x not in PROTOCOLS:
            raise EfficiencyTestError(f"protocol {x!r}: give one or more of {', '.join(PROTOCOLS)}")
        if x not in out:
            out.append(x)
    if not out:
        raise EfficiencyTestError(f"no protocol given: one or more of {', '.join(PROTOCOLS)}")
    return out


def _section(cfg: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    sec = cfg.get(name) or {}
    if not isinstance(sec, dict):
        raise EfficiencyTestError(f"{where}: extensions.efficiency.{name} must be a mapping")
    return sec


def _first_with_role(site: Site, role: str) -> Host | None:
    return next((h for h in site.hosts if h.has_role(role)), None)


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
    if not _DIR.match(d) or "//" in d or "/../" in d + "/":
        raise EfficiencyTestError(f"{what}: not an absolute directory of plain names: {d[:80]!r}")
    return d.rstrip("/") or "/"


def _xrd_source(site: Site, protocol: str, sec: dict[str, Any], origin: dict[str, Any] | None,
                where: str) -> dict[str, Any]:
    role = "storage" if protocol == "xrootd" else "cache"
    if sec.get("host"):
        try:
            h = site.host(str(sec["host"]))
        except Exception as e:
            raise EfficiencyTestError(f"{where}: extensions.efficiency.{protocol}.host: {e}") from None
    else:
        h = _first_with_role(site, role)
        if h is None:
            raise EfficiencyTestError(f"{where}: --protocol {protocol}: no host with role {role} and no "
                                      f"extensions.efficiency.{protocol}.host")
    try:
        address = host_address(str(sec.get("address") or h.connect_address))
    except ValueError as exc:
        raise EfficiencyTestError(f"{where}: extensions.efficiency.{protocol}.address: {exc}") from None
    port = _port(sec.get("port") or h.vars.get("xrootd_port") or 1094, f"{where}: {protocol} port")
    default_dir = (origin or {}).get("path") or h.vars.get("xrootd_export") or "/store"
    path = _dir(sec.get("path") or default_dir, f"{where}: extensions.efficiency.{protocol}.path")
    server = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    return {"kind": protocol, "protocol": protocol, "host": h.name, "address": address, "port": port,
            "path": path, "url": f"root://{server}/{path}", "label": f"root://{h.name}:{port}/{path}"}


def protocol_sources(site: Site, protocols: list[str], cfg: dict[str, Any], source: Any) -> dict[str, dict[str, Any]]:
    """Every protocol's source, resolved before anything runs (a configuration error stops the
    test before a server starts)."""
    where = site.source or site.name
    out: dict[str, dict[str, Any]] = {}
    origin: dict[str, Any] | None = None
    for proto in protocols:
        if proto == "tcp":
            given = source if source is not None else cfg.get("source")
            if isinstance(given, str) and given.startswith("path:"):
                given = None  # the path is posix's
            if isinstance(given, dict) and not given.get("host"):
                given = None
            src = resolve_source(site, given)
            out[proto] = {**src, "protocol": "tcp"}
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
            out[proto] = {**resolve_source(site, given), "protocol": "posix"}
        else:
            if proto == "xcache" and origin is None:
                try:
                    origin = _xrd_source(site, "xrootd", _section(cfg, "xrootd", where), None, where)
                except EfficiencyTestError:
                    origin = None  # the cache's directory then comes from its own settings
            out[proto] = _xrd_source(site, proto, _section(cfg, proto, where),
                                     origin if proto == "xcache" else None, where)
            if proto == "xrootd":
                origin = out[proto]
    return out


def default_protocol(site: Site, cfg: dict[str, Any], source: Any) -> str:
    """The protocol of the test without ``--protocol``: that of its ``source`` (tcp or posix)."""
    given = source if source is not None else cfg.get("source")
    return "posix" if resolve_source(site, given)["kind"] == "path" else "tcp"


def job_spec(src: dict[str, Any], server_port: int | None = None) -> str:
    """The job's ``--source`` for a resolved source (tcp: the data server's port once started)."""
    if src["kind"] == "path":
        return "path:" + src["path"]
    if src["kind"] == "tcp":
        addr = src["address"]
        return f"tcp:[{addr}]:{server_port}" if ":" in addr else f"tcp:{addr}:{server_port}"
    return "xrd:" + src["url"]
