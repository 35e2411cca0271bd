"""Emulated disks of a lab host: ``smartctl``, ``dmesg``, ``/sys/block`` and ``/proc/diskstats``.

storadvise lab emulator -- not smartmontools, not util-linux, not the Linux kernel. A lab host has
no disks of its own (a network namespace shares the machine's), so the hosts a scenario's
``disks:`` section names get, in their private mount namespace:

* ``/sys/block``: a directory with one entry per emulated disk (``queue/`` tunables a stock
  kernel shows for the device type, ``device/`` model, vendor and queue depth, ``size``);
* ``smartctl``: ``smartctl --json -a /dev/X`` prints the disk's document in smartctl 7's JSON
  layout (``smartctl``, ``device``, ``smart_status``, ``ata_smart_attributes.table`` or
  ``nvme_smart_health_information_log``, ``temperature``); ``exit_status`` sets smartctl's bits
  (man smartctl, RETURN VALUES: 3 disk failing, 6 error log has errors); a device that is not
  emulated exits 2 (open failed) with smartctl's message;
* ``dmesg``: the host's kernel log: boot lines, then the failing disk's I/O errors in the block
  layer's and the page cache's formats (blk_print_req_error, buffer_io_error);
* ``/proc/diskstats``: a FIFO fed by ``feed_diskstats`` (one process per host, started by the
  lab and killed by pid at ``lab down``): every open reads a snapshot whose counters grow with
  the host's uptime at each disk's rate and latency, so a sampling reader sees the disk's IOPS
  and await (the failing disk's far above its peers').

State: ``<state>/disks/<host>.json`` (written by ``setup_state``; the tools only read it).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import log_invocation, read_json, this_host

#: per disk: requests per second and milliseconds per request (healthy / failing)
HEALTHY_IOPS, HEALTHY_AWAIT_MS = 40.0, 4.0
SLOW_AWAIT_MS = 90.0
SECTORS_PER_IO = 256
#: smartctl exit status bits (man smartctl): 1 device open failed, 3 disk failing, 6 error log has errors
EXIT_OPEN_FAILED, EXIT_DISK_FAILING, EXIT_ERROR_LOG = 1 << 1, 1 << 3, 1 << 6
ATA_ATTRIBUTES = (  # id, name, prefailure, healthy normalised value, threshold
    (1, "Raw_Read_Error_Rate", True, 100, 16), (5, "Reallocated_Sector_Ct", True, 100, 5),
    (9, "Power_On_Hours", False, 96, 0), (187, "Reported_Uncorrect", False, 100, 0),
    (194, "Temperature_Celsius", False, 34, 0), (197, "Current_Pending_Sector", False, 100, 0),
    (198, "Offline_Uncorrectable", False, 100, 0),
)
#: the counters a failing disk shows (raw values)
FAILING_ATA = {5: 1832, 187: 41, 197: 24, 198: 24}
FAILING_NVME_MEDIA_ERRORS = 37


def disk_names(protocol: str, count: int) -> list[str]:
    if protocol == "nvme":
        return [f"nvme{i}n1" for i in range(count)]
    return [f"sd{chr(ord('a') + i)}" for i in range(count)]


def partition_of(disk: str) -> str:
    """The disk's first partition: sdc -> sdc1, nvme0n1 -> nvme0n1p1."""
    return f"{disk}p1" if disk[-1].isdigit() else f"{disk}1"


def host_state(host: str, protocol: str, count: int, failing: dict[str, list[str]]) -> dict[str, Any]:
    """One host's disks; ``failing`` maps a disk to its signs (smart, io_errors, slow)."""
    disks = {}
    for i, name in enumerate(disk_names(protocol, count)):
        signs = failing.get(name, [])
        disks[name] = {"protocol": protocol, "model": "SAMSUNG MZQL23T8HCLS-00A07" if protocol == "nvme" else "ST8000NM000A-2KE101",
                       "serial": "LAB" + hashlib.sha256(f"{host}/{name}".encode()).hexdigest()[:10].upper(), "signs": signs,
                       "iops": HEALTHY_IOPS + 3 * i, "await_ms": SLOW_AWAIT_MS if "slow" in signs else HEALTHY_AWAIT_MS + 0.3 * i}
    log = [f"[    0.000000] Linux version 6.1.0-lab (storadvise lab emulator, host {host})",
           "[    1.412093] scsi host0: ahci" if protocol != "nvme" else "[    1.412093] nvme nvme0: pci function 0000:01:00.0"]
    for name, d in disks.items():
        if "io_errors" in d["signs"]:
            for k in range(6):
                t = 84211.5 + 13.7 * k
                sector = 1953525160 + 8 * k
                log.append(f"[{t:12.6f}] I/O error, dev {name}, sector {sector} op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0")
                if k % 2 == 0:
                    part = partition_of(name)
                    log.append(f"[{t + 0.000021:12.6f}] Buffer I/O error on dev {part}, logical block {244190645 + k}, async page read")
    return {"host": host, "disks": disks, "kernel_log": log}


def setup_state(state_dir: Path, states: dict[str, dict[str, Any]]) -> None:
    from advisor.lab.emulators.common import write_json

    for host, st in states.items():
        write_json(Path(state_dir) / "disks" / f"{host}.json", st)


def write_sysfs(root: Path, st: dict[str, Any]) -> None:
    """The host's /sys/block replacement (plain files: the block_tuning role may write them)."""
    for name, d in st["disks"].items():
        q = root / name / "queue"
        q.mkdir(parents=True, exist_ok=True)
        nvme = d["protocol"] == "nvme"
        files = {"scheduler": "[none] mq-deadline kyber bfq" if nvme else "[mq-deadline] kyber bfq none",
                 "nr_requests": "1023" if nvme else "256", "read_ahead_kb": "4096", "max_sectors_kb": "1280",
                 "max_hw_sectors_kb": "2048" if nvme else "32767", "rotational": "0" if nvme else "1"}
        boot = st.get("queue") or {}
        if "scheduler" in boot:
            offered = files["scheduler"].replace("[", "").replace("]", "").split()
            files["scheduler"] = " ".join(f"[{x}]" if x == boot["scheduler"] else x for x in offered)
        for key in ("nr_requests", "read_ahead_kb"):
            if key in boot:
                files[key] = str(boot[key])
        for f, v in files.items():
            (q / f).write_text(v + "\n")
        dev = root / name / "device"
        dev.mkdir(exist_ok=True)
        (dev / "model").write_text(d["model"] + "\n")
        if not nvme:
            (dev / "vendor").write_text("ATA     \n")
            (dev / "queue_depth").write_text(f"{boot.get('queue_depth', 32)}\n")
        (root / name / "size").write_text(str(15628053168) + "\n")


def apply_udev_rules(root: Path, texts: list[str]) -> int:
    """Apply the ``ATTR{queue/X}="V"`` / ``ATTR{device/X}="V"`` assignments of block udev rules to the
    emulated /sys/block under ``root``, as their add events would at boot (rules files in order, later
    assignments win); ``KERNEL==`` patterns are shell globs (udev(7)). Returns how many were written."""
    import fnmatch
    import re

    disks = sorted(p.name for p in root.iterdir() if p.is_dir())
    n = 0
    for text in texts:
        for line in text.splitlines():
            if line.lstrip().startswith("#") or 'SUBSYSTEM=="block"' not in line:
                continue
            m = re.search(r'KERNEL=="([^"]+)"', line)
            if not m:
                continue
            for disk in (x for x in disks if fnmatch.fnmatchcase(x, m.group(1))):
                for sub, key, value in re.findall(r'ATTR\{(queue|device)/(\w+)\}="([^"]*)"', line):
                    f = root / disk / sub / key
                    if not f.is_file():
                        continue
                    if key == "scheduler":
                        offered = f.read_text().replace("[", "").replace("]", "").split()
                        if value not in offered:
                            continue  # the kernel refuses a scheduler it does not offer
                        value = " ".join(f"[{x}]" if x == value else x for x in offered)
                    f.write_text(value + "\n")
                    n += 1
    return n


def _smart_document(name: str, d: dict[str, Any], argv: list[str]) -> tuple[dict[str, Any], int]:
    failing = "smart" in d["signs"]
    status = (EXIT_DISK_FAILING | EXIT_ERROR_LOG) if failing else 0
    doc: dict[str, Any] = {
        "json_format_version": [1, 0],
        "smartctl": {"version": [7, 3], "argv": ["smartctl", *argv], "exit_status": status,
                     "platform_info": "storadvise lab emulator"},
        "device": {"name": f"/dev/{name}", "info_name": f"/dev/{name}", "type": "nvme" if d["protocol"] == "nvme" else "sat",
                   "protocol": "NVMe" if d["protocol"] == "nvme" else "ATA"},
        "model_name": d["model"], "serial_number": d["serial"],
        "smart_status": {"passed": not failing},
        "temperature": {"current": 47 if failing else 34},
        "power_on_time": {"hours": 31877},
    }
    if d["protocol"] == "nvme":
        doc["nvme_smart_health_information_log"] = {
            "critical_warning": 4 if failing else 0, "temperature": doc["temperature"]["current"], "available_spare": 100,
            "percentage_used": 3, "media_errors": FAILING_NVME_MEDIA_ERRORS if failing else 0,
            "num_err_log_entries": 112 if failing else 0}
    else:
        table = []
        for aid, aname, prefail, value, thresh in ATA_ATTRIBUTES:
            raw = FAILING_ATA.get(aid, 0) if failing else 0
            if aid == 9:
                raw = 31877
            elif aid == 194:
                raw = doc["temperature"]["current"]
            val = 3 if failing and aid == 5 else value
            table.append({"id": aid, "name": aname, "value": val, "worst": val, "thresh": thresh,
                          "when_failed": "now" if val <= thresh and thresh else "",
                          "flags": {"prefailure": prefail, "string": "PO--CK " if prefail else "-O--CK "},
                          "raw": {"value": raw, "string": str(raw)}})
        doc["ata_smart_attributes"] = {"revision": 10, "table": table}
    return doc, status


def smartctl(argv: list[str], state: dict[str, Any]) -> int:
    dev = next((a for a in argv if a.startswith("/dev/")), None)
    name = dev[5:] if dev else None
    d = (state or {}).get("disks", {}).get(name) if name else None
    if d is None:
        msg = f"{dev or '(no device)'}: Unable to detect device type"
        print(json.dumps({"json_format_version": [1, 0],
                          "smartctl": {"version": [7, 3], "argv": ["smartctl", *argv], "exit_status": EXIT_OPEN_FAILED,
                                       "messages": [{"string": msg, "severity": "error"}]}}, indent=2))
        return EXIT_OPEN_FAILED
    doc, status = _smart_document(name, d, argv)
    print(json.dumps(doc, indent=2))
    return status


def uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


def diskstats_text(state: dict[str, Any], now: float) -> str:
    """/proc/diskstats at uptime ``now`` (the 17-field layout of Linux 5.5+)."""
    lines = []
    for i, (name, d) in enumerate(state["disks"].items()):
        major, minor = (259, i) if d["protocol"] == "nvme" else (8, 16 * i)
        ios = int(d["iops"] * now)
        reads, writes = ios * 3 // 4, ios - ios * 3 // 4
        ms_read, ms_write = int(reads * d["await_ms"]), int(writes * d["await_ms"])
        busy = min(int(now * 1000), int(ios * min(d["await_ms"], 1000.0 / d["iops"])))
        lines.append(f"{major:4d} {minor:7d} {name} {reads} 0 {reads * SECTORS_PER_IO} {ms_read} {writes} 0 "
                     f"{writes * SECTORS_PER_IO} {ms_write} 0 {busy} {ms_read + ms_write} 0 0 0 0 0 0")
    return "\n".join(lines) + "\n"


def feed_diskstats(fifo: Path, state_file: Path) -> int:
    """Serve /proc/diskstats snapshots through ``fifo`` until killed: each reader's open gets one."""
    state = json.loads(state_file.read_text())
    while True:
        with open(fifo, "w") as f:  # blocks until a reader opens the FIFO
            try:
                f.write(diskstats_text(state, uptime()))
            except BrokenPipeError:
                pass
        time.sleep(0.01)  # the reader sees EOF before the next open


def dmesg(argv: list[str], state: dict[str, Any]) -> int:
    for line in (state or {}).get("kernel_log", []):
        print(line)
    return 0


def main(tool: str, argv: list[str], state_dir: str) -> int:
    sd = Path(state_dir)
    host = this_host()
    state = read_json(sd / "disks" / f"{host}.json", {})
    if tool == "feed-diskstats":
        return feed_diskstats(Path(argv[0]), sd / "disks" / f"{argv[1]}.json")
    try:
        rc = {"smartctl": smartctl, "dmesg": dmesg}[tool](argv, state)
    except BrokenPipeError:
        rc = 0
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    log_invocation(sd, tool, argv, rc)
    return rc


