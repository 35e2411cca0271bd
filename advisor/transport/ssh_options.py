"""How SSH connections are made: the options every SSH transport reads."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


def _home_ssh(name: str) -> Path:
    return Path.home() / ".ssh" / name


class SshOptions(BaseModel):
    """How SSH connections are made (the CLI's --trust-new-hosts, --connect-timeout, ...)."""

    model_config = ConfigDict(extra="forbid")

    #: record unknown host keys in the known_hosts file (never accepts a changed key)
    trust_new_hosts: bool = False
    #: seconds for TCP connect, SSH handshake, authentication and opening a session (per hop)
    connect_timeout: float = Field(10.0, gt=0)
    #: when set, the timeout of every command (overrides each command's own)
    command_timeout: float | None = Field(None, gt=0)
    #: overall limit for one batch's session; default: sum of command timeouts + 3 s each + 30 s
    batch_timeout: float | None = Field(None, gt=0)
    #: the user known_hosts file used when neither the host nor the ssh config names one
    known_hosts_path: Path = Field(default_factory=lambda: _home_ssh("known_hosts"))
    #: also trusted (read only); None to ignore it
    system_known_hosts_path: Path | None = Path("/etc/ssh/ssh_known_hosts")
    #: the ssh client config honoured for HostName, User, Port, IdentityFile, ProxyJump...; None: none
    ssh_config_path: Path | None = Field(default_factory=lambda: _home_ssh("config"))
    #: try the keys of a running ssh-agent ($SSH_AUTH_SOCK)
    use_agent: bool = True
    #: also try ~/.ssh/id_ed25519, id_ecdsa and id_rsa, as ssh does
    look_for_keys: bool = True
    #: login user when neither the host nor the ssh config sets one (default: the local user)
    default_user: str | None = None
