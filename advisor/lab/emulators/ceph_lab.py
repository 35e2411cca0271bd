"""The ``ceph:`` section of a lab scenario: a CephFS site. Storage hosts carry the ``ceph`` admin CLI
emulator (advisor.lab.emulators.ceph: ``ceph health detail``, ``ceph osd perf``) at /usr/local/bin;
client hosts get their own /etc/ceph/ceph.conf (mon_host = the storage hosts, ``[client]`` options
from the scenario) and a ``fuse.ceph-fuse`` entry in their mount table (a real FUSE mount without a
daemon, made in the host's own mount namespace)."""

from __future__ import annotations

import random
import shlex
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from advisor.util.errors import StoradviseError
from advisor.lab.emulation import LabEmulation, emulator_python, package_root

BIN_DIR = "/usr/local/bin"
MOUNT_TOOL = "storadvise-lab-ceph-fuse-mount"

#: ceph.conf [client] options a CephFS fault turns the wrong way, with the rule that finds it
CEPH_CLIENT_FAULTS = {"client_oc": ("false", "CEPH-CLIENT-OBJECT-CACHE"),
                      "client_debug_force_sync_read": ("true", "CEPH-CLIENT-FORCE-SYNC-READ")}


class CephEmulation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: hosts where the cluster's admin CLI runs (monitors / admin nodes): selectors
    storage: list[str] = Field(min_length=1)
    #: hosts that mount CephFS through ceph-fuse: selectors
    clients: list[str] = Field(default_factory=list)
    mountpoint: str = Field(default="/mnt/cephfs", pattern=r"^/mnt/[A-Za-z0-9_.-]+$")
    fsid: str = Field(default="6f1b3d2a-5c1e-4f7a-9b0e-2d8c4a1e7f30",
                      pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
    osds: int = Field(default=6, ge=1, le=256)
    #: OSD id -> its commit/apply latency in ms (the others are at 0-1 ms)
    slow_osds: dict[int, int] = Field(default_factory=dict)
    #: OSDs the SLOW_OPS health check names (empty: HEALTH_OK)
    slow_ops: list[int] = Field(default_factory=list)
    #: ``[client]`` options of the clients' ceph.conf (``client_oc: "false"``)
    client_options: dict[str, str] = Field(default_factory=dict)


def _conf(spec: CephEmulation, mons: list[str]) -> str:
    lines = ["# storadvise lab: ceph.conf of an emulated CephFS client (no Ceph software runs here)",
             "[global]", f"\tfsid = {spec.fsid}", f"\tmon_host = {','.join(mons)}", "",
             "[client]", "\tkeyring = /etc/ceph/ceph.client.admin.keyring"]
    lines += [f"\t{k} = {v}" for k, v in spec.client_options.items()]
    return "\n".join(lines) + "\n"


class CephLab(LabEmulation):
    generated_fault = 'cephfs'
    generated_order = 0
    section = "ceph"
    bind_dirs = (BIN_DIR, "/etc/ceph")  # and the mount point the section names
    model = CephEmulation

    def check(self, spec: CephEmulation, scenario: Any) -> None:
        import re

        for what, sels in (("storage", spec.storage), ("clients", spec.clients)):
            for sel in sels:
                if not scenario.select(sel):
                    raise ValueError(f"ceph.{what}: selector {sel!r} matches no host, group or role")
        for i in list(spec.slow_osds) + spec.slow_ops:
            if not 0 <= i < spec.osds:
                raise ValueError(f"ceph: osd.{i} is not one of the {spec.osds} OSDs")
        for k, v in spec.client_options.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", k) or not re.fullmatch(r"[A-Za-z0-9_./:-]+", v):
                raise ValueError(f"ceph.client_options: {k} = {v!r} is not an option name and a plain value")

    def _roles(self, spec: CephEmulation, scenario: Any) -> tuple[list[str], list[str]]:
        return ([h.name for h in scenario.select_all(spec.storage)],
                [h.name for h in scenario.select_all(spec.clients)] if spec.clients else [])

    def hosts(self, spec: CephEmulation, scenario: Any) -> list[str]:
        storage, clients = self._roles(spec, scenario)
        return sorted(set(storage) | set(clients))

    def setup(self, state_dir: Path, spec: CephEmulation, scenario: Any) -> None:
        from advisor.lab.emulators import ceph
        from advisor.lab.emulators.common import write_json

        storage, clients = self._roles(spec, scenario)
        if clients and not Path("/dev/fuse").exists():
            raise StoradviseError("ceph.clients: the lab's ceph-fuse mount entries need /dev/fuse (FUSE in the kernel); "
                                  "this machine has none")
        ceph.setup_state(state_dir, spec.osds, spec.slow_osds, spec.slow_ops)
        write_json(Path(state_dir) / "ceph" / "layout.json",
                   {"storage": storage, "clients": clients, "mountpoint": spec.mountpoint})

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators.common import read_json, write_wrapper

        layout = read_json(Path(state_dir) / "ceph" / "layout.json") or {}
        host, d = host_dir.name, host_dir / "emu" / "ceph"
        out: dict[str, Path] = {}
        if host in layout.get("storage", []):
            write_wrapper(d / "bin" / "ceph", emulator_python(), package_root(), "advisor.lab.emulators.ceph", "ceph",
                          state_dir, "emulates the ceph admin CLI (health detail, osd perf) for the storadvise lab", vendor="Ceph")
            out[BIN_DIR] = d / "bin"
        if host in layout.get("clients", []):
            (d / "etc").mkdir(parents=True, exist_ok=True)
            (d / "mnt").mkdir(parents=True, exist_ok=True)
            write_wrapper(d / MOUNT_TOOL, emulator_python(), package_root(), "advisor.lab.emulators.ceph", MOUNT_TOOL,
                          state_dir, "the lab's ceph-fuse mount-table entry (a FUSE mount without a daemon)",
                          vendor="Ceph")
            out["/etc/ceph"] = d / "etc"
            out[layout["mountpoint"]] = d / "mnt"
        return out

    def start(self, rec: Any, spec: CephEmulation, scenario: Any) -> None:
        """Write each client's ceph.conf and make its ceph-fuse mount, in the host's mount namespace."""
        from advisor.lab.records import read_pids

        storage, clients = self._roles(spec, scenario)
        mons = [rec.hosts[h]["address"] for h in storage]
        boot = {host: pid for pid, what, host in read_pids(rec.dir) if what == "sshd"}
        for host in clients:
            d = rec.dir / "hosts" / host / "emu" / "ceph"
            conf = d / "etc" / "ceph.conf"
            conf.write_text(_conf(spec, mons))
            conf.chmod(0o644)
            cmd = f"{shlex.quote(str(d / MOUNT_TOOL))} {shlex.quote(spec.mountpoint)}"
            cp = subprocess.run(["nsenter", "-t", str(boot[host]), "-m", "/bin/sh", "-c", cmd],
                                capture_output=True, text=True, timeout=30)
            if cp.returncode:
                raise StoradviseError(f"host {host}: the ceph-fuse mount entry could not be made: "
                                      f"{(cp.stderr or cp.stdout).strip()[-300:]}")


    def reboot(self, host_dir: Path, host: str) -> str | None:
        """A client reads /etc/ceph/ceph.conf when ceph-fuse mounts: the file is its state (the mount entry
        stays in the host's mount namespace); the cluster does not reboot with a host."""
        d = host_dir / "emu" / "ceph"
        if (d / "etc" / "ceph.conf").is_file():
            return "the Ceph client mounts again with its ceph.conf (no runtime-only state)"
        if (d / "bin" / "ceph").is_file():
            return "the Ceph cluster (OSDs, health) does not reboot with a host: unchanged"
        return None

    def generate_fault(self, rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str,
                       wg: str, expect: list[dict[str, Any]]) -> None:
        osds = rng.randint(3, 12)
        slow = rng.randrange(osds)
        ms = rng.choice([180, 250, 600])
        spec: dict[str, Any] = {"storage": [sg], "clients": [wg], "osds": osds, "slow_osds": {slow: ms}}
        for h in storage:
            expect.append({"rule": "CEPH-OSD-SLOW", "host": h["name"], "subject": str(slow), "fixable": False,
                           "by_hand": True, "fault": f"osd.{slow} at {ms} ms"})
        if rng.random() < 0.5:
            spec["slow_ops"] = [slow]
            for h in storage:
                for rule in ("CEPH-SLOW-OPS", "CEPH-HEALTH"):
                    expect.append({"rule": rule, "host": h["name"], "fixable": False, "by_hand": True,
                                   "fault": f"HEALTH_WARN: osd.{slow} has slow ops"})
        for h in workers:
            expect.append({"rule": "MOUNT-CEPH-FUSE", "host": h["name"], "subject": "/mnt/cephfs", "fixable": False,
                           "by_hand": True, "fault": "CephFS mounted through ceph-fuse"})
        if rng.random() < 0.7:
            opt = rng.choice(sorted(CEPH_CLIENT_FAULTS))
            value, rule = CEPH_CLIENT_FAULTS[opt]
            spec["client_options"] = {opt: value}
            for h in workers:
                expect.append({"rule": rule, "host": h["name"], "fault": f"{opt} = {value} in ceph.conf [client]"})
        data["ceph"] = spec


EMULATION = CephLab()
