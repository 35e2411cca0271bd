"""The one scan pipeline (advisor/scan/pipeline.py) as the commands use it: the same scan options on every
command that scans, verify with --from/--hosts/--profile, unknown profiles refused before any
host is probed (issue 13 item 8)."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
from pathlib import Path

import pytest

from tests.support.cli import storadvise

REPO = Path(__file__).resolve().parents[2]


class Listener:
    """A TCP listener on loopback that counts the connections made to it (a host's sshd stand-in)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


def ssh_site(tmp_path: Path, port: int) -> Path:
    p = tmp_path / "probe-site.yml"
    p.write_text(f"name: probe-site\nhosts:\n  - {{name: st01, address: 127.0.0.1, port: {port}, roles: [storage]}}\n"
                 f"  - {{name: wn01, address: 127.0.0.1, port: {port}, roles: [worker]}}\n")
    return p


def local_site(tmp_path: Path) -> Path:
    p = tmp_path / "here.yml"
    p.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [worker]}\n")
    return p


@pytest.mark.parametrize("command", [
    ["scan", "--site", "{site}"],
    ["plan", "--site", "{site}", "--out", "{tmp}/plan"],
    ["verify", "--site", "{site}", "--before", "{tmp}/before.json"],
])
def test_unknown_profile_refused_before_any_host_is_probed(tmp_path, listener, command):
    site = ssh_site(tmp_path, listener.port)
    from advisor.model.facts import FactSet, HostFacts
    from advisor.report.model import build_report

    factset = FactSet(site="probe-site", hosts={n: HostFacts(name=n, roles=[r]) for n, r in
                                                (("st01", "storage"), ("wn01", "worker"))})
    before = build_report(factset, [], profiles=["generic"], started_at="", finished_at="", duration_s=0,
                          site_file=str(site))
    (tmp_path / "before.json").write_text(before.model_dump_json())
    args = [a.format(site=site, tmp=tmp_path) for a in command]
    r = storadvise(*args, "--profile", "no-such-profile", "--connect-timeout", "2")
    assert listener.connections == 0, "a host was contacted before the profile was checked"
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "unknown profile 'no-such-profile'" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr


def test_every_scanning_command_offers_the_same_scan_options():
    """One default per option: scan, plan and verify show every ScanOptions flag with the field's
    default; collect shows the collection ones."""
    import typer.main

    from advisor.cli.root import app
    from advisor.scan.options import ScanOptions

    group = typer.main.get_command(app)
    fields = [f for f in dataclasses.fields(ScanOptions) if f.metadata.get("cli")]
    for name in ("scan", "plan", "verify", "collect"):
        params = {p.name: p for p in group.commands[name].params}
        for f in fields:
            if name == "collect" and f.name in ("profiles", "mesh", "efficiency", "from_capture"):
                assert f.name not in params
                continue
            p = params[f.name]
            assert p.opts[0] == f.metadata["cli"]["decls"][0].split("/")[0], (name, f.name)
            # a repeatable flag (a tuple field) shows typer's empty list
            assert p.default == ([] if f.default == () else f.default), (name, f.name, p.default)
    assert ScanOptions().sample_seconds == 5.0


def test_verify_takes_the_scan_options(tmp_path):
    site = local_site(tmp_path)
    cap = tmp_path / "cap"
    r = storadvise("collect", "--site", site, "--out", cap, "--sample-seconds", "0.2", "--json")
    assert r.returncode == 0, r.stderr
    r = storadvise("scan", "--from", cap, "--json", "-o", tmp_path / "before.json", "--fail-on", "critical")
    assert r.returncode in (0, 2), r.stderr
    before = json.loads((tmp_path / "before.json").read_text())
    assert before["profiles"] == ["generic"]
    # re-scan from the same capture: nothing changed, so nothing is fixed, still failing is the same
    r = storadvise("verify", "--site", site, "--before", tmp_path / "before.json", "--from", cap, "--hosts", "box",
            "--json", "--fail-on", "critical", "--output", tmp_path / "after.json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["summary"]["fixed"] == 0 and v["summary"]["new"] == 0
    failed = {(f["rule_id"], f.get("subject")) for f in before["findings"] if f["status"] == "fail"}
    assert {(f["rule_id"], f["subject"]) for f in v["findings"]} == failed
    assert all(f["outcome"] == "still_failing" for f in v["findings"])
    after = json.loads((tmp_path / "after.json").read_text())
    assert after["hosts"][0]["probes"] == before["hosts"][0]["probes"]
    # a selection that matches nothing, an unknown profile: refused, one line, exit 1
    for extra, text in ((["--hosts", "nothing-here"], "matches no host"),
                        (["--profile", "nope"], "unknown profile 'nope'")):
        r = storadvise("verify", "--site", site, "--before", tmp_path / "before.json", "--from", cap, *extra)
        assert r.returncode == 1 and text in r.stderr and r.stderr.count("\n") == 1, r.stderr
    # a capture of another site is refused
    other = tmp_path / "other.yml"
    other.write_text(site.read_text().replace("name: here", "name: there"))
    r = storadvise("verify", "--site", other, "--before", tmp_path / "before.json", "--from", cap)
    assert r.returncode == 1 and "Traceback" not in r.stderr


def test_plan_with_a_scan_refuses_scan_options(tmp_path):
    site = local_site(tmp_path)
    r = storadvise("scan", "--site", site, "--json", "-o", tmp_path / "s.json", "--sample-seconds", "0.2",
            "--fail-on", "critical")
    assert r.returncode in (0, 3), r.stderr
    r = storadvise("plan", "--site", site, "--scan", tmp_path / "s.json", "--out", tmp_path / "p", "--hosts", "box",
            "--no-mesh")
    assert r.returncode == 1 and "--hosts, --no-mesh go(es) with a scan made now" in r.stderr, r.stderr
    r = storadvise("plan", "--site", site, "--scan", tmp_path / "s.json", "--out", tmp_path / "p", "--json")
    assert r.returncode == 0, r.stderr


def test_scan_hosts_selection(tmp_path):
    site = local_site(tmp_path)
    r = storadvise("scan", "--site", site, "--hosts", "nobody", "--json")
    assert r.returncode == 1 and "--hosts 'nobody' matches no host of site here" in r.stderr
