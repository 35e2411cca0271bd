"""probe parse takes the plain output of a probe's command where the probe's parser can work from it alone
(issue 37, item 13): sysctl -a, ip -s link / ip address, iptables-save, dmesg, smartctl --json -a; what is
not such an output is one line naming what the probe takes. collect --export writes one readable file per
host and probe, each read back by probe parse. Real outputs of other machines (tests/fixtures/pasted,
tests/fixtures/real; sources in their SOURCES.md)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from probes import all_probes
from probes.probe import split_sections

REPO = Path(__file__).resolve().parents[2]
PASTED = REPO / "tests" / "fixtures" / "pasted"
REAL = REPO / "tests" / "fixtures" / "real"


def parse(probe: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", "probe", "parse", probe, str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def facts(probe: str, path: Path) -> dict:
    r = parse(probe, path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_sysctl_a_as_pasted():
    got = facts("network.sysctl", PASTED / "sosreport-coreos-master1-sysctl_-a.txt")["sysctls"]
    assert got["net.ipv4.tcp_sack"]["runtime"] == "1"
    assert got["net.ipv4.tcp_rmem"]["runtime"] == "4096 87380 6291456"  # sysctl -a's tabs, the probe's blanks
    assert got["net.core.default_qdisc"]["runtime"] == "fq_codel" and got["net.ipv4.tcp_sack"]["persisted"] is None


def test_ip_link_and_address_as_pasted():
    link = facts("network.nic", PASTED / "sosreport-coreos-master1-ip_-s_-d_link.txt")["interfaces"]
    assert link["eth0"]["mtu"] == 1500 and link["eth0"]["txqueuelen"] == 1000 and link["eth0"]["operstate"] == "up"
    assert link["eth0"]["mac"] == "00:15:5d:b7:25:12" and link["lo"]["is_loopback"] and link["lo"]["virtual"]
    addr = facts("network.nic", PASTED / "sosreport-coreos-master1-ip_-d_address.txt")["interfaces"]
    assert "127.0.0.1/8" in addr["lo"]["addresses"] and addr["eth0"]["addresses"]


def _inner(path: Path, section: str) -> str:
    """The command's own output inside a framed corpus file (its @@exit line apart)."""
    body = split_sections(path.read_text())[section]
    return "\n".join(ln for ln in body.splitlines() if not ln.startswith("@@exit")) + "\n"


@pytest.mark.parametrize("name,section", [("insights-core-test_iptables-IPTABLES_SAVE.txt", "iptables-save"),
                                          ("insights-core-test_iptables-IP6TABLES_SAVE.txt", "ip6tables-save")])
def test_iptables_save_as_pasted(tmp_path, name, section):
    framed = all_probes()["firewall"].parse((REAL / "firewall" / name).read_text()).model_dump(mode="json")
    pasted = tmp_path / "pasted.txt"
    pasted.write_text(_inner(REAL / "firewall" / name, section))
    assert facts("firewall", pasted) == framed


def test_kernel_log_and_smartctl_as_pasted(tmp_path):
    lines = split_sections((REPO / "tests" / "fixtures" / "block" / "dmesg-io-errors.txt").read_text())["errors"]
    dmesg = tmp_path / "dmesg.txt"
    dmesg.write_text(lines + "\n")
    got = facts("block.ioerrors", dmesg)
    assert got["source"] == "dmesg" and got["total"] > 0 and got["errors_by_device"], got
    for f in sorted((REAL / "disk.smart").glob("exporter-*.txt")):
        framed = all_probes()["disk.smart"].parse(f.read_text()).model_dump(mode="json")
        section = next(s for s in split_sections(f.read_text()) if s.startswith("device "))
        pasted = tmp_path / f.name
        document = split_sections(f.read_text())[section]
        pasted.write_text(document)
        got = facts("disk.smart", pasted)["devices"]
        # the pasted output names its disk itself (device.name), the framing did by the marker
        assert list(got) == [json.loads(document)["device"]["name"].removeprefix("/dev/")], f.name
        assert list(got.values()) == list(framed["devices"].values()), f.name


def test_what_is_no_such_output_says_what_the_probe_takes(tmp_path):
    other = tmp_path / "os-release"
    other.write_text('NAME="Debian GNU/Linux"\nVERSION_ID="12"\n')
    r = parse("network.sysctl", other)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "nor the output of sysctl -a" in r.stderr, r.stderr
    r = parse("host", other)
    assert r.returncode == 1 and "collect --export" in r.stderr, r.stderr


def test_collect_export_writes_a_readable_file_per_host_and_probe(tmp_path):
    site = tmp_path / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [storage]}\n")
    out = tmp_path / "files"
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "collect", "--site", str(site), "--export", str(out),
                        "--sample-seconds", "0.2", "--probes", "network.*,host,mounts,block.queue"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in (out / "box").glob("*.txt") if p.name != "probes.txt")
    assert {"network.sysctl.txt", "network.nic.txt", "host.txt", "mounts.txt", "block.queue.txt"} <= set(files)
    assert (out / "README.txt").is_file() and "network.sysctl\texit 0" in (out / "box" / "probes.txt").read_text()
    assert stat.S_IMODE(os.stat(out / "box").st_mode) == 0o700
    for name in ("network.sysctl", "network.nic", "host", "mounts", "block.queue"):
        assert stat.S_IMODE(os.stat(out / "box" / f"{name}.txt").st_mode) == 0o600
        assert parse(name, out / "box" / f"{name}.txt").returncode == 0, name
