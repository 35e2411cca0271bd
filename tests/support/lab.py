"""The lab for tests: an isolated lab registry (the ``lab_registry`` fixture, which marks a test ``lab``, ``root``
and ``quiet``), the lab CLI, root-namespace snapshots, ssh into a lab host.

Lab tests need root; as root they never skip. Every lab a test creates is removed in a finalizer, also when the
test fails, and the registry's last resort removes whatever is left at the end of the session.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SMALL_SCENARIO = """
name: small
description: three hosts for the lab tests
switches:
  - name: core
  - name: edge
    uplink: core
hosts:
  - name: st1
    roles: [storage, san-controller]
    groups: [servers]
    switch: core
    sysctls: {net.ipv4.tcp_sack: 0, net.ipv4.tcp_timestamps: 0}
    persist_sysctls:
      file: 60-gpfs-tuning.conf
      comment: old GPFS tuning guide
    firewall:
      nft: |
        table inet site_fw {
          chain input {
            type filter hook input priority 0; policy accept;
            ip saddr {{ addr:wn2 }} tcp dport 5201 counter drop
          }
        }
  - name: wn[1:2]
    roles: [worker]
    groups: [workers]
    switch: edge
paths:
  - {from: storage, to: worker, loss: 0.5%}
gpfs:
  cluster_name: gpfs.small.lab
  nodes: [st1, wn1]
  node_classes: {nsdNodes: [st1]}
  config: {pagepool: 512M, prefetchThreads: 50}
san:
  host: st1
  controllers: [ctl-a, ctl-b]
  logical_drives: ["d[1:2]"]
  settings: {prefetch: false, write_cache: true, modification_priority: high}
site:
  storage_kind: gpfs
  profiles: [generic]
  mesh:
    congestion: cubic
    pairs: [{a: worker, b: storage, direction: both}]
"""


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces); CI runs as root")


@pytest.fixture(scope="session")
def lab_registry(tmp_path_factory: pytest.TempPathFactory):
    """Labs made by tests live in their own registry (not the demo's /run/storadvise/labs)."""
    d = Path("/run/storadvise-test-labs") / str(os.getpid())
    old = os.environ.get("STORADVISE_LAB_DIR")
    os.environ["STORADVISE_LAB_DIR"] = str(d)
    yield d
    # last resort: remove whatever a test left (by this registry's records and name prefixes)
    try:
        if os.geteuid() == 0:
            lab_cli(["down", "--all"], check=False)
    finally:
        if old is None:
            os.environ.pop("STORADVISE_LAB_DIR", None)
        else:
            os.environ["STORADVISE_LAB_DIR"] = old
        subprocess.run(["rm", "-rf", str(d)], check=False)


class SharedLabs:
    """Labs that tests only read, one per scenario: brought up on first use and kept while the tests that run
    next read the same scenario; brought down before a test that does not, and at the end of the session, also
    when a test failed. At most one shared lab is up, and none while another test runs: a test that changes its
    lab (apply, reboot, faults, ``down``) brings up one of its own."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.key: str | None = None
        self.record = None

    def up(self, scenario: str):
        """The LabRecord of the lab of ``scenario`` (YAML text), up."""
        import hashlib

        from advisor.lab.records import LabRecord

        key = hashlib.sha256(scenario.encode()).hexdigest()[:6]
        if key != self.key:
            self.down()
            path = self.tmp / f"{key}.yml"
            path.write_text(scenario)
            self.key = key  # set before `up`: a half-made lab is brought down too
            lab_cli(["up", "--scenario", str(path), "--name", self.name, "--json"], timeout=600)
            self.record = LabRecord.load(self.name)
        return self.record

    @property
    def name(self) -> str:
        return f"shared-{self.key}"

    def down(self) -> None:
        if self.key is not None:
            try:
                lab_cli(["down", "--name", self.name], check=False)
            finally:
                self.key, self.record = None, None


@pytest.fixture(scope="session")
def shared_labs(lab_registry: Path, tmp_path_factory: pytest.TempPathFactory):
    """The session's read-only labs, keyed by scenario (see ``SharedLabs``)."""
    require_root()
    labs = SharedLabs(tmp_path_factory.mktemp("shared-labs"))
    _SHARED.append(labs)
    try:
        yield labs
    finally:
        _SHARED.remove(labs)
        labs.down()


_SHARED: list[SharedLabs] = []


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that reads no shared lab does not run beside one: the lab is brought down first."""
    if "shared_labs" not in getattr(item, "fixturenames", ()):
        for labs in _SHARED:
            labs.down()


def lab_cli(args: list[str], check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    cp = subprocess.run(
        [sys.executable, "-c", "from advisor.lab.cli import app; app()", *args],
        capture_output=True, text=True, timeout=timeout, cwd=str(REPO),
    )
    if check and cp.returncode != 0:
        raise AssertionError(f"lab {' '.join(args)} failed ({cp.returncode}): {cp.stderr[-2000:]}{cp.stdout[-500:]}")
    return cp


def ssh(lab_dir: Path, address: str, command: str, check: bool = True) -> subprocess.CompletedProcess:
    """A real OpenSSH client, host keys checked against the lab's known_hosts."""
    cp = subprocess.run(
        ["ssh", "-F", "/dev/null", "-i", str(lab_dir / "client_key"),
         "-o", f"UserKnownHostsFile={lab_dir / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
         "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", f"root@{address}", command],
        capture_output=True, text=True, timeout=60,
    )
    if check and cp.returncode != 0:
        raise AssertionError(f"ssh {address} {command!r} failed ({cp.returncode}): {cp.stderr.strip()}")
    return cp


ROOT_SYSCTLS = [
    "net/ipv4/tcp_sack", "net/ipv4/tcp_timestamps", "net/ipv4/tcp_rmem", "net/ipv4/tcp_wmem",
    "net/ipv4/ip_forward", "net/ipv4/conf/all/rp_filter", "net/ipv4/tcp_congestion_control",
    "net/core/rmem_max", "net/core/wmem_max", "net/bridge/bridge-nf-call-iptables", "kernel/hostname",
]


def _cmd(args: list[str]) -> str:
    cp = subprocess.run(args, capture_output=True, text=True)
    return cp.stdout


def root_snapshot() -> dict:
    """What a lab must leave exactly as it found it in the root namespace."""
    snap: dict = {}
    # other engineers' tests run concurrently on this machine: routes, links and namespaces are
    # compared for what could be the lab's (198.18.0.0/15, salab* names); firewall and sysctls in full
    def ours(line: str) -> bool:
        return "198.18." in line or "198.19." in line or "salab" in line

    snap["routes4"] = sorted(l for l in _cmd(["ip", "-4", "route", "show", "table", "all"]).splitlines() if ours(l))
    snap["routes6"] = sorted(l for l in _cmd(["ip", "-6", "route", "show", "table", "all"]).splitlines() if ours(l))
    snap["nft"] = _cmd(["nft", "list", "ruleset"])
    ipt = _cmd(["iptables-save"]) if Path("/usr/sbin/iptables-save").exists() else ""
    snap["iptables"] = [re.sub(r"\[\d+:\d+\]", "", l) for l in ipt.splitlines() if not l.startswith("#")]
    snap["sysctls"] = {}
    for s in ROOT_SYSCTLS:
        p = Path("/proc/sys") / s
        snap["sysctls"][s] = p.read_text().strip() if p.exists() else None
    snap["links"] = sorted(l.split(":")[1].strip().split("@")[0] for l in _cmd(["ip", "-o", "link"]).splitlines() if ours(l))
    snap["netns"] = sorted(l.split()[0] for l in _cmd(["ip", "netns", "list"]).splitlines() if l.startswith("salab"))
    etc = Path("/etc/sysctl.d")
    snap["etc_sysctl_d"] = {
        p.name: (os.readlink(p) if p.is_symlink() else p.read_bytes().hex()) for p in sorted(etc.iterdir())
    } if etc.is_dir() else {}
    snap["usr_lpp"] = Path("/usr/lpp").exists()
    snap["opt_smgr"] = Path("/opt/SMgr").exists()
    snap["bashrc"] = Path("/root/.bashrc").read_bytes().hex() if Path("/root/.bashrc").exists() else None
    return snap


def lab_traces(name: str) -> dict:
    """Everything of lab ``name`` still on the machine (for 'nothing left behind' checks)."""
    from advisor.lab.records import ns_prefix

    prefix = ns_prefix(name)
    netns = [l.split()[0] for l in _cmd(["ip", "netns", "list"]).splitlines() if l.startswith(prefix)]
    links = [l for l in _cmd(["ip", "-o", "-d", "link"]).splitlines() if f"alias {prefix}" in l]
    procs = []
    labdir = str(Path(os.environ["STORADVISE_LAB_DIR"]) / name)
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if labdir + "/" in cmd and "pytest" not in cmd:
                procs.append((int(p.name), cmd))
    return {"netns": netns, "links": links, "procs": procs,
            "state_dir": Path(labdir).exists(),
            "site_file": (Path(os.environ["STORADVISE_LAB_DIR"]) / "sites" / f"{name}.yml").exists()}


def no_traces(t: dict) -> bool:
    return not (t["netns"] or t["links"] or t["procs"] or t["state_dir"] or t["site_file"])
