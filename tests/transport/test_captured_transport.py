"""write_capture + CapturedTransport: a round trip through a directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.transport.base import Command, HostUnreachable
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
    assert (d / "network.sysctl.out").read_text() == "net.ipv4.tcp_sack = 1\n"
    meta = json.loads((d / "host.uname.json").read_text())
    assert meta == {
        "key": "host.uname",
        "rc": 2,
        "duration_s": results[1].duration_s,
        "timed_out": False,
        "script": cmds[1].script,
        "sudo": True,
    }
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
    assert sorted(p.parent for p in tmp_path.rglob("*.out")) == [d] * 4
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
