"""A real OpenSSH server for tests: started on loopback, on a free high port, in a temp dir.

Usage (the ``sshd`` fixture is registered for every test by tests/conftest.py)::

    from tests.support.sshd import running_sshd

    def test_something(sshd):                 # fixture form: one fresh sshd per test
        host = sshd.host()                    # an advisor.site.model.Host pointing at it
        ...

    with running_sshd(extra_config="AllowTcpForwarding no") as s:   # context-manager form
        ...

Everything lives in a temporary directory: the generated host key, a generated client key
(authorised for every user through ``AuthorizedKeysFile``), a ``known_hosts`` file holding the
server's key as ``[127.0.0.1]:PORT``, the sshd_config, the pid file and the log (``sshd -e``
output, LogLevel VERBOSE by default, so ``Accepted publickey`` lines can be counted). The server
is killed by its pid and the directory removed when the context exits. The machine's own
/etc/ssh and ~/.ssh are never read or written.

sshd needs its privilege-separation directory ``/run/sshd`` when started as root; it is
created (mode 0755) if missing, and left in place (it is what the openssh-server package's
own service creates at start). Requires /usr/sbin/sshd and ssh-keygen.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from advisor.transport.factory import SshOptions

SSHD = os.environ.get("STORADVISE_TEST_SSHD", "/usr/sbin/sshd")
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
PRIVSEP_DIR = Path("/run/sshd")


def sshd_available() -> bool:
    return os.access(SSHD, os.X_OK) and os.access(SSH_KEYGEN, os.X_OK)


def generate_key(path: Path, key_type: str = "ed25519", comment: str = "storadvise-test") -> Path:
    """Write a passphrase-less private key at ``path`` (and ``path.pub``) with ssh-keygen."""
    path = Path(path)
    if path.exists():
        path.unlink()
    args = [SSH_KEYGEN, "-q", "-N", "", "-C", comment, "-t", key_type, "-f", str(path)]
    if key_type == "rsa":
        args[-2:-2] = ["-b", "2048"]
    subprocess.run(args, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return path


def public_key_text(private_key: Path) -> str:
    """``TYPE BASE64`` of the key (the comment dropped)."""
    parts = Path(str(private_key) + ".pub").read_text().split()
    return f"{parts[0]} {parts[1]}"


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


@dataclass
class SshdServer:
    dir: Path
    address: str
    port: int
    pid: int
    config_path: Path
    host_key_path: Path
    client_key_path: Path
    authorized_keys_path: Path
    known_hosts_path: Path
    log_path: Path
    user: str = field(default_factory=lambda: _current_user())

    @property
    def host_public_key(self) -> str:
        return public_key_text(self.host_key_path)

    @property
    def host_pattern(self) -> str:
        """The known_hosts host field for this server: ``[address]:port``."""
        return f"[{self.address}]:{self.port}" if self.port != 22 else self.address

    def known_hosts_line(self) -> str:
        return f"{self.host_pattern} {self.host_public_key}\n"

    def host(self, name: str = "sshd-test", **overrides):
        """An ``advisor.site.model.Host`` for this server: client key, this dir's known_hosts."""
        from advisor.site.model import Host

        kw = dict(
            name=name,
            address=self.address,
            port=self.port,
            user=self.user,
            key=self.client_key_path,
            known_hosts=self.known_hosts_path,
        )
        kw.update(overrides)
        return Host(**kw)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def accepted_logins(self) -> int:
        """How many authentications sshd accepted so far (``Accepted publickey`` log lines)."""
        return sum(1 for line in self.log().splitlines() if "Accepted publickey" in line)

    def authorize(self, private_key: Path) -> None:
        with open(self.authorized_keys_path, "a") as f:
            f.write(public_key_text(private_key) + "\n")

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True


def _current_user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def _ensure_privsep_dir() -> None:
    if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)


def _as_user(user: str, tmp: Path) -> list[str]:
    """``setpriv`` prefix running as ``user``; hands the temp dir's files to that user."""
    import pwd

    pw = pwd.getpwnam(user)
    if os.geteuid() != 0:
        raise RuntimeError("running sshd as another user needs root")
    for p in [tmp, *tmp.iterdir()]:
        os.chown(p, pw.pw_uid, pw.pw_gid)
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return [setpriv, f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups", "--reset-env"]


def _wait_listening(address: str, port: int, proc: subprocess.Popen, log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
            raise RuntimeError(f"sshd exited with status {proc.returncode} at start: {log.strip()[-2000:]}")
        try:
            with socket.create_connection((address, port), timeout=0.5) as s:
                s.settimeout(1.0)
                if s.recv(64).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd did not accept connections on {address}:{port} within {timeout:.0f}s")
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _stop(proc: subprocess.Popen) -> None:
    # let per-connection sshd children finish first, so the listener reaps them (no orphans)
    deadline = time.monotonic() + 1.0
    while proc.poll() is None and _children(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


@contextmanager
def running_sshd(
    *,
    address: str = "127.0.0.1",
    extra_config: str | dict[str, str] | None = None,
    host_key_type: str = "ed25519",
    client_key_type: str = "ed25519",
    log_level: str = "VERBOSE",
    start_timeout: float = 10.0,
    run_as: str | None = None,
) -> Iterator[SshdServer]:
    """Start ``sshd -D -e -f CONFIG`` on ``address`` and a free high port; yield an SshdServer.

    ``extra_config`` lines (a string, or a mapping of keyword -> value) are appended to the
    generated sshd_config. The sshd process is killed by its pid and the temp dir removed on exit.

    ``run_as``: a user name; (as root) run sshd itself as that user, with ``setpriv``, so that
    the only login it allows is that user's (even when its password is locked): the way to test
    an unprivileged login user without changing the machine's accounts.
    """
    if not sshd_available():
        raise RuntimeError(f"{SSHD} or ssh-keygen not found (install openssh-server)")
    _ensure_privsep_dir()
    tmp = Path(tempfile.mkdtemp(prefix="storadvise-sshd-"))
    # sshd reads AuthorizedKeysFile as the login user: let every user traverse the dir
    os.chmod(tmp, 0o755)
    proc: subprocess.Popen | None = None
    try:
        host_key = generate_key(tmp / f"ssh_host_{host_key_type}_key", host_key_type, "storadvise-test-host")
        client_key = generate_key(tmp / f"client_{client_key_type}", client_key_type)
        authorized = tmp / "authorized_keys"
        authorized.write_text(public_key_text(client_key) + "\n")
        os.chmod(authorized, 0o644)
        if isinstance(extra_config, dict):
            extra = "".join(f"{k} {v}\n" for k, v in extra_config.items())
        else:
            extra = (extra_config or "").rstrip("\n") + "\n" if extra_config else ""
        last_error: Exception | None = None
        for _attempt in range(3):
            port = free_port(address)
            cfg = tmp / "sshd_config"
            cfg.write_text(
                f"ListenAddress {address}\n"
                f"Port {port}\n"
                f"HostKey {host_key}\n"
                f"PidFile {tmp / 'sshd.pid'}\n"
                f"AuthorizedKeysFile {authorized}\n"
                "PasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\n"
                "PubkeyAuthentication yes\n"
                "PermitRootLogin prohibit-password\n"
                "UsePAM no\n"
                "StrictModes no\n"
                "UseDNS no\n"
                "MaxStartups 100:30:200\n"
                "MaxSessions 50\n"
                f"LogLevel {log_level}\n"
                "Subsystem sftp internal-sftp\n" + extra
            )
            log_path = tmp / "sshd.log"
            log = open(log_path, "ab")
            try:
                argv = [SSHD, "-D", "-e", "-f", str(cfg)]
                if run_as:
                    argv = _as_user(run_as, tmp) + argv
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,
                )
            finally:
                log.close()
            try:
                _wait_listening(address, port, proc, log_path, start_timeout)
                break
            except RuntimeError as e:  # most likely the port was taken between probe and bind
                last_error = e
                _stop(proc)
                proc = None
        else:
            raise RuntimeError(f"could not start sshd: {last_error}")
        known_hosts = tmp / "known_hosts"
        server = SshdServer(
            user=run_as or _current_user(),
            dir=tmp,
            address=address,
            port=port,
            pid=proc.pid,
            config_path=cfg,
            host_key_path=host_key,
            client_key_path=client_key,
            authorized_keys_path=authorized,
            known_hosts_path=known_hosts,
            log_path=log_path,
        )
        known_hosts.write_text(server.known_hosts_line())
        yield server
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def sshd() -> Iterator[SshdServer]:
    """A fresh sshd on 127.0.0.1 for one test (see ``running_sshd``)."""
    with running_sshd() as server:
        yield server


def hermetic_options(tmp: Path, **kw) -> SshOptions:
    """SshOptions that never read the machine's ~/.ssh, /etc/ssh or ssh-agent."""
    from advisor.transport.factory import SshOptions

    base = dict(
        known_hosts_path=tmp / "default_known_hosts",
        system_known_hosts_path=None,
        ssh_config_path=None,
        use_agent=False,
        look_for_keys=False,
        connect_timeout=5.0,
    )
    base.update(kw)
    return SshOptions(**base)
