"""Block devices: queue tunables (``block.queue``) and kernel I/O error lines (``block.ioerrors``).

``block.queue`` reads ``/sys/block/<dev>/queue/*`` (Documentation/block/queue-sysfs.rst) and the
SCSI device's ``device/queue_depth`` (Documentation/scsi/scsi_mid_low_api.rst;
Documentation/ABI/stable/sysfs-block). Sysfs spells a ``/`` in a device name as ``!``
(``cciss!c0d0``); facts use the ``/proc/diskstats`` spelling (``cciss/c0d0``) so the two
probes' device keys match.

``block.ioerrors`` scans the kernel log (``dmesg``, else ``journalctl -k -b``) for the
block layer's, the page cache's and libata's error lines. An unreadable log is an error,
never an empty pass.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.legal_values import DEVICE_NAME, check_name
from probes.probe import (
    bounded_int,
    NOT_APPLICABLE_MARKER,
    SECTION_MARKER,
    Probe,
    ProbeContext,
    ProbeParseError,
    section,
    split_sections,
)

END_SECTION = "end"

# ----------------------------------------------------------------------------------------
# block.queue


class BlockDevice(BaseModel):
    """One entry of /sys/block. A file the kernel does not provide for the device is None."""

    read_ahead_kb: int | None = None
    #: the active scheduler: the bracketed token, or the only token (``none`` on some devices)
    scheduler: str | None = None
    #: every scheduler the kernel offers for the device, active one included
    schedulers: list[str] = Field(default_factory=list)
    nr_requests: int | None = None
    #: the SCSI device's command queue depth (/sys/block/<dev>/device/queue_depth); None where the
    #: driver has none (NVMe, virtio, loop)
    queue_depth: int | None = None
    max_sectors_kb: int | None = None
    max_hw_sectors_kb: int | None = None
    rotational: bool | None = None
    size_bytes: int | None = None
    model: str | None = None
    vendor: str | None = None
    #: loop, ram, zram, dm-*, md*, or anything under /sys/devices/virtual: not a physical disk
    virtual: bool = False


class BlockQueueFacts(BaseModel):
    devices: dict[str, BlockDevice] = Field(default_factory=dict)


QUEUE_FILES = ("read_ahead_kb", "scheduler", "nr_requests", "max_sectors_kb", "max_hw_sectors_kb", "rotational")
INT_FIELDS = ("read_ahead_kb", "nr_requests", "queue_depth", "max_sectors_kb", "max_hw_sectors_kb")
#: read from /sys/block/<dev>/device/
DEVICE_FILES = ("queue_depth", "model", "vendor")
#: the device names that are no physical disk (loop, RAM disks, zram, device-mapper, md RAID, optical,
#: floppy and network block devices), like anything under /sys/devices/virtual: disk.smart,
#: block.queue and block.diskstats all leave them out of what they call a disk
NOT_A_DISK_PREFIXES = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd")
VIRTUAL_NAME = re.compile("^(" + "|".join(re.escape(p) for p in NOT_A_DISK_PREFIXES) + ")")
DEVICE_SECTION = "device "
SCHEDULER_TOKEN = re.compile(r"^\[?([A-Za-z0-9_-]+)\]?$")


def parse_scheduler(text: str) -> tuple[str | None, list[str]]:
    """``[mq-deadline] kyber bfq none`` -> ("mq-deadline", [all four]); ``none`` -> ("none", ["none"]).

    Several unbracketed tokens leave the active one unknown (None)."""
    tokens = text.split()
    names: list[str] = []
    active: list[str] = []
    for token in tokens:
        match = SCHEDULER_TOKEN.match(token)
        if not match or token.startswith("[") != token.endswith("]"):
            raise ProbeParseError(f"scheduler: unexpected token {token!r} in {text.strip()[:80]!r}")
        names.append(match.group(1))
        if token.startswith("["):
            active.append(match.group(1))
    if len(active) > 1:
        raise ProbeParseError(f"scheduler: more than one active scheduler in {text.strip()[:80]!r}")
    if active:
        return active[0], names
    return (names[0] if len(names) == 1 else None), names


def _int_value(device: str, key: str, value: str) -> int:
    try:
        number = bounded_int(value, f"{device}: {key}")
    except ProbeParseError:
        raise ProbeParseError(f"{device}: {key} is not an integer: {value.strip()[:40]!r}") from None
    if number < 0:
        raise ProbeParseError(f"{device}: {key} is negative: {number}")
    return number


def parse_block_device(name: str, body: str) -> BlockDevice:
    values: dict[str, str] = {}
    for line in body.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ProbeParseError(f"{name}: expected key=value, got {line.strip()[:60]!r}")
        values[key.strip()] = value
    device = BlockDevice(virtual=bool(VIRTUAL_NAME.match(name)) or "/devices/virtual/" in values.get("link", ""))
    for key in INT_FIELDS:
        if key in values:
            setattr(device, key, _int_value(name, key, values[key]))
    if "scheduler" in values:
        device.scheduler, device.schedulers = parse_scheduler(values["scheduler"])
    if "rotational" in values:
        flag = values["rotational"].strip()
        if flag not in ("0", "1"):
            raise ProbeParseError(f"{name}: rotational is not 0 or 1: {flag[:20]!r}")
        device.rotational = flag == "1"
    if "size" in values:
        device.size_bytes = _int_value(name, "size", values["size"]) * 512
    for key in ("model", "vendor"):
        if values.get(key, "").strip():
            setattr(device, key, values[key].strip())
    return device


class BlockQueueProbe(Probe):
    name = "block.queue"
    title = "Block device queue tunables (read-ahead, scheduler, request queue and device queue depth, request sizes)"
    facts_model = BlockQueueFacts

    def script(self, ctx: ProbeContext) -> str:
        files = " ".join(QUEUE_FILES)
        # val FILE: v = its value, read by the shell itself (a sysfs attribute holds one value on
        # one line; a process per value made this probe the costliest of a host's batch); an
        # empty value, an empty first line or a read error falls back to cat as before
        return (
            f'[ -d /sys/block ] || {{ echo "{NOT_APPLICABLE_MARKER} no /sys/block"; exit 0; }}\n'
            'val() { v=; IFS= read -r v <"$1" 2>/dev/null; [ -n "$v" ] || v=$(cat "$1" 2>/dev/null); return 0; }\n'
            "for d in /sys/block/*; do\n"
            '  [ -e "$d" ] || continue\n'
            '  echo "@@section device ${d##*/}"\n'
            '  printf \'link=%s\\n\' "$(readlink "$d" 2>/dev/null)"\n'
            f"  for f in {files}; do\n"
            '    [ -r "$d/queue/$f" ] && val "$d/queue/$f" && printf \'%s=%s\\n\' "$f" "$v"\n'
            "  done\n"
            '  [ -r "$d/size" ] && val "$d/size" && printf \'size=%s\\n\' "$v"\n'
            f"  for f in {' '.join(DEVICE_FILES)}; do\n"
            '    [ -r "$d/device/$f" ] && val "$d/device/$f" && printf \'%s=%s\\n\' "$f" "$v"\n'
            "  done\n"
            "done\n" + section(END_SECTION)
        )

    def parse(self, text: str) -> BlockQueueFacts:
        sections = split_sections(text)
        if END_SECTION not in sections:
            raise ProbeParseError("block.queue output truncated: no end marker")
        stray = sections.get("", "").strip()
        if stray:
            raise ProbeParseError(f"block.queue: unexpected output before the first device: {stray[:60]!r}")
        facts = BlockQueueFacts()
        for key, body in sections.items():
            if key in ("", END_SECTION):
                continue
            if not key.startswith(DEVICE_SECTION) or not key[len(DEVICE_SECTION):].strip():
                raise ProbeParseError(f"block.queue: unexpected section {key[:60]!r}")
            name = check_name(key[len(DEVICE_SECTION):].strip(), DEVICE_NAME, "block.queue: device name").replace("!", "/")
            facts.devices[name] = parse_block_device(name, body)
        return facts


# ----------------------------------------------------------------------------------------
# block.ioerrors

#: the awk regex (``/`` escaped) for the lines the host sends; parse then matches them exactly
#: with IO_ERROR_PATTERNS, so a line the filter lets through but no pattern names is ignored
KERNEL_LOG_FILTER = r"I\/O error|error, dev |failed command: "
IO_ERROR_PATTERNS = (
    # block layer, blk-core.c blk_print_req_error(): "%s error, dev %s, sector %llu op 0x%x:(%s) ..."
    # (before 5.x prefixed "blk_update_request: " / "print_req_error: ", 2.6-3.x "end_request: ");
    # %s is a blk_errors name: "I/O", "critical medium", "timeout", "critical target" ...
    re.compile(r"\berror, dev (?P<dev>[^\s,]+)"),
    # page cache, fs/buffer.c buffer_io_error(): "Buffer I/O error on dev %pg, logical block %llu%s"
    re.compile(r"Buffer I/O error on dev (?P<dev>[^\s,]+), logical block \d+"),
    # libata-eh.c: ata_dev_err(dev, "failed command: %s\n", ...) -> "ata3.00: failed command: READ FPDMA QUEUED"
    re.compile(r"(?P<dev>ata\d+(?:\.\d+)?): failed command: \S"),
)
#: sdb1 -> sdb, nvme0n1p2 -> nvme0n1: errors are counted against the whole disk
PARTITION_OF_DISK = (
    re.compile(r"^(?P<disk>(?:sd|hd|vd|xvd)[a-z]+)\d+$"),
    re.compile(r"^(?P<disk>(?:nvme\d+n\d+|mmcblk\d+|nbd\d+|loop\d+))p\d+$"),
)
KEPT_LINES = 5
LOG_SOURCES = ("dmesg", "journalctl")


class DeviceIoErrors(BaseModel):
    count: int = 0
    #: the first few matching lines, verbatim (evidence)
    lines: list[str] = Field(default_factory=list)


class IoErrorFacts(BaseModel):
    source: str
    #: how many kernel log lines were scanned
    log_lines: int = 0
    total: int = 0
    errors_by_device: dict[str, DeviceIoErrors] = Field(default_factory=dict)


def disk_of(device: str) -> str:
    for pattern in PARTITION_OF_DISK:
        match = pattern.match(device)
        if match:
            return match.group("disk")
    return device


def io_error_device(line: str) -> str | None:
    """The device an I/O error line names (its whole disk), or None for any other line."""
    for pattern in IO_ERROR_PATTERNS:
        match = pattern.search(line)
        if match:
            return disk_of(match.group("dev"))
    return None


def count_io_errors(source: str, log_lines: int, lines: list[str]) -> IoErrorFacts:
    facts = IoErrorFacts(source=source, log_lines=log_lines)
    for line in lines:
        device = io_error_device(line)
        if device is None:
            continue
        entry = facts.errors_by_device.setdefault(device, DeviceIoErrors())
        entry.count += 1
        if len(entry.lines) < KEPT_LINES:
            entry.lines.append(line.strip())
        facts.total += 1
    return facts


class IoErrorsProbe(Probe):
    name = "block.ioerrors"
    title = "I/O errors in the kernel log"
    needs_root = True
    facts_model = IoErrorFacts

    def script(self, ctx: ProbeContext) -> str:
        # journalctl's check runs without -q: -q hides the "insufficient permissions" warning
        # an unprivileged user gets, which would turn an unreadable log into a clean pass.
        return (
            'src=""; why=""\n'
            "if command -v dmesg >/dev/null 2>&1; then\n"
            "  if dmesg >/dev/null 2>&1; then src=dmesg\n"
            "  else m=$(dmesg 2>&1 >/dev/null | head -n 1)\n"
            '    case "$m" in dmesg:*) why="$m" ;; *) why="dmesg: ${m:-failed}" ;; esac\n'
            "  fi\n"
            "fi\n"
            'if [ -z "$src" ] && command -v journalctl >/dev/null 2>&1; then\n'
            "  jerr=$(journalctl -k -b --no-pager -n 1 2>&1 >/dev/null); jrc=$?\n"
            '  if [ "$jrc" -eq 0 ] && [ -z "$jerr" ]; then src=journalctl\n'
            '  else why="${why:+$why; }journalctl: $(printf \'%s\' "${jerr:-exit $jrc}" | head -n 1)"; fi\n'
            "fi\n"
            'if [ -z "$src" ] && [ -z "$why" ]; then\n'
            f'  echo "{NOT_APPLICABLE_MARKER} neither dmesg nor journalctl found"; exit 0\n'
            "fi\n"
            'if [ -z "$src" ]; then\n'
            + section("unreadable")
            + 'printf \'%s\\n\' "$why"\n'
            "else\n"
            + section("source")
            + 'echo "$src"\n'
            + section("errors")
            + '{ if [ "$src" = dmesg ]; then dmesg; else journalctl -k -b --no-pager -q; fi; } |\n'
            f"  awk '{{ n++ }} /{KERNEL_LOG_FILTER}/ {{ print }}"
            f" END {{ print \"{SECTION_MARKER}log-lines\"; print n + 0 }}'\n"
            "fi\n"
            + section(END_SECTION)
        )

    def parse(self, text: str) -> IoErrorFacts:
        sections = split_sections(text)
        if END_SECTION not in sections:
            raise ProbeParseError("block.ioerrors output truncated: no end marker")
        if "unreadable" in sections:
            reason = " ".join(sections["unreadable"].split()) or "no reason given"
            raise ProbeParseError(f"kernel log not readable: {reason[:200]}")
        for required in ("source", "log-lines", "errors"):
            if required not in sections:
                raise ProbeParseError(f"block.ioerrors output incomplete: no {required} section")
        source = sections["source"].strip()
        if source not in LOG_SOURCES:
            raise ProbeParseError(f"block.ioerrors: unknown kernel log source {source[:40]!r}")
        count = sections["log-lines"].strip()
        if not count.isascii() or not count.isdigit():
            raise ProbeParseError(f"block.ioerrors: log line count is not a number: {count[:40]!r}")
        return count_io_errors(source, bounded_int(count, "block.ioerrors: log line count"), sections["errors"].splitlines())
