"""Disk health from ``smartctl --json -a`` (smartmontools 7+), one run per physical disk (``disk.smart``).

The script runs smartctl on each /sys/block entry that is not virtual; each run's JSON is one
``@@section device <name>`` section. Facts per disk, as smartctl reports them (None where the
device type has no such counter, never a guessed zero):

* ATA: attribute 5 Reallocated_Sector_Ct, 197 Current_Pending_Sector, 198 Offline_Uncorrectable,
  187 Reported_Uncorrect (raw values; smartmontools' drivedb names, ``ata_smart_attributes.table``)
* NVMe: ``nvme_smart_health_information_log``: media_errors, critical_warning
* SCSI/SAS: ``scsi_grown_defect_list`` (reallocated), read+write ``total_uncorrected_errors`` (media errors)
* all: ``smart_status.passed``, ``temperature.current``

smartctl's exit status is a bit mask (man smartctl, RETURN VALUES): bit 1 (device open failed)
makes the disk ``unreadable`` with smartctl's message; bit 3 (disk failing) and the others are
carried in ``exit_status`` and do not hide the counters the JSON holds.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from probes.block import NOT_A_DISK_PREFIXES
from probes.json_text import load_host_json
from probes.legal_values import DEVICE_NAME, check_name
from probes.probe import Probe, ProbeContext, ProbeParseError, require_tool, section, split_sections

END_SECTION = "end"
DEVICE_SECTION = "device "
#: smartctl exit status bits (man smartctl): 1 command line, 2 device open failed
EXIT_COMMAND_LINE = 1
EXIT_OPEN_FAILED = 2
ATA_REALLOCATED, ATA_REPORTED_UNCORRECT, ATA_PENDING, ATA_OFFLINE_UNCORRECTABLE = 5, 187, 197, 198
MAX_COUNTER = 2**64


class DiskHealth(BaseModel):
    #: ATA, NVMe or SCSI (smartctl's device.protocol)
    protocol: str | None = None
    model: str | None = None
    #: smartctl's overall health self-assessment; None when it could not tell
    smart_passed: bool | None = None
    temperature_c: int | None = None
    reallocated_sectors: int | None = None
    pending_sectors: int | None = None
    uncorrectable_sectors: int | None = None
    #: ATA 187: errors the drive could not correct with ECC, as reported to the host
    reported_uncorrect: int | None = None
    #: NVMe media and data integrity errors; SCSI uncorrected read + write errors
    media_errors: int | None = None
    nvme_critical_warning: int | None = None
    exit_status: int = 0
    #: smartctl could not read the disk (its message); the counters are then None
    unreadable: str | None = None


class SmartFacts(BaseModel):
    devices: dict[str, DiskHealth] = Field(default_factory=dict)


def _counter(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_COUNTER:
        raise ProbeParseError(f"{what}: not a counter: {str(value)[:40]!r}")
    return value


def _obj(doc: dict, key: str, what: str) -> dict:
    value = doc.get(key) or {}
    if not isinstance(value, dict):
        raise ProbeParseError(f"{what}: {key} is not an object")
    return value


def parse_smartctl_json(name: str, text: str) -> DiskHealth:
    """One disk's ``smartctl --json`` document -> its health counters."""
    doc = load_host_json(text, f"disk.smart {name}")
    if not isinstance(doc, dict) or not isinstance(doc.get("smartctl"), dict):
        raise ProbeParseError(f"disk.smart {name}: not smartctl --json output (no 'smartctl' object)")
    run = doc["smartctl"]
    status = _counter(run.get("exit_status", 0), f"{name}: smartctl.exit_status") or 0
    messages = run.get("messages") or []
    text_of = "; ".join(str(m.get("string", "")) for m in messages if isinstance(m, dict))[:200]
    device = _obj(doc, "device", name)
    health = DiskHealth(exit_status=status, protocol=device.get("protocol") if isinstance(device.get("protocol"), str) else None,
                        model=next((doc[k] for k in ("model_name", "scsi_model_name", "product") if isinstance(doc.get(k), str)), None))
    if status & (EXIT_COMMAND_LINE | EXIT_OPEN_FAILED):
        health.unreadable = text_of or f"smartctl exit status {status}"
        return health
    passed = _obj(doc, "smart_status", name).get("passed")
    health.smart_passed = passed if isinstance(passed, bool) else None
    health.temperature_c = _counter(_obj(doc, "temperature", name).get("current"), f"{name}: temperature.current")
    table = _obj(doc, "ata_smart_attributes", name).get("table") or []
    if not isinstance(table, list):
        raise ProbeParseError(f"{name}: ata_smart_attributes.table is not a list")
    raw: dict[int, int] = {}
    for attr in table:
        if not isinstance(attr, dict) or not isinstance(attr.get("id"), int):
            raise ProbeParseError(f"{name}: an ATA attribute without an id")
        raw[attr["id"]] = _counter(_obj(attr, "raw", name).get("value"), f"{name}: attribute {attr['id']} raw")
    health.reallocated_sectors = raw.get(ATA_REALLOCATED)
    health.pending_sectors = raw.get(ATA_PENDING)
    health.uncorrectable_sectors = raw.get(ATA_OFFLINE_UNCORRECTABLE)
    health.reported_uncorrect = raw.get(ATA_REPORTED_UNCORRECT)
    nvme = _obj(doc, "nvme_smart_health_information_log", name)
    if nvme:
        health.media_errors = _counter(nvme.get("media_errors"), f"{name}: nvme media_errors")
        health.nvme_critical_warning = _counter(nvme.get("critical_warning"), f"{name}: nvme critical_warning")
    if "scsi_grown_defect_list" in doc:
        health.reallocated_sectors = _counter(doc["scsi_grown_defect_list"], f"{name}: scsi_grown_defect_list")
    errors = _obj(doc, "scsi_error_counter_log", name)
    if errors:
        total = 0
        for direction in ("read", "write"):
            total += _counter(_obj(errors, direction, name).get("total_uncorrected_errors"),
                              f"{name}: scsi {direction} total_uncorrected_errors") or 0
        health.media_errors = total
    return health


class SmartProbe(Probe):
    name = "disk.smart"
    title = "Disk health (SMART/NVMe: reallocated, pending, uncorrectable sectors, media errors, temperature)"
    needs_root = True
    facts_model = SmartFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("smartctl", "/usr/sbin", "/sbin")
            + "for d in /sys/block/*; do\n"
            '  [ -e "$d" ] || continue\n'  # no block device at all (a container): the glob stays unexpanded
            '  n=${d##*/}\n'
            f'  case "$n" in {"|".join(p + "*" for p in NOT_A_DISK_PREFIXES)}) continue;; esac\n'
            '  case "$(readlink "$d" 2>/dev/null)" in */devices/virtual/*) continue;; esac\n'
            '  echo "@@section device $n"\n'
            '  "$TOOL_smartctl" --json -a "/dev/$n" 2>&1\n'
            "done\n" + section(END_SECTION)
        )

    def timeout(self, ctx: ProbeContext) -> float:
        return 120.0

    def parse(self, text: str) -> SmartFacts:
        sections = split_sections(text)
        if END_SECTION not in sections:
            raise ProbeParseError("disk.smart output truncated: no end marker")
        stray = sections.get("", "").strip()
        if stray:
            raise ProbeParseError(f"disk.smart: unexpected output before the first device: {stray[:60]!r}")
        facts = SmartFacts()
        for key, body in sections.items():
            if key in ("", END_SECTION):
                continue
            if not key.startswith(DEVICE_SECTION) or not key[len(DEVICE_SECTION):].strip():
                raise ProbeParseError(f"disk.smart: unexpected section {key[:60]!r}")
            name = check_name(key[len(DEVICE_SECTION):].strip(), DEVICE_NAME, "disk.smart: device name").replace("!", "/")
            facts.devices[name] = parse_smartctl_json(name, body)
        return facts
