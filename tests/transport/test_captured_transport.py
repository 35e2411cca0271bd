"""write_capture + CapturedTransport: a round trip through a directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.transport.base import Command, HostUnreachable
from advisor.transport.capture_objects import CaptureObjects, object_id
from advisor.transport.captured import CapturedTransport, key_filename, write_capture
from advisor.transport.local import LocalTransport


def test_round_trip_from_a_real_local_run(tmp_path: Path):
    cmds = [
        Command(key="network.sysctl", script="echo net.ipv4.tcp_sack = 1"),
        Command(key="host.uname", script="printf 'line1\\nline2'; echo warn >&2; exit 2", sudo=True),
        Command(key="slow", script="sleep 5", timeout=0.3),
    ]
    results = LocalTransport().run_batch(cmds)
    d = write_capture(tmp_path, "gpfs01", cmds, results)
    assert d == tmp_path / "hosts" / "gpfs01"
    index = json.loads((d / "outputs.json").read_text())
    assert index["capture_format"] == 2
    sysctl = index["outputs"]["network.sysctl"]
    assert (tmp_path / "objects" / sysctl["stdout"][:2] / sysctl["stdout"][2:]).read_text() == "net.ipv4.tcp_sack = 1\n"
    meta = index["outputs"]["host.uname"]
    assert {k: meta[k] for k in ("rc", "duration_s", "timed_out", "sudo")} == {
        "rc": 2, "duration_s": results[1].duration_s, "timed_out": False, "sudo": True}
    assert CaptureObjects(tmp_path).get(meta["script"]) == cmds[1].script
    replay = CapturedTransport(tmp_path, "gpfs01")
    assert not replay.is_local
    back = replay.run_batch(cmds + [Command(key="never.ran", script="true")])
    assert back[:3] == results
    assert back[2].timed_out and back[2].rc is None
    missing = back[3]
    assert (missing.key, missing.rc, missing.stderr) == ("never.ran", None, "not captured")


def test_missing_host_is_unreachable(tmp_path: Path):
    with pytest.raises(HostUnreachable) as ei:
        CapturedTransport(tmp_path, "gpfs02").run_batch([Command(key="x", script="true")])
    assert str(ei.value) == f"gpfs02: no captured outputs in {tmp_path}"


def test_unsafe_keys_stay_inside_the_host_dir(tmp_path: Path):
    from advisor.transport.base import CommandResult

    keys = ["../../etc/passwd", ".hidden", "a b/c", ""]
    cmds = [Command(key=k, script="true") for k in keys]
    res = [CommandResult(key=k, rc=0, stdout=f"v{i}") for i, k in enumerate(keys)]
    d = write_capture(tmp_path, "h1", cmds, res)
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file() and "objects" not in p.parts) == [d / "outputs.json"]
    assert all(not key_filename(k).startswith(".") and "/" not in key_filename(k) for k in keys)
    assert [r.stdout for r in CapturedTransport(tmp_path, "h1").run_batch(cmds)] == ["v0", "v1", "v2", "v3"]


def test_hand_made_capture_without_json(tmp_path: Path):
    """A site may send bare outputs: an .out file alone replays as rc 0."""
    d = tmp_path / "hosts" / "w1"
    d.mkdir(parents=True)
    (d / "network.sysctl.out").write_text("x\n")
    (d / "broken.json").write_text("{not json")
    ok, broken = CapturedTransport(tmp_path, "w1").run_batch(
        [Command(key="network.sysctl", script=""), Command(key="broken", script="")]
    )
    assert (ok.rc, ok.stdout) == (0, "x\n")
    assert broken.rc is None and "unreadable" in broken.stderr


def test_identical_outputs_are_stored_once(tmp_path: Path):
    """Content-addressed: 50 hosts printing the same sysctl output hold one copy of it."""
    from advisor.transport.base import CommandResult

    cmds = [Command(key="network.sysctl", script="sysctl -a"), Command(key="host", script="hostname")]
    objects = CaptureObjects(tmp_path)
    for i in range(50):
        write_capture(tmp_path, f"wn{i:02d}", cmds, [CommandResult(key="network.sysctl", rc=0, stdout="net.x = 1\n"),
                                                     CommandResult(key="host", rc=0, stdout=f"wn{i:02d}\n")], objects)
    stored = sorted(p.read_text() for p in (tmp_path / "objects").rglob("*") if p.is_file())
    # one sysctl output, 50 host names, two scripts, one empty stderr
    assert len(stored) == 1 + 50 + 2 + 1 and stored.count("net.x = 1\n") == 1
    shared = CaptureObjects(tmp_path)
    a = CapturedTransport(tmp_path, "wn01", shared).run_batch(cmds)
    b = CapturedTransport(tmp_path, "wn02", shared).run_batch(cmds)
    assert a[0].stdout == "net.x = 1\n" and a[0].stdout is b[0].stdout  # one string in memory
    assert (a[1].stdout, b[1].stdout) == ("wn01\n", "wn02\n")


def test_damaged_object_or_index_is_reported_per_output(tmp_path: Path):
    from advisor.transport.base import CommandResult

    cmds = [Command(key="a", script="x"), Command(key="b", script="y")]
    write_capture(tmp_path, "h1", cmds, [CommandResult(key="a", rc=0, stdout="one\n"),
                                         CommandResult(key="b", rc=0, stdout="two\n")])
    oid = object_id(b"one\n")
    (tmp_path / "objects" / oid[:2] / oid[2:]).write_text("tampered\n")
    a, b = CapturedTransport(tmp_path, "h1").run_batch(cmds)
    assert a.rc is None and "does not match its name" in a.stderr and a.stdout == ""
    assert (b.rc, b.stdout) == (0, "two\n")
    (tmp_path / "hosts" / "h1" / "outputs.json").write_text('{"outputs": {"a": {"stdout": "../../etc/passwd"}}}')
    a, b = CapturedTransport(tmp_path, "h1").run_batch(cmds)
    assert a.rc is None and "not an object id" in a.stderr
    assert b.stderr == "not captured"
    (tmp_path / "hosts" / "h1" / "outputs.json").write_text("[1]")
    assert all("not a capture index" in r.stderr for r in CapturedTransport(tmp_path, "h1").run_batch(cmds))


def test_format_1_capture_still_replays(tmp_path: Path):
    """Captures written before format 2: per-host .out/.err/.json files."""
    d = tmp_path / "hosts" / "gpfs01"
    d.mkdir(parents=True)
    (d / "network.sysctl.out").write_text("net.ipv4.tcp_sack = 1\n")
    (d / "network.sysctl.err").write_text("")
    (d / "network.sysctl.json").write_text(json.dumps({"key": "network.sysctl", "rc": 0, "duration_s": 0.5,
                                                       "timed_out": False, "script": "sysctl -a", "sudo": False}))
    (r,) = CapturedTransport(tmp_path, "gpfs01").run_batch([Command(key="network.sysctl", script="")])
    assert (r.rc, r.stdout, r.duration_s) == (0, "net.ipv4.tcp_sack = 1\n", 0.5)


def test_truncated_output_replays_truncated(tmp_path: Path):
    """An output cut at collection is replayed as cut (never parsed as if whole)."""
    from advisor.transport.base import CommandResult

    cmd = Command(key="mounts", script="cat /proc/mounts")
    write_capture(tmp_path, "h1", [cmd], [CommandResult(key="mounts", rc=0, stdout="x" * 10, truncated=True)])
    (r,) = CapturedTransport(tmp_path, "h1").run_batch([cmd])
    assert r.truncated and r.stdout == "x" * 10
