"""scan --dry-run: per host the exact scripts each probe would run (sudo, timeout), the mesh and the
active test, and no connection to any host (a listener standing in for every host's sshd counts them)."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from advisor.collect.collector import probe_context
from advisor.collect.probe_plan import probes_for
from advisor.site.file import load_site
from tests.support.cli import storadvise

REPO = Path(__file__).resolve().parents[2]


class CountingListener:
    """A TCP listener on loopback that counts the connections made to it (and closes each)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self):
        self._stop = True
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def site(tmp_path):
    listener = CountingListener()
    hosts = [("gpfs01", "[storage, san-controller]", "[gpfs]"), ("gpfs02", "[storage]", "[gpfs]"),
             ("se01", "[door]", "[doors]"), ("wn01", "[worker]", "[wn]"), ("wn02", "[worker]", "[wn]")]
    lines = ["name: mini-ifca", "storage_kind: gpfs", "profiles: [generic, gpfs-site]", "hosts:"]
    for name, roles, groups in hosts:
        lines.append(f"  - {{name: {name}, address: 127.0.0.1, port: {listener.port}, user: root, roles: {roles}, "
                     f"groups: {groups}, link_rate: 1gbit, known_hosts: {tmp_path / 'known_hosts'}}}")
    lines += ["mesh:", "  pairs: [{a: storage, direction: both}, {a: worker, b: storage, direction: both}]",
              "  bidir: false", "extensions:", "  efficiency: {source: {host: gpfs01}, hosts: [worker], mb: 16}"]
    path = tmp_path / "mini-ifca.yml"
    path.write_text("\n".join(lines) + "\n")
    try:
        yield path, listener
    finally:
        listener.close()


def test_dry_run_lists_every_command_per_host_and_contacts_none(site):
    path, listener = site
    r = storadvise("scan", "--site", path, "--dry-run", "--json", "--skip-probes", "disk.smart")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    the_site = load_site(str(path))
    assert [h["host"] for h in plan["hosts"]] == [h.name for h in the_site.hosts]
    for host, shown in zip(the_site.hosts, plan["hosts"]):
        ctx = probe_context(the_site, host, False, 5.0)
        expected = {p.name: p for p in probes_for(host, None, the_site.storage_systems)}
        assert {p["probe"] for p in shown["probes"]} == set(expected)
        for p in shown["probes"]:
            if p["probe"] == "disk.smart":
                assert p["skipped"] is True
                continue
            probe = expected[p["probe"]]
            # the hosts log in as root: the root probes run as they are, without sudo
            assert p["script"] == probe.script(ctx) and p["sudo"] is False
            assert p["privilege"] == ("root" if probe.needs_root else "user")
            assert p["timeout_s"] == probe.timeout(ctx)
        assert "storadvise.XXXXXXXXXX" in shown["temp_dir"] and shown["reached_by"].startswith("ssh root@127.0.0.1:")
    mesh = plan["mesh"]
    tested = {(t["src"], t["dst"]) for rnd in mesh["rounds"] for t in rnd}
    assert tested == {(p["src"], p["dst"]) for p in mesh["paths"]} and ("wn01", "gpfs01") in tested
    t = next(t for rnd in mesh["rounds"] for t in rnd if (t["src"], t["dst"]) == ("wn01", "gpfs01"))
    assert f"iperf3 -c 127.0.0.1 -p {t['port']}" in t["on_src"] and f"iperf3 -s -1 -p {t['port']}" in t["on_dst"]
    assert plan["efficiency"]["workers"] == ["wn01", "wn02"]

    r = storadvise("scan", "--site", path, "--dry-run", "--no-mesh")
    assert r.returncode == 0, r.stderr
    assert all(f"== {h.name} " in r.stdout for h in the_site.hosts)
    assert "-- disk.smart: as root (the login user): no sudo, timeout 120 s (needs root)" in r.stdout and "smartctl" in r.stdout
    assert "iperf3 mesh" not in r.stdout and "active efficiency test" in r.stdout
    assert listener.accepted == 0  # nothing connected to any host

    # the control: a real scan of the same site does connect (the listener sees it)
    r = storadvise("scan", "--site", path, "--hosts", "wn01", "--no-mesh", "--no-efficiency", "--no-history",
            "--connect-timeout", "3")
    assert r.returncode == 3, r.stdout + r.stderr
    assert listener.accepted >= 1
