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

import base64
import binascii
import fcntl
import hashlib
import hmac
import logging
import math
import os
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from advisor.site import Host
from advisor.transport.base import (
    MAX_OUTPUT_BYTES,
    AuthenticationFailed,
    Command,
    CommandResult,
    HostKeyRefused,
    HostUnreachable,
    Transport,
    TransportError,
    sudo_flag,
)
from advisor.transport.ssh_options import SshOptions
from advisor.transport.ssh_config import Endpoint, load_ssh_config, resolve_host

# paramiko logs handshake failures with tracebacks at ERROR; errors reach users as one line
# through our exceptions instead. Leave any level an application set explicitly alone.
_plog = logging.getLogger("paramiko")
if _plog.level == logging.NOTSET:
    _plog.setLevel(logging.CRITICAL)
_plog.addHandler(logging.NullHandler())

_KEY_LABELS = {"ssh-ed25519": "ED25519", "ssh-rsa": "RSA", "ssh-dss": "DSA"}
_known_hosts_lock = threading.Lock()


def key_label(key_type: str) -> str:
    if key_type.startswith("ecdsa-"):
        return "ECDSA"
    return _KEY_LABELS.get(key_type, key_type.upper())


def fingerprint(blob: bytes) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key blob."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def describe_key(key_type: str, blob: bytes) -> str:
    return f"{key_label(key_type)} {fingerprint(blob)}"


# --------------------------------------------------------------------------------------------
# known_hosts


@dataclass
class KnownKey:
    key_type: str
    blob: bytes
    path: Path
    line: int
    revoked: bool = False


def _host_field_matches(field_: str, name: str) -> bool:
    if field_.startswith("|1|"):
        try:
            return hmac.compare_digest(paramiko.HostKeys.hash_host(name, field_), field_)
        except (binascii.Error, AssertionError, ValueError):
            return False
    matched = False
    for pat in field_.split(","):
        neg = pat.startswith("!")
        pat = pat[1:] if neg else pat
        if _glob(pat, name):
            if neg:
                return False
            matched = True
    return matched


def _glob(pattern: str, name: str) -> bool:
    """OpenSSH host pattern: ``*`` and ``?`` are wildcards, everything else (``[``, ``]``) literal."""
    if "*" not in pattern and "?" not in pattern:
        return pattern.lower() == name.lower()
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, name, re.IGNORECASE) is not None


def read_known_hosts(path: Path, name: str) -> list[KnownKey]:
    """Entries of ``path`` for ``name`` (``host`` or ``[host]:port``); plain, hashed, wildcard."""
    out: list[KnownKey] = []
    try:
        text = Path(path).read_text(errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return out
    except OSError as e:
        raise TransportError(f"known_hosts {path}: cannot read: {e.strerror or e}") from None
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        marker = None
        if parts[0].startswith("@"):
            marker, parts = parts[0], parts[1:]
            if marker not in ("@revoked",):
                continue  # @cert-authority: certificates are not used here
        if len(parts) < 3:
            continue
        try:
            blob = base64.b64decode(parts[2], validate=True)
        except (binascii.Error, ValueError):
            continue
        if marker == "@revoked" or _host_field_matches(parts[0], name):
            out.append(KnownKey(parts[1], blob, Path(path), n, revoked=marker == "@revoked"))
    return out


def append_known_host(path: Path, name: str, key_type: str, blob: bytes) -> None:
    """Append ``name key_type base64`` to ``path`` (created 0600, its dir 0700, if missing)."""
    path = Path(path)
    with _known_hosts_lock:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                size = f.seek(0, os.SEEK_END)
                prefix = b""
                if size:
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        prefix = b"\n"
                f.write(prefix + f"{name} {key_type} {base64.b64encode(blob).decode()}\n".encode())
                f.flush()
                os.fsync(f.fileno())
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# the batch wrapper


_PROLOGUE = r"""# storadvise batch wrapper (POSIX sh)
SA_TOK='@TOKEN@'
sa_mark() { printf '@@SA %s %s\n' "$SA_TOK" "$*"; }
SA_T=$(mktemp -d "${TMPDIR:-/tmp}/storadvise.XXXXXXXXXX" 2>/dev/null) || SA_T=$(mktemp -d 2>/dev/null) || SA_T=
if [ -z "$SA_T" ] || [ ! -d "$SA_T" ]; then sa_mark FATAL "mktemp -d failed: cannot create a private temp dir"; exit 97; fi
trap 'rm -rf "$SA_T"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 141' PIPE
SA_UID=$(id -u 2>/dev/null) || SA_UID=unknown
if timeout -k 1 5 true >/dev/null 2>&1; then SA_TO=1; else SA_TO=0; fi
if command -v setsid >/dev/null 2>&1; then SA_SETSID=1; else SA_SETSID=0; fi
if command -v base64 >/dev/null 2>&1; then SA_ENC=b64; else SA_ENC=hex; fi
SA_CAP=@CAP@
if command -v head >/dev/null 2>&1; then SA_HEAD=1; else SA_HEAD=0; fi
sa_cut() { if [ "$SA_HEAD" = 1 ]; then head -c "$SA_CAP" "$1"; else cat "$1"; fi; }
# an empty file encodes to nothing: no process is started for it (most stderr files)
sa_enc() { [ -s "$1" ] || return 0; if [ "$SA_ENC" = b64 ]; then sa_cut "$1" | base64; else sa_cut "$1" | od -An -v -tx1; fi; }
# sa_size FILE VAR: VAR = the file's size in bytes, - when unreadable (wc only for a non-empty file)
sa_size() { if [ -s "$1" ]; then sa_n=$(wc -c <"$1" 2>/dev/null) && sa_n=$((sa_n)) || sa_n=-; elif [ -e "$1" ]; then sa_n=0; else sa_n=-; fi; eval "$2=\$sa_n"; }
# sa_now VAR: VAR = a clock in seconds; /proc/uptime is read by the shell itself (no process),
# else date; - when neither works. Only differences of two readings are used.
if read sa_c sa_x </proc/uptime 2>/dev/null; then SA_CLK=uptime; else SA_CLK=date; fi
sa_now() { if [ "$SA_CLK" = uptime ]; then read sa_c sa_x </proc/uptime 2>/dev/null || sa_c=-; else sa_c=$(date +%s.%N 2>/dev/null) || sa_c=-; fi; eval "$1=\$sa_c"; }
sa_watch() {
  # no coreutils timeout: a sh watchdog; with setsid the command gets its own process group
  if [ "$SA_SETSID" = 1 ]; then set -- setsid "$@"; fi
  "$@" </dev/null >"$SA_T/$sa_i.out" 2>"$SA_T/$sa_i.err" &
  sa_p=$!
  if [ "$SA_SETSID" = 1 ]; then sa_g=-$sa_p; else sa_g=$sa_p; fi
  ( sa_n=0
    while [ "$sa_n" -lt "$sa_k" ]; do
      sleep 0.2 2>/dev/null || sleep 1
      kill -0 "$sa_p" 2>/dev/null || exit 0
      sa_n=$((sa_n + 1))
    done
    : >"$SA_T/$sa_i.to"; kill -TERM "$sa_g" 2>/dev/null; sleep 2; kill -KILL "$sa_g" 2>/dev/null ) >/dev/null 2>&1 </dev/null &
  sa_w=$!
  wait "$sa_p"; sa_rc=$?
  kill "$sa_w" 2>/dev/null
  if [ -e "$SA_T/$sa_i.to" ]; then sa_rc=124; kill -KILL "$sa_g" 2>/dev/null; fi
}
sa_run() {
  sa_i=$1; sa_t=$2; sa_su=0; sa_k=$4
  if [ "$3" = 1 ] && [ "$SA_UID" != 0 ]; then sa_su=1; set -- sudo -n -- sh "$SA_T/$sa_i.sh"; else set -- sh "$SA_T/$sa_i.sh"; fi
  sa_now sa_s
  if [ "$SA_TO" = 1 ]; then
    timeout -k 2 "$sa_t" "$@" </dev/null >"$SA_T/$sa_i.out" 2>"$SA_T/$sa_i.err"; sa_rc=$?
  else
    sa_watch "$@"
  fi
  sa_now sa_e
  sa_size "$SA_T/$sa_i.out" sa_so; sa_size "$SA_T/$sa_i.err" sa_se
  sa_mark R "$sa_i" "$sa_rc" "$sa_s" "$sa_e" "$sa_su" "$sa_so" "$sa_se"
  sa_mark O; sa_enc "$SA_T/$sa_i.out"; sa_mark E; sa_enc "$SA_T/$sa_i.err"; sa_mark Z "$sa_i"
  rm -f "$SA_T/$sa_i.sh" "$SA_T/$sa_i.out" "$SA_T/$sa_i.err" "$SA_T/$sa_i.to"
}
sa_mark BEGIN "uid=$SA_UID" "timeout=$SA_TO" "enc=$SA_ENC" "pid=$$"
"""


def _fmt_seconds(t: float) -> str:
    t = max(float(t), 0.1)
    s = f"{t:.3f}".rstrip("0").rstrip(".")
    return s


@dataclass
class BatchScript:
    """The wrapper for one batch: ``text`` goes to ``sh -s`` on the host."""

    commands: list[Command]
    timeouts: list[float]
    sudo: list[bool]
    token: str
    text: str

    @classmethod
    def build(
        cls,
        commands: list[Command],
        host_sudo: bool | None = None,
        command_timeout: float | None = None,
    ) -> "BatchScript":
        token = secrets.token_hex(12)
        delim = f"SA_EOF_{token}"
        timeouts = [float(command_timeout if command_timeout is not None else c.timeout) for c in commands]
        sudo = [sudo_flag(c, host_sudo) for c in commands]
        parts = [_PROLOGUE.replace("@TOKEN@", token).replace("@CAP@", str(int(MAX_OUTPUT_BYTES)))]
        for i, c in enumerate(commands):
            script = c.script if c.script.endswith("\n") else c.script + "\n"
            if delim in script:  # cannot happen by chance (96 random bits); refuse rather than guess
                raise ValueError(f"command {c.key!r}: script contains the wrapper's delimiter")
            parts.append(f"cat >\"$SA_T/{i}.sh\" <<'{delim}'\n{script}{delim}\n")
        for i in range(len(commands)):
            ticks = max(1, math.ceil(timeouts[i] / 0.2))  # the sh watchdog's 0.2 s ticks
            parts.append(f"sa_run {i} {_fmt_seconds(timeouts[i])} {1 if sudo[i] else 0} {ticks}\n")
        parts.append("sa_mark DONE\n")
        return cls(commands=commands, timeouts=timeouts, sudo=sudo, token=token, text="".join(parts))

    def parser(self, host_label: str = "host", user: str = "") -> "BatchParser":
        return BatchParser(self, host_label, user)


@dataclass
class _Partial:
    rc: int | None = None
    start: str = "-"
    end: str = "-"
    used_sudo: bool = False
    out: list[bytes] = field(default_factory=list)
    err: list[bytes] = field(default_factory=list)
    arrived: float = 0.0
    complete: bool = False
    #: sizes the host reported (before its own cut) and encoded bytes received here
    sizes: tuple[int, int] = (0, 0)
    received: int = 0
    truncated: bool = False


class BatchParser:
    """Turns the wrapper's framed stdout (fed in arbitrary chunks) into CommandResults."""

    def __init__(self, script: BatchScript, host_label: str, user: str):
        self.script = script
        self.host_label = host_label
        self.user = user
        self._prefix = f"@@SA {script.token} ".encode()
        self._buf = b""
        self.began = False
        self.done = False
        self.fatal: str | None = None
        self.info: dict[str, str] = {}
        self._began_at: float | None = None
        self._parts: dict[int, _Partial] = {}
        self._cur: _Partial | None = None
        self._section: str | None = None
        self.noise: list[bytes] = []  # lines before BEGIN (login-shell chatter); the first 50
        self.garbled = 0  # frames that could not be read
        self.completed = 0  # commands whose results arrived
        self.last_progress: float | None = None  # when BEGIN or the last result frame arrived

    def feed(self, data: bytes) -> None:
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        if len(self._buf) > _MAX_LINE:  # a line without end: nothing the wrapper writes
            self._buf = b""
            self.garbled += 1
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        now = time.monotonic()
        if line.startswith(self._prefix):
            words = line[len(self._prefix) :].decode("ascii", "replace").split(" ")
            kind, args = words[0], words[1:]
            if kind == "BEGIN":
                self.began = True
                self._began_at = now
                self.last_progress = now
                self.info = dict(a.split("=", 1) for a in args if "=" in a)
            elif kind == "FATAL":
                self.fatal = " ".join(args)
            elif kind == "R" and len(args) >= 5:
                p = _Partial(start=args[2], end=args[3], used_sudo=args[4] == "1", arrived=now)
                p.rc = _small_int(args[1])
                index = _small_int(args[0])
                sizes = [_small_int(a) for a in args[5:7]]
                p.truncated = any(n is not None and n > MAX_OUTPUT_BYTES for n in sizes)
                if index is None or not 0 <= index < len(self.script.commands):
                    self.garbled += 1  # a forged or damaged frame: ignored, its command stays missing
                    self._cur, self._section = None, None
                    return
                self._cur = p
                self._parts[index] = p
                self._section = None
                self.last_progress = now
            elif kind == "O":
                self._section = "out"
            elif kind == "E":
                self._section = "err"
            elif kind == "Z":
                if self._cur is not None:
                    self._cur.complete = True
                    self.completed += 1
                self._cur, self._section = None, None
                self.last_progress = now
            elif kind == "DONE":
                self.done = True
            return
        if not self.began:
            if len(self.noise) < 50:
                self.noise.append(line[:400])
            return
        if self._cur is not None and self._section is not None:
            self._cur.received += len(line) + 1
            if self._cur.received > _MAX_ENCODED:
                self._cur.truncated = True  # more than the wrapper would ever send: a forged stream
                return
            getattr(self._cur, self._section).append(line)
        elif len(self.noise) < 50:
            self.noise.append(line[:400])

    def _decode(self, lines: list[bytes]) -> bytes:
        data = b"".join(lines)
        if self.info.get("enc") == "hex":
            return bytes.fromhex(data.decode("ascii", "replace"))[:MAX_OUTPUT_BYTES]
        return base64.b64decode(data)[:MAX_OUTPUT_BYTES]

    def results(self, missing_reason: str = "not run", missing_timed_out: bool = False) -> list[CommandResult]:
        out: list[CommandResult] = []
        prev = self._began_at
        for i, cmd in enumerate(self.script.commands):
            p = self._parts.get(i)
            if p is None or not p.complete:
                out.append(
                    CommandResult(key=cmd.key, rc=None, stderr=missing_reason, timed_out=missing_timed_out)
                )
                continue
            try:
                stdout = self._decode(p.out).decode("utf-8", "replace")
                stderr = self._decode(p.err).decode("utf-8", "replace")
            except (binascii.Error, ValueError) as e:
                out.append(CommandResult(key=cmd.key, rc=None, stderr=f"garbled output frame from the host: {e}"))
                continue
            try:
                duration = max(float(p.end) - float(p.start), 0.0)
            except ValueError:  # no sub-second date on the host: time it here
                duration = max(p.arrived - (prev or p.arrived), 0.0)
            prev = p.arrived
            timeout = self.script.timeouts[i]
            rc = p.rc
            timed_out = rc in (124, 137) and duration >= timeout * 0.9
            if timed_out:
                rc = None
                stderr += f"{'' if not stderr or stderr.endswith(chr(10)) else chr(10)}storadvise: timed out after {_fmt_seconds(timeout)}s (killed)\n"
            elif p.used_sudo and rc not in (0, None):
                stderr = _explain_sudo(stderr, rc, self.host_label, self.user) or stderr
            out.append(
                CommandResult(
                    key=cmd.key, rc=rc, stdout=stdout, stderr=stderr, duration_s=round(duration, 6), timed_out=timed_out,
                    truncated=p.truncated,
                )
            )
        return out


#: base64 of MAX_OUTPUT_BYTES of stdout and of stderr, with its line breaks, and some slack
_MAX_ENCODED = 2 * (MAX_OUTPUT_BYTES * 4 // 3 + MAX_OUTPUT_BYTES // 38 + 4096)
#: the longest line the wrapper writes (base64 wraps at 76; od lines are shorter; frames are short)
_MAX_LINE = 1 << 16


#: seconds past a command's own timeout before a silent host counts as frozen (the wrapper's
#: ``timeout -k 2`` kill, then encoding and sending the result)
STALL_GRACE = 5.0


def stall_limit(script: "BatchScript", parser: "BatchParser", connect_timeout: float) -> float:
    """How long the host may send nothing: until the wrapper begins, the connect timeout (plus the
    grace); then the timeout of the command it is running (plus the grace). A host frozen mid-scan
    is given up after that, not after the whole batch's budget."""
    if not parser.began:
        return float(connect_timeout) + STALL_GRACE
    running = min(parser.completed, len(script.timeouts) - 1)
    return script.timeouts[running] + STALL_GRACE


def _small_int(text: str) -> int | None:
    """An int from a frame field, or None (never a ValueError from a forged frame)."""
    t = text.strip()
    if not t.lstrip("-").isdigit() or len(t) > 20:
        return None
    return int(t)


def _explain_sudo(stderr: str, rc: int | None, host_label: str, user: str) -> str | None:
    """A one-line explanation in front of sudo's own complaint, or None when sudo was not the issue."""
    low = stderr.lower()
    who = f"{user} on {host_label}" if user else host_label
    if "a password is required" in low or "a terminal is required" in low:
        why = f"sudo requires a password for {who} (sudo -n refused); allow it NOPASSWD or set 'sudo: false' for the host"
    elif rc == 127 and "sudo" in low and ("not found" in low or "no such file" in low):
        why = f"sudo is not installed on {host_label}; install it or log in as root"
    elif "not in the sudoers file" in low or "is not allowed to execute" in low or "may not run sudo" in low:
        why = f"sudo refused for {who}: not allowed to run this as root"
    else:
        return None
    return why + "\n" + stderr


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
