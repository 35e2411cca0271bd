"""The SSH batch wrapper run by a local `sh -s` (no SSH): framing, fallbacks, cleanup."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from advisor.transport.base import Command
from advisor.transport.base import sudo_flag
from advisor.transport.ssh import BatchScript


def run_wrapper(script: BatchScript, path: str | None = None, tmpdir: Path | None = None, shell: str = "sh"):
    env = {"PATH": path or os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    if tmpdir:
        env["TMPDIR"] = str(tmpdir)
    proc = subprocess.run(
        [shutil.which(shell) or shell, "-s"], input=script.text.encode(), capture_output=True, env=env, timeout=60
    )
    parser = script.parser("testhost", "tester")
    parser.feed(proc.stdout)
    return parser, proc


def restricted_path(tmp_path: Path, without: set[str]) -> str:
    """A PATH holding symlinks to the wrapper's tools, minus ``without``."""
    d = tmp_path / "bin"
    d.mkdir()
    for tool in ("sh", "mktemp", "rm", "cat", "id", "date", "sleep", "base64", "od", "timeout", "printf", "awk", "setsid"):
        if tool in without:
            continue
        real = shutil.which(tool)
        if real:
            (d / tool).symlink_to(real)
    return str(d)


CMDS = [
    Command(key="a", script="echo out; echo err >&2; exit 4"),
    Command(key="b", script="printf '\\000\\001\\377x'"),
    Command(key="slow", script="sleep 20", timeout=0.5),
    Command(key="c", script="echo after"),
]


def check(results):
    a, b, slow, c = results
    assert (a.rc, a.stdout, a.stderr) == (4, "out\n", "err\n")
    assert b.stdout == "\x00\x01\ufffdx"
    assert slow.timed_out and slow.rc is None and slow.duration_s < 4
    assert c.stdout == "after\n" and c.rc == 0


def test_wrapper_with_coreutils(tmp_path):
    script = BatchScript.build(CMDS)
    t0 = time.monotonic()
    parser, proc = run_wrapper(script, tmpdir=tmp_path)
    assert time.monotonic() - t0 < 5
    assert parser.began and parser.done and parser.info["timeout"] == "1" and parser.info["enc"] == "b64"
    check(parser.results())
    assert list(tmp_path.iterdir()) == []  # private temp dir removed


def test_wrapper_without_timeout_or_base64(tmp_path):
    """No coreutils timeout (sh watchdog) and no base64 (od hex)."""
    script = BatchScript.build(CMDS)
    work = tmp_path / "tmp"
    work.mkdir()
    parser, proc = run_wrapper(script, path=restricted_path(tmp_path, {"timeout", "base64"}), tmpdir=work)
    assert parser.info["timeout"] == "0" and parser.info["enc"] == "hex", proc.stderr
    check(parser.results())
    assert list(work.iterdir()) == []


@pytest.mark.skipif(not shutil.which("dash") or not shutil.which("bash"), reason="needs dash and bash")
@pytest.mark.parametrize("shell", ["dash", "bash"])
def test_wrapper_under_both_common_shells(shell, tmp_path):
    parser, _ = run_wrapper(BatchScript.build(CMDS), tmpdir=tmp_path, shell=shell)
    check(parser.results())


def test_mktemp_failure_is_fatal_frame(tmp_path):
    script = BatchScript.build([Command(key="a", script="true")])
    parser, proc = run_wrapper(script, path=restricted_path(tmp_path, {"mktemp"}))
    assert parser.fatal and "mktemp -d failed" in parser.fatal and proc.returncode == 97


def test_truncated_stream_marks_unfinished_commands(tmp_path):
    script = BatchScript.build([Command(key="a", script="echo 1"), Command(key="b", script="echo 2")])
    _, proc = run_wrapper(script, tmpdir=tmp_path)
    cut = proc.stdout[: proc.stdout.index(b" R 1 ")]
    parser = script.parser("h", "u")
    parser.feed(cut[:7])
    parser.feed(cut[7:])  # arbitrary chunking
    a, b = parser.results("storadvise: the session ended early")
    assert a.stdout == "1\n" and b.rc is None and b.stderr == "storadvise: the session ended early"


def test_sudo_flag_modes():
    c, s = Command(key="c", script=""), Command(key="s", script="", sudo=True)
    assert [sudo_flag(c, None), sudo_flag(s, None)] == [False, True]
    assert [sudo_flag(c, False), sudo_flag(s, False)] == [False, False]
    assert [sudo_flag(c, True), sudo_flag(s, True)] == [True, True]


def test_wrapper_starts_no_process_for_an_empty_stream_or_the_clock(tmp_path):
    """Per command the wrapper starts the command (timeout, sh) and, for a non-empty output, wc and
    base64 (head only for an output past the cap, rm never: the shell empties the files and the
    directory goes at exit); the command's script is written by the shell's own printf (no cat, as a
    here-document would need); an empty stderr costs no process, and the clock is read from
    /proc/uptime by the shell itself (date only where /proc is missing). 32 lab hosts' batches
    share 2 cores: each saved process is CPU the scan waits for."""
    if not Path("/proc/uptime").is_file():
        pytest.skip("no /proc/uptime: the wrapper reads the clock with date")
    log = tmp_path / "calls.log"
    shims = tmp_path / "shims"
    shims.mkdir()
    for tool in ("date", "wc", "head", "base64", "rm", "cat"):
        real = shutil.which(tool)
        assert real, tool
        shim = shims / tool
        shim.write_text(f"#!/bin/sh\necho {tool} >>'{log}'\nexec '{real}' \"$@\"\n")
        shim.chmod(0o755)
    cmds = [Command(key=f"k{i}", script=f"echo out{i}") for i in range(4)] + [
        Command(key="quoted", script="printf '%s|%s\\n' \"it's\" '$HOME \\\\ %d'"),
        Command(key="err", script="echo oops >&2; exit 3")]
    parser, proc = run_wrapper(BatchScript.build(cmds), path=f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    assert proc.returncode == 0, proc.stderr
    results = parser.results()
    assert [(r.rc, r.stdout, r.stderr) for r in results] == (
        [(0, f"out{i}\n", "") for i in range(4)] + [(0, "it's|$HOME \\\\ %d\n", ""), (3, "", "oops\n")])
    assert all(r.duration_s is not None and 0 <= r.duration_s < 10 for r in results)
    calls = log.read_text().split()
    # one non-empty stream per command: one wc and base64 each; no date, no head, no cat, no rm
    # (the exit trap's rm -rf runs once, at the end)
    assert {t: calls.count(t) for t in ("date", "wc", "head", "base64", "rm", "cat")} == {
        "date": 0, "wc": 6, "head": 0, "base64": 6, "rm": 1, "cat": 0}
