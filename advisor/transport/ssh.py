"""The SSH transport (paramiko): one connection and ONE session per host for a whole batch.

A login over SSH can cost 100+ ms per command (a ``.bashrc`` running ``pyenv init``...), so all of
a host's commands go in a single ``exec`` of ``sh -s``; the wrapper script sent on its stdin
(POSIX sh) writes each command's script into a private ``mktemp -d`` directory (quoted
here-documents: nothing is ever interpolated by a shell), runs it with ``timeout`` (coreutils,
else a sh watchdog) and optionally ``sudo -n``, stdin from /dev/null, stdout and stderr into
files, and prints framed results: stdout and stderr base64-encoded (``od`` hex when base64 is
missing), so any bytes survive. The directory is removed when the wrapper exits.

Host keys are verified against known_hosts (the host's ``known_hosts``, the ssh config's
``UserKnownHostsFile`` or ``SshOptions.known_hosts_path``, plus the read-only system file):
an unknown key refuses the host unless ``trust_new_hosts`` (which records it); a changed key
always refuses it. Hashed entries and ``[host]:port`` entries are understood.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import paramiko

from advisor.site.model import Host
from advisor.transport.base import (
    AuthenticationFailed,
    Command,
    CommandResult,
    HostKeyRefused,
    HostUnreachable,
    Transport,
    TransportError,
)
from advisor.transport.batch_framing import BatchParser, BatchScript, stall_limit  # noqa: F401
from advisor.transport.known_hosts import (  # noqa: F401 (re-exported: tests and callers import them from here)
    KnownKey,
    append_known_host,
    describe_key,
    fingerprint,
    key_label,
    read_known_hosts,
)
from advisor.transport.ssh_options import SshOptions
from advisor.transport.ssh_config import Endpoint, load_ssh_config, resolve_host

# paramiko logs handshake failures with tracebacks at ERROR; errors reach users as one line
# through our exceptions instead. Leave any level an application set explicitly alone.
_plog = logging.getLogger("paramiko")
if _plog.level == logging.NOTSET:
    _plog.setLevel(logging.CRITICAL)
_plog.addHandler(logging.NullHandler())


# --------------------------------------------------------------------------------------------
# the transport


@dataclass
class _Hop:
    endpoint: Endpoint
    transport: paramiko.Transport


class SshTransport(Transport):
    """Runs a host's commands over one SSH connection and one session per batch."""

    is_local = False

    def __init__(self, host: Host, options: SshOptions | None = None):
        self.host = host
        self.options = options or SshOptions()
        self._config_error: TransportError | None = None
        try:
            self.endpoint = resolve_host(
                host, load_ssh_config(self.options.ssh_config_path), self.options.default_user
            )
        except TransportError as e:  # reported when the host is used, not when it is listed
            self._config_error = type(e)(f"{host.name}: {e}")
            self.endpoint = Endpoint(label=host.name, hostname=host.connect_address, port=host.port)
        self._hops: list[_Hop] = []
        self._lock = threading.Lock()

    # ---- naming for messages

    def _target_label(self) -> str:
        via = ""
        if self.endpoint.jumps:
            via = " via " + ",".join(j.where for j in self.endpoint.jumps)
        return f"{self.host.name} ({self.endpoint.where}{via})"

    def _hop_label(self, ep: Endpoint) -> str:
        if ep is self.endpoint:
            return self._target_label()
        return f"{self._target_label()}: {ep.label} ({ep.where})"

    # ---- connecting

    @property
    def connected(self) -> bool:
        return bool(self._hops) and self._hops[-1].transport.is_active()

    def connect(self) -> None:
        """Open (or re-open) the connection, through any jump hosts. Idempotent."""
        if self._config_error is not None:
            raise self._config_error
        with self._lock:
            if self.connected:
                return
            self._close_hops()
            chain = [*self.endpoint.jumps, self.endpoint]
            try:
                for ep in chain:
                    prev = self._hops[-1] if self._hops else None
                    sock = self._open_socket(ep, prev)
                    self._hops.append(_Hop(ep, self._handshake(ep, sock)))
            except BaseException:
                self._close_hops()
                raise

    def _timeout(self, ep: Endpoint) -> float:
        return float(ep.connect_timeout or self.options.connect_timeout)

    def _open_socket(self, ep: Endpoint, via: _Hop | None):
        label = self._hop_label(ep)
        ct = self._timeout(ep)
        if via is not None:
            try:
                return via.transport.open_channel(
                    "direct-tcpip", (ep.hostname, ep.port), ("127.0.0.1", 0), timeout=ct
                )
            except paramiko.ChannelException as e:
                raise HostUnreachable(
                    f"{label}: {via.endpoint.label} ({via.endpoint.where}) could not open a connection to it: "
                    f"{e.text or 'channel open failed'} (code {e.code})"
                ) from None
            except (paramiko.SSHException, EOFError, OSError) as e:
                raise HostUnreachable(f"{label}: forwarding through {via.endpoint.label} failed: {e or 'timed out'}") from None
        try:
            return socket.create_connection((ep.hostname, ep.port), timeout=ct)
        except socket.gaierror as e:
            raise HostUnreachable(f"{label}: cannot resolve {ep.hostname!r}: {e.strerror or e}") from None
        except ConnectionRefusedError:
            raise HostUnreachable(f"{label}: connection refused (no sshd listening on port {ep.port}?)") from None
        except (socket.timeout, TimeoutError):
            raise HostUnreachable(f"{label}: connect timed out after {ct:g}s") from None
        except OSError as e:
            raise HostUnreachable(f"{label}: cannot connect: {e.strerror or e}") from None

    def _known_hosts_files(self, ep: Endpoint) -> tuple[list[Path], Path]:
        """(files to check, user file first; the file new keys are recorded in)."""
        if ep is self.endpoint and self.host.known_hosts:
            user_files = [Path(os.path.expanduser(str(self.host.known_hosts)))]
        elif ep.known_hosts_files:
            user_files = list(ep.known_hosts_files)
        else:
            user_files = [Path(os.path.expanduser(str(self.options.known_hosts_path)))]
        files = list(user_files)
        if ep is not self.endpoint and self.host.known_hosts:
            # the site's own known_hosts file also vouches for its jump hosts
            files.append(Path(os.path.expanduser(str(self.host.known_hosts))))
        if self.options.system_known_hosts_path:
            files.append(Path(self.options.system_known_hosts_path))
        return files, user_files[0]

    def _known_keys(self, ep: Endpoint) -> tuple[list[KnownKey], Path]:
        files, record = self._known_hosts_files(ep)
        known: list[KnownKey] = []
        for f in files:
            try:
                known.extend(read_known_hosts(f, ep.known_hosts_name))
            except TransportError as e:
                raise HostKeyRefused(f"{self._hop_label(ep)}: {e}") from None
        return known, record

    def _handshake(self, ep: Endpoint, sock) -> paramiko.Transport:
        label = self._hop_label(ep)
        ct = self._timeout(ep)
        known, record_to = self._known_keys(ep)
        t = paramiko.Transport(sock)
        try:
            t.banner_timeout = ct
            t.handshake_timeout = ct
            t.auth_timeout = ct
            _prefer_known_key_types(t, {k.key_type for k in known if not k.revoked})
            try:
                t.start_client(timeout=ct)
            except (paramiko.SSHException, EOFError, OSError) as e:
                raise HostUnreachable(f"{label}: SSH handshake failed: {_one_line(e) or 'connection closed'}") from None
            if not t.is_active() or not t.initial_kex_done:
                raise HostUnreachable(f"{label}: SSH handshake failed: no answer within {ct:g}s")
            self._verify_host_key(ep, t.get_remote_server_key(), known, record_to)
            self._authenticate(ep, t)
            t.set_keepalive(30)
            return t
        except BaseException:
            t.close()
            raise

    def _verify_host_key(self, ep: Endpoint, key: paramiko.PKey, known: list[KnownKey], record_to: Path) -> None:
        label = self._hop_label(ep)
        ktype, blob = key.get_name(), key.asbytes()
        got = describe_key(ktype, blob)
        for k in known:
            if k.revoked and k.blob == blob:
                raise HostKeyRefused(f"{label}: host key refused: {got} is marked @revoked in {k.path}:{k.line}")
        same_type = [k for k in known if not k.revoked and k.key_type == ktype]
        if any(k.blob == blob for k in same_type):
            return
        if same_type:
            k = same_type[0]
            raise HostKeyRefused(
                f"{label}: host key refused: the host key CHANGED (possible man-in-the-middle attack): "
                f"the host offers {got}, {k.path}:{k.line} has {describe_key(k.key_type, k.blob)}; "
                f"if the change is expected, remove the old entry with: ssh-keygen -R '{ep.known_hosts_name}' -f {k.path}"
            )
        others = [k for k in known if not k.revoked]
        if others:
            k = others[0]
            raise HostKeyRefused(
                f"{label}: host key refused: the host offers {got} but {k.path}:{k.line} has only a "
                f"{key_label(k.key_type)} key for {ep.known_hosts_name} (possible man-in-the-middle attack); "
                "check the host and update known_hosts by hand"
            )
        if not self.options.trust_new_hosts:
            raise HostKeyRefused(
                f"{label}: host key refused: unknown key {got} for {ep.known_hosts_name}; "
                f"run with --trust-new-hosts to record it in {record_to}"
            )
        try:
            append_known_host(record_to, ep.known_hosts_name, ktype, blob)
        except OSError as e:
            raise HostKeyRefused(f"{label}: cannot record the new host key {got} in {record_to}: {e.strerror or e}") from None

    def _identities(self, ep: Endpoint) -> tuple[list[tuple[str, paramiko.PKey]], list[str]]:
        keys: list[tuple[str, paramiko.PKey]] = []
        notes: list[str] = []
        explicit = Path(os.path.expanduser(str(self.host.key))) if (ep is self.endpoint and self.host.key) else None
        paths = list(ep.identity_files)
        if explicit and explicit not in paths:
            paths.insert(0, explicit)
        if ep is not self.endpoint and self.host.key:
            # a jump host may well take the site's key too: offer it after the jump's own
            site_key = Path(os.path.expanduser(str(self.host.key)))
            if site_key not in paths:
                paths.append(site_key)
        if self.options.look_for_keys:
            for name in ("id_ed25519", "id_ecdsa", "id_rsa"):
                p = Path.home() / ".ssh" / name
                if p.is_file() and p not in paths:
                    paths.append(p)
        for p in paths:
            if not p.is_file():
                if p == explicit:
                    raise AuthenticationFailed(f"{self._hop_label(ep)}: key file {p} not found")
                continue
            try:
                keys.append((str(p), paramiko.PKey.from_path(str(p))))
            except paramiko.PasswordRequiredException:
                notes.append(f"{p} is passphrase-protected (load it into ssh-agent)")
            except (paramiko.SSHException, ValueError, OSError, TypeError) as e:
                notes.append(f"{p} unreadable: {_one_line(e)}")
        if self.options.use_agent and os.environ.get("SSH_AUTH_SOCK"):
            try:
                agent = paramiko.Agent()
                keys.extend((f"agent key {describe_key(k.get_name(), k.asbytes())}", k) for k in agent.get_keys())
            except (paramiko.SSHException, OSError) as e:
                notes.append(f"ssh-agent unusable: {_one_line(e)}")
        return keys, notes

    def _authenticate(self, ep: Endpoint, t: paramiko.Transport) -> None:
        label = self._hop_label(ep)
        keys, notes = self._identities(ep)
        tried: list[str] = []
        for name, key in keys:
            try:
                remaining = t.auth_publickey(ep.user, key)
            except paramiko.BadAuthenticationType as e:
                allowed = ", ".join(e.allowed_types) or "none"
                raise AuthenticationFailed(
                    f"{label}: authentication failed for user {ep.user}: the server does not accept public keys "
                    f"(allows: {allowed})"
                ) from None
            except paramiko.AuthenticationException:
                tried.append(name)
                continue
            except (paramiko.SSHException, EOFError, OSError) as e:
                raise HostUnreachable(f"{label}: connection lost during authentication: {_one_line(e)}") from None
            if remaining:
                raise AuthenticationFailed(
                    f"{label}: authentication for user {ep.user} needs more than a key ({', '.join(remaining)}); "
                    "not supported"
                )
            return
        what = f"tried {', '.join(tried)}" if tried else "no usable key (set 'key' for the host, IdentityFile, or ssh-agent)"
        extra = f"; {'; '.join(notes)}" if notes else ""
        raise AuthenticationFailed(f"{label}: authentication failed for user {ep.user}: {what}{extra}")

    # ---- running

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        if not commands:
            return []
        self.connect()
        label = self._target_label()
        script = BatchScript.build(commands, self.host.sudo, self.options.command_timeout)
        parser = script.parser(self.host.name, self.endpoint.user)
        budget = self.options.batch_timeout
        if budget is None:
            budget = sum(script.timeouts) + 3.0 * len(commands) + 30.0
        t = self._hops[-1].transport
        try:
            chan = t.open_session(timeout=self.options.connect_timeout)
            chan.exec_command("sh -s")
        except (paramiko.SSHException, EOFError, OSError) as e:
            self._close_hops()
            raise HostUnreachable(f"{label}: cannot open a session: {_one_line(e) or 'refused'}") from None
        payload = script.text.encode()
        send_error: list[BaseException] = []

        sent_at = [time.monotonic()]  # when the last piece of the script went out (the host is reading)

        def _send() -> None:
            try:
                view = memoryview(payload)
                while view:
                    try:
                        n = chan.send(view[:1 << 16])
                    except socket.timeout:  # the reader's 0.2 s timeout applies to the channel: retry
                        continue
                    if n <= 0:
                        raise EOFError("channel closed")
                    view = view[n:]
                    sent_at[0] = time.monotonic()
                chan.shutdown_write()
            except (OSError, EOFError, paramiko.SSHException) as e:  # session went away: the reader sees it
                send_error.append(e)

        sender = threading.Thread(target=_send, name=f"ssh-send-{self.host.name}", daemon=True)
        sender.start()
        err = bytearray()
        started = last_data = time.monotonic()
        deadline = started + budget
        timed_out = False
        stalled: float | None = None
        chan.settimeout(0.2)
        try:
            while True:
                now = time.monotonic()
                if now > deadline:
                    timed_out = True
                    break
                silence = stall_limit(script, parser, self.options.connect_timeout)
                # before the wrapper begins, login chatter is no progress (a shell rc file that
                # prints without end): the limit runs from the start
                since = max(last_data, sent_at[0]) if parser.began else started
                if now - since > silence:
                    stalled = silence
                    break
                try:
                    data = chan.recv(1 << 16)
                except socket.timeout:
                    data = None
                while chan.recv_stderr_ready():
                    chunk = chan.recv_stderr(1 << 16)
                    if len(err) < 65536:
                        err += chunk
                if data is None:
                    continue
                if not data:
                    break
                last_data = time.monotonic()
                parser.feed(data)
            status = None
            if not timed_out and stalled is None:
                end = time.monotonic() + 2.0
                while not chan.exit_status_ready() and time.monotonic() < end:
                    time.sleep(0.01)
                while chan.recv_stderr_ready():
                    err += chan.recv_stderr(1 << 16)
                status = chan.recv_exit_status() if chan.exit_status_ready() else None
        finally:
            chan.close()
        wrapper_err = _one_line(err.decode("utf-8", "replace"))[-300:]
        if parser.fatal:
            raise TransportError(f"{label}: the batch could not start: {parser.fatal}")
        if stalled is not None:
            self._close_hops()  # the connection is dead or frozen: never reused
            if not parser.began:
                raise HostUnreachable(f"{label}: no answer from the remote shell within {stalled:g}s")
            return parser.results(f"storadvise: {label} stopped answering (nothing for {stalled:g}s)",
                                  missing_timed_out=True)
        if timed_out:
            if not parser.began:
                raise HostUnreachable(f"{label}: no answer from the remote shell within {budget:g}s")
            return parser.results(f"storadvise: batch timed out after {budget:g}s", missing_timed_out=True)
        if not parser.began:
            noise = _one_line(b"\n".join(parser.noise).decode("utf-8", "replace"))[-200:]
            why = wrapper_err or noise or "no output"
            raise TransportError(f"{label}: the remote shell did not run the batch (exit status {status}): {why}")
        if not parser.done:
            why = f"the session ended early (exit status {status}"
            why += f"; {wrapper_err})" if wrapper_err else ")"
            return parser.results(f"storadvise: {why}")
        return parser.results()

    # ---- closing

    def _close_hops(self) -> None:
        for hop in reversed(self._hops):
            try:
                hop.transport.close()
            except Exception:
                pass
        self._hops = []

    def close(self) -> None:
        with self._lock:
            self._close_hops()


def _prefer_known_key_types(t: paramiko.Transport, known_types: set[str]) -> None:
    """Offer known host-key types first (as OpenSSH does), so a known host is not 'unknown'."""
    if not known_types:
        return
    opts = t.get_security_options()
    wanted: list[str] = []
    for kt in known_types:
        wanted.extend(["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"] if kt == "ssh-rsa" else [kt])
    first = [k for k in wanted if k in opts.key_types]
    if first:
        opts.key_types = first + [k for k in opts.key_types if k not in first]


def _one_line(e: object) -> str:
    return " ".join(str(e).split())
