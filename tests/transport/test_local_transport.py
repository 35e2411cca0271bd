"""LocalTransport: sh -c, timeouts that kill the whole process group, sudo -n."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from advisor.transport.base import Command
from advisor.transport.local import LocalTransport


def test_runs_scripts_and_captures_everything():
    t = LocalTransport()
    assert t.is_local
    a, b = t.run_batch(
        [
            Command(key="a", script="echo out; echo err >&2; exit 5"),
            Command(key="b", script="read x; echo \"[${x:-}]\"; printf 'caf\\303\\251\\377'"),
        ]
    )
    assert (a.key, a.rc, a.stdout, a.stderr, a.timed_out) == ("a", 5, "out\n", "err\n", False)
    assert b.stdout == "[]\ncafé\ufffd" and b.rc == 0 and b.duration_s >= 0


def test_timeout_kills_the_whole_process_group(tmp_path: Path):
    pidfile = tmp_path / "grandchild.pid"
    t = LocalTransport(kill_grace=0.5)
    t0 = time.monotonic()
    slow, after = t.run_batch(
        [
            Command(key="slow", script=f"sleep 30 & echo $! > {pidfile}; echo started; wait", timeout=1),
            Command(key="after", script="echo after"),
        ]
    )
    assert time.monotonic() - t0 < 4
    assert slow.timed_out and slow.rc is None and slow.stdout == "started\n"
    assert "timed out after 1s" in slow.stderr
    assert after.stdout == "after\n"
    gc = int(pidfile.read_text())
    for _ in range(50):  # the background grandchild died with its group
        try:  # gone, or a zombie waiting for its (re)parent to reap it
            if "State:\tZ" in Path(f"/proc/{gc}/status").read_text():
                break
        except FileNotFoundError:
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"grandchild {gc} survived the timeout")


def test_term_ignoring_command_is_killed():
    t = LocalTransport(kill_grace=0.3)
    t0 = time.monotonic()
    r = t.run_batch([Command(key="stubborn", script="trap '' TERM; sleep 20", timeout=0.5)])[0]
    assert r.timed_out and time.monotonic() - t0 < 3


def test_command_timeout_override():
    r = LocalTransport(command_timeout=0.3).run_batch([Command(key="x", script="sleep 10", timeout=60)])[0]
    assert r.timed_out and r.duration_s < 2


FAKE_SUDO = """#!/bin/sh
[ "$1" = -n ] && [ "$2" = -- ] || { echo "fake sudo: bad args $*" >&2; exit 2; }
shift 2
if [ -e "$(dirname "$0")/nopasswd" ]; then SUDO_USER=fake; export SUDO_USER; exec "$@"; fi
echo "sudo: a password is required" >&2
exit 1
"""


def test_sudo_when_not_root(monkeypatch, tmp_path: Path):
    """As a non-root user (euid faked): sudo commands use `sudo -n --`; a password need fails fast."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sudo").write_text(FAKE_SUDO)
    (bindir / "sudo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setattr("advisor.transport.local.os.geteuid", lambda: 1000)
    cmds = [
        Command(key="plain", script="echo ${SUDO_USER:-direct}"),
        Command(key="priv", script="echo ${SUDO_USER:-direct}", sudo=True),
    ]
    plain, priv = LocalTransport().run_batch(cmds)
    assert plain.stdout == "direct\n"
    assert priv.rc == 1 and priv.stderr.startswith("sudo requires a password for localhost")
    (bindir / "nopasswd").write_text("")
    assert [r.stdout for r in LocalTransport().run_batch(cmds)] == ["direct\n", "fake\n"]
    assert [r.stdout for r in LocalTransport(sudo=False).run_batch(cmds)] == ["direct\n", "direct\n"]
    assert [r.stdout for r in LocalTransport(sudo=True).run_batch(cmds)] == ["fake\n", "fake\n"]


def test_sudo_missing(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sudo, and sh found via absolute fallback below
    monkeypatch.setattr("advisor.transport.local.os.geteuid", lambda: 1000)
    r = LocalTransport().run_batch([Command(key="priv", script="true", sudo=True)])[0]
    assert r.rc == 127 and r.stderr.startswith("sudo is not installed")


def test_root_never_uses_sudo(monkeypatch):
    monkeypatch.setattr("advisor.transport.local.os.geteuid", lambda: 0)
    r = LocalTransport(sudo=True).run_batch([Command(key="p", script="echo ${SUDO_USER:-direct}", sudo=True)])[0]
    assert r.stdout == "direct\n"
