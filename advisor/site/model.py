"""The site model: hosts, roles, groups, expected link rates, profiles, waivers, mesh pairs.

A site comes from a site file (YAML, documented in docs/site-file.md) or from an Ansible
inventory plus a role map (see advisor.site.inventory), read by advisor.site.file.load_site, after
advisor.site.lookup has found it by name (``./sites/NAME.yml``, ``~/.config/storadvise/sites/NAME.yml``,
the lab's registry directory) or as a path. Host patterns: advisor.site.host_patterns.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import ipaddress
import os
import re
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from advisor.util.errors import SiteFileError
from advisor.site.host_patterns import host_pattern
from advisor.site.probe_helper_path import HELPER_VAR, helper_path, helper_read_problem
from advisor.util.units import parse_rate_bps


class Role(str, Enum):
    storage = "storage"
    worker = "worker"
    door = "door"
    cache = "cache"
    san_controller = "san-controller"


ROLE_NAMES = [r.value for r in Role]
#: the site name of this machine (``--site local``, or no --site)
LOCAL_SITE = "local"
#: every name pattern here is matched whole (``fullmatch``): ``$`` would let a trailing newline through
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: a DNS name (RFC 1123 labels) as a host address
_HOSTNAME_RE = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?")
#: a login name (POSIX portable user names, plus the '$' of machine accounts)
_USER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\$?")
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


#: host variables that name an address other hosts connect to (the mesh's storage-network
#: address); storage kinds' host settings (gpfs_node, san_controllers) are checked in Host too
ADDRESS_VARS = ("mesh_address",)


def _valid_host_pattern(v: str) -> str:
    host_pattern(v)  # a ValueError naming the pattern
    return v


def host_address(v: str) -> str:
    """``v`` if it is an IP address or a DNS name; a ValueError otherwise (never an ssh option or shell text)."""
    try:
        ipaddress.ip_address(v)
        return v
    except ValueError:
        pass
    if not _HOSTNAME_RE.fullmatch(v):
        raise ValueError(f"{v[:60]!r} is neither an IP address nor a DNS name")
    return v


def login_name(v: str | None) -> str | None:
    """``v`` if it is a login name (the site's ``user``, per host or in ``defaults``); a ValueError otherwise."""
    if v is not None and not _USER_RE.fullmatch(v):
        raise ValueError(f"{v[:40]!r} is not a login name (letters, digits, '_', '.', '-'; not starting with '-')")
    return v


def ssh_file_path(v: Path | None) -> Path | None:
    """``v`` if it can be an ssh key or known_hosts path (``key``, ``known_hosts``, per host or in
    ``defaults``): it reaches ssh options, quoted, so no leading '-', no '"', no control character."""
    if v is not None and (_CONTROL_CHARS.search(str(v)) or str(v).startswith("-") or '"' in str(v)):
        raise ValueError(f"{str(v)[:60]!r}: a path may not start with '-' or hold '\"' or control characters")
    return v


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: the slowest link rate a site file may give: a bare ``10`` (meant as 10 Gbit/s) would otherwise
#: be read as 10 bit/s and silently judge every path healthy
MIN_LINK_RATE_BPS = 10**6


def _rate(v: Any) -> int | None:
    if v is None:
        return None
    bps = parse_rate_bps(v)
    if bps < MIN_LINK_RATE_BPS:
        raise ValueError(f"{v!r} is {bps} bit/s, below 1 Mbit/s: give the unit (e.g. 10gbit, 940mbit)")
    return bps


class ConnectionChecks(StrictModel):
    """The checks of a host's connection fields, shared by ``Host`` and ``HostDefaults`` (a default
    reaches every host that does not set its own, so it passes the same checks)."""

    @field_validator("user", check_fields=False)
    @classmethod
    def _valid_user(cls, v: str | None) -> str | None:
        return login_name(v)

    @field_validator("key", "known_hosts", check_fields=False)
    @classmethod
    def _valid_path(cls, v: Path | None) -> Path | None:
        return ssh_file_path(v)

    @field_validator("link_rate", mode="before", check_fields=False)
    @classmethod
    def _parse_rate(cls, v: Any) -> int | None:
        return _rate(v)


class Host(ConnectionChecks):
    name: str
    address: str | None = None
    port: int = Field(22, ge=1, le=65535)
    user: str | None = None
    key: Path | None = None
    known_hosts: Path | None = None
    roles: list[Role] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    link_rate: int | None = Field(None, description="expected NIC rate in bits/s (site file: 1gbit, 10G, ...)")
    sudo: bool | None = None
    #: free-form host variables (also passed to the Ansible inventory); the host settings storage
    #: kinds declare (``gpfs_node``, ``san_controllers``: advisor.storage_kinds) are kept here too
    vars: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _storage_settings_into_vars(cls, data: Any) -> Any:
        """A storage kind's host settings may be written at host level (``gpfs_node: g1``)."""
        if not isinstance(data, dict):
            return data
        from advisor.storage_kinds import host_setting_names

        moved = {k: data[k] for k in host_setting_names() if k in data}
        if not moved:
            return data
        rest = {k: v for k, v in data.items() if k not in moved}
        rest["vars"] = {**moved, **(data.get("vars") or {})}
        return rest

    def setting(self, name: str, default: Any = None) -> Any:
        """A host setting (a storage kind's, or any host variable)."""
        return self.vars.get(name, default)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not _NAME_RE.fullmatch(v):
            raise ValueError("host name may hold letters, digits, '.', '_' and '-' only")
        return v

    @field_validator("address")
    @classmethod
    def _valid_address(cls, v: str | None) -> str | None:
        return None if v is None else host_address(v)

    @field_validator("vars")
    @classmethod
    def _valid_storage_settings(cls, v: dict[str, Any]) -> dict[str, Any]:
        """The host settings storage kinds declare reach commands on hosts: a setting declared as
        an ``address`` (or a list of ``addresses``) must be an IP address or a DNS name."""
        from advisor.storage_kinds import host_setting_kinds

        for name, kind in host_setting_kinds().items():
            value = v.get(name)
            if value is None:
                continue
            try:
                if kind == "address":
                    v[name] = host_address(str(value)) if isinstance(value, str) else host_address(repr(value))
                elif kind == "addresses":
                    if not isinstance(value, list):
                        raise ValueError("a list of addresses")
                    v[name] = [host_address(str(x)) for x in value]
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        return v

    @field_validator("vars")
    @classmethod
    def _valid_address_vars(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in ADDRESS_VARS:
            value = v.get(key)
            if value is None:
                continue
            for one in value if isinstance(value, list) else [value]:
                try:
                    host_address(str(one))
                except ValueError as exc:
                    raise ValueError(f"{key}: {exc}") from None
        return v

    @field_validator("groups")
    @classmethod
    def _valid_groups(cls, v: list[str]) -> list[str]:
        for g in v:
            if not _NAME_RE.fullmatch(g):
                raise ValueError(f"group {g[:40]!r}: letters, digits, '.', '_' and '-' only")
        return v

    @property
    def connect_address(self) -> str:
        return self.address or self.name

    def has_role(self, *roles: str | Role) -> bool:
        wanted = {Role(r) for r in roles}
        return bool(wanted & set(self.roles))

    @property
    def role_names(self) -> list[str]:
        return [r.value for r in self.roles]


class Waiver(StrictModel):
    """A rule (pattern) waived on hosts (pattern); with ``settings``, the settings (key patterns,
    ``net.core.wmem_max``, ``sysctl:net.core.*``) that no plan may change on those hosts,
    whichever rule proposes them. A waiver needs a rule, settings, or both."""

    rule: str | None = None
    hosts: str = "*"
    settings: list[str] = Field(default_factory=list)
    justification: str = Field(min_length=1)
    approved_by: str | None = None
    expires: dt.date | None = None

    @model_validator(mode="after")
    def _rule_or_settings(self) -> "Waiver":
        if not self.rule and not self.settings:
            raise ValueError("a waiver names a 'rule' (pattern), 'settings' (key patterns), or both")
        return self

    @field_validator("hosts")
    @classmethod
    def _hosts_pattern(cls, v: str) -> str:
        return _valid_host_pattern(v)

    def matches(self, rule_id: str, host: Any) -> bool:
        """``host``: a Host (names, groups and roles of the pattern match) or a host name."""
        return bool(self.rule) and fnmatch.fnmatchcase(rule_id, self.rule or "") and host_pattern(self.hosts).matches(host)

    def expired(self, today: dt.date | None = None) -> bool:
        return self.expires is not None and self.expires < (today or dt.date.today())

    def covers_setting(self, adapter: str, key: str, host: Any) -> bool:
        return host_pattern(self.hosts).matches(host) and any(setting_matches(p, adapter, key) for p in self.settings)


def setting_matches(pattern: str, adapter: str, key: str) -> bool:
    """``key-pattern`` or ``adapter:key-pattern`` (fnmatch) against one change's adapter and key."""
    if ":" in pattern and pattern.split(":", 1)[0].isidentifier():
        want, pat = pattern.split(":", 1)
        return want == adapter and fnmatch.fnmatchcase(key, pat)
    return fnmatch.fnmatchcase(key, pattern)


class ImmutableSetting(StrictModel):
    """A setting the site never lets a plan change: ``key`` (pattern, or ``adapter:pattern``) on
    ``hosts`` (pattern), with the reason shown under "Cannot apply here". In a site file a plain
    string is the key."""

    key: str = Field(min_length=1)
    hosts: str = "*"
    reason: str = "the site marks it immutable"

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"key": data} if isinstance(data, str) else data

    @field_validator("hosts")
    @classmethod
    def _hosts_pattern(cls, v: str) -> str:
        return _valid_host_pattern(v)

    def covers(self, adapter: str, key: str, host: Any) -> bool:
        return host_pattern(self.hosts).matches(host) and setting_matches(self.key, adapter, key)


class MeshPair(StrictModel):
    """One request of the throughput mesh.

    ``a`` only: a full mesh within group ``a``. ``a`` and ``b``: every host of ``a`` with every
    host of ``b``. ``direction``: ``both`` (a->b and b->a) or ``forward`` (a->b only).
    """

    a: str
    b: str | None = None
    direction: Literal["both", "forward"] = "both"
    #: host patterns (HostPattern: names, globs, groups, roles) whose hosts the pair leaves out
    exclude: list[str] = Field(default_factory=list, description="host patterns whose hosts are left out")
    expected_rate: int | None = None

    @field_validator("expected_rate", mode="before")
    @classmethod
    def _parse_rate(cls, v: Any) -> int | None:
        return _rate(v)

    @field_validator("exclude")
    @classmethod
    def _exclude_patterns(cls, v: list[str]) -> list[str]:
        return [_valid_host_pattern(p) for p in v]


class MeshSpec(StrictModel):
    pairs: list[MeshPair] = Field(default_factory=list)
    duration: float = Field(5.0, gt=0, le=600)
    streams: int = Field(1, ge=1, le=128)
    omit: float = Field(1.0, ge=0, le=60)
    congestion: str | None = None
    #: measure both directions of a pair in one ``iperf3 --bidir`` test (where both ends have
    #: iperf3 >= 3.7); false: the reverse test runs right after the forward one
    bidir: bool = True
    #: at most this many tests of a round at the same time (default: the whole round)
    parallel: int | None = Field(None, ge=1, le=1024)
    #: re-measure alone (one test at a time, after the rounds) every path below this fraction of
    #: its expected rate, and judge it on that: tells a slow path from contention in a round
    retest_below: float | None = Field(None, gt=0, le=1.5)
    port_base: int = Field(5301, ge=1024, le=65000)
    #: per-test hard timeout beyond duration+omit, seconds
    timeout_margin: float = Field(15.0, gt=0)


class StorageNetwork(StrictModel):
    prefixes: list[str] = Field(default_factory=list)
    interfaces: list[str] = Field(default_factory=list)
    #: the MTU every switch port of the storage network carries (the site's word): a host's MTU is raised
    #: to it by a plan only with it; None: unknown, an MTU is then raised by hand
    mtu: int | None = Field(None, ge=68, le=65535)

    @field_validator("prefixes")
    @classmethod
    def _valid_prefixes(cls, v: list[str]) -> list[str]:
        for p in v:
            ipaddress.ip_network(p, strict=False)
        return v


class HostDefaults(ConnectionChecks):
    """What ``defaults:`` gives every host that does not set its own: checked as a host's fields are."""

    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = None
    key: Path | None = None
    known_hosts: Path | None = None
    sudo: bool | None = None
    link_rate: int | None = None


class Site(StrictModel):
    name: str
    description: str | None = None
    #: a name of advisor.storage_kinds; selects the default profile. With ``storage_systems``: its
    #: first entry
    storage_kind: str = "other"
    #: the site's storage systems (names of advisor.storage_kinds: ``[gpfs, san, xrootd]``). Given,
    #: they decide which storage probes run and which storage rule packs load (the generic packs
    #: always load); empty (a site file that names only ``storage_kind``): every one, as before
    storage_systems: list[str] = Field(default_factory=list)
    #: none in the site file: the storage kind's default profile
    profiles: list[str] = Field(default_factory=list)
    #: profile variable overrides for this site
    vars: dict[str, Any] = Field(default_factory=dict)
    #: site-local rule directories (data rule packs, ``profiles/``), loaded like the shipped packs;
    #: a relative path is relative to the site file
    rules_dirs: list[Path] = Field(default_factory=list)
    defaults: HostDefaults = Field(default_factory=HostDefaults)
    hosts: list[Host] = Field(default_factory=list)
    waivers: list[Waiver] = Field(default_factory=list)
    #: settings no plan may change (see ImmutableSetting)
    immutable: list[ImmutableSetting] = Field(default_factory=list)
    storage_network: StorageNetwork = Field(default_factory=StorageNetwork)
    mesh: MeshSpec | None = None
    #: the storage ports whose production connections ``network.flows`` samples (``1094``,
    #: ``"20000-25000"``); none: its defaults. Each of the site's storage kinds adds its own
    #: (advisor.flows.ports)
    flow_ports: list[str] | None = None
    #: "ssh" (default) or "local" (every host is this machine; for the local-host scan)
    transport: Literal["ssh", "local"] = "ssh"
    #: extra sections other features read (e.g. ``efficiency``, ``lab``); validated by their owners
    extensions: dict[str, Any] = Field(default_factory=dict)
    #: the file this site was read from (not part of the file itself)
    source: str | None = Field(None, exclude=True)
    #: hosts of an Ansible inventory that no role mapping covers: named, never scanned (not part of the file)
    skipped_hosts: list[str] = Field(default_factory=list, exclude=True)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not _NAME_RE.fullmatch(v):
            raise ValueError("site name may hold letters, digits, '.', '_' and '-' only")
        return v

    @field_validator("flow_ports", mode="before")
    @classmethod
    def _port_specs(cls, v: Any) -> list[str] | None:
        if v is None:
            return None
        if not isinstance(v, (list, tuple)):
            raise ValueError("a list of ports and ranges, e.g. [1094, 1191, 20000-25000]")
        from probes.flows import parse_port_spec

        out = []
        for item in v:
            if isinstance(item, bool):
                raise ValueError(f"{item!r} is not a port or a range like 20000-25000")
            lo, hi = parse_port_spec(str(item))
            out.append(str(lo) if lo == hi else f"{lo}-{hi}")
        if not out:
            raise ValueError("names no port: leave flow_ports out for the defaults")
        return list(dict.fromkeys(out))

    @field_validator("storage_kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        from advisor.storage_kinds import storage_kinds

        if v not in storage_kinds():
            raise ValueError(f"unknown storage kind {v!r} (known: {', '.join(storage_kinds())})")
        return v

    @field_validator("storage_systems")
    @classmethod
    def _known_kinds(cls, v: list[str]) -> list[str]:
        from advisor.storage_kinds import get_storage_kind, storage_kinds

        out: list[str] = []
        for name in v:
            kind = get_storage_kind(name)  # an alias (xcache) is kept under the kind's name (xrootd)
            if kind is None:
                raise ValueError(f"unknown storage system {name!r} (known: {', '.join(storage_kinds())})")
            out.append(kind.name)
        return list(dict.fromkeys(out))

    @model_validator(mode="after")
    def _kind_is_first_system(self) -> "Site":
        if self.storage_systems:
            if "storage_kind" in self.model_fields_set and self.storage_kind != self.storage_systems[0]:
                raise ValueError(f"storage_kind {self.storage_kind!r} is not the first of storage_systems "
                                 f"{self.storage_systems}: give storage_systems only")
            self.storage_kind = self.storage_systems[0]
        return self

    @model_validator(mode="after")
    def _default_profiles(self) -> "Site":
        if not self.profiles:
            from advisor.storage_kinds import get_storage_kind

            kind = get_storage_kind(self.storage_kind)
            self.profiles = [kind.default_profile if kind else "generic"]
        return self

    @model_validator(mode="after")
    def _check_hosts(self) -> "Site":
        seen: set[str] = set()
        for h in self.hosts:
            if h.name in seen:
                raise ValueError(f"duplicate host name {h.name!r}")
            seen.add(h.name)
        for where, v in [("vars", self.vars)] + [(f"host {h.name}: vars", h.vars) for h in self.hosts]:
            try:
                helper_path(v)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        site_helper = HELPER_VAR in self.vars
        for h in self.hosts:  # a host with a helper: what its root probes read as root stays documented
            if not (site_helper or HELPER_VAR in h.vars):
                continue
            merged = {**self.vars, **h.vars}
            problem = helper_read_problem(merged) if helper_path(merged) else None
            if problem:
                raise ValueError(f"host {h.name}: vars: {problem}")
        return self

    def apply_defaults(self) -> "Site":
        """Fill host connection settings from ``defaults`` and resolve relative key paths."""
        base = Path(self.source).parent if self.source else Path.cwd()
        self.rules_dirs = [p if p.is_absolute() else base / p
                           for p in (Path(os.path.expanduser(str(d))) for d in self.rules_dirs)]
        for h in self.hosts:
            for field in ("port", "user", "key", "known_hosts", "sudo", "link_rate"):
                dv = getattr(self.defaults, field)
                if dv is not None and field not in h.model_fields_set:
                    setattr(h, field, dv)
            for field in ("key", "known_hosts"):
                p = getattr(h, field)
                if p is not None:
                    p = Path(os.path.expanduser(str(p)))
                    if not p.is_absolute():
                        p = base / p
                    setattr(h, field, p)
        return self

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        known = ", ".join(h.name for h in self.hosts) or "none"
        raise SiteFileError(self.source or self.name, f"unknown host {name!r} (site has: {known})")

    def select(self, pattern: str) -> list[Host]:
        """The hosts a host pattern selects (``HostPattern``: names, globs, groups, roles, comma
        lists, ``!exclusion``), in the site's order; a malformed pattern is a ValueError."""
        return host_pattern(pattern).select(self.hosts)

    def hosts_in(self, selector: str) -> list[Host]:
        """The hosts of a host pattern (``select``); kept for the callers that name it so."""
        return self.select(selector)

    def by_name(self) -> dict[str, Host]:
        return {h.name: h for h in self.hosts}

    @property
    def groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for h in self.hosts:
            for g in h.groups:
                out.setdefault(g, []).append(h.name)
        return out


def local_site() -> Site:
    """The embedded default (``--site local`` or no site): this machine, scanned through the local transport."""
    import socket

    name = socket.gethostname() or "localhost"
    if not _NAME_RE.fullmatch(name):
        name = "localhost"
    return Site(
        name=LOCAL_SITE,
        description="the local host",
        transport="local",
        hosts=[Host(name=name, address="localhost", roles=[])],
    )


def give_local_roles(site: Site, roles: list[str] | tuple[str, ...]) -> Site:
    """The local host takes ``roles`` (``--role``); refused for a site whose hosts are not this machine."""
    from advisor.util.errors import UsageError

    if not roles:
        return site
    if site.transport != "local":
        raise UsageError(f"--role gives the local host its roles; site {site.name!r} names its hosts' roles itself")
    bad = [r for r in roles if r not in ROLE_NAMES]
    if bad:
        raise UsageError(f"--role {bad[0]!r} is not a role; roles: {', '.join(ROLE_NAMES)}")
    for h in site.hosts:
        h.roles = [Role(r) for r in dict.fromkeys(roles)]
    return site
