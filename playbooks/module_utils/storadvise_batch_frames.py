# -*- coding: utf-8 -*-
# storadvise: the decoder of the probe batch's framed output (Apache-2.0).
"""The decoder of the storadvise probe batch's framed output: one implementation, dependency free
(the Python standard library only).

The batch wrapper (advisor/transport/batch_framing.py builds it) runs a host's probe commands in
one POSIX sh and frames each command's result on stdout with the batch's random token::

    @@SA TOKEN BEGIN uid=0 timeout=1 enc=b64 pid=123
    @@SA TOKEN R INDEX RC START END SUDO OUT_SIZE ERR_SIZE
    @@SA TOKEN O
    <stdout, base64 (or od hex)>
    @@SA TOKEN E
    <stderr>
    @@SA TOKEN Z INDEX
    @@SA TOKEN DONE

The product's SSH transport feeds it live; the collect playbook's ``storadvise_capture`` module
decodes what the collection's ``storadvise_batch`` action saved (``read_saved``; an execution
environment without storadvise runs it). Lines may end with CR (a pty: Ansible's ``ssh -tt``). Every size is bounded: a host
cannot make it hold more than the wrapper would ever send.
"""

from __future__ import absolute_import, division, print_function

import base64
import binascii
import json
import os
import time

__metaclass__ = type

#: the most bytes kept of one command's stdout (and of its stderr)
MAX_OUTPUT_BYTES = 8 << 20
#: the longest line the wrapper writes (base64 wraps at 76; od lines are shorter; frames are short)
MAX_LINE = 1 << 16


#: where the collect playbook's batch task saves each host's result inside the capture directory,
#: ``<SAVED_DIR>/<host>.json`` (``storadvise collect --from-ansible`` reads the same layout)
SAVED_DIR = ".ansible"


def max_encoded(cap):
    """base64 of ``cap`` bytes of stdout and of stderr, with its line breaks, and some slack."""
    return 2 * (cap * 4 // 3 + cap // 38 + 4096)


def fmt_seconds(t):
    t = max(float(t), 0.1)
    return ("%.3f" % t).rstrip("0").rstrip(".")


def small_int(text):
    """An int from a frame field, or None (never a ValueError from a forged frame)."""
    t = text.strip()
    if not t.lstrip("-").isdigit() or len(t) > 20:
        return None
    return int(t)


def explain_sudo(stderr, rc, host_label, user):
    """A one-line explanation in front of sudo's own complaint, or None when sudo was not the issue."""
    low = stderr.lower()
    who = "%s on %s" % (user, host_label) if user else host_label
    if "a password is required" in low or "a terminal is required" in low:
        why = ("sudo requires a password for %s (sudo -n refused); allow it NOPASSWD (narrowly: 'storadvise sudoers' "
               "with the probe helper) or set 'sudo: false' for the host" % who)
    elif rc == 127 and "sudo" in low and ("not found" in low or "no such file" in low):
        why = "sudo is not installed on %s; install it or log in as root" % host_label
    elif "not in the sudoers file" in low or "is not allowed to execute" in low or "may not run sudo" in low:
        why = "sudo refused for %s: not allowed to run this as root" % who
    else:
        return None
    return why + "\n" + stderr


class _Partial:
    __slots__ = ("rc", "start", "end", "used_sudo", "out", "err", "arrived", "complete", "received", "truncated")

    def __init__(self, rc, start, end, used_sudo, arrived, truncated):
        self.rc, self.start, self.end, self.used_sudo = rc, start, end, used_sudo
        self.out, self.err = [], []
        self.arrived, self.complete, self.received, self.truncated = arrived, False, 0, truncated


class FrameParser:
    """Turns the wrapper's framed stdout (fed in arbitrary chunks) into one result per command.

    ``keys`` and ``timeouts``: the batch's commands, in order; ``token``: the batch's token."""

    def __init__(self, token, keys, timeouts, host_label="host", user="", cap=MAX_OUTPUT_BYTES):
        self.keys = list(keys)
        self.timeouts = [float(t) for t in timeouts]
        self.host_label = host_label
        self.user = user
        self.cap = int(cap)
        self._max_encoded = max_encoded(self.cap)
        self._prefix = ("@@SA %s " % token).encode("ascii")
        self._buf = b""
        self.began = False
        self.done = False
        self.fatal = None
        self.info = {}
        self._began_at = None
        self._parts = {}
        self._cur = None
        self._section = None
        self.noise = []  # lines before BEGIN (login-shell chatter); the first 50
        self.garbled = 0  # frames that could not be read
        self.completed = 0  # commands whose results arrived
        self.last_progress = None  # when BEGIN or the last result frame arrived

    def feed(self, data):
        self._buf += data
        lines = self._buf.split(b"\n")
        self._buf = lines.pop()
        if len(self._buf) > MAX_LINE:  # a line without end: nothing the wrapper writes
            self._buf = b""
            self.garbled += 1
        for line in lines:
            self._line(line[:-1] if line.endswith(b"\r") else line)

    def _frame(self, kind, args, now):
        if kind == "BEGIN":
            self.began = True
            self._began_at = now
            self.last_progress = now
            self.info = dict(a.split("=", 1) for a in args if "=" in a)
        elif kind == "FATAL":
            self.fatal = " ".join(args)
        elif kind == "R" and len(args) >= 5:
            index = small_int(args[0])
            sizes = [small_int(a) for a in args[5:7]]
            if index is None or not 0 <= index < len(self.keys):
                self.garbled += 1  # a forged or damaged frame: ignored, its command stays missing
                self._cur, self._section = None, None
                return
            p = _Partial(small_int(args[1]), args[2], args[3], args[4] == "1", now,
                         any(n is not None and n > self.cap for n in sizes))
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

    def _line(self, line):
        now = time.monotonic()
        if line.startswith(self._prefix):
            words = line[len(self._prefix):].decode("ascii", "replace").split(" ")
            self._frame(words[0], words[1:], now)
            return
        if not self.began:
            if len(self.noise) < 50:
                self.noise.append(line[:400])
            return
        if self._cur is not None and self._section is not None:
            self._cur.received += len(line) + 1
            if self._cur.received > self._max_encoded:
                self._cur.truncated = True  # more than the wrapper would ever send: a forged stream
                return
            getattr(self._cur, self._section).append(line)
        elif len(self.noise) < 50:
            self.noise.append(line[:400])

    def _decode(self, lines):
        data = b"".join(lines)
        if self.info.get("enc") == "hex":
            return bytes.fromhex(data.decode("ascii", "replace"))[:self.cap]
        return base64.b64decode(data)[:self.cap]

    def results(self, missing_reason="not run", missing_timed_out=False):
        """One dict per command, in order: ``key``, ``rc`` (None: no exit status), ``stdout``,
        ``stderr``, ``duration_s``, ``timed_out``, ``truncated``."""
        out = []
        prev = self._began_at
        for i, key in enumerate(self.keys):
            p = self._parts.get(i)
            if p is None or not p.complete:
                out.append(_result(key, None, "", missing_reason, 0.0, missing_timed_out, False))
                continue
            try:
                stdout = self._decode(p.out).decode("utf-8", "replace")
                stderr = self._decode(p.err).decode("utf-8", "replace")
            except (binascii.Error, ValueError) as e:
                out.append(_result(key, None, "", "garbled output frame from the host: %s" % e, 0.0, False, False))
                continue
            try:
                duration = max(float(p.end) - float(p.start), 0.0)
            except ValueError:  # no sub-second date on the host: time it here
                duration = max(p.arrived - (prev if prev is not None else p.arrived), 0.0)
            prev = p.arrived
            timeout = self.timeouts[i]
            rc = p.rc
            timed_out = rc in (124, 137) and duration >= timeout * 0.9
            if timed_out:
                rc = None
                sep = "" if not stderr or stderr.endswith("\n") else "\n"
                stderr += "%sstoradvise: timed out after %ss (killed)\n" % (sep, fmt_seconds(timeout))
            elif p.used_sudo and rc not in (0, None):
                stderr = explain_sudo(stderr, rc, self.host_label, self.user) or stderr
            out.append(_result(key, rc, stdout, stderr, round(duration, 6), timed_out, p.truncated))
        return out


def _result(key, rc, stdout, stderr, duration_s, timed_out, truncated):
    return {"key": key, "rc": rc, "stdout": stdout, "stderr": stderr, "duration_s": duration_s,
            "timed_out": timed_out, "truncated": truncated}


def read_saved(directory, collect, names=None):
    """name -> the result saved as ``directory/<name>.json`` for each of ``names`` (default: every
    host of ``collect``, the batches file's data) whose file exists. The names are checked by the
    caller (storadvise_capture_layout.host_component). A file larger than the longest batch could
    make at ``collect``'s output cap, or not a JSON object, becomes a result saying so
    (decode_saved reports it)."""
    cap = int(collect.get("max_output_bytes", MAX_OUTPUT_BYTES))
    commands = max([len(b["commands"]) for b in collect["batches"]] or [1])
    limit = commands * max_encoded(cap) + (1 << 20)
    names = list(collect["hosts"]) if names is None else names
    saved = {}
    for name in names:
        path = os.path.join(str(directory), "%s.json" % name)
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        if size > limit:
            saved[name] = {"msg": "saved Ansible output %s is %d bytes, more than a batch makes" % (path, size),
                           "stdout": ""}
            continue
        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read(limit + 1).decode("utf-8", "surrogateescape"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            saved[name] = data
        except (OSError, ValueError) as e:
            saved[name] = {"msg": "saved Ansible output %s unreadable: %s" % (path, e), "stdout": ""}
    return saved


def decode_collect(collect, saved):
    """Each host's (results, error) of a collection: ``collect`` is the batches file's data
    (``token``, ``batches``, ``hosts``: name -> {"batch": N}, ``max_output_bytes``); ``saved``: host
    name -> its saved or registered result (decode_saved's ``saved``)."""
    cap = int(collect.get("max_output_bytes", MAX_OUTPUT_BYTES))
    return dict((name, decode_saved(saved.get(name), str(collect["token"]), collect["batches"][int(spec["batch"])],
                                    name, cap))
                for name, spec in collect["hosts"].items())


def decode_saved(saved, token, batch, host_label, cap=MAX_OUTPUT_BYTES):
    """A host's batch as Ansible brought it back: ``saved`` is the registered result of the
    ``script`` (or ``raw``) task (``stdout``, ``rc``, ``msg``, ``unreachable``), None when the host
    ran no task; ``batch``: {"commands": [{"key", ...}], "timeouts": [...]}. Returns (results, None),
    or (None, a one-line reason) when nothing of the batch arrived."""
    if not isinstance(saved, dict) or not saved or saved.get("skipped"):
        return None, "%s: no output from Ansible (unreachable or not in the play)" % host_label
    if saved.get("unreachable"):
        why = (str(saved.get("msg") or "unreachable").strip().splitlines() or ["unreachable"])[0][:200]
        return None, "%s: unreachable through Ansible: %s" % (host_label, why)
    parser = FrameParser(token, [c["key"] for c in batch["commands"]], batch["timeouts"], host_label, cap=cap)
    stdout = saved.get("stdout")
    parser.feed((stdout if isinstance(stdout, str) else "").encode("utf-8", "surrogateescape") + b"\n")
    if parser.fatal:
        return None, "%s: the batch could not start: %s" % (host_label, parser.fatal)
    if not parser.began:
        why = str(saved.get("msg") or saved.get("stderr") or "no output").strip().splitlines() or ["no output"]
        return None, "%s: the remote shell did not run the batch: %s" % (host_label, why[0][:200])
    if not parser.done:
        return parser.results("storadvise: the session ended early (exit status %s)" % saved.get("rc")), None
    return parser.results(), None
