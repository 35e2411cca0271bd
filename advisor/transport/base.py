"""The transport interface: run a host's probe scripts and return their outputs.

Implementations: ``local`` (subprocess), ``ssh`` (paramiko, one session per host for the whole
batch), ``captured`` (a directory written by ``storadvise collect``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from pydantic import BaseModel

from advisor.util.shipped_code import module_utils

#: the most bytes of stdout (and of stderr) kept from one command; more is cut and the result
#: marked ``truncated`` (a host that streams without end must not fill the controller's memory);
#: defined with the shipped batch decoder, which the collect playbook's module runs without storadvise
MAX_OUTPUT_BYTES: int = module_utils("storadvise_batch_frames").MAX_OUTPUT_BYTES


class Command(BaseModel):
    #: identifies the command in a batch; the probe name for probe scripts
    key: str
    #: POSIX sh script
    script: str
    #: run through sudo (when the host's sudo setting allows and the user is not root)
    sudo: bool = False
    timeout: float = 60.0
    #: the script calls sudo itself, for a fixed command (the probe helper): never wrapped in sudo
    own_sudo: bool = False


def sudo_flag(command: Command, host_sudo: bool | None) -> bool:
    """Whether the wrapper should run ``command`` through ``sudo -n`` (when not already root).

    ``host_sudo`` None (auto): the commands that ask for it; False: never; True: every command
    (but one that calls sudo itself).
    """
    if host_sudo is False or command.own_sudo:
        return False
    if host_sudo is True:
        return True
    return command.sudo


class CommandResult(BaseModel):
    key: str
    #: exit status; None when it could not be determined (timed out, killed)
    rc: int | None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    #: the output was longer than MAX_OUTPUT_BYTES and was cut
    truncated: bool = False


class TransportError(Exception):
    """A host-level failure; the message is one line naming the host."""


class HostUnreachable(TransportError):
    pass


class HostKeyRefused(TransportError):
    """Unknown or wrong host key: the host is 'refused'."""


class AuthenticationFailed(TransportError):
    pass


class Transport(ABC):
    """Runs commands on one host."""

    #: whether this transport runs on the machine storadvise runs on
    is_local: bool = False
    #: whether it replays recorded outputs by command key (the scripts are not needed)
    replays_outputs: bool = False

    @abstractmethod
    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        """Run every command (in order) and return one result per command, same order.

        Raises TransportError when the host cannot be used at all.
        """

    def run(self, script: str, timeout: float = 60.0, sudo: bool = False) -> CommandResult:
        return self.run_batch([Command(key="cmd", script=script, timeout=timeout, sudo=sudo)])[0]

    def close(self) -> None:  # pragma: no cover - default no-op
        pass

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
