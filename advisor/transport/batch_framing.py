"""The SSH transport's batch framing: the POSIX sh wrapper that runs all of a host's commands in one
session (``BatchScript``: each command's script in a private temp dir, run with a timeout and
optionally ``sudo -n``, outputs framed with the batch's random token and base64/hex encoded), the
one wrapper of many hosts' batches that the collect playbook ships (``shared_script``), and the
parser of the framed output (``BatchParser``: the shipped decoder,
playbooks/module_utils/storadvise_batch_frames.py, whose results become CommandResults), bounded
per command by ``MAX_OUTPUT_BYTES``. Pure text in, results out: no sockets here
(advisor/transport/ssh.py sends the script)."""

from __future__ import annotations

import math
import secrets
import shlex
from dataclasses import dataclass

from advisor.util.host_tmp import MKTEMP
from advisor.util.shipped_code import module_utils
from advisor.transport.base import MAX_OUTPUT_BYTES, Command, CommandResult, sudo_flag

frames = module_utils("storadvise_batch_frames")
fmt_seconds = frames.fmt_seconds
explain_sudo = frames.explain_sudo

_PROLOGUE = r"""# storadvise batch wrapper (POSIX sh)
SA_TOK='@TOKEN@'
sa_mark() { printf '@@SA %s %s\n' "$SA_TOK" "$*"; }
SA_T=$(@MKTEMP@ 2>/dev/null) || SA_T=
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
# sa_enc FILE SIZE: an empty file encodes to nothing: no process is started for it (most stderr
# files); one no longer than the cap is encoded whole (no head)
sa_enc() {
  [ -s "$1" ] || return 0
  if [ "$2" != - ] && [ "$2" -le "$SA_CAP" ]; then
    if [ "$SA_ENC" = b64 ]; then base64 "$1"; else od -An -v -tx1 "$1"; fi
  elif [ "$SA_ENC" = b64 ]; then sa_cut "$1" | base64; else sa_cut "$1" | od -An -v -tx1; fi
}
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
  sa_mark O; sa_enc "$SA_T/$sa_i.out" "$sa_so"; sa_mark E; sa_enc "$SA_T/$sa_i.err" "$sa_se"; sa_mark Z "$sa_i"
  # emptied by the shell itself (no rm per command): the directory goes at exit
  : >"$SA_T/$sa_i.out"; : >"$SA_T/$sa_i.err"
}
sa_mark BEGIN "uid=$SA_UID" "timeout=$SA_TO" "enc=$SA_ENC" "pid=$$"
"""


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
        timeouts = [float(command_timeout if command_timeout is not None else c.timeout) for c in commands]
        sudo = [sudo_flag(c, host_sudo) for c in commands]
        body = _batch_body(commands, timeouts, sudo, lambda i, c: f"{_write_script(c, f'$SA_T/{i}.sh')}\n")
        text = _prologue(token) + body + "sa_mark DONE\n"
        return cls(commands=commands, timeouts=timeouts, sudo=sudo, token=token, text=text)

    def parser(self, host_label: str = "host", user: str = "") -> "BatchParser":
        return BatchParser(self, host_label, user)


def _prologue(token: str) -> str:
    return (_PROLOGUE.replace("@TOKEN@", token).replace("@CAP@", str(int(MAX_OUTPUT_BYTES)))
            .replace("@MKTEMP@", MKTEMP))


def _write_script(command: Command, path: str) -> str:
    """The sh line that writes ``command``'s script to ``path`` with the shell's own ``printf``: no
    process per command (a here-document needs a ``cat``)."""
    script = command.script if command.script.endswith("\n") else command.script + "\n"
    return f'printf %s {shlex.quote(script)} >"{path}"'


def _batch_body(commands: list[Command], timeouts: list[float], sudo: list[bool], write_script) -> str:
    """Each command's script written to ``$SA_T/INDEX.sh`` (``write_script(i, command)`` gives the
    line: the script itself, or a call of a shared body), then the ``sa_run`` lines."""
    parts = [write_script(i, c) for i, c in enumerate(commands)]
    for i in range(len(commands)):
        ticks = max(1, math.ceil(timeouts[i] / 0.2))  # the sh watchdog's 0.2 s ticks
        parts.append(f"sa_run {i} {fmt_seconds(timeouts[i])} {1 if sudo[i] else 0} {ticks}\n")
    return "".join(parts)


@dataclass
class SharedScript:
    """One wrapper for many hosts' batches: ``text`` run with a batch's number as its one argument
    (``sh batch.sh 3``) runs that batch, framed as ``BatchScript`` frames it; run with ``--host NAME``
    it runs the batch of host NAME (``hosts``, name -> batch number), so that a playbook needs no
    per-host variable to choose it. Each distinct command script is written once in ``text``, as a
    shell function, however many batches use it. The collect playbook ships it once to every host
    (advisor/collect/ansible.py)."""

    batches: list[BatchScript]
    token: str
    text: str

    @classmethod
    def build(cls, batches: list[tuple[list[Command], bool | None]],
              hosts: dict[str, int] | None = None) -> "SharedScript":
        token = secrets.token_hex(12)
        bodies: dict[str, int] = {}
        defs: list[str] = []
        cases: list[str] = []
        scripts: list[BatchScript] = []
        for n, (commands, host_sudo) in enumerate(batches):
            timeouts = [float(c.timeout) for c in commands]
            sudo = [sudo_flag(c, host_sudo) for c in commands]

            def call(i: int, c: Command) -> str:
                if c.script not in bodies:
                    bodies[c.script] = len(bodies)
                    defs.append(f"sa_b{bodies[c.script]}() {{ {_write_script(c, '$SA_T/$1.sh')}; }}\n")
                return f"sa_b{bodies[c.script]} {i}\n"

            cases.append(f"{n})\n{_batch_body(commands, timeouts, sudo, call)};;\n")
            scripts.append(BatchScript(commands=commands, timeouts=timeouts, sudo=sudo, token=token, text=""))
        text = (_prologue(token) + "".join(defs) + _host_selection(hosts or {}, len(batches))
                + 'case "${1-}" in\n' + "".join(cases)
                + '*) sa_mark FATAL "no batch ${1-} in this script"; exit 64;;\nesac\nsa_mark DONE\n')
        return cls(batches=scripts, token=token, text=text)


def _host_selection(hosts: dict[str, int], n_batches: int) -> str:
    """``--host NAME`` turned into NAME's batch number (one ``case`` of names quoted by ``shlex.quote``: no
    character of a name is special to it); a name not listed is refused with a FATAL frame."""
    arms: dict[int, list[str]] = {}
    for name, n in hosts.items():
        if not 0 <= n < n_batches:
            raise ValueError(f"host {name!r}: no batch {n}")
        arms.setdefault(n, []).append(shlex.quote(name))
    lines = "".join(f"{'|'.join(names)}) set -- {n};;\n" for n, names in sorted(arms.items()))
    return ('if [ "${1-}" = --host ]; then\ncase "${2-}" in\n' + lines
            + '*) sa_mark FATAL "no batch for host ${2-} in this script"; exit 64;;\nesac\nfi\n')


class BatchParser(frames.FrameParser):
    """The shipped decoder (playbooks/module_utils/storadvise_batch_frames.py) for one batch, with
    its results as CommandResults."""

    def __init__(self, script: BatchScript, host_label: str, user: str):
        super().__init__(script.token, [c.key for c in script.commands], script.timeouts, host_label, user,
                         cap=MAX_OUTPUT_BYTES)
        self.script = script

    def results(self, missing_reason: str = "not run", missing_timed_out: bool = False) -> list[CommandResult]:  # type: ignore[override]
        return [CommandResult(**r) for r in super().results(missing_reason, missing_timed_out)]


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


