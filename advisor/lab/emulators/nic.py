"""Emulated NIC hardware and CPU frequency of a lab host: ``ethtool``, ``/sys/class/net``, ``/proc/interrupts``,
``/proc/irq`` and ``/sys/devices/system/cpu/cpufreq``.

storadvise lab emulator -- not ethtool, not the Linux kernel. A lab host's eth0 is a veth: it has no speed
of its own, no rings, no error counters that a cable could raise, no queue interrupts and no cpufreq. The
hosts whose scenario entry has ``nic:`` or ``cpu:`` get, in their private mount namespace:

* ``/sys/class/net``: ``lo`` and every other interface a link to the kernel's own entry; ``eth0`` a
  directory whose attributes link to the veth's real ones (``mtu``, ``operstate``, ``address``... so an MTU
  set with ``ip link`` is real), with a ``device`` (the emulated PCI function, its ``driver`` and
  ``msi_irqs``), ``speed`` and ``duplex`` of the emulated negotiation, and ``statistics`` whose counters of
  the scenario's ``counters`` rise at their rates (files a feeder process rewrites, ``feed``; one per lab,
  started by the lab, killed by pid at ``lab down``) while the others link to the veth's real ones;
* ``ethtool`` (bound over the real binary): ``ethtool IF``, ``-i``, ``-g``/``-G``, ``-k``/``-K``, ``-S`` print
  and change the emulated state in ethtool's own layouts; anything else, or another interface, runs the
  real ethtool (a copy made at ``lab up``);
* ``/proc/interrupts`` and ``/proc/irq/N/{smp_affinity_list,effective_affinity_list}``: the NIC's queue
  interrupts on the CPUs the scenario names (``irq_cpus``), the machine's CPU count;
* ``/sys/devices/system/cpu/cpufreq/policyN``: one policy per CPU with the scenario's governor (files the
  cpu_tuning role writes as on a real host).

Drop counters (missed, no-buffer, FIFO) rise only while the RX ring is below its maximum: raising the ring
stops them, as it would a real NIC's overruns. State: ``<state>/nic/<host>.json`` (runtime: rings,
offloads, counter bases) and ``<host>.boot.json`` (what ``lab reboot`` returns to). Stdlib only: the
tool starts on every SSH command.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import locked, log_invocation, read_json, this_host, write_json

#: the kernel's statistics files (Documentation/ABI/testing/sysfs-class-net-statistics)
SYSFS_COUNTERS = ("collisions", "multicast", "rx_bytes", "rx_compressed", "rx_crc_errors", "rx_dropped", "rx_errors",
                  "rx_fifo_errors", "rx_frame_errors", "rx_length_errors", "rx_missed_errors", "rx_nohandler",
                  "rx_over_errors", "rx_packets", "tx_aborted_errors", "tx_bytes", "tx_carrier_errors", "tx_compressed",
                  "tx_dropped", "tx_errors", "tx_fifo_errors", "tx_heartbeat_errors", "tx_packets", "tx_window_errors")
#: a veth's own attributes, linked from the emulated entry
REAL_ATTRIBUTES = ("addr_assign_type", "addr_len", "address", "broadcast", "carrier", "carrier_changes", "dev_id",
                   "dormant", "flags", "ifalias", "ifindex", "iflink", "link_mode", "mtu", "name_assign_type",
                   "netdev_group", "operstate", "proto_down", "tx_queue_len", "type", "uevent")
#: drop counters that rise only while the RX ring is below its maximum
RING_DROPS = ("rx_missed_errors", "rx_no_buffer_count", "rx_fifo_errors", "rx_over_errors")
#: the ixgbe-like ``ethtool -S`` names printed (0 unless the scenario makes them rise)
DRIVER_COUNTERS = ("rx_crc_errors", "rx_missed_errors", "rx_no_buffer_count", "rx_long_length_errors",
                   "rx_short_length_errors", "tx_timeout_count", "alloc_rx_buff_failed")
FEATURES = {"gro": "generic-receive-offload", "tso": "tcp-segmentation-offload",
            "gso": "generic-segmentation-offload", "lro": "large-receive-offload"}
IRQ_BASE = 120
GOVERNORS = ("performance", "powersave")
HW_MAX_KHZ = 3600000


# -- state ---------------------------------------------------------------------------------------

def counter_value(nic: dict[str, Any], name: str, now: float | None = None) -> int:
    """A counter's value now: its base plus its rate since the base was taken (0 for a ring drop while
    the ring is at its maximum)."""
    now = time.time() if now is None else now
    rate = float((nic.get("counters") or {}).get(name, 0.0))
    if name in RING_DROPS and nic["ring"]["rx"] >= nic["ring"]["rx_max"]:
        rate = 0.0
    base = (nic.get("bases") or {}).get(name, 0)
    return int(base + rate * max(0.0, now - float(nic.get("since", now))))


def rebase(nic: dict[str, Any], now: float) -> None:
    """Fold what every counter has counted so far into its base (before its rate changes)."""
    nic["bases"] = {c: counter_value(nic, c, now) for c in nic.get("counters") or {}}
    nic["since"] = now


#: the kernel's error counters that ``rx_errors`` / ``tx_errors`` sum (a driver's get_stats64: ixgbe and igb
#: add CRC, length and alignment errors, never the missed or dropped frames)
SUMMED = {"rx_errors": ("rx_crc_errors", "rx_frame_errors", "rx_length_errors"),
          "tx_errors": ("tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors", "tx_heartbeat_errors",
                        "tx_window_errors")}


def emulated_sysfs_counters(nic: dict[str, Any]) -> list[str]:
    """The statistics files the feeder writes: the scenario's sysfs counters and the sums that hold them."""
    own = [c for c in nic.get("counters") or {} if c in SYSFS_COUNTERS]
    return sorted(set(own) | {total for total, parts in SUMMED.items() if set(parts) & set(own)})


def sysfs_counter(nic: dict[str, Any], name: str, now: float) -> int:
    if name in SUMMED and name not in (nic.get("counters") or {}):
        return sum(counter_value(nic, c, now) for c in SUMMED[name] if c in (nic.get("counters") or {}))
    return counter_value(nic, name, now)


# -- files shown to the host ---------------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_host_files(emu: Path, st: dict[str, Any]) -> None:
    """Everything the host sees, from its state: /sys/class/net, /proc/interrupts, /proc/irq, cpufreq."""
    net = emu / "sys-class-net"
    net.mkdir(parents=True, exist_ok=True)
    for name in ("lo",):
        link = net / name
        if not link.is_symlink():
            link.symlink_to(f"/sys/devices/virtual/net/{name}")
    for name, nic in st.get("nics", {}).items():
        d = net / name
        d.mkdir(exist_ok=True)
        for attr in REAL_ATTRIBUTES:
            if not (d / attr).is_symlink():
                (d / attr).symlink_to(f"/sys/devices/virtual/net/{name}/{attr}")
        _write(d / "speed", f"{nic['speed']}\n")
        _write(d / "duplex", f"{nic['duplex']}\n")
        dev = emu / "devices" / nic["bus"]
        (dev / "msi_irqs").mkdir(parents=True, exist_ok=True)
        for q in nic["irqs"]:
            (dev / "msi_irqs" / str(q["irq"])).write_text("msix\n")
        drv = emu / "drivers" / nic["driver"]
        drv.mkdir(parents=True, exist_ok=True)
        if not (dev / "driver").is_symlink():
            (dev / "driver").symlink_to(drv)
        _write(dev / "numa_node", "0\n")
        if not (d / "device").is_symlink():
            (d / "device").symlink_to(dev)
        stats = d / "statistics"
        stats.mkdir(exist_ok=True)
        own = set(emulated_sysfs_counters(nic))
        for c in SYSFS_COUNTERS:
            p = stats / c
            if c in own:
                if p.is_symlink():
                    p.unlink()
                _write(p, f"{sysfs_counter(nic, c, time.time())}\n")
            elif not p.is_symlink():
                if p.exists():
                    p.unlink()
                p.symlink_to(f"/sys/devices/virtual/net/{name}/statistics/{c}")
    _write(emu / "interrupts", interrupts_text(st))
    for name, nic in st.get("nics", {}).items():
        for q in nic["irqs"]:
            cpus = ",".join(str(c) for c in q["cpus"])
            _write(emu / "irq" / str(q["irq"]) / "smp_affinity_list", cpus + "\n")
            _write(emu / "irq" / str(q["irq"]) / "effective_affinity_list", cpus + "\n")
    cpu = st.get("cpu")
    if cpu:
        for i in range(st["cpus"]):
            p = emu / "cpufreq" / f"policy{i}"
            for f, v in (("scaling_governor", cpu["governor"]), ("scaling_available_governors", " ".join(GOVERNORS)),
                         ("scaling_driver", cpu["driver"]), ("cpuinfo_max_freq", HW_MAX_KHZ),
                         ("scaling_max_freq", int(HW_MAX_KHZ * cpu["max_freq_share"])), ("scaling_min_freq", 800000),
                         ("affected_cpus", i), ("related_cpus", i)):
                _write(p / f, f"{v}\n")


def interrupts_text(st: dict[str, Any]) -> str:
    """/proc/interrupts in the layout of a 4.x+ kernel, with the NIC's queue vectors."""
    n = st["cpus"]
    head = "      " + "".join(f"{'CPU' + str(i):<11}" for i in range(n)).rstrip()
    lines = [head, f"{0:>4}:" + "".join(f"{(40 if i == 0 else 0):>11}" for i in range(n)) + "   IO-APIC   2-edge      timer"]
    for name, nic in st.get("nics", {}).items():
        for q in nic["irqs"]:
            counts = "".join(f"{(180000 + 1000 * q['irq'] if i in q['cpus'] else 0):>11}" for i in range(n))
            lines.append(f"{q['irq']:>4}:{counts}   IR-PCI-MSIX-{nic['bus']} {q['irq'] - IRQ_BASE:>4}-edge      {q['name']}")
    lines.append(" LOC:" + "".join(f"{25000000:>11}" for _ in range(n)) + "   Local timer interrupts")
    return "\n".join(lines) + "\n"


def feed(state_dir: Path, interval: float = 0.25) -> None:
    """Rewrite the emulated statistics files of every host of the lab, for as long as the lab lives."""
    root = state_dir / "nic"
    while True:
        now = time.time()
        for f in sorted(root.glob("*.json")):
            if f.name.endswith(".boot.json"):
                continue
            st = read_json(f) or {}
            hdir = Path(st.get("host_emu", ""))
            for name, nic in (st.get("nics") or {}).items():
                for c in emulated_sysfs_counters(nic):
                    p = hdir / "sys-class-net" / name / "statistics" / c
                    if p.parent.is_dir():
                        try:
                            _write(p, f"{sysfs_counter(nic, c, now)}\n")
                        except OSError:
                            pass
        time.sleep(interval)


# -- ethtool ---------------------------------------------------------------------------------------

def _settings(name: str, nic: dict[str, Any]) -> str:
    modes = [m for m in (100, 1000, 10000, 25000, 40000, 100000) if m <= nic["max_speed"]]
    names = [f"{m}base{'T' if m <= 10000 else 'SR'}/Full" for m in modes]
    partner = [n for m, n in zip(modes, names) if m <= nic["partner_max"]]
    lines = [f"Settings for {name}:", "\tSupported ports: [ FIBRE ]", "\tSupported link modes:   " + " ".join(names),
             "\tSupported pause frame use: Symmetric", "\tSupports auto-negotiation: Yes",
             "\tAdvertised link modes:  " + " ".join(names), "\tAdvertised auto-negotiation: Yes",
             "\tLink partner advertised link modes:  " + " ".join(partner),
             f"\tSpeed: {nic['speed']}Mb/s", f"\tDuplex: {nic['duplex'].capitalize()}", "\tAuto-negotiation: on",
             "\tPort: FIBRE", "\tTransceiver: internal", "\tLink detected: yes"]
    return "\n".join(lines) + "\n"


def _rings(name: str, r: dict[str, int]) -> str:
    return (f"Ring parameters for {name}:\nPre-set maximums:\nRX:\t\t\t{r['rx_max']}\nRX Mini:\t\tn/a\nRX Jumbo:\t\tn/a\n"
            f"TX:\t\t\t{r['tx_max']}\nCurrent hardware settings:\nRX:\t\t\t{r['rx']}\nRX Mini:\t\tn/a\n"
            f"RX Jumbo:\t\tn/a\nTX:\t\t\t{r['tx']}\n")


def _features(name: str, nic: dict[str, Any]) -> str:
    lines = [f"Features for {name}:", "rx-checksumming: on", "tx-checksumming: on", "scatter-gather: on"]
    for short, long in FEATURES.items():
        lines.append(f"{long}: {nic['offloads'][short]}" + (" [fixed]" if short in nic.get("fixed", []) else ""))
    lines += ["rx-vlan-offload: on", "tx-vlan-offload: on", "highdma: on [fixed]"]
    return "\n".join(lines) + "\n"


def _statistics(name: str, nic: dict[str, Any]) -> str:
    real = Path(f"/sys/devices/virtual/net/{name}/statistics")
    lines = ["NIC statistics:"]
    for c in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes"):
        try:
            lines.append(f"     {c}: {int((real / c).read_text())}")
        except (OSError, ValueError):
            lines.append(f"     {c}: 0")
    now = time.time()
    names = list(dict.fromkeys(list(DRIVER_COUNTERS) + list(nic.get("counters") or {})))
    lines += [f"     {c}: {counter_value(nic, c, now)}" for c in names]
    return "\n".join(lines) + "\n"


def _real(state_dir: Path, argv: list[str]) -> int:
    real = state_dir / "nic" / "ethtool.real"
    os.execv(str(real), [str(real), *argv])
    return 127


def main(tool: str, argv: list[str], state_dir_text: str) -> int:
    state_dir = Path(state_dir_text)
    if tool == "feed":
        feed(state_dir)
        return 0
    host = this_host()
    path = state_dir / "nic" / f"{host}.json"
    opts = [a for a in argv if a.startswith("-")]
    args = [a for a in argv if not a.startswith("-")]
    st = read_json(path) or {}
    name = args[0] if args else ""
    if len(opts) > 1 or opts[:1] not in ([], ["-i"], ["-g"], ["-G"], ["-k"], ["-K"], ["-S"]) \
            or name not in (st.get("nics") or {}):
        return _real(state_dir, argv)
    op = opts[0] if opts else ""
    rc = _ethtool(state_dir, path, host, op, name, args[1:])
    log_invocation(state_dir, "ethtool", argv, rc)
    return rc


def _ethtool(state_dir: Path, path: Path, host: str, op: str, name: str, rest: list[str]) -> int:
    with locked(state_dir / "nic"):
        st = read_json(path)
        nic = st["nics"][name]
        if op == "":
            sys.stdout.write(_settings(name, nic))
        elif op == "-i":
            sys.stdout.write(f"driver: {nic['driver']}\nversion: 6.1.0-lab\nfirmware-version: 0x800003df\n"
                             f"bus-info: {nic['bus']}\nsupports-statistics: yes\n")
        elif op == "-g":
            sys.stdout.write(_rings(name, nic["ring"]))
        elif op == "-k":
            sys.stdout.write(_features(name, nic))
        elif op == "-S":
            sys.stdout.write(_statistics(name, nic))
        elif op == "-G":
            pairs = dict(zip(rest[0::2], rest[1::2]))
            if not pairs or any(k not in ("rx", "tx") or not v.isdigit() or not 1 <= int(v) <= nic["ring"][k + "_max"]
                                for k, v in pairs.items()):
                sys.stderr.write("netlink error: Invalid argument\n")
                return 1
            rebase(nic, time.time())
            for k, v in pairs.items():
                nic["ring"][k] = int(v)
            write_json(path, st)
        elif op == "-K":
            pairs = dict(zip(rest[0::2], rest[1::2]))
            if not pairs or any(k not in FEATURES or v not in ("on", "off") for k, v in pairs.items()):
                sys.stderr.write("ethtool: bad command line argument(s)\n")
                return 1
            refused = [k for k, v in pairs.items() if k in nic.get("fixed", []) and nic["offloads"][k] != v]
            for k, v in pairs.items():
                if k not in refused:
                    nic["offloads"][k] = v
            write_json(path, st)
            if refused:
                sys.stderr.write("".join(f"Cannot change {FEATURES[k]}\n" for k in refused)
                                 + "Could not change any device features\n")
                return 1
    return 0


def install_real_ethtool(state_dir: Path) -> None:
    """A copy of the machine's ethtool, which the emulator runs for what it does not emulate."""
    real = shutil.which("ethtool") or "/usr/sbin/ethtool"
    target = state_dir / "nic" / "ethtool.real"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(real), target)

