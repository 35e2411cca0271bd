"""Resolve where and how to reach a host over SSH: the site file plus ``~/.ssh/config``.

OpenSSH precedence is kept: what the site file sets explicitly for a host (like options given on
the ``ssh`` command line) wins over the config file, which wins over the defaults. The config is
looked up by the name ``ssh`` would be given: the host's ``address``, else its ``name``.

Honoured keywords: HostName, User, Port, IdentityFile, ProxyJump (comma-separated chains,
``[user@]host[:port]`` and ``ssh://`` forms, ``none``), UserKnownHostsFile, HostKeyAlias,
ConnectTimeout. Jump hosts are resolved through the same config file.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from advisor.transport.base import TransportError


@dataclass
class Endpoint:
    """One SSH hop, fully resolved."""

    #: what messages call it: the site host name, or the jump spec as written
    label: str
    hostname: str
    port: int = 22
    user: str = ""
    identity_files: list[Path] = field(default_factory=list)
    #: user known_hosts files from the config (empty: the caller's default applies)
    known_hosts_files: list[Path] = field(default_factory=list)
    host_key_alias: str | None = None
    connect_timeout: float | None = None
    #: hops to go through first, outermost first
    jumps: list["Endpoint"] = field(default_factory=list)

    @property
    def where(self) -> str:
        """``address:port`` as messages show it (IPv6 in brackets)."""
        h = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{h}:{self.port}"

    @property
    def known_hosts_name(self) -> str:
        """The name looked up in (and written to) known_hosts: ``host`` or ``[host]:port``."""
        name = self.host_key_alias or self.hostname
        if self.host_key_alias or self.port == 22:
            return name
        return f"[{name}]:{self.port}"


def load_ssh_config(path: Path | None) -> paramiko.SSHConfig | None:
    """Parse the ssh config file; None when there is none. A broken file is a one-line error."""
    if path is None:
        return None
    path = Path(os.path.expanduser(str(path)))
    if not path.is_file():
        return None
    try:
        return paramiko.SSHConfig.from_path(str(path))
    except Exception as e:  # paramiko raises ConfigParseError, or plain errors on odd input
        raise TransportError(f"ssh config {path}: cannot parse: {e}") from None


def _lookup(config: paramiko.SSHConfig | None, name: str) -> dict:
    if config is None:
        return {}
    try:
        return dict(config.lookup(name))
    except Exception as e:
        raise TransportError(f"ssh config: lookup of {name!r} failed: {e}") from None


def _paths(values: list[str] | str | None) -> list[Path]:
    if not values:
        return []
    if isinstance(values, str):
        values = values.split()
    return [Path(os.path.expanduser(v)) for v in values if v and v.lower() != "none"]


def parse_jump_spec(spec: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` or ``ssh://[user@]host[:port]`` -> (user, host, port)."""
    s = spec.strip()
    if s.startswith("ssh://"):
        s = s[len("ssh://") :].rstrip("/")
    user = None
    if "@" in s:
        user, s = s.rsplit("@", 1)
    port: int | None = None
    if s.startswith("["):
        host, _, rest = s[1:].partition("]")
        if rest.startswith(":"):
            port = _port(rest[1:], spec)
    elif s.count(":") == 1:
        host, p = s.split(":")
        port = _port(p, spec)
    else:
        host = s
    if not host:
        raise TransportError(f"ProxyJump {spec!r}: no host name")
    return user or None, host, port


def _port(text: str, what: str) -> int:
    try:
        p = int(text)
    except ValueError:
        raise TransportError(f"{what!r}: port {text!r} is not a number") from None
    if not 1 <= p <= 65535:
        raise TransportError(f"{what!r}: port {p} out of range")
    return p


def _timeout(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def resolve_endpoint(
    label: str,
    target: str,
    *,
    config: paramiko.SSHConfig | None,
    port: int | None = None,
    user: str | None = None,
    keys: list[Path] | None = None,
    default_user: str | None = None,
    _depth: int = 0,
) -> Endpoint:
    """Resolve ``target`` (what ``ssh`` would be given) with explicit overrides and the config."""
    if _depth > 8:
        raise TransportError(f"{label}: ProxyJump chain too long (a loop in the ssh config?)")
    cfg = _lookup(config, target)
    hostname = cfg.get("hostname") or target
    if port is None:
        port = _port(cfg["port"], f"Port for {target}") if cfg.get("port") else 22
    user = user or cfg.get("user") or default_user or getpass.getuser()
    identity = list(keys or []) + [p for p in _paths(cfg.get("identityfile")) if p not in (keys or [])]
    ep = Endpoint(
        label=label,
        hostname=hostname,
        port=port,
        user=user,
        identity_files=identity,
        known_hosts_files=_paths(cfg.get("userknownhostsfile")),
        host_key_alias=cfg.get("hostkeyalias") or None,
        connect_timeout=_timeout(cfg.get("connecttimeout")),
    )
    jump = (cfg.get("proxyjump") or "").strip()
    if jump and jump.lower() != "none":
        for spec in [j for j in jump.split(",") if j.strip()]:
            juser, jhost, jport = parse_jump_spec(spec)
            hop = resolve_endpoint(
                f"jump host {spec.strip()}",
                jhost,
                config=config,
                port=jport,
                user=juser,
                default_user=default_user,
                _depth=_depth + 1,
            )
            # a jump host's own ProxyJump comes first, as with ssh
            ep.jumps.extend(hop.jumps)
            hop.jumps = []
            ep.jumps.append(hop)
    return ep


def resolve_host(host, config: paramiko.SSHConfig | None, default_user: str | None = None) -> Endpoint:
    """The endpoint for a site ``Host``: explicit site settings over the ssh config."""
    explicit = host.model_fields_set
    port = host.port if "port" in explicit else None
    keys = [Path(os.path.expanduser(str(host.key)))] if host.key else []
    return resolve_endpoint(
        host.name,
        host.connect_address,
        config=config,
        port=port,
        user=host.user,
        keys=keys,
        default_user=default_user,
    )
