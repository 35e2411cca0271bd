"""Resolve where and how to reach a host over SSH: the site file plus ``~/.ssh/config``.

The config is read by OpenSSH itself: ``ssh -G -F CONFIG -- TARGET`` prints every option as
``ssh TARGET`` would use it, so Include, Match, wildcard and token (``%h``) rules mean exactly
what they mean to ``ssh`` and to Ansible's ssh connection. OpenSSH precedence is kept: what the
site file sets explicitly for a host (like options given on the ``ssh`` command line) wins over
the config file, which wins over the defaults. The config is looked up by the name ``ssh`` would
be given: the host's ``address``, else its ``name``.

Used: HostName, User, Port, IdentityFile, ProxyJump (comma-separated chains, ``[user@]host[:port]``
and ``ssh://`` forms, ``none``), UserKnownHostsFile, HostKeyAlias, ConnectTimeout. Jump hosts are
resolved through the same config file. Settings the config leaves at OpenSSH's defaults (the
default identity files and known_hosts files, the local user name) are told apart by comparing
with ``ssh -G -F /dev/null``, and leave storadvise's own defaults in place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from advisor.transport.base import TransportError

SSH_G_TIMEOUT_S = 20.0
#: a name no config matches specifically, to read OpenSSH's defaults
_DEFAULTS_PROBE = "storadvise-ssh-defaults.invalid"


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


@dataclass
class SshConfig:
    """An ssh config file read through ``ssh -G`` (``path`` None: no config file, only defaults)."""

    path: Path | None
    _cache: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def options(self, target: str) -> dict[str, list[str]]:
        """Every option ``ssh`` would use for ``target``: lower-case keyword -> values (in order)."""
        with self._lock:
            found = self._cache.get(target)
        if found is None:
            found = ssh_g(target, self.path)
            with self._lock:
                self._cache[target] = found
        return found

    def first(self, target: str, keyword: str) -> str | None:
        values = self.options(target).get(keyword)
        return values[0] if values else None


def ssh_g(target: str, config: Path | None) -> dict[str, list[str]]:
    """Run ``ssh -G -F CONFIG -- TARGET`` and read its ``keyword value`` lines."""
    ssh = shutil.which("ssh")
    if ssh is None:
        raise TransportError("ssh not found (install openssh-client): it resolves the ssh config")
    argv = [ssh, "-G", "-F", str(config) if config is not None else os.devnull, "--", target]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=SSH_G_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        raise TransportError(f"ssh -G {target}: no answer in {SSH_G_TIMEOUT_S:.0f} s (a Match exec in the ssh config?)") from None
    except OSError as exc:
        raise TransportError(f"cannot run ssh -G: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines()
                 if ln.strip() and not ln.startswith("Pseudo-terminal")]
        where = f"ssh config {config}" if config is not None else "ssh"
        raise TransportError(f"{where}: cannot resolve {target!r}: {lines[0] if lines else f'ssh -G exited {proc.returncode}'}")
    out: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key:
            out.setdefault(key.lower(), []).append(value.strip())
    return out


_DEFAULTS: dict[str, list[str]] | None = None
_DEFAULTS_LOCK = threading.Lock()


def ssh_defaults() -> dict[str, list[str]]:
    """What ``ssh`` uses when no config says anything (read once per process)."""
    global _DEFAULTS
    with _DEFAULTS_LOCK:
        if _DEFAULTS is None:
            _DEFAULTS = ssh_g(_DEFAULTS_PROBE, None)
        return _DEFAULTS


def load_ssh_config(path: Path | None) -> SshConfig | None:
    """The ssh config file to resolve hosts with; None when there is none. A file ``ssh`` cannot
    parse is a one-line error."""
    if path is None:
        return None
    path = Path(os.path.expanduser(str(path)))
    if not path.is_file():
        return None
    config = SshConfig(path)
    config.options(_DEFAULTS_PROBE)  # parses the whole file (Include too): errors surface here
    return config


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
    if not value or value == "none":
        return None
    try:
        return float(value)
    except ValueError:
        return None


def resolve_endpoint(
    label: str,
    target: str,
    *,
    config: SshConfig | None,
    port: int | None = None,
    user: str | None = None,
    keys: list[Path] | None = None,
    default_user: str | None = None,
    _depth: int = 0,
) -> Endpoint:
    """Resolve ``target`` (what ``ssh`` would be given) with explicit overrides and the config."""
    if _depth > 8:
        raise TransportError(f"{label}: ProxyJump chain too long (a loop in the ssh config?)")
    cfg = _configured(config, target)
    hostname = cfg.get("hostname") or target
    if port is None:
        port = _port(cfg["port"], f"Port for {target}") if cfg.get("port") else 22
    user = user or cfg.get("user") or default_user or _local_user()
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


def _local_user() -> str:
    return ssh_defaults().get("user", [""])[0] or os.environ.get("USER", "root")


def _configured(config: SshConfig | None, target: str) -> dict:
    """The options the config sets for ``target`` (those left at OpenSSH's defaults dropped):
    keyword -> value, or the list of values for identityfile."""
    if config is None:
        return {}
    opts = config.options(target)
    defaults = ssh_defaults()
    out: dict = {}
    for key in ("hostname", "user", "port", "hostkeyalias", "connecttimeout", "proxyjump", "userknownhostsfile"):
        values = opts.get(key)
        if not values or values[0] == "none":
            continue
        if key in ("user", "userknownhostsfile") and values == defaults.get(key):
            continue  # OpenSSH's default, not the config's
        out[key] = values[0]
    ids = opts.get("identityfile") or []
    if ids and ids != defaults.get("identityfile"):
        out["identityfile"] = ids
    return out


def resolve_host(host, config: SshConfig | None, default_user: str | None = None) -> Endpoint:
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
