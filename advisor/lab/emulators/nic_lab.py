"""The hosts' ``nic:`` and ``cpu:`` keys of a lab scenario: what a veth cannot show, emulated
(advisor/lab/emulators/nic.py: ``ethtool``, ``/sys/class/net``, ``/proc/interrupts``, ``/proc/irq``, cpufreq).

.. code-block:: yaml

    hosts:
      - name: st01
        nic: {speed: 1000, max_speed: 10000, duplex: full, ring: {rx: 512, rx_max: 4096},
              offloads: {gro: off}, counters: {rx_crc_errors: 40/s}, irq_cpus: [0]}
        cpu: {governor: powersave}

Not a scenario section of its own: the emulation gathers the hosts that carry either key. What a veth
can show stays real: the MTU (the host key ``mtu:``, the switch key ``mtu:``), the addresses, the traffic.
A NIC that negotiated below the host's ``link_rate`` carries only its speed: the lab shapes the host's
link at it (advisor/lab/control.py), while the site file keeps the scenario's ``link_rate`` (what the
site expects).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

SECTION = "host_nics"
#: ethtool's path on this machine: the emulator is bound over it in the hosts that carry a NIC
ETHTOOL = str(Path(shutil.which("ethtool") or "/usr/sbin/ethtool").resolve())
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(/s)?\s*$")
_COUNTER = re.compile(r"[a-z][a-z0-9_]{0,63}")
FEED = "storadvise-lab-feed-nic-counters"


class Ring(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rx: int = Field(4096, ge=1, le=65536)
    rx_max: int = Field(4096, ge=1, le=65536)
    tx: int = Field(4096, ge=1, le=65536)
    tx_max: int = Field(4096, ge=1, le=65536)


class HostNic(BaseModel):
    """The emulated physical eth0 of a lab host."""

    model_config = ConfigDict(extra="forbid")
    #: negotiated speed, Mb/s
    speed: int = Field(10000, ge=10, le=400000)
    #: the fastest mode the NIC supports (default: its speed)
    max_speed: int | None = Field(None, ge=10, le=400000)
    #: the fastest mode the link partner (the switch port) advertises (default: the NIC's fastest)
    partner_max: int | None = Field(None, ge=10, le=400000)
    duplex: Literal["full", "half"] = "full"
    driver: str = Field("ixgbe", pattern=r"^[a-z0-9_]{1,32}$")
    ring: Ring = Field(default_factory=Ring)
    offloads: dict[Literal["gro", "tso", "gso", "lro"], Literal["on", "off"]] = Field(default_factory=dict)
    #: offloads the driver does not let change (``[fixed]``)
    fixed: list[Literal["gro", "tso", "gso", "lro"]] = Field(default_factory=list)
    #: counter -> rate: ``rx_crc_errors: 40/s`` (a sysfs statistics name or a driver's ``ethtool -S`` name)
    counters: dict[str, float] = Field(default_factory=dict)
    #: the CPUs its queue interrupts run on (default: spread over every CPU)
    irq_cpus: list[int] | None = None
    queues: int = Field(4, ge=1, le=64)

    @field_validator("counters", mode="before")
    @classmethod
    def _rates(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        out = {}
        for k, rate in v.items():
            if not isinstance(k, str) or not _COUNTER.fullmatch(k):
                raise ValueError(f"counter name {k!r}: a statistics name like rx_crc_errors")
            m = _RATE.match(str(rate))
            if not m:
                raise ValueError(f"counter {k}: a rate like 40/s, not {rate!r}")
            out[k] = float(m.group(1))
        return out

    @model_validator(mode="after")
    def _consistent(self) -> "HostNic":
        if self.ring.rx > self.ring.rx_max or self.ring.tx > self.ring.tx_max:
            raise ValueError("ring: a ring above its maximum")
        if self.max_speed is not None and self.speed > self.max_speed:
            raise ValueError(f"speed {self.speed} above max_speed {self.max_speed}")
        return self


class HostCpu(BaseModel):
    model_config = ConfigDict(extra="forbid")
    governor: Literal["performance", "powersave"] = "performance"
    driver: str = Field("intel_pstate", pattern=r"^[a-z0-9_]{1,32}$")
    #: scaling_max_freq as a share of cpuinfo_max_freq (below 1: capped)
    max_freq_share: float = Field(1.0, gt=0.1, le=1.0)


class HostNicsSpec(BaseModel):
    """The hosts that carry an emulated NIC or cpufreq (gathered from the hosts' keys)."""

    model_config = ConfigDict(extra="forbid")
    hosts: dict[str, dict[str, Any]] = Field(default_factory=dict)


def host_state(host: str, nic: HostNic | None, cpu: HostCpu | None, mtu: int | None, cpus: int, index: int) -> dict[str, Any]:
    """One host's boot state (advisor/lab/emulators/nic.py reads it)."""
    st: dict[str, Any] = {"host": host, "cpus": cpus, "mtu": mtu, "nics": {}, "cpu": None}
    if nic is not None:
        bus = f"0000:{0x3b + index:02x}:00.0"
        spread = nic.irq_cpus or list(range(cpus))
        st["nics"]["eth0"] = {
            "driver": nic.driver, "bus": bus, "speed": nic.speed, "max_speed": nic.max_speed or nic.speed,
            "partner_max": nic.partner_max or nic.max_speed or nic.speed, "duplex": nic.duplex,
            "ring": nic.ring.model_dump(), "offloads": {k: nic.offloads.get(k, "off" if k == "lro" else "on")
                                                        for k in ("gro", "tso", "gso", "lro")},
            "fixed": list(nic.fixed), "counters": dict(nic.counters), "bases": {}, "since": 0.0,
            "irqs": [{"irq": 120 + q, "name": f"eth0-TxRx-{q}", "cpus": [spread[q % len(spread)] % cpus]}
                     for q in range(nic.queues)]}
    if cpu is not None:
        st["cpu"] = cpu.model_dump()
    return st


class NicLab(LabEmulation):
    section = SECTION
    model = HostNicsSpec
    #: gathered from the hosts' ``nic:``/``cpu:`` keys, never a top-level key of a scenario
    from_hosts = True
    bind_dirs = ("/sys/class/net", ETHTOOL, "/proc/interrupts", "/proc/irq", "/sys/devices/system/cpu/cpufreq")

    def hosts(self, spec: HostNicsSpec, scenario: Any) -> list[str]:
        return list(spec.hosts)

    def setup(self, state_dir: Path, spec: HostNicsSpec, scenario: Any) -> None:
        import os

        from advisor.lab.emulators.common import write_json
        from advisor.lab.emulators.nic import install_real_ethtool

        install_real_ethtool(state_dir)
        cpus = os.cpu_count() or 1
        names = [h.name for h in scenario.hosts]
        for host, keys in spec.hosts.items():
            h = next(x for x in scenario.hosts if x.name == host)
            st = host_state(host, h.nic, h.cpu, h.mtu, cpus, names.index(host))
            for nic in st["nics"].values():
                nic["since"] = time.time()
            write_json(state_dir / "nic" / f"{host}.boot.json", st)

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators.common import read_json, write_json, write_wrapper
        from advisor.lab.emulators.nic import write_host_files

        host = host_dir.name
        st = read_json(state_dir / "nic" / f"{host}.boot.json")
        emu = host_dir / "emu" / "nic"
        st["host_emu"] = str(emu)
        for nic in st["nics"].values():
            nic["since"] = time.time()
        write_json(state_dir / "nic" / f"{host}.json", st)
        write_host_files(emu, st)
        binds: dict[str, Path] = {}
        if st["nics"]:
            write_wrapper(emu / "ethtool", emulator_python(), package_root(), "advisor.lab.emulators.nic", "ethtool",
                          state_dir, "emulates ethtool for the storadvise lab's NICs", vendor="ethtool's", isolated=True)
            binds.update({"/sys/class/net": emu / "sys-class-net", ETHTOOL: emu / "ethtool",
                          "/proc/interrupts": emu / "interrupts", "/proc/irq": emu / "irq"})
        if st["cpu"]:
            binds["/sys/devices/system/cpu/cpufreq"] = emu / "cpufreq"
        # the roles' persisted files, in the host's own directory (never the machine's /etc)
        (host_dir / "etc" / "udev" / "rules.d").mkdir(parents=True, exist_ok=True)
        (host_dir / "etc" / "systemd" / "system").mkdir(parents=True, exist_ok=True)
        return binds

    def start(self, rec: Any, spec: HostNicsSpec, scenario: Any) -> None:
        """One feeder of the emulated counters for the lab (its pid recorded: ``lab down`` kills it)."""
        from advisor.lab.emulators.common import write_wrapper

        emu = Path(rec.dir) / "emu"
        feeder = emu / "nic" / FEED
        write_wrapper(feeder, emulator_python(), package_root(), "advisor.lab.emulators.nic", "feed", emu,
                      "rewrites the emulated NIC counters of the storadvise lab's hosts", vendor="the Linux kernel's")
        with open(emu / "nic" / "feed.log", "ab") as log:
            p = subprocess.Popen([str(feeder)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=log, start_new_session=True, close_fds=True)
        rec.add_pid(p.pid, "nic-feed", "-")

    def site_host_vars(self, rec: Any, spec: HostNicsSpec, scenario: Any, host: str) -> dict[str, Any]:
        """The roles persist in the host's own directory; the lab host runs no NetworkManager, tuned or systemd."""
        from advisor.lab.hosts import HOST_DIR_IN_HOST

        own = Path(HOST_DIR_IN_HOST) / "etc"
        return {"nic_tuning_udev_rules_file": str(own / "udev" / "rules.d" / "81-storadvise-nic.rules"),
                "nic_tuning_persist": "udev", "cpu_tuning_unit_dir": str(own / "systemd" / "system"),
                "cpu_tuning_persist": "systemd"}

    def reboot(self, host_dir: Path, host: str) -> str | None:
        """The host's NIC and CPU back at their boot state (rings, offloads, counters, governor, the real MTU),
        then what the host persisted: its udev rules for net devices (their RUN commands, run in the host) and
        its enabled systemd units (their ExecStart), as a boot would."""
        from advisor.lab.emulators.common import read_json, write_json
        from advisor.lab.emulators.nic import write_host_files

        state_dir = host_dir.parent.parent / "emu"
        boot = read_json(state_dir / "nic" / f"{host}.boot.json")
        if boot is None:
            return None
        st = dict(boot, host_emu=str(host_dir / "emu" / "nic"))
        for nic in st["nics"].values():
            nic["since"] = time.time()
        write_json(state_dir / "nic" / f"{host}.json", st)
        write_host_files(host_dir / "emu" / "nic", st)
        enter, ns = _host_entry(host_dir, host)
        subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "mtu", str(boot.get("mtu") or 1500)], check=True,
                       capture_output=True, timeout=30)
        ran = [_run(enter, cmd) for cmd in udev_runs(host_dir, set(st["nics"]) | {"lo"})]
        ran += [_run(enter, cmd) for cmd in unit_starts(host_dir)]
        failed = [c for c, ok in ran if not ok]
        if failed:
            raise RuntimeError(f"at boot, {failed[0][:120]!r} failed")
        return (f"NIC and CPU frequency back at their boot values, then {len(ran)} persisted command(s) run "
                "(udev rules of net devices, enabled units)")


def _host_entry(host_dir: Path, host: str) -> tuple[list[str], str]:
    from advisor.lab.hosts import enter_host
    from advisor.lab.records import read_pids

    lab = host_dir.parent.parent
    rec = json.loads((lab / "record.json").read_text())
    boot = [pid for pid, what, h in read_pids(lab) if what == "sshd" and h == host]
    if not boot:
        raise RuntimeError(f"host {host} has no recorded boot process")
    return enter_host(boot[-1]), rec["hosts"][host]["ns"]


def _run(enter: list[str], cmd: str) -> tuple[str, bool]:
    cp = subprocess.run([*enter, "/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=60)
    return cmd, cp.returncode == 0


_ASSIGN = re.compile(r'([A-Z]+)(?:\{[^}]*\})?\s*(==|\+=|=)\s*"([^"]*)"')


def udev_runs(host_dir: Path, ifaces: set[str]) -> list[str]:
    """The RUN commands udev would run as the host's net devices appear: rules of the host's own
    ``etc/udev/rules.d`` with ACTION ``add``, SUBSYSTEM ``net`` and a NAME/KERNEL of one of ``ifaces``."""
    out = []
    for f in sorted((host_dir / "etc" / "udev" / "rules.d").glob("*.rules")):
        for line in f.read_text(errors="replace").splitlines():
            if line.lstrip().startswith("#") or not line.strip():
                continue
            keys = _ASSIGN.findall(line)
            match = {k: v for k, op, v in keys if op == "=="}
            name = match.get("NAME") or match.get("KERNEL")
            if "add" not in match.get("ACTION", "").split("|") or match.get("SUBSYSTEM") != "net" or name not in ifaces:
                continue
            out += [v.replace("$name", name).replace("%k", name) for k, op, v in keys if k == "RUN" and op == "+="]
    return out


def unit_starts(host_dir: Path) -> list[str]:
    """The ExecStart commands of the units enabled in the host's own ``etc/systemd/system``."""
    units = host_dir / "etc" / "systemd" / "system"
    out = []
    for link in sorted((units / "multi-user.target.wants").glob("*.service")):
        unit = units / link.name
        if not unit.is_file():
            continue
        out += [line.split("=", 1)[1] for line in unit.read_text(errors="replace").splitlines()
                if line.startswith("ExecStart=")]
    return out


EMULATION = NicLab()
