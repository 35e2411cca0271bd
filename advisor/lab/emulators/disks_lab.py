"""The ``disks:`` section of a lab scenario: emulated disks in lab hosts, one of which may be failing
(advisor.lab.emulators.disks: ``smartctl`` and ``dmesg`` at /usr/local/sbin, a private
``/sys/block`` and a ``/proc/diskstats`` fed by one process per host).

.. code-block:: yaml

    disks:
      hosts: [servers]          # selectors: group, role or host name
      protocol: ata             # ata (sda, sdb, ...) or nvme (nvme0n1, ...)
      count: 4                  # disks per host (>= 3: a slow disk needs peers)
      failing:
        - {host: st01, disk: sdc, signs: [smart, io_errors, slow]}

``signs``: ``smart`` (reallocated, pending and uncorrectable sectors, SMART health FAILED; NVMe media
errors and a critical warning), ``io_errors`` (kernel I/O error lines naming the disk), ``slow`` (its
await ~20x its peers'). Not a storage kind: any scenario may carry it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

BIN_DIR = "/usr/local/sbin"
MOUNT_ROOT = "/srv/data"
SIGNS = ("smart", "io_errors", "slow")
FEED = "storadvise-lab-feed-diskstats"


class FailingDisk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str
    disk: str
    signs: list[Literal["smart", "io_errors", "slow"]] = Field(default_factory=lambda: list(SIGNS), min_length=1)


class DiskEmulation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hosts: list[str] = Field(min_length=1)
    protocol: Literal["ata", "nvme"] = "ata"
    count: int = Field(default=4, ge=3, le=26)
    failing: list[FailingDisk] = Field(default_factory=list)
    #: each disk's first partition is mounted at MOUNT_ROOT/<disk> (a small tmpfs whose source is
    #: the partition's name, so /proc/self/mounts shows ``/dev/sdc1 /srv/data/sdc``); false: none
    mounts: bool = True
    #: boot values of the disks' queue files instead of a stock kernel's (``nr_requests: 64``,
    #: ``queue_depth: 1``, ``scheduler: none``, ``read_ahead_kb: 128``): the block queue rules' faults
    queue: dict[Literal["scheduler", "nr_requests", "read_ahead_kb", "queue_depth"], int | str] = Field(default_factory=dict)


class DisksLab(LabEmulation):
    section = "disks"
    bind_dirs = (BIN_DIR, "/sys/block", "/proc/diskstats", MOUNT_ROOT)
    model = DiskEmulation

    def check(self, spec: DiskEmulation, scenario: Any) -> None:
        from advisor.lab.emulators.disks import disk_names

        for sel in spec.hosts:
            if not scenario.select(sel):
                raise ValueError(f"disks.hosts: selector {sel!r} matches no host, group or role")
        hosts = set(self.hosts(spec, scenario))
        names = disk_names(spec.protocol, spec.count)
        for f in spec.failing:
            if f.host not in hosts:
                raise ValueError(f"disks.failing: host {f.host!r} has no emulated disks (disks.hosts)")
            if f.disk not in names:
                raise ValueError(f"disks.failing: {f.host} has no disk {f.disk!r} (it has {', '.join(names)})")

    def hosts(self, spec: DiskEmulation, scenario: Any) -> list[str]:
        return [h.name for h in scenario.select_all(spec.hosts)]

    def _states(self, spec: DiskEmulation, scenario: Any) -> dict[str, dict[str, Any]]:
        from advisor.lab.emulators.disks import host_state

        failing: dict[str, dict[str, list[str]]] = {}
        for f in spec.failing:
            failing.setdefault(f.host, {})[f.disk] = list(f.signs)
        out = {h: host_state(h, spec.protocol, spec.count, failing.get(h, {})) for h in self.hosts(spec, scenario)}
        for st in out.values():
            st["queue"] = dict(spec.queue)
        return out

    def setup(self, state_dir: Path, spec: DiskEmulation, scenario: Any) -> None:
        from advisor.lab.emulators.disks import setup_state

        setup_state(state_dir, self._states(spec, scenario))

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        import os

        from advisor.lab.emulators.common import read_json, write_wrapper
        from advisor.lab.emulators.disks import write_sysfs

        host = host_dir.name
        st = read_json(state_dir / "disks" / f"{host}.json")
        d = host_dir / "emu" / "disks"
        for tool, note in (("smartctl", "emulates smartctl --json -a for the storadvise lab's disks"),
                           ("dmesg", "emulates the kernel log (dmesg) of a storadvise lab host")):
            write_wrapper(d / "bin" / tool, emulator_python(), package_root(), "advisor.lab.emulators.disks", tool,
                          state_dir, note)
        write_wrapper(d / FEED, emulator_python(), package_root(), "advisor.lab.emulators.disks", "feed-diskstats",
                      state_dir, "serves the lab host's /proc/diskstats through a FIFO")
        write_sysfs(d / "sys-block", st)
        fifo = d / "diskstats"
        if not fifo.exists():
            os.mkfifo(fifo, 0o644)
        for disk in st["disks"]:
            (d / "data" / disk).mkdir(parents=True, exist_ok=True)
        (host_dir / "etc" / "udev" / "rules.d").mkdir(parents=True, exist_ok=True)  # block_tuning's udev rule
        return {BIN_DIR: d / "bin", "/sys/block": d / "sys-block", "/proc/diskstats": fifo, MOUNT_ROOT: d / "data"}

    def start(self, rec: Any, spec: DiskEmulation, scenario: Any) -> None:
        """One /proc/diskstats feeder per host (its pid recorded: ``lab down`` kills it); the disks'
        mounts in the host's mount namespace (they stay there across ``lab reboot``)."""
        from advisor.util.errors import StoradviseError
        from advisor.lab.emulators.disks import partition_of
        from advisor.lab.records import read_pids

        boot = {host: pid for pid, what, host in read_pids(Path(rec.dir)) if what == "sshd"}
        for host in self.hosts(spec, scenario):
            d = Path(rec.dir) / "hosts" / host / "emu" / "disks"
            if spec.mounts:
                for disk in sorted(p.name for p in (d / "data").iterdir()):
                    cp = subprocess.run(["nsenter", "-t", str(boot[host]), "-m", "--", "mount", "-n", "-t", "tmpfs",
                                         "-o", "size=64k,mode=0755", f"/dev/{partition_of(disk)}", f"{MOUNT_ROOT}/{disk}"],
                                        capture_output=True, text=True, timeout=30)
                    if cp.returncode:
                        raise StoradviseError(f"host {host}: mounting {disk}: {cp.stderr.strip()[-200:]}")
            with open(d / "feed.log", "ab") as log:
                p = subprocess.Popen([str(d / FEED), str(d / "diskstats"), host], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=log, start_new_session=True, close_fds=True)
            rec.add_pid(p.pid, "diskstats-feed", host)


    def reboot(self, host_dir: Path, host: str) -> str | None:
        """A rebooted host's block queues start at the kernel's (the emulation's boot) values; then udev's
        add events apply the host's rules (``etc/udev/rules.d/*.rules``, where the block_tuning role writes
        its rule). The disks' mounts stay in the host's mount namespace."""
        from advisor.lab.emulators.common import read_json
        from advisor.lab.emulators.disks import apply_udev_rules, write_sysfs

        d = host_dir / "emu" / "disks"
        st = read_json(host_dir.parent.parent / "emu" / "disks" / f"{host}.json")
        if st is None or not (d / "sys-block").is_dir():
            return None
        write_sysfs(d / "sys-block", st)
        rules = sorted((host_dir / "etc" / "udev" / "rules.d").glob("*.rules"))
        applied = apply_udev_rules(d / "sys-block", [r.read_text(errors="replace") for r in rules])
        return (f"block queues back at their boot values, then {applied} udev rule setting(s) applied"
                f" from {len(rules)} rules file(s)")


EMULATION = DisksLab()
