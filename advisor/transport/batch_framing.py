"""The SSH transport's batch framing: the POSIX sh wrapper that runs all of a host's commands in one
session (``BatchScript``: each command's script in a private temp dir, run with a timeout and
optionally ``sudo -n``, outputs framed with the batch's random token and base64/hex encoded) and
the parser of its framed output (``BatchParser``), bounded per command by ``MAX_OUTPUT_BYTES``.
Pure text in, results out: no sockets here (advisor/transport/ssh.py sends the script)."""

from __future__ import annotations

import base64
import binascii
import math
import secrets
import time
from dataclasses import dataclass, field

from advisor.transport.base import MAX_OUTPUT_BYTES, Command, CommandResult, sudo_flag

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
        why = f"sudo requires a password for {who} (sudo -n refused); allow it NOPASSWD (narrowly: 'storadvise sudoers' with the probe helper) or set 'sudo: false' for the host"
    elif rc == 127 and "sudo" in low and ("not found" in low or "no such file" in low):
        why = f"sudo is not installed on {host_label}; install it or log in as root"
    elif "not in the sudoers file" in low or "is not allowed to execute" in low or "may not run sudo" in low:
        why = f"sudo refused for {who}: not allowed to run this as root"
    else:
        return None
    return why + "\n" + stderr
